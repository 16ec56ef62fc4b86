// Which computation the float Conv kernel takes for a geometry, and whether the channels-last
// ovfix.fused.NhwcConv (conv_nhwc.cc) computes that convolution bit for bit as it does: the
// session graph keeps a convolution chain channels-last only through convolutions it computes
// the same (converter/session_nhwc.h), so that `ovfix run` gives what the graph as written
// gives.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "exec/cpu/conv_im2col.h"
#include "ir/node.h"

namespace ovfix::exec {

enum class ConvPath {
  kDepthwise,            // group == channels, 1-D or 2-D: conv_depthwise.h
  kOnePixel,             // one output position per map: a matrix-vector product
  kPointwise,            // 1x1, no padding (a stride subsamples first): W * X
  kPointwiseTransposed,  // the same as X^T * W^T (few positions, many maps)
  kChannelsLast,         // X^T from a channels-last copy times W^T: conv_channels_last.h
  kWinograd,             // 3x3, stride 1: F(2x2, 3x3) from channels-last pixels: conv_winograd.h
  kTransposedColumns,    // im2col columns^T * W^T
  kImplicit,             // W * the padded image read in place: conv_implicit.h
  kColumns,              // W * im2col columns
};

// A 1x1 kernel whose outputs read no padding: a product of the pixels (subsampled by a
// stride) and W.
bool UnpaddedPointwise(const Spatial3& s);

// The path of a float convolution (the float Conv kernel's choice): `spatial_rank` spatial
// axes with geometry `s`, `channels` input channels and `maps` outputs in `group` groups.
// Winograd's only for constant weights (`constant_weights`): their transform, made once and
// kept, costs about what a run of the convolution does.
ConvPath ChooseConvPath(const Spatial3& s, size_t spatial_rank, int64_t group, int64_t channels,
                        int64_t maps, bool constant_weights);

// The path the Conv kernel takes for `conv` (a float Conv of the default domain, X of dims `x`
// [N, C, H, W], W of dims `w`) with the CPU kernel in use, when ovfix.fused.NhwcConv computes
// it bit for bit as that path does (the sums the same: pointwise, channels-last, Winograd,
// depthwise without a multiplier); nullopt otherwise.
std::optional<ConvPath> NhwcConvPath(const Node& conv, int opset, const std::vector<int64_t>& x,
                                     const std::vector<int64_t>& w);

}  // namespace ovfix::exec
