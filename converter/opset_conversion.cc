#include "converter/opset_conversion.h"

#include <cmath>
#include <exception>
#include <functional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "converter/model_run.h"
#include "ir/constant.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/op_schemas.h"
#include "ir/shape_inference.h"
#include "ir/status_macros.h"
#include "onnx/defs/attr_proto_util.h"
#include "onnx/version_converter/convert.h"

namespace ovfix::converter {
namespace {

constexpr int64_t kLibraryOpset = kOnnxLibraryOpset;

bool IsDefault(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

int VersionAt(const Node& n, int64_t opset) {
  const onnx::OpSchema* s = FindSchema(n.op_type(), static_cast<int>(opset), "");
  return s == nullptr ? -1 : s->since_version();
}

absl::Status Cannot(const Node& n, int64_t opset, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat(n.Describe(), " (", n.op_type(), "-", VersionAt(n, opset), "): ", why));
}

// Node edits: new nodes go before the node being converted; Replace puts the last node of a
// rewrite in its place, writing its outputs (graph outputs keep their names).
class Edit {
 public:
  Edit(Graph& g, Node* n) : g_(g), n_(n) {}
  Value* Ints(const std::vector<int64_t>& values, bool scalar = false) {
    Tensor t = Tensor::FromVector(
        DataType::kInt64,
        scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(values.size())},
        values);
    return g_.AddInitializer(g_.UniqueName(absl::StrCat(n_->name(), "_const")), std::move(t));
  }
  // A scalar of the node's float type.
  Value* Scalar(double v) {
    Tensor t(FloatType(), {});
    t.SetFromDouble(0, v);
    return g_.AddInitializer(g_.UniqueName(absl::StrCat(n_->name(), "_const")), std::move(t));
  }
  DataType FloatType() const {
    const Value* x = n_->input(0);
    const DataType t = x != nullptr ? x->elem_type() : DataType::kUndefined;
    return IsFloatingPoint(t) ? t : DataType::kFloat;
  }
  Value* Op(std::string_view op, std::vector<Value*> inputs,
            std::vector<onnx::AttributeProto> attributes = {}) {
    // Named after its output, a new unique name: the node being converted may have no name,
    // and a rewrite may add two nodes of one op type (onnxruntime refuses equal node names).
    const std::string base = n_->name().empty() ? n_->output(0)->name() : n_->name();
    const std::string output = g_.UniqueName(absl::StrCat(base, "_", std::string(op)));
    Node* node = g_.AddNode(op, inputs, {output}, output, "", n_);
    for (auto& a : attributes) node->SetAttribute(std::move(a));
    return node->output(0);
  }
  // Replaces the node by `op(inputs)` writing the node's outputs.
  void Replace(std::string_view op, std::vector<Value*> inputs,
               std::vector<onnx::AttributeProto> attributes = {}) {
    // `op` may be the detached node's own op type: copied before the node goes.
    const std::string op_type(op);
    std::vector<Value*> outputs = n_->outputs();
    const std::string name = n_->name();
    Node* next = nullptr;
    std::vector<Node*> list = g_.NodeList();
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      if (list[i] == n_) next = list[i + 1];
    }
    g_.DetachNode(n_);
    Node* node = g_.AddNodeWithOutputs(op_type, inputs, outputs, name, "", next);
    for (auto& a : attributes) node->SetAttribute(std::move(a));
    n_ = node;
  }

 private:
  Graph& g_;
  Node* n_;
};

onnx::AttributeProto IntsAttribute(const std::string& name, const std::vector<int64_t>& v) {
  return onnx::MakeAttribute(name, v);
}

// ReduceMean over `axes` keeping dims, as opset `opset` writes it (axes an input from 18).
Value* ReduceMean(Edit& e, Value* x, const std::vector<int64_t>& axes, int64_t opset) {
  if (opset >= 18) return e.Op("ReduceMean", {x, e.Ints(axes)});
  return e.Op("ReduceMean", {x}, {IntsAttribute("axes", axes)});
}

absl::StatusOr<std::vector<int64_t>> ConstantInts(const Node& n, size_t input, int64_t opset,
                                                  const char* what) {
  const Value* v = n.input(input);
  absl::StatusOr<Tensor> t = ConstantValue(v);
  if (!t.ok()) return Cannot(n, opset, absl::StrCat("its ", what, " must be a constant"));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t->numel(); ++i) out.push_back(t->GetAsInt64(i));
  return out;
}

bool HasInput(const Node& n, size_t i) { return n.input(i) != nullptr; }

const absl::flat_hash_set<std::string_view>& ReducesWithAxesInputFrom18() {
  static const absl::flat_hash_set<std::string_view> kOps = {
      "ReduceL1",   "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
      "ReduceMean", "ReduceMin", "ReduceProd",   "ReduceSumSquare"};
  return kOps;
}

// ---- down: a node of opset > 17 written at opset 17 ----

absl::Status DownReduce(Graph& g, Node* n, int64_t opset) {
  std::vector<int64_t> axes;
  if (HasInput(*n, 1)) {
    OVFIX_ASSIGN_OR_RETURN(axes, ConstantInts(*n, 1, opset, "axes"));
  }
  if (axes.empty() && n->GetInt("noop_with_empty_axes", 0) != 0) {
    Edit(g, n).Replace("Identity", {n->input(0)});
    return absl::OkStatus();
  }
  std::vector<onnx::AttributeProto> attributes;
  if (!axes.empty()) attributes.push_back(IntsAttribute("axes", axes));
  attributes.push_back(onnx::MakeAttribute("keepdims", n->GetInt("keepdims", 1)));
  Edit(g, n).Replace(n->op_type(), {n->input(0)}, std::move(attributes));
  return absl::OkStatus();
}

absl::Status DownSplit(Graph& g, Node* n, int64_t opset) {
  const onnx::AttributeProto* count = n->FindAttribute("num_outputs");
  if (count == nullptr) return absl::OkStatus();
  const int64_t parts = count->i();
  n->RemoveAttribute("num_outputs");
  const Value* x = n->input(0);
  const int rank = x->rank();
  std::optional<std::vector<int64_t>> dims = x->static_shape();
  int64_t axis = n->GetInt("axis", 0);
  if (rank > 0 && axis < 0) axis += rank;
  if (dims.has_value() && axis >= 0 && axis < rank) {
    const int64_t total = (*dims)[static_cast<size_t>(axis)];
    const int64_t chunk = (total + parts - 1) / parts;
    std::vector<int64_t> sizes;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, total - chunk * i)));
    std::vector<Value*> inputs = {n->input(0), Edit(g, n).Ints(sizes)};
    std::vector<onnx::AttributeProto> attributes(n->attributes().begin(), n->attributes().end());
    Edit(g, n).Replace("Split", inputs, std::move(attributes));
    return absl::OkStatus();
  }
  // A dim not known before the run: Split-13 without sizes splits it evenly, which is what
  // num_outputs does whenever the dim divides (and fails at run time otherwise).
  (void)opset;
  return absl::OkStatus();
}

absl::Status DownPad(Graph& g, Node* n, int64_t opset) {
  if (n->GetString("mode", "constant") == "wrap") {
    return Cannot(*n, opset, "mode 'wrap' needs opset 19");
  }
  if (!HasInput(*n, 3)) return absl::OkStatus();
  const int rank = n->input(0)->rank();
  if (rank < 0) return Cannot(*n, opset, "Pad with `axes` needs the input's rank");
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ConstantInts(*n, 3, opset, "axes"));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ConstantInts(*n, 1, opset, "pads"));
  std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < axes.size() && 2 * i + 1 <= pads.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    full[static_cast<size_t>(a)] = pads[i];
    full[static_cast<size_t>(a + rank)] = pads[i + axes.size()];
  }
  Edit edit(g, n);
  std::vector<Value*> inputs = {n->input(0), edit.Ints(full)};
  if (HasInput(*n, 2)) inputs.push_back(n->input(2));
  std::vector<onnx::AttributeProto> attributes(n->attributes().begin(), n->attributes().end());
  edit.Replace("Pad", inputs, std::move(attributes));
  return absl::OkStatus();
}

absl::Status DropDefault(Node* n, int64_t opset, const char* attribute, int64_t default_value,
                         const char* needs) {
  if (n->FindAttribute(attribute) != nullptr &&
      n->GetInt(attribute, default_value) != default_value) {
    return Cannot(*n, opset, absl::StrCat(attribute, " needs ", needs));
  }
  n->RemoveAttribute(attribute);
  return absl::OkStatus();
}

absl::Status DownResize(Node* n, int64_t opset) {
  OVFIX_RETURN_IF_ERROR(DropDefault(n, opset, "antialias", 0, "opset 18"));
  if (n->FindAttribute("axes") != nullptr) return Cannot(*n, opset, "axes needs opset 18");
  if (n->GetString("keep_aspect_ratio_policy", "stretch") != "stretch") {
    return Cannot(*n, opset, "keep_aspect_ratio_policy needs opset 18");
  }
  n->RemoveAttribute("keep_aspect_ratio_policy");
  if (n->GetString("coordinate_transformation_mode", "") == "half_pixel_symmetric") {
    return Cannot(*n, opset, "half_pixel_symmetric needs opset 19");
  }
  return absl::OkStatus();
}

absl::Status DownQuantize(Node* n, int64_t opset) {
  OVFIX_RETURN_IF_ERROR(DropDefault(n, opset, "block_size", 0, "opset 21"));
  OVFIX_RETURN_IF_ERROR(DropDefault(n, opset, "output_dtype", 0, "opset 21"));
  OVFIX_RETURN_IF_ERROR(DropDefault(n, opset, "precision", 0, "opset 23"));
  n->RemoveAttribute("saturate");
  return absl::OkStatus();
}

absl::Status DownDft(Graph& g, Node* n, int64_t opset) {
  int64_t axis = -2;  // DFT-20's default
  if (HasInput(*n, 2)) {
    OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> a, ConstantInts(*n, 2, opset, "axis"));
    if (a.size() != 1) return Cannot(*n, opset, "axis must be a scalar");
    axis = a[0];
  }
  const int rank = n->input(0)->rank();
  if (axis < 0) {
    if (rank < 0) return Cannot(*n, opset, "a negative axis needs the input's rank at opset 17");
    axis += rank;
  }
  std::vector<Value*> inputs = {n->input(0)};
  if (HasInput(*n, 1)) inputs.push_back(n->input(1));
  std::vector<onnx::AttributeProto> attributes;
  for (const auto& a : n->attributes()) attributes.push_back(a);
  attributes.push_back(onnx::MakeAttribute("axis", axis));
  Edit(g, n).Replace("DFT", inputs, std::move(attributes));
  return absl::OkStatus();
}

absl::Status DownGridSample(Node* n, int64_t opset) {
  if (n->input(0)->rank() != 4)
    return Cannot(*n, opset, "a grid of rank other than 4 needs opset 20");
  const std::string mode = n->GetString("mode", "linear");
  const std::string old = mode == "linear" ? "bilinear" : mode == "cubic" ? "bicubic" : mode;
  n->SetAttribute(onnx::MakeAttribute("mode", old));
  return absl::OkStatus();
}

// x * 0.5 * (1 + erf(x / sqrt(2))), or the tanh form.
absl::Status DownGelu(Graph& g, Node* n, int64_t /*opset*/) {
  Edit e(g, n);
  Value* x = n->input(0);
  if (n->GetString("approximate", "none") == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value* cube = e.Op("Mul", {e.Op("Mul", {x, x}), x});
    Value* inner = e.Op("Add", {x, e.Op("Mul", {cube, e.Scalar(0.044715)})});
    Value* t = e.Op("Tanh", {e.Op("Mul", {inner, e.Scalar(std::sqrt(2.0 / M_PI))})});
    Value* half_x = e.Op("Mul", {x, e.Scalar(0.5)});
    e.Replace("Mul", {half_x, e.Op("Add", {t, e.Scalar(1.0)})});
    return absl::OkStatus();
  }
  Value* erf = e.Op("Erf", {e.Op("Div", {x, e.Scalar(std::sqrt(2.0))})});
  Value* half_x = e.Op("Mul", {x, e.Scalar(0.5)});
  e.Replace("Mul", {half_x, e.Op("Add", {erf, e.Scalar(1.0)})});
  return absl::OkStatus();
}

absl::Status DownMish(Graph& g, Node* n, int64_t /*opset*/) {
  Edit e(g, n);
  Value* x = n->input(0);
  e.Replace("Mul", {x, e.Op("Tanh", {e.Op("Softplus", {x})})});
  return absl::OkStatus();
}

absl::Status DownSwish(Graph& g, Node* n, int64_t /*opset*/) {
  Edit e(g, n);
  Value* x = n->input(0);
  const float alpha = n->GetFloat("alpha", 1.0f);
  Value* scaled = alpha == 1.0f ? x : e.Op("Mul", {x, e.Scalar(alpha)});
  e.Replace("Mul", {x, e.Op("Sigmoid", {scaled})});
  return absl::OkStatus();
}

// x / sqrt(mean(x^2 over the axes from `axis`) + epsilon) * scale, in float when stash_type
// asks for it (the default) and x is not float.
absl::Status DownRmsNormalization(Graph& g, Node* n, int64_t opset, int64_t to) {
  const int rank = n->input(0)->rank();
  if (rank < 0) return Cannot(*n, opset, "needs the input's rank at opset 17");
  int64_t axis = n->GetInt("axis", -1);
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  Edit e(g, n);
  Value* x = n->input(0);
  Value* mean_square = ReduceMean(e, e.Op("Mul", {x, x}), axes, to);
  const double epsilon = n->GetFloat("epsilon", 1e-5f);
  Value* rms = e.Op("Sqrt", {e.Op("Add", {mean_square, e.Scalar(epsilon)})});
  e.Replace("Mul", {e.Op("Div", {x, rms}), n->input(1)});
  return absl::OkStatus();
}

// Per group: reshape [N, G, -1], normalize over the last axis, reshape back, then the
// per-channel (21) or per-group (18) scale and bias.
absl::Status DownGroupNormalization(Graph& g, Node* n, int64_t opset, int version, int64_t to) {
  const int rank = n->input(0)->rank();
  if (rank < 3) return Cannot(*n, opset, "needs the input's rank (3 or more) at opset 17");
  const int64_t groups = n->GetInt("num_groups", 0);
  if (groups <= 0) return Cannot(*n, opset, "num_groups must be positive");
  Edit e(g, n);
  Value* x = n->input(0);
  Value* grouped = e.Op("Reshape", {x, e.Ints({0, groups, -1})});
  Value* mean = ReduceMean(e, grouped, {2}, to);
  Value* centered = e.Op("Sub", {grouped, mean});
  Value* variance = ReduceMean(e, e.Op("Mul", {centered, centered}), {2}, to);
  const double epsilon = n->GetFloat("epsilon", 1e-5f);
  Value* normalized =
      e.Op("Div", {centered, e.Op("Sqrt", {e.Op("Add", {variance, e.Scalar(epsilon)})})});
  Value* scale = n->input(1);
  Value* bias = n->input(2);
  if (version < 21) {
    // Scale and bias per group: applied before reshaping back, as [G, 1].
    Value* s = e.Op("Reshape", {scale, e.Ints({groups, 1})});
    Value* b = e.Op("Reshape", {bias, e.Ints({groups, 1})});
    Value* affine = e.Op("Add", {e.Op("Mul", {normalized, s}), b});
    e.Replace("Reshape", {affine, e.Op("Shape", {x})});
    return absl::OkStatus();
  }
  Value* restored = e.Op("Reshape", {normalized, e.Op("Shape", {x})});
  std::vector<int64_t> channel_shape(static_cast<size_t>(rank - 1), 1);
  channel_shape[0] = -1;
  Value* s = e.Op("Reshape", {scale, e.Ints(channel_shape)});
  Value* b = e.Op("Reshape", {bias, e.Ints(channel_shape)});
  e.Replace("Add", {e.Op("Mul", {restored, s}), b});
  return absl::OkStatus();
}

absl::Status Down(Graph& g, Node* n, int64_t from, int64_t to) {
  const int version = VersionAt(*n, from);
  if (version <= to) return absl::OkStatus();
  const std::string& op = n->op_type();
  if (ReducesWithAxesInputFrom18().contains(op)) {
    if (version >= 20 && n->input(0)->elem_type() == DataType::kBool) {
      return Cannot(*n, from, "bool input needs opset 20");
    }
    return to < 18 ? DownReduce(g, n, from) : absl::OkStatus();
  }
  if (op == "Split") return DownSplit(g, n, from);
  if (op == "Pad") return DownPad(g, n, from);
  if (op == "Resize") return DownResize(n, from);
  if (op == "LpPool" || op == "AveragePool") {
    if (op == "LpPool") OVFIX_RETURN_IF_ERROR(DropDefault(n, from, "ceil_mode", 0, "opset 18"));
    for (int64_t v : n->GetInts("dilations")) {
      if (v != 1) return Cannot(*n, from, absl::StrCat("dilations need opset ", version));
    }
    n->RemoveAttribute("dilations");
    return absl::OkStatus();
  }
  if (op == "Cast" || op == "CastLike") {
    n->RemoveAttribute("saturate");
    n->RemoveAttribute("round_mode");
    return absl::OkStatus();
  }
  if (op == "QuantizeLinear" || op == "DequantizeLinear") return DownQuantize(n, from);
  if (op == "DFT") return DownDft(g, n, from);
  if (op == "GridSample") return DownGridSample(n, from);
  if (op == "Gelu") return DownGelu(g, n, from);
  if (op == "Mish") return DownMish(g, n, from);
  if (op == "Swish") return DownSwish(g, n, from);
  if (op == "RMSNormalization") return DownRmsNormalization(g, n, from, to);
  if (op == "GroupNormalization") return DownGroupNormalization(g, n, from, version, to);
  // Versions that only added types: the node stays as it is (its types are checked by the
  // converted model's validation).
  const int older = VersionAt(*n, to);
  if (older < 0) {
    return Cannot(*n, from, absl::StrCat("no equivalent at opset ", to));
  }
  return absl::OkStatus();
}

// ---- up: a node of opset <= 17 written at a later opset ----

absl::Status Up(Graph& g, Node* n, int64_t from, int64_t to) {
  const std::string& op = n->op_type();
  if (ReducesWithAxesInputFrom18().contains(op) && to >= 18 && VersionAt(*n, from) < 18) {
    if (const onnx::AttributeProto* a = n->FindAttribute("axes")) {
      std::vector<int64_t> axes(a->ints().begin(), a->ints().end());
      n->RemoveAttribute("axes");
      Value* axes_value = Edit(g, n).Ints(axes);
      n->AddInput(axes_value);
    }
    return absl::OkStatus();
  }
  if (op == "DFT" && to >= 20 && VersionAt(*n, from) < 20) {
    const int64_t axis = n->GetInt("axis", 1);
    n->RemoveAttribute("axis");
    Value* axis_value = Edit(g, n).Ints({axis}, /*scalar=*/true);
    if (n->num_inputs() < 2) {
      std::vector<Value*> inputs = {n->input(0), nullptr, axis_value};
      std::vector<onnx::AttributeProto> attributes(n->attributes().begin(), n->attributes().end());
      Edit(g, n).Replace("DFT", inputs, std::move(attributes));
    } else {
      n->AddInput(axis_value);
    }
    return absl::OkStatus();
  }
  if (op == "GridSample" && to >= 20 && VersionAt(*n, from) < 20) {
    const std::string mode = n->GetString("mode", "bilinear");
    n->SetAttribute(onnx::MakeAttribute("mode", mode == "bilinear"  ? std::string("linear")
                                                : mode == "bicubic" ? std::string("cubic")
                                                                    : mode));
    return absl::OkStatus();
  }
  if (op == "GroupNormalization" && to >= 21 && VersionAt(*n, from) < 21) {
    return absl::InvalidArgumentError(
        absl::StrCat(n->Describe(),
                     " (GroupNormalization-18): its per-group scale and bias have no "
                     "opset-21 form here; convert to opset 20 or below"));
  }
  return absl::OkStatus();
}

absl::Status ForEachDefaultNode(Model& model,
                                const std::function<absl::Status(Graph&, Node*)>& fn) {
  for (Graph* g : GraphsRecursive(model.graph())) {
    for (Node* n : g->NodeList()) {
      if (IsDefault(*n)) OVFIX_RETURN_IF_ERROR(fn(*g, n));
    }
  }
  return absl::OkStatus();
}

// Softmax, LogSoftmax and Hardmax before opset 13 flatten their input to 2-D at `axis`; from
// 13 they work along `axis` alone. onnx 1.12's adapter needs the input's full shape for any
// axis but the last it can see, and stops the whole conversion where it is unknown (a
// Reshape to a computed shape, the shape of a recurrent state...). Written here first in a
// form both versions read alike, which the adapter leaves as it is: the last axis as -1, and
// any other axis, or an input of unknown rank, as Flatten, the op along axis -1, and a
// Reshape back to the input's shape.
void NormalizeSoftmaxBefore13(Graph& g, Node* n) {
  if (n->op_type() != "Softmax" && n->op_type() != "LogSoftmax" && n->op_type() != "Hardmax") {
    return;
  }
  Value* x = n->input(0);
  const int rank = x != nullptr ? x->rank() : -1;
  int64_t axis = n->GetInt("axis", 1);
  if (rank >= 0 && axis < 0) axis += rank;
  if (rank >= 0 && axis == rank - 1) {
    n->SetAttribute(onnx::MakeAttribute("axis", int64_t{-1}));
    return;
  }
  const std::string op(n->op_type());
  Edit e(g, n);
  Value* flat = e.Op("Flatten", {x}, {onnx::MakeAttribute("axis", axis)});
  Value* along = e.Op(op, {flat}, {onnx::MakeAttribute("axis", int64_t{-1})});
  e.Replace("Reshape", {along, e.Op("Shape", {x})});
}

// The reason in one of onnx's assertion texts ("FILE:LINE: FUNCTION: Assertion `...` failed:
// REASON"), without the source location and the condition, which say nothing to a user.
std::string OnnxFailureReason(std::string_view what) {
  const size_t failed = what.find("failed: ");
  if (what.find("Assertion") != std::string_view::npos && failed != std::string_view::npos) {
    what.remove_prefix(failed + 8);
  }
  return std::string(absl::StripAsciiWhitespace(absl::string_view(what.data(), what.size())));
}

absl::Status WithOnnxConverter(Model& model, int64_t target) {
  onnx::ModelProto converted;
  try {
    converted =
        onnx::version_conversion::ConvertVersion(ModelToProto(model), static_cast<int>(target));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("onnx's version converter cannot take the model to opset ", target, ": ",
                     OnnxFailureReason(e.what())));
  }
  converted.set_ir_version(std::max<int64_t>(converted.ir_version(), IrVersionForOpset(target)));
  absl::StatusOr<std::unique_ptr<Model>> rebuilt =
      ModelFromProto(std::move(converted), model.base_dir(), "the model at another opset");
  if (!rebuilt.ok()) return rebuilt.status();
  (*rebuilt)->set_external_data_files(model.external_data_files());
  model = std::move(**rebuilt);
  return absl::OkStatus();
}

absl::Status ConvertInPlace(Model& model, int64_t from, int64_t target, OpsetChange& change) {
  int64_t at = from;
  int rewritten = 0;
  if (target < at && at > kLibraryOpset) {
    const int64_t step = std::max(target, kLibraryOpset);
    OVFIX_RETURN_IF_ERROR(ForEachDefaultNode(model, [&](Graph& g, Node* n) {
      if (VersionAt(*n, at) > step) ++rewritten;
      return Down(g, n, at, step);
    }));
    model.SetOpsetVersion("", step);
    at = step;
  }
  if (target > at && at < kLibraryOpset) {
    if (at < 13 && target >= 13) {
      OVFIX_RETURN_IF_ERROR(ForEachDefaultNode(model, [](Graph& g, Node* n) {
        NormalizeSoftmaxBefore13(g, n);
        return absl::OkStatus();
      }));
    }
    OVFIX_RETURN_IF_ERROR(WithOnnxConverter(model, std::min(target, kLibraryOpset)));
    at = std::min(target, kLibraryOpset);
  }
  if (target < at) {
    OVFIX_RETURN_IF_ERROR(WithOnnxConverter(model, target));
    at = target;
  }
  if (target > at) {
    OVFIX_RETURN_IF_ERROR(ForEachDefaultNode(model, [&](Graph& g, Node* n) {
      if (VersionAt(*n, target) > VersionAt(*n, at)) ++rewritten;
      return Up(g, n, at, target);
    }));
    model.SetOpsetVersion("", target);
    at = target;
  }
  for (Graph* g : GraphsRecursive(model.graph())) g->RemoveDeadCode();
  change.nodes_rewritten = rewritten;
  const int64_t ir = model.extras().ir_version();
  model.extras().set_ir_version(target < from ? IrVersionForOpset(target)
                                              : std::max(ir, IrVersionForOpset(target)));
  return absl::OkStatus();
}

}  // namespace

int64_t IrVersionForOpset(int64_t opset) {
  if (opset >= 25) return 13;
  if (opset >= 24) return 12;
  if (opset >= 23) return 11;
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  if (opset >= 15) return 8;
  if (opset >= 13) return 7;
  return 6;
}

absl::StatusOr<OpsetChange> ConvertOpset(Model& model, int64_t target) {
  OpsetChange change;
  change.from = model.OpsetVersion("");
  change.to = target;
  if (change.from < 1) return absl::InvalidArgumentError("the model imports no ai.onnx opset");
  if (target < 7 || target > kLatestOnnxOpset) {
    return absl::InvalidArgumentError(
        absl::StrCat("--opset ", target, ": ovfix writes opsets 7 to ", kLatestOnnxOpset));
  }
  if (target == change.from) return change;
  // Converted on a copy: a node that cannot be converted leaves the model as it was.
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> copy, SerializedCopy(model));
  // The adapters read ranks and static dims (Split sizes, Pad's axes, RMSNormalization's).
  if (absl::Status s = InferShapes(*copy); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("shape inference: ", s.message()));
  }
  OVFIX_RETURN_IF_ERROR(ConvertInPlace(*copy, change.from, target, change));
  model = std::move(*copy);
  change.note = absl::StrCat("opset ", change.from, " -> ", change.to, " (IR ",
                             model.extras().ir_version(), ")");
  return change;
}

}  // namespace ovfix::converter
