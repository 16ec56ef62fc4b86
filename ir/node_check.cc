#include "ir/node_check.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/message_text.h"
#include "ir/op_schemas.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "ir/value.h"
#include "onnx/defs/schema.h"

namespace ovfix {
namespace {

bool DefaultDomain(const Node& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

template <typename... Args>
absl::Status NodeError(const Node& node, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", args...));
}

// The node as onnx's schema check reads it: names, and attributes with their kind but
// without payload (a Constant's tensor can be large; subgraphs live in the node's
// subgraphs()). Verify reads neither tensors nor graphs, only that they are there.
onnx::NodeProto SchemaView(const Node& node) {
  onnx::NodeProto proto;
  proto.set_op_type(node.op_type());
  proto.set_name(node.name());
  if (!DefaultDomain(node)) proto.set_domain(node.domain());
  for (const Value* v : node.inputs()) proto.add_input(v != nullptr ? v->name() : "");
  for (const Value* v : node.outputs()) proto.add_output(v != nullptr ? v->name() : "");
  for (const onnx::AttributeProto& a : node.attributes()) {
    onnx::AttributeProto* view = proto.add_attribute();
    switch (a.type()) {
      case onnx::AttributeProto::TENSOR:
        view->set_name(a.name());
        view->set_type(a.type());
        view->mutable_t();
        break;
      case onnx::AttributeProto::TENSORS:
        view->set_name(a.name());
        view->set_type(a.type());
        for (int i = 0; i < a.tensors_size(); ++i) view->add_tensors();
        break;
      case onnx::AttributeProto::GRAPH:
        *view = a;
        view->mutable_g();
        break;
      case onnx::AttributeProto::GRAPHS:
        *view = a;
        for (const Subgraph& s : node.subgraphs()) {
          if (s.attribute == a.name()) view->add_graphs();
        }
        break;
      default:
        *view = a;
    }
  }
  return proto;
}

absl::Status CheckSchema(const Node& node, int64_t opset) {
  const std::string domain = DefaultDomain(node) ? "" : node.domain();
  const onnx::OpSchema* schema = FindSchema(node.op_type(), static_cast<int>(opset), domain);
  // No schema (a custom domain, an op onnx does not have): what runs it checks it.
  if (schema == nullptr) return absl::OkStatus();
  try {
    schema->Verify(SchemaView(node));
  } catch (const std::exception& e) {
    return NodeError(node, Condensed(e.what()));
  }
  return absl::OkStatus();
}

absl::Status CheckTensorAttributes(const Node& node) {
  for (const onnx::AttributeProto& a : node.attributes()) {
    std::vector<const onnx::TensorProto*> tensors;
    if (a.has_t()) tensors.push_back(&a.t());
    for (const onnx::TensorProto& t : a.tensors()) tensors.push_back(&t);
    if (a.has_sparse_tensor()) {
      tensors.push_back(&a.sparse_tensor().values());
      tensors.push_back(&a.sparse_tensor().indices());
    }
    for (const onnx::TensorProto* t : tensors) {
      if (absl::Status s = CheckTensorProto(*t); !s.ok()) {
        return NodeError(node, "attribute '", a.name(), "': ", s.message());
      }
    }
  }
  return absl::OkStatus();
}

bool HasSpatialAttributes(const Node& node) {
  static const absl::flat_hash_set<std::string_view> kOps = {
      "Conv",    "ConvTranspose", "ConvInteger", "QLinearConv",
      "MaxPool", "AveragePool",   "LpPool",      "MaxUnpool"};
  return DefaultDomain(node) && kOps.contains(node.op_type());
}

// Ops whose `axis` attribute indexes the dims of input 0, in [-rank, rank) as their kernels
// check it.
bool AxisIndexesFirstInput(const Node& node) {
  static const absl::flat_hash_set<std::string_view> kOps = {
      "LayerNormalization",
      "Softmax",
      "LogSoftmax",
      "Hardmax",
      "ArgMax",
      "ArgMin",
      "Gather",
      "GatherElements",
      "ScatterElements",
      "Concat",
      "Split",
  };
  return DefaultDomain(node) && kOps.contains(node.op_type());
}

absl::Status CheckAgainstKnownRanks(const Node& node, int64_t /*opset*/) {
  const Value* first = node.input(0);
  const int rank = first != nullptr ? first->rank() : -1;
  if (rank < 0) return absl::OkStatus();
  if (HasSpatialAttributes(node) && rank >= 2) {
    OVFIX_RETURN_IF_ERROR(CheckSpatialAttributes(node, rank - 2));
  }
  if (AxisIndexesFirstInput(node) && node.HasAttribute("axis")) {
    return NormalizedAxis(node, node.GetInt("axis", 0), rank).status();
  }
  return absl::OkStatus();
}

// `check` on every node of `graph` and of the bodies inside it, with the opset of its domain.
absl::Status CheckGraphNodes(const Graph& graph, const Model& model,
                             absl::Status (*check)(const Node&, int64_t opset)) {
  for (const Node* node : graph.nodes()) {
    OVFIX_RETURN_IF_ERROR(check(*node, model.OpsetVersion(node->domain())));
    for (const Subgraph& body : node->subgraphs()) {
      OVFIX_RETURN_IF_ERROR(CheckGraphNodes(*body.graph, model, check));
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// A convolution or pooling input of a declared rank below 3 (batch, channels, one spatial axis
// at least), or a convolution weight whose rank differs from the input's: onnx 1.12's
// inference indexes spatial dims that are not there (ConvTranspose's crashed on a rank-2 input,
// QLinearConv's on a rank-3 input with a rank-4 weight).
absl::Status CheckSpatialRanks(const Node& node) {
  const Value* x = node.input(0);
  const int rank = x != nullptr ? x->rank() : -1;
  if (rank >= 0 && rank < 3) {
    return NodeError(node, "input of rank ", rank, ": needs batch, channels and spatial axes");
  }
  // The weight: input 1, QLinearConv's input 3 (after x's scale and zero point).
  const bool weight_second = node.op_type() == "Conv" || node.op_type() == "ConvTranspose" ||
                             node.op_type() == "ConvInteger";
  const Value* w = weight_second                     ? node.input(1)
                   : node.op_type() == "QLinearConv" ? node.input(3)
                                                     : nullptr;
  const int weight_rank = w != nullptr ? w->rank() : -1;
  if (rank >= 0 && weight_rank >= 0 && weight_rank != rank) {
    return NodeError(node, "weight of rank ", weight_rank, " for an input of rank ", rank);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckNode(const Node& node, int64_t opset) {
  if (opset >= 0) {
    OVFIX_RETURN_IF_ERROR(CheckSchema(node, opset));
  }
  OVFIX_RETURN_IF_ERROR(CheckTensorAttributes(node));
  if (HasSpatialAttributes(node)) {
    OVFIX_RETURN_IF_ERROR(CheckSpatialRanks(node));
    return CheckSpatialAttributes(node, -1);
  }
  return absl::OkStatus();
}

absl::Status CheckNodes(const Model& model) {
  return CheckGraphNodes(model.graph(), model, &CheckNode);
}

absl::Status CheckNodesAgainstRanks(const Model& model) {
  return CheckGraphNodes(model.graph(), model, &CheckAgainstKnownRanks);
}

absl::Status CheckSpatialAttributes(const Node& node, int64_t spatial_rank) {
  struct List {
    const char* name;
    std::vector<int64_t> values;
    int64_t per_axis;
  };
  List lists[] = {{"kernel_shape", node.GetInts("kernel_shape"), 1},
                  {"strides", node.GetInts("strides"), 1},
                  {"dilations", node.GetInts("dilations"), 1},
                  {"pads", node.GetInts("pads"), 2}};
  int64_t rank = spatial_rank;
  for (const List& list : lists) {
    if (!node.HasAttribute(list.name)) continue;
    const int64_t size = static_cast<int64_t>(list.values.size());
    if (rank < 0 && size % list.per_axis == 0) rank = size / list.per_axis;
    if (rank < 0 || size != rank * list.per_axis) {
      return rank < 0 ? NodeError(node, list.name, " must have two values per spatial axis")
                      : NodeError(node, list.name, " must have ", rank * list.per_axis, " values");
    }
  }
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  if (!auto_pad.empty() && auto_pad != "NOTSET" && auto_pad != "VALID" &&
      auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return NodeError(node, "unknown auto_pad '", auto_pad, "'");
  }
  // Far beyond any real model; keeps every size computed from them well inside int64.
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (const List& list : lists) {
    for (int64_t v : list.values) {
      if (v > kLimit) return NodeError(node, "kernel, strides, dilations or pads too large");
    }
  }
  for (int64_t v : lists[0].values) {
    if (v <= 0) return NodeError(node, "kernel dims must be positive");
  }
  for (int64_t v : lists[1].values) {
    if (v <= 0) return NodeError(node, "strides must be positive");
  }
  for (int64_t v : lists[2].values) {
    if (v <= 0) return NodeError(node, "dilations must be positive");
  }
  for (int64_t v : lists[3].values) {
    if (v < 0) return NodeError(node, "pads must not be negative");
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> NormalizedAxis(const Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return NodeError(node, "axis ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace ovfix
