#include "ir/shape_inference.h"

#include "absl/strings/str_cat.h"
#include "ir/message_text.h"
#include "ir/model_io.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

namespace ovfix {
namespace {

// Copies inferred value_info back onto the values, graph by graph (subgraphs walked in the
// same order as they were written).
void ApplyInferred(const onnx::GraphProto& gp, Graph& g) {
  for (const auto& vi : gp.value_info()) {
    if (Value* v = g.FindValue(vi.name()); v != nullptr && !v->is_initializer()) {
      *v->mutable_type() = vi.type();
    }
  }
  for (const auto& vi : gp.output()) {
    if (Value* v = g.FindValue(vi.name()); v != nullptr && !v->is_initializer() && vi.has_type()) {
      *v->mutable_type() = vi.type();
    }
  }
  auto nodes = g.NodeList();
  for (int i = 0; i < gp.node_size() && i < static_cast<int>(nodes.size()); ++i) {
    for (auto& s : nodes[i]->subgraphs()) {
      for (const auto& attr : gp.node(i).attribute()) {
        if (attr.name() != s.attribute) continue;
        if (s.index < 0 && attr.has_g()) ApplyInferred(attr.g(), *s.graph);
        if (s.index >= 0 && s.index < attr.graphs_size()) ApplyInferred(attr.graphs(s.index), *s.graph);
      }
    }
  }
}

}  // namespace

absl::Status InferShapes(Model& model, const ShapeInferenceOptions& options) {
  onnx::ModelProto proto = ModelToProto(model);
  onnx::ShapeInferenceOptions onnx_options;
  onnx_options.check_type = false;
  onnx_options.error_mode = options.strict ? 1 : 0;
  onnx_options.enable_data_propagation = options.data_propagation;
  try {
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), onnx_options);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape inference failed: ", Condensed(e.what())));
  }
  ApplyInferred(proto.graph(), model.graph());
  return absl::OkStatus();
}

}  // namespace ovfix
