// What onnx's operator schemas allow for a node's inputs and outputs, asked by the fp16 and the
// bf16 island policies (is this op defined for float16 / bfloat16 at this opset?).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/node.h"
#include "onnx/defs/data_type_utils.h"

namespace ovfix::rules {

// Whether onnx's schema of `n` (default-domain `opset`) lets its input or output `index` have
// `type` (e.g. "tensor(float16)" as onnx::Utils::DataTypeUtils::ToType makes it); true when
// there is no schema to ask (ops outside onnx). The last formal parameter covers the rest
// when it is variadic.
bool SpecAllowsType(const Node& n, int64_t opset, bool output, size_t index, onnx::DataType type);

}  // namespace ovfix::rules
