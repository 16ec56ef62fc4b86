// fp16_safe_linear_scale: for backends that run every tensor in fp16 whatever the model's
// Casts say, a Conv, ConvTranspose, MatMul or Gemm whose calibrated output exceeds fp16's range
// and whose only reader is a normalization (InstanceNormalization, LayerNormalization), through
// Relu or LeakyRelu at most, computes its output scaled by 2^-k; the normalization, invariant to
// the scale of its input, absorbs it:
//   Norm(f(Conv(x, W, B)), eps)  ->  Norm(f(Conv(x, W/s, B/s)), eps/s^2)    s = 2^k, f(x/s) =
//   f(x)/s
// ((x/s - m/s) / sqrt(var/s^2 + eps/s^2) = (x - m) / sqrt(var + eps)). The weights must be
// constants; dividing them by a power of two is exact.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

inline constexpr char kFp16SafeLinearScale[] = "fp16_safe_linear_scale";
absl::StatusOr<int> ScaleLinearBeforeNorm(PassContext& ctx);

}  // namespace ovfix::rules
