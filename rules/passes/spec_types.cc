#include "rules/passes/spec_types.h"

#include <algorithm>
#include <string>

#include "ir/op_schemas.h"
#include "onnx/defs/schema.h"

namespace ovfix::rules {

bool SpecAllowsType(const Node& n, int64_t opset, bool output, size_t index, onnx::DataType type) {
  const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
  if (!domain.empty()) return true;
  const onnx::OpSchema* schema = FindSchema(n.op_type(), static_cast<int>(opset), domain);
  if (schema == nullptr) return true;
  const auto& formals = output ? schema->outputs() : schema->inputs();
  if (formals.empty()) return true;
  const onnx::OpSchema::FormalParameter& formal = formals[std::min(index, formals.size() - 1)];
  return formal.GetTypes().contains(type);
}

}  // namespace ovfix::rules
