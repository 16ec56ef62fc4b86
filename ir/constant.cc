#include "ir/constant.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ovfix {

bool IsConstant(const Value* v) {
  if (v == nullptr) return false;
  if (v->is_initializer()) return !v->is_graph_input();
  const Node* p = v->producer();
  return p != nullptr && (p->domain().empty() || p->domain() == "ai.onnx") &&
         p->op_type() == "Constant" && p->num_inputs() == 0 && !p->HasAttribute("sparse_value");
}

absl::StatusOr<Tensor> ConstantValue(const Value* v) {
  if (!IsConstant(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", v == nullptr ? "" : v->name(), "' is not a constant"));
  }
  if (v->is_initializer()) return v->tensor();
  return ConstantNodeValue(*v->producer());
}

absl::StatusOr<Tensor> ConstantNodeValue(const Node& p) {
  if (p.HasAttribute("value")) return p.GetTensor("value");
  if (p.HasAttribute("value_float")) {
    return Tensor::FromVector<float>(DataType::kFloat, {}, {p.GetFloat("value_float", 0)});
  }
  if (p.HasAttribute("value_int")) {
    return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {p.GetInt("value_int", 0)});
  }
  if (p.HasAttribute("value_floats")) {
    std::vector<float> v = p.GetFloats("value_floats");
    return Tensor::FromVector<float>(DataType::kFloat, {static_cast<int64_t>(v.size())}, v);
  }
  if (p.HasAttribute("value_ints")) {
    std::vector<int64_t> v = p.GetInts("value_ints");
    return Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
  }
  if (const onnx::AttributeProto* a = p.FindAttribute("value_string")) {
    return Tensor({}, {a->s()});
  }
  if (const onnx::AttributeProto* a = p.FindAttribute("value_strings")) {
    std::vector<std::string> v(a->strings().begin(), a->strings().end());
    const int64_t n = static_cast<int64_t>(v.size());
    return Tensor({n}, std::move(v));
  }
  return absl::InvalidArgumentError(absl::StrCat(p.Describe(), ": no value attribute"));
}

}  // namespace ovfix
