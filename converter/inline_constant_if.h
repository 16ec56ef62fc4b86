// If nodes whose condition became a constant (folded from shapes the conversion fixed) are
// replaced by the branch they always take. The other branch never runs, but onnxruntime
// infers the shapes of both when it loads a model, and a branch that the fixed shapes rule
// out can fail there: silero VAD's 8 kHz decoder squeezes a dim that is 1 only for inputs
// the fixed 512 samples exclude ("Dimension of input 2 must be 1 instead of 2"), although
// the condition that guards it is false for every input the written model accepts.
#pragma once

#include "absl/status/statusor.h"
#include "ir/model.h"

namespace ovfix::converter {

// Inlines, in every graph of `model`, each If whose condition is a constant (an initializer
// or Constant node of this graph or an outer one): the taken branch's nodes, initializers
// and value_info move into the If's graph in its place, and its outputs reach the If's
// outputs through Identity nodes. Returns how many If nodes went. What the model computes
// is unchanged for every input.
absl::StatusOr<int> InlineConstantIfs(Model& model);

}  // namespace ovfix::converter
