// constant_folding: a node whose inputs are all constants is evaluated with the evaluator the
// pipeline provides and replaced by initializers holding its outputs (up to `fold_size_limit`
// elements each); Shape/Size of a value whose dims are all known become constants too, so
// shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) folds away once the
// shapes are static. Nodes that become dead are removed with each rewrite.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

// The pass (registry.cc) and its name; returns how many rewrites it committed.
inline constexpr char kConstantFolding[] = "constant_folding";
absl::StatusOr<int> FoldConstants(PassContext& ctx);

}  // namespace ovfix::rules
