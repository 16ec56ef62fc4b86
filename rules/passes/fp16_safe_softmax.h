// fp16_safe_softmax: for backends that run every tensor in fp16 whatever the model's Casts
// say, a softmax written out by hand whose Exp the calibration saw beyond fp16's range
// (logits above ~11) subtracts the row's largest logit first, as the Softmax op does:
//   Exp(x) / ReduceSum(Exp(x), axes)  ->  Exp(x - m) / ReduceSum(Exp(x - m), axes),
//   m = ReduceMax(x, axes)            (exp(x - m) = exp(x) / exp(m): the ratio is unchanged)
// Every exponential is then at most 1 and the sum at most the row's length. The ReduceSum
// must keep its dims (the Div broadcasts it back) and the Exp have no other reader.
// With --precision fp16 it runs on every target, before fp16_islands: shifted, the softmax
// needs no fp32 island where calibration sees its sum within range.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

inline constexpr char kFp16SafeSoftmax[] = "fp16_safe_softmax";
absl::StatusOr<int> SubtractSoftmaxMax(PassContext& ctx);

}  // namespace ovfix::rules
