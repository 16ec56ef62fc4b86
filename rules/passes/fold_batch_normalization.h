// fold_batch_normalization: an inference BatchNormalization that reads the only use of a
// Conv, ConvTranspose or Gemm output is folded into that node's weight and bias:
//   s = scale / sqrt(var + epsilon)                      (per output channel)
//   Conv(x, W, b) -> BN     ->  Conv(x, W * s[m], (b - mean) * s + B)
//   ConvTranspose(x, W, b)  ->  the same with channel m = (c / (C/g)) * (M/g) + j of W[c, j]
//   Gemm(a, B, C) -> BN     ->  Gemm(a, B * s[n], (beta * C - mean) * s + B_bn), beta = 1
// One node less, and the BatchNormalization's statistics (a variance of 9.79e7 is inf in
// fp16) no longer reach the converted model: the folded weights are computed in double
// and stored in the weight's type. A pass, not a rule: the new weight is the old one scaled
// along an axis that depends on the op, its group and transB (computed in a rule through
// Mul/Unsqueeze chains, it would then have to fold under fold_size_limit, which resnet50's
// 3x3 weights exceed). Needs constant float weights and statistics, a bias that is absent
// or per channel, and a BatchNormalization with one output in inference mode.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

// The pass (registry.cc) and its name; returns how many rewrites it committed.
inline constexpr char kFoldBatchNormalization[] = "fold_batch_normalization";
absl::StatusOr<int> FoldBatchNormalization(PassContext& ctx);

}  // namespace ovfix::rules
