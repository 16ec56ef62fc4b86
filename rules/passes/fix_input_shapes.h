// fix_input_shapes: `--batch N` sets the first dim of every graph input whose first dim is
// not a number; `--input-shape NAME=1x3x224x224` sets every dim of one input. Shape
// inference then carries the numbers through the graph, which lets constant_folding turn
// shape arithmetic (Shape -> Gather -> Concat) into constants.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

// The pass (registry.cc) and its name; returns how many rewrites it committed.
inline constexpr char kFixInputShapes[] = "fix_input_shapes";
absl::StatusOr<int> FixInputShapes(PassContext& ctx);

}  // namespace ovfix::rules
