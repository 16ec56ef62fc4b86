// Depthwise 2-D convolution (every output channel reads a single input channel, as in
// MobileNet), float, NCHW. Used by Conv when group == channels.
#pragma once

#include <cstdint>

#include "exec/fused_activation.h"
#include "exec/thread_pool.h"

namespace ovfix::exec {

struct DepthwiseShape {
  int64_t batch = 1;
  int64_t channels = 1;    // input channels (== groups)
  int64_t multiplier = 1;  // output channels per input channel
  int64_t in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

// y[n, c * multiplier + j] = bias + sum over the window of x[n, c] * w[c * multiplier + j].
// w: [channels * multiplier, 1, kernel_h, kernel_w]; bias may be null.
// Whether DepthwiseConv2DBlocked takes the shape (AVX-512, one output map per channel, a
// padded image of 16 channels that stays in L2).
bool DepthwiseBlockedApplies(const DepthwiseShape& shape);
// Blocks of 16 channels at a time, as vectors of channels (conv_depthwise_blocked.cc).
void DepthwiseConv2DBlocked(const float* x, const float* w, const float* bias, float* y,
                            const DepthwiseShape& shape, ThreadPool* pool);

// Then `activation` over the output (each plane while it is in cache).
void DepthwiseConv2D(const float* x, const float* w, const float* bias, float* y,
                     const DepthwiseShape& shape, ThreadPool* pool,
                     const FusedActivation& activation = {});

// How DepthwiseConv2D (multiplier 1) sums output pixel (oh, ow) of a plane, for kernels that
// must give the same floats: from the bias, then tap after tap in the order of w (rows, then
// columns), each with a multiply-add (a product then a sum for the portable GEMM kernel),
// taps in the padding adding zeros. Except for a pixel with oh * grid_w + ow >= split: two
// chains, the bias and the even taps, the odd taps from zero, summed at the end.
struct DepthwiseSumOrder {
  int64_t grid_w = 1;
  int64_t split = INT64_MAX;
};
DepthwiseSumOrder DepthwiseConv2DSumOrder(const DepthwiseShape& shape);

}  // namespace ovfix::exec
