#include "ir/shape_inference.h"

#include <memory>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/graph_walk.h"
#include "ir/message_text.h"
#include "ir/model_io.h"
#include "ir/node_check.h"
#include "ir/op_schemas.h"
#include "ir/status_macros.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"
#include "onnx/shape_inference/implementation.h"

namespace ovfix {

const onnx::ISchemaRegistry* InferenceSchemas() { return SchemaRegistry(); }

bool NeedsDataPropagation(const Model& model) {
  // Graphs are only read here; GraphsRecursive takes a mutable root.
  for (const Graph* g : GraphsRecursive(const_cast<Graph&>(model.graph()))) {
    for (const Node* n : g->nodes()) {
      if (n->domain().empty() && (n->op_type() == "Shape" || n->op_type() == "Size")) {
        return true;
      }
      bool reads_shape_constant = false;
      for (const Value* v : n->inputs()) {
        if (v == nullptr) continue;
        if (v->is_initializer()) {
          const Tensor& t = v->tensor();
          reads_shape_constant |= (t.type() == DataType::kInt64 || t.type() == DataType::kInt32) &&
                                  t.dims().size() <= 1;
        } else if (v->producer() != nullptr && v->producer()->op_type() == "Constant") {
          reads_shape_constant = true;
        }
      }
      if (!reads_shape_constant) continue;
      const onnx::OpSchema* schema =
          FindSchema(n->op_type(), static_cast<int>(model.OpsetVersion(n->domain())), n->domain());
      if (schema == nullptr || schema->has_data_propagation_function()) return true;
    }
  }
  return false;
}

namespace {

// onnx 1.12's inference writes what its formulas give, a negative dim too (a pooling window
// wider than the padded input): such a dim is unknown here, as no tensor can have it (a file
// that declared it would be refused on load).
void ForgetNegativeDims(onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      if (!type.tensor_type().has_shape()) break;  // an unknown rank stays unknown
      for (onnx::TensorShapeProto::Dimension& d :
           *type.mutable_tensor_type()->mutable_shape()->mutable_dim()) {
        if (d.has_dim_value() && d.dim_value() < 0) d.clear_dim_value();
      }
      break;
    case onnx::TypeProto::kSequenceType:
      ForgetNegativeDims(*type.mutable_sequence_type()->mutable_elem_type());
      break;
    case onnx::TypeProto::kOptionalType:
      ForgetNegativeDims(*type.mutable_optional_type()->mutable_elem_type());
      break;
    case onnx::TypeProto::kMapType:
      ForgetNegativeDims(*type.mutable_map_type()->mutable_value_type());
      break;
    default:
      break;
  }
}

}  // namespace

void ApplyInferredTypes(const onnx::GraphProto& gp, Graph& g) {
  auto apply = [&](const onnx::ValueInfoProto& vi) {
    Value* v = g.FindValue(vi.name());
    if (v == nullptr || v->is_initializer() || !vi.has_type()) return;
    *v->mutable_type() = vi.type();
    ForgetNegativeDims(*v->mutable_type());
  };
  for (const auto& vi : gp.value_info()) apply(vi);
  for (const auto& vi : gp.output()) apply(vi);
  auto nodes = g.NodeList();
  for (int i = 0; i < gp.node_size() && i < static_cast<int>(nodes.size()); ++i) {
    for (auto& s : nodes[i]->subgraphs()) {
      for (const auto& attr : gp.node(i).attribute()) {
        if (attr.name() != s.attribute) continue;
        if (s.index < 0 && attr.has_g()) ApplyInferredTypes(attr.g(), *s.graph);
        if (s.index >= 0 && s.index < attr.graphs_size())
          ApplyInferredTypes(attr.graphs(s.index), *s.graph);
      }
    }
  }
}

absl::Status InferShapesOfCopy(onnx::ModelProto& proto, bool strict, bool data_propagation,
                               Model& model) {
  // onnx 1.12's inference dereferences the type of each graph input a node reads: with a
  // main-graph input declared without one (onnx's checker refuses such a model; rule tests
  // and partial models have them) it would crash, so the types stay as they are.
  for (const onnx::ValueInfoProto& input : proto.graph().input()) {
    if (!input.has_type()) return absl::OkStatus();
  }
  onnx::ShapeInferenceOptions onnx_options;
  onnx_options.check_type = false;
  onnx_options.error_mode = strict ? 1 : 0;
  onnx_options.enable_data_propagation = data_propagation && NeedsDataPropagation(model);
  try {
    onnx::shape_inference::InferShapes(proto, InferenceSchemas(), onnx_options);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape inference failed: ", Condensed(e.what())));
  }
  ApplyInferredTypes(proto.graph(), model.graph());
  return absl::OkStatus();
}

absl::Status InferShapes(Model& model, const ShapeInferenceOptions& options) {
  OVFIX_RETURN_IF_ERROR(CheckNodes(model));
  onnx::ModelProto proto = ModelToProto(model);
  return InferShapesOfCopy(proto, options.strict, options.data_propagation, model);
}

}  // namespace ovfix
