// fp16_safe_mask: an additive attention mask built from float32's extremes (Hugging Face's
// `(1 - mask) * finfo(float32).min`, -1e9, -inf through Where, a causal-mask constant of -inf)
// becomes -inf in fp16, and `0 * -inf` is NaN: every output is lost. A float constant holding
// values beyond fp16's range (|v| > 65504 or inf) whose every use flows, through the ops that
// build a mask (Mul, Sub, Add, Where, Expand, Unsqueeze, Reshape, Cast...), into the bias of a
// Softmax or into Attention's attn_mask (opset 23+) gets those values clamped:
//   c -> sign(c) * 4096                    (where |c| > 65504)
// Any masked score then has a weight exp(-4096 + s - max) = 0 in fp16 and in fp32, as it had
// with c, so in fp32 the softmax is unchanged for every row with an unmasked key; the chain is
// copied up to the Softmax/Attention so that validation compares what reads their outputs.
// It runs where fp16 is the backend's (islands ignored) or the model's (--precision fp16), before
// fp16_islands: the mask then needs no fp32 island.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

inline constexpr char kFp16SafeMask[] = "fp16_safe_mask";
absl::StatusOr<int> BoundAttentionMasks(PassContext& ctx);

}  // namespace ovfix::rules
