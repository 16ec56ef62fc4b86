// ConvTranspose's spatial arithmetic: the attributes (kernel_shape, strides, dilations, pads,
// auto_pad, output_padding, output_shape) read and checked, and the output size and the pads
// that output_shape or auto_pad imply. The CPU kernel and the OpenCL one share it.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/cpu/conv_geometry.h"
#include "exec/kernel.h"

namespace ovfix::exec {

// X [N, C, spatial...] and W [C, M / group, kernel...] (ranks already checked equal, 3 to 5):
// the geometry with `output` filled in and pads_begin/pads_end the pads actually applied.
absl::StatusOr<SpatialGeometry> ConvTransposeGeometry(const KernelContext& ctx,
                                                      const std::vector<int64_t>& x_dims,
                                                      const std::vector<int64_t>& w_dims);

}  // namespace ovfix::exec
