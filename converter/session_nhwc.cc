#include "converter/session_nhwc.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "converter/session_graph.h"
#include "exec/cpu/conv_nhwc.h"
#include "exec/plan_fusion.h"
#include "onnx/defs/attr_proto_util.h"

namespace ovfix::converter {
namespace {

bool IsDefaultDomain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// Element-wise ops whose output element i depends on element i of each input alone (with
// inputs of one shape): they run on channels-last values as on planes.
bool IsElementwise(const Node& n) {
  if (n.domain() == kFusedDomain) return n.op_type() == "Elementwise";
  if (!IsDefaultDomain(n)) return false;
  static const auto* ops = new absl::flat_hash_set<std::string_view>{
      "Relu", "Clip",     "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Elu",
      "Selu", "Softplus", "Erf",     "Abs",  "Neg",         "Exp",       "Sqrt",      "Identity",
      "Add",  "Sub",      "Mul",     "Div",  "Max",         "Min",       "Sum"};
  return ops->contains(n.op_type());
}

// The static shape of a float tensor value, when known.
std::optional<std::vector<int64_t>> FloatShape(const Value* v) {
  if (v == nullptr || v->is_initializer() || v->elem_type() != DataType::kFloat) {
    return std::nullopt;
  }
  return v->static_shape();
}

bool IsConstantScalar(const Value* v) {
  return v != nullptr && v->is_initializer() && !v->is_graph_input() && v->tensor().numel() == 1;
}

bool IsConstant(const Value* v) {
  return v != nullptr && v->is_initializer() && !v->is_graph_input();
}

// What a node of a region is.
enum class Role { kNone, kConv, kElementwise, kPool };

// Whether `conv` reads a BatchNormalization that the session's plan folds into it.
bool ReadsFoldedBatchNorm(const Node& conv, int opset) {
  const Value* x = conv.input(0);
  for (int hops = 0; hops < 2 && x != nullptr; ++hops) {
    const Node* p = x->producer();
    if (p == nullptr) return false;
    const std::optional<exec::ConsumerFusion> f = exec::FusionIntoConsumer(*p, opset);
    if (f && f->consumer == &conv) return true;
    x = p->num_inputs() > 0 ? p->input(0) : nullptr;
  }
  return false;
}

Role RoleOf(const Node& n, const Graph& g, int opset) {
  if (n.owner() != &g || n.num_outputs() != 1 || n.output(0) == nullptr) return Role::kNone;
  const std::optional<std::vector<int64_t>> out = FloatShape(n.output(0));
  if (IsDefaultDomain(n) && n.op_type() == "Conv") {
    const std::optional<std::vector<int64_t>> x = FloatShape(n.input(0));
    const Value* w = n.input(1);
    if (!x || x->size() != 4 || !out || out->size() != 4 || !IsConstant(w) ||
        w->tensor().type() != DataType::kFloat ||
        !exec::NhwcConvMatchesConv(n, opset, *x, w->tensor().dims())) {
      return Role::kNone;
    }
    if (n.num_inputs() > 2 && n.input(2) != nullptr && !IsConstant(n.input(2))) {
      return Role::kNone;
    }
    return ReadsFoldedBatchNorm(n, opset) ? Role::kNone : Role::kConv;
  }
  if (IsDefaultDomain(n) && n.op_type() == "GlobalAveragePool") {
    const std::optional<std::vector<int64_t>> x = FloatShape(n.input(0));
    return x && x->size() == 4 ? Role::kPool : Role::kNone;
  }
  if (!IsElementwise(n) || !out || out->size() != 4) return Role::kNone;
  bool any_tensor = false;
  for (const Value* v : n.inputs()) {
    if (v == nullptr || IsConstantScalar(v)) continue;
    if (FloatShape(v) != out) return Role::kNone;
    any_tensor = true;
  }
  return any_tensor ? Role::kElementwise : Role::kNone;
}

int64_t Elements(const Value* v) {
  const std::optional<std::vector<int64_t>> dims = v->static_shape();
  int64_t n = 1;
  for (int64_t d : *dims) n *= d;
  return n;
}

onnx::TypeProto FloatTensorType(const std::vector<int64_t>& dims) {
  onnx::TypeProto type;
  auto* tensor = type.mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  return type;
}

// NCHW dims as NHWC.
std::vector<int64_t> ChannelsLast(const std::vector<int64_t>& d) {
  return {d[0], d[2], d[3], d[1]};
}

// The nodes of one region, in graph order, and what crosses its border.
struct Region {
  std::vector<Node*> nodes;
  int convs = 0;
  int64_t conv_input_elements = 0;
  int64_t transposed_elements = 0;
};

// Whether value `v` (made by a node of the region) is read outside it.
bool ReadOutside(const Value* v, const absl::flat_hash_set<const Node*>& inside) {
  if (v->is_graph_output()) return true;
  for (const Use& use : v->uses()) {
    if (!inside.contains(use.node)) return true;
  }
  return false;
}

}  // namespace

bool KeepsChannelsLast(int convs, int64_t conv_input_elements, int64_t transposed_elements) {
  return convs >= 2 && transposed_elements <= conv_input_elements;
}

absl::StatusOr<int> KeepChannelsLast(rules::PassContext& ctx) {
  Graph& g = ctx.model.graph();
  rules::Rewriter& r = ctx.rewriter;
  const int opset = static_cast<int>(ctx.model.OpsetVersion(""));
  const std::vector<Node*> order = g.NodeList();

  absl::flat_hash_map<const Node*, Role> roles;
  for (Node* n : order) {
    const Role role = RoleOf(*n, g, opset);
    if (role != Role::kNone) roles[n] = role;
  }
  // Regions: nodes joined by the values one makes and another reads (a pool makes no
  // channels-last value: it joins the region of its input alone).
  absl::flat_hash_map<const Node*, const Node*> parent;
  auto find = [&](const Node* n) {
    while (parent.at(n) != n) n = parent[n] = parent.at(parent.at(n));
    return n;
  };
  for (const auto& [n, role] : roles) parent[n] = n;
  for (const auto& [n, role] : roles) {
    if (role == Role::kPool) continue;
    for (const Use& use : n->output(0)->uses()) {
      auto it = roles.find(use.node);
      if (it == roles.end()) continue;
      // A Conv takes channels-last values as its input 0 only.
      if (it->second == Role::kConv && use.input_index != 0) continue;
      parent[find(use.node)] = find(n);
    }
  }
  absl::flat_hash_map<const Node*, Region> regions;
  for (Node* n : order) {
    if (roles.contains(n)) regions[find(n)].nodes.push_back(n);
  }

  int changed = 0;
  for (auto& [root, region] : regions) {
    const absl::flat_hash_set<const Node*> inside(region.nodes.begin(), region.nodes.end());
    // The values that come in from NCHW (transposed once each).
    absl::flat_hash_set<const Value*> entering;
    for (const Node* n : region.nodes) {
      const Role role = roles.at(n);
      for (size_t i = 0; i < n->num_inputs(); ++i) {
        const Value* v = n->input(i);
        if (v == nullptr || IsConstant(v) || (role == Role::kConv && i > 0)) continue;
        const Node* p = v->producer();
        if (p == nullptr || !inside.contains(p) || roles.at(p) == Role::kPool) {
          if (entering.insert(v).second) region.transposed_elements += Elements(v);
        }
      }
      if (role == Role::kConv) {
        ++region.convs;
        region.conv_input_elements += Elements(n->input(0));
      }
      if (role != Role::kPool && ReadOutside(n->output(0), inside)) {
        region.transposed_elements += Elements(n->output(0));
      }
    }
    if (!KeepsChannelsLast(region.convs, region.conv_input_elements, region.transposed_elements)) {
      continue;
    }

    // What each node reads and whether its value leaves the region, as written: the rewrite
    // below rewires the readers of a value that leaves.
    std::vector<std::vector<Value*>> reads;
    std::vector<bool> leaves;
    for (const Node* n : region.nodes) {
      reads.push_back(n->inputs());
      leaves.push_back(ReadOutside(n->output(0), inside));
    }
    r.Begin(kKeepChannelsLast, region.nodes);
    // Each value of the region as it is channels-last.
    absl::flat_hash_map<const Value*, Value*> nhwc;
    auto channels_last = [&](Value* v, Node* before) {
      auto it = nhwc.find(v);
      if (it != nhwc.end()) return it->second;
      Node* t = r.CreateNode(g, "Transpose", {v}, {r.UniqueName(v->name() + "_nhwc")}, before);
      r.SetAttribute(t, onnx::MakeAttribute("perm", std::vector<int64_t>{0, 2, 3, 1}));
      r.SetType(t->output(0), FloatTensorType(ChannelsLast(*v->static_shape())));
      return nhwc[v] = t->output(0);
    };
    for (size_t k = 0; k < region.nodes.size(); ++k) {
      Node* n = region.nodes[k];
      const Role role = roles.at(n);
      std::vector<Value*> inputs = reads[k];
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i] == nullptr || IsConstant(inputs[i]) || (role == Role::kConv && i > 0)) {
          continue;
        }
        inputs[i] = channels_last(inputs[i], n);
      }
      Value* y = n->output(0);
      const std::string_view op = role == Role::kConv   ? "NhwcConv"
                                  : role == Role::kPool ? "NhwcGlobalAveragePool"
                                                        : std::string_view(n->op_type());
      const std::string domain = role == Role::kElementwise ? n->domain() : kFusedDomain;
      Node* m = r.CreateNode(g, op, inputs,
                             {r.UniqueName(y->name() + (role == Role::kPool ? "_pool" : "_nhwc"))},
                             n, n->name(), domain);
      for (const onnx::AttributeProto& a : n->attributes()) r.SetAttribute(m, a);
      if (role == Role::kPool) {
        r.SetType(m->output(0), y->type());
        r.ReplaceAllUsesWith(y, m->output(0));
        continue;
      }
      r.SetType(m->output(0), FloatTensorType(ChannelsLast(*y->static_shape())));
      nhwc[y] = m->output(0);
      if (leaves[k]) {
        Node* back =
            r.CreateNode(g, "Transpose", {m->output(0)}, {r.UniqueName(y->name() + "_nchw")}, n);
        r.SetAttribute(back, onnx::MakeAttribute("perm", std::vector<int64_t>{0, 3, 1, 2}));
        r.SetType(back->output(0), y->type());
        r.ReplaceAllUsesWith(y, back->output(0));
      }
    }
    for (size_t k = region.nodes.size(); k-- > 0;) {
      r.EraseNode(region.nodes[k]);
      for (Value* v : reads[k]) r.ConsiderDead(v);
    }
    if (rules::FinishRewrite(ctx)) ++changed;
  }
  return changed;
}

}  // namespace ovfix::converter
