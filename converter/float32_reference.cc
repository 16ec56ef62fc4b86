#include "converter/float32_reference.h"

#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix::converter {
namespace {

constexpr int64_t kFloat16Code = static_cast<int64_t>(DataType::kFloat16);
constexpr int64_t kFloatCode = static_cast<int64_t>(DataType::kFloat);

void WidenValue(Value* v) {
  if (v != nullptr && v->is_tensor() && v->elem_type() == DataType::kFloat16) {
    v->set_elem_type(DataType::kFloat);
  }
}

// A tensor attribute (Constant's value, ConstantOfShape's value) held as float16, in float32.
absl::Status WidenTensorAttribute(Node& n, const char* name) {
  const onnx::AttributeProto* a = n.FindAttribute(name);
  if (a == nullptr || !a->has_t() ||
      a->t().data_type() != static_cast<int32_t>(onnx::TensorProto::FLOAT16)) {
    return absl::OkStatus();
  }
  OVFIX_ASSIGN_OR_RETURN(Tensor half, TensorFromProto(a->t(), ""));
  onnx::AttributeProto widened = *a;
  *widened.mutable_t() = TensorToProto(ConvertTensor(half, DataType::kFloat), a->t().name());
  n.SetAttribute(std::move(widened));
  return absl::OkStatus();
}

absl::Status WidenGraph(Graph& g) {
  for (Value* v : g.inputs()) WidenValue(v);
  for (Value* v : g.outputs()) WidenValue(v);
  for (Value* v : g.value_info()) WidenValue(v);
  for (Value* v : g.initializers()) {
    if (v->tensor().type() == DataType::kFloat16) {
      v->set_tensor(ConvertTensor(v->tensor(), DataType::kFloat));
    }
  }
  for (Node* n : g.nodes()) {
    for (const char* attribute : {"to", "dtype"}) {
      if (n->GetInt(attribute, 0) == kFloat16Code) {
        onnx::AttributeProto a = *n->FindAttribute(attribute);
        a.set_i(kFloatCode);
        n->SetAttribute(std::move(a));
      }
    }
    OVFIX_RETURN_IF_ERROR(WidenTensorAttribute(*n, "value"));
    for (size_t i = 0; i < n->num_outputs(); ++i) WidenValue(n->output(i));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Float32Copy(const Model& model) {
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> copy, CopyModel(model));
  OVFIX_RETURN_IF_ERROR(ForEachGraph(copy->graph(), WidenGraph));
  return copy;
}

}  // namespace ovfix::converter
