// Depthwise 2-D convolution (every output channel reads its own input channel), float,
// channels-last (NHWC): for convolution chains that keep their activations a pixel after a
// pixel, the channels of a pixel contiguous. Vectors of channels, so any map size fills them.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cpu/conv_depthwise.h"
#include "exec/fused_activation.h"
#include "exec/thread_pool.h"

namespace ovfix::exec {

// Depthwise weights as DepthwiseConv2DNhwc reads them: the channels of a tap contiguous
// ([kernel_h, kernel_w, channels]) and the bias (zeros without one). Cheap to make (a
// transposition of the weights); a caller that runs the same weights often can keep one.
class DepthwiseNhwcWeights {
 public:
  DepthwiseNhwcWeights() = default;
  // w: [channels, 1, kernel_h, kernel_w] (ONNX's layout); bias: [channels] or null.
  DepthwiseNhwcWeights(const float* w, const float* bias, int64_t channels, int64_t kernel_h,
                       int64_t kernel_w);

  int64_t channels() const { return channels_; }
  int64_t kernel_h() const { return kernel_h_; }
  int64_t kernel_w() const { return kernel_w_; }
  // taps()[(kh * kernel_w + kw) * channels + c] = w[c, 0, kh, kw].
  const float* taps() const { return taps_.data(); }
  const float* bias() const { return bias_.data(); }

 private:
  int64_t channels_ = 0, kernel_h_ = 0, kernel_w_ = 0;
  std::vector<float> taps_, bias_;
};

// y (batch x out_h x out_w x channels, channels-last) = the depthwise convolution of x
// (batch x in_h x in_w x channels, channels-last) with the weights, plus the bias, then
// `activation`. shape.multiplier must be 1, and the weights' channels and kernel size those
// of `shape`. Taps that fall in the padding are skipped (never read). The floats are those of
// DepthwiseConv2D on the same data in NCHW, bit for bit (the same sums in the same order, see
// DepthwiseConv2DSumOrder), as long as the weights are finite (DepthwiseConv2D multiplies the
// padding's zeros by them) and the CPU kernel selected (CurrentGemmGeometry) is the same.
void DepthwiseConv2DNhwc(const float* x, const DepthwiseNhwcWeights& weights, float* y,
                         const DepthwiseShape& shape, ThreadPool* pool,
                         const FusedActivation& activation = {});

// The same with the weights in ONNX's layout ([channels, 1, kernel_h, kernel_w]; bias may be
// null), repacked on every call.
void DepthwiseConv2DNhwc(const float* x, const float* w, const float* bias, float* y,
                         const DepthwiseShape& shape, ThreadPool* pool,
                         const FusedActivation& activation = {});

}  // namespace ovfix::exec
