// Writing a shape into an onnx::TypeProto: what Value::set_shape does to a value's own type,
// for the passes that build a type apart from any value (rules/passes/fix_input_shapes.cc).
#pragma once

#include <vector>

#include "ir/value.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

// Sets the tensor shape of `type` to `dims` (an unknown dim without a symbol stays blank).
void SetTypeProtoDims(const std::vector<Dim>& dims, onnx::TypeProto& type);

}  // namespace ovfix
