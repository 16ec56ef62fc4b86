// Constants: values known before the model runs, and their data. The one definition every
// part of ovfix uses (rules, passes, validation, the executor's Constant kernel).
#pragma once

#include "absl/status/statusor.h"
#include "ir/node.h"
#include "ir/tensor.h"
#include "ir/value.h"

namespace ovfix {

// Whether `v` is known before the model runs: an initializer that is not also a graph input
// (a caller may feed those), or the output of a default-domain Constant node with a dense
// value. False for nullptr.
bool IsConstant(const Value* v);
// The data of a constant value (IsConstant): the initializer's tensor, or the Constant's in
// any of its dense forms. InvalidArgument for any other value.
absl::StatusOr<Tensor> ConstantValue(const Value* v);
// The value of a Constant node in any dense form (value, value_float(s), value_int(s),
// value_string(s)); InvalidArgument for a sparse one or none.
absl::StatusOr<Tensor> ConstantNodeValue(const Node& constant);

}  // namespace ovfix
