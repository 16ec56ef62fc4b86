// Convolution chains of the session graph kept channels-last (NHWC: pixel after pixel, the
// channels of a pixel contiguous), converted only at the chain's ends, as onnxruntime keeps
// its blocked NCHWc layout between layers.
//
// The cpu executor's convolutions read NCHW planes; those that compute per pixel (the
// transposed product of a 1x1 kernel, ChannelsLastConv for the rest) copy the image
// channels-last and transpose their product back, on every layer. Here a region of the graph
// whose nodes can all take channels-last values (float 2-D Convs with constant weights that
// ovfix.fused.NhwcConv computes bit for bit as Conv does: 1x1 kernels, depthwise ones, and the
// others where the Conv kernel takes its channels-last path, exec/cpu/conv_nhwc.h; the
// element-wise ops whose tensor inputs all have the output's shape, by constant scalars or
// per-channel vectors at most; Concats along the channels, along the last
// axis channels-last; GlobalAveragePool, which ends one; the model's own Transposes to NHWC
// (whose readers then read the region's value) and from NHWC (whose input the region reads))
// is rewritten: its Convs become `ovfix.fused.NhwcConv` (exec/cpu/conv_nhwc.cc), its
// GlobalAveragePools `ovfix.fused.NhwcGlobalAveragePool`, its values are NHWC, and a
// Transpose converts each value that enters the region from NCHW and each that leaves it (read
// outside, or a graph output) back. A per-channel operand of an element-wise op ([N, C, 1, 1]
// as a squeeze-and-excitation block's scale, [C, 1, 1]) is read as [N, 1, 1, C] (a Transpose
// of C floats). A residual Add after a 1x1 or channels-last convolution folds into it
// (NhwcConv's fourth input), so the Relu after the Add folds as after a Conv. A region pays
// for its Transposes only when its convolutions save more data movement than they cost
// (KeepsChannelsLast, in floats moved). It runs before fuse_elementwise_chains, which then
// fuses what is left of the region's element-wise ops like any other.
//
// Left to the session where it folds them: a Conv whose input is a BatchNormalization the
// plan folds into it (exec/plan_fusion.h FusionIntoConsumer) stays NCHW. The values are those
// of the graph as written, bit for bit.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "rules/pass.h"

namespace ovfix::converter {

inline constexpr char kKeepChannelsLast[] = "keep_channels_last";

// Whether a region whose convolutions move `saved_elements` floats fewer channels-last than
// the Conv kernel moves (packing, copying channels-last, transposing back) is worth the
// `transposed_elements` floats its Transposes in and out move.
bool KeepsChannelsLast(int64_t saved_elements, int64_t transposed_elements);

// Rewrites the regions of the main graph that KeepsChannelsLast accepts; returns how many.
absl::StatusOr<int> KeepChannelsLast(rules::PassContext& ctx);

}  // namespace ovfix::converter
