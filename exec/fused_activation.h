// An activation fused into the op that produces its input: the session folds a Relu or Clip
// (a clamp), or a HardSwish or HardSigmoid·Mul (a hard swish), that alone reads a node's
// output into that node's kernel (exec/kernel.h FusesOutputClamp), and the kernel applies it
// to output 0 as it writes it (the GEMM epilogue, the depthwise and transposed write-backs).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ovfix::exec {

struct FusedActivation {
  // Every element clamped to [clamp_min, clamp_max] (NaN stays NaN).
  bool clamp = false;
  float clamp_min = 0.0f, clamp_max = 0.0f;
  // Or y * min(max(hard_swish_alpha * y + hard_swish_beta, 0), 1). Never with a clamp.
  bool hard_swish = false;
  float hard_swish_alpha = 0.0f, hard_swish_beta = 0.0f;

  bool any() const { return clamp || hard_swish; }
  // The activation of one element, as the vector epilogues apply it.
  float Activate(float x) const {
    if (clamp) {
      x = x < clamp_min ? clamp_min : x;
      x = x > clamp_max ? clamp_max : x;
    }
    if (hard_swish) {
      // A product, then a sum, as the unfused HardSigmoid and Mul kernels round it: no
      // contraction into a multiply-add (avx512::HardSwish likewise).
      float product = hard_swish_alpha * x;
      __asm__("" : "+x"(product));
      x *= std::max(0.0f, std::min(1.0f, product + hard_swish_beta));
    }
    return x;
  }
};

// BatchNormalization's map of one channel in inference, x * scale + shift, in double (both
// the kernel and the session's folding into a Conv round it to float from here).
struct BatchNormChannel {
  double scale, shift;
  BatchNormChannel(double gamma, double beta, double mean, double var, double epsilon)
      : scale(gamma / std::sqrt(var + epsilon)), shift(beta - mean * scale) {}
};

// A map of each channel applied to a kernel's input as the kernel reads it (a
// BatchNormalization folded into the Conv after it): x * scale[c] + shift[c], a product then a
// sum (no multiply-add), then clamped to [lo, hi] (NaN stays NaN), as BatchNormalization and
// its fused clamp compute it.
struct ChannelAffine {
  std::vector<float> scale, shift;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

}  // namespace ovfix::exec
