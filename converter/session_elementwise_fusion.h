// Element-wise chains of the session graph run as one node each: a chain of Add/Sub/Mul/Div/
// Max/Min (by constants or tensors that broadcast to the chain's shape) and one-input
// activations (Relu, Sigmoid, Tanh, Erf, Exp, Clip, HardSigmoid, HardSwish, ...) whose
// intermediate values have no other reader becomes one `ovfix.fused.Elementwise` node
// (exec/cpu/fused_elementwise.cc), which computes each element through the whole chain while
// it is in cache instead of writing and reading a tensor per op. Same arithmetic, so the same
// result bit for bit. A native pass: a chain has any length, which a rule pattern cannot say.
//
// What the session fuses into the node before a chain is left to it: a node its plan folds
// into its producer (exec/plan_fusion.h FusesIntoProducer: a Relu, Clip or hard swish after a
// Conv, the Add of a constant bias after a MatMul by constant weights) does not start a chain.
#pragma once

#include "absl/status/statusor.h"
#include "rules/pass.h"

namespace ovfix::converter {

inline constexpr char kFuseElementwiseChains[] = "fuse_elementwise_chains";

// Fuses the element-wise chains of the main graph (bodies are left as written); returns how
// many chains became one node.
absl::StatusOr<int> FuseElementwiseChains(rules::PassContext& ctx);

}  // namespace ovfix::converter
