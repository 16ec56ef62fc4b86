// dead_code_elimination: removes nodes whose outputs nothing reads and that are not graph
// outputs, and the initializers nothing reads any more. Graph inputs always stay.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

// The pass (registry.cc) and its name; returns how many rewrites it committed.
inline constexpr char kDeadCodeElimination[] = "dead_code_elimination";
absl::StatusOr<int> EliminateDeadCode(PassContext& ctx);

}  // namespace ovfix::rules
