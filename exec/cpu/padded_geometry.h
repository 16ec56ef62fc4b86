// A convolution's spatial geometry padded to three axes with leading unit axes, so that one
// loop nest serves 1-D, 2-D and 3-D integer convolutions (conv_integer_core.cc and
// conv_integer_vnni.cc).
#pragma once

#include <array>
#include <cstdint>

#include "exec/cpu/conv_geometry.h"

namespace ovfix::exec {

struct Geometry3 {
  std::array<int64_t, 3> in, out, kernel, strides, dilations, pads;
  explicit Geometry3(const SpatialGeometry& g) {
    const size_t lead = 3 - g.rank();
    for (size_t d = 0; d < 3; ++d) {
      const bool real = d >= lead;
      const size_t i = real ? d - lead : 0;
      in[d] = real ? g.input[i] : 1;
      out[d] = real ? g.output[i] : 1;
      kernel[d] = real ? g.kernel[i] : 1;
      strides[d] = real ? g.strides[i] : 1;
      dilations[d] = real ? g.dilations[i] : 1;
      pads[d] = real ? g.pads_begin[i] : 0;
    }
  }
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

}  // namespace ovfix::exec
