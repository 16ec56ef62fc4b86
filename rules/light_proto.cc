#include "rules/light_proto.h"

#include "absl/strings/str_cat.h"
#include "ir/message_text.h"
#include "ir/model_check.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/tensor_proto.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "rules/pass.h"

namespace ovfix::rules {
namespace {

void WriteValueInfo(const Value* v, onnx::ValueInfoProto* out) {
  out->set_name(v->name());
  if (v->type().value_case() != onnx::TypeProto::VALUE_NOT_SET) *out->mutable_type() = v->type();
}

void WriteGraph(const Graph& g, size_t max_inline_bytes, onnx::GraphProto* out) {
  *out = g.extras();
  if (!g.name().empty()) out->set_name(g.name());
  for (const Node* n : g.nodes()) {
    auto* np = out->add_node();
    for (const Value* v : n->inputs()) np->add_input(v != nullptr ? v->name() : "");
    for (const Value* v : n->outputs()) np->add_output(v != nullptr ? v->name() : "");
    if (!n->name().empty()) np->set_name(n->name());
    np->set_op_type(n->op_type());
    if (!n->domain().empty()) np->set_domain(n->domain());
    for (const onnx::AttributeProto& a : n->attributes()) {
      auto* ap = np->add_attribute();
      *ap = a;
      for (const Subgraph& s : n->subgraphs()) {
        if (s.attribute != a.name()) continue;
        *(s.index < 0 ? ap->mutable_g() : ap->add_graphs()) = GraphToProto(*s.graph);
      }
    }
  }
  for (const Value* v : g.inputs()) WriteValueInfo(v, out->add_input());
  for (const Value* v : g.initializers()) {
    const Tensor& t = v->tensor();
    if (t.type() == DataType::kString || t.nbytes() <= max_inline_bytes) {
      *out->add_initializer() = TensorToProto(t, v->name());
    } else if (!v->is_graph_input()) {
      WriteValueInfo(v, out->add_input());
    }
  }
  for (const Value* v : g.outputs()) WriteValueInfo(v, out->add_output());
  for (const Value* v : g.value_info()) WriteValueInfo(v, out->add_value_info());
}

}  // namespace

onnx::ModelProto LightModelProto(const Model& model, size_t max_inline_bytes) {
  onnx::ModelProto proto = model.extras();
  WriteGraph(model.graph(), max_inline_bytes, proto.mutable_graph());
  return proto;
}

absl::Status CheckLightProto(onnx::ModelProto& proto, bool data_propagation) {
  try {
    CheckModelProto(proto);
    onnx::ShapeInferenceOptions si;
    si.check_type = !UsesTypesOnnxLibraryLacks(proto);
    si.error_mode = 1;
    si.enable_data_propagation = data_propagation;
    onnx::shape_inference::InferShapes(proto, InferenceSchemas(), si);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Condensed(e.what()));
  }
  return absl::OkStatus();
}

absl::Status InferShapesAndCheck(Model& model) {
  onnx::ModelProto proto = LightModelProto(model);
  absl::Status status = CheckLightProto(proto, NeedsDataPropagation(model));
  ApplyInferredTypes(proto.graph(), model.graph());
  return status;
}

absl::Status InferTypes(PassContext& ctx) {
  const std::vector<RewriteRecord>& records = ctx.rewriter.records();
  const size_t now = records.size();
  if (ctx.types_inferred_at != nullptr && *ctx.types_inferred_at <= now) {
    // Rewrites since the last inference that only rewired or removed nodes (or were rolled
    // back) leave every value's type as it was.
    bool changed = false;
    for (size_t i = *ctx.types_inferred_at; i < now && !changed; ++i) {
      changed = records[i].new_types && !records[i].rolled_back;
    }
    if (!changed) {
      *ctx.types_inferred_at = now;
      return absl::OkStatus();
    }
  }
  absl::Status s = InferShapesLight(ctx.model);
  if (s.ok() && ctx.types_inferred_at != nullptr) *ctx.types_inferred_at = now;
  return s;
}

absl::Status InferShapesLight(Model& model) {
  onnx::ModelProto proto = LightModelProto(model);
  return InferShapesOfCopy(proto, /*strict=*/false, /*data_propagation=*/true, model);
}

}  // namespace ovfix::rules
