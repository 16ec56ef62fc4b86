#include "converter/session_attention_layouts.h"

#include <optional>
#include <string>
#include <vector>

#include "converter/session_graph.h"
#include "onnx/defs/attr_proto_util.h"

namespace ovfix::converter {
namespace {

bool IsDefaultDomain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// The node that produces `v` as op `op` of the default domain in graph `g`, when `v` has no
// reader but one and is no graph output: what may be folded into that one reader.
Node* OnlyUseProducer(Value* v, std::string_view op, const Graph& g) {
  if (v == nullptr || v->uses().size() != 1 || v->is_graph_output()) return nullptr;
  Node* n = v->producer();
  if (n == nullptr || n->owner() != &g || !IsDefaultDomain(*n) || n->op_type() != op) {
    return nullptr;
  }
  return n;
}

// A constant the graph cannot change (an initializer that is no graph input).
const Tensor* Constant(const Value* v) {
  if (v == nullptr || !v->is_initializer() || v->is_graph_input()) return nullptr;
  return &v->tensor();
}

std::optional<float> FloatScalar(const Value* v) {
  const Tensor* t = Constant(v);
  if (t == nullptr || t->type() != DataType::kFloat || t->numel() != 1) return std::nullopt;
  return t->data<float>()[0];
}

std::optional<int64_t> IndexScalar(const Value* v) {
  const Tensor* t = Constant(v);
  if (t == nullptr || t->rank() != 0) return std::nullopt;
  if (t->type() == DataType::kInt64) return t->data<int64_t>()[0];
  if (t->type() == DataType::kInt32) return t->data<int32_t>()[0];
  return std::nullopt;
}

// A Transpose's permutation, its default (the axes reversed) when absent; empty when the rank
// is unknown.
std::vector<int64_t> PermOf(const Node& transpose) {
  if (transpose.HasAttribute("perm")) return transpose.GetInts("perm");
  const int rank = transpose.input(0)->rank();
  std::vector<int64_t> perm;
  for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  return perm;
}

// How the Attention reads one of Q, K, V: `source` through the attributes, instead of the
// value it reads now.
struct Read {
  Value* source = nullptr;
  std::optional<std::vector<int64_t>> perm;
  std::optional<int64_t> index;
  std::optional<float> scale;
  bool changed() const { return perm || index || scale; }
};

Read ReadOf(Value* x, bool scalable, const Graph& g) {
  Read read;
  read.source = x;
  if (Node* mul = scalable ? OnlyUseProducer(x, "Mul", g) : nullptr;
      mul != nullptr && mul->num_inputs() == 2) {
    // Mul(q, c) with q of the product's shape: the same elements scaled.
    for (int i = 0; i < 2; ++i) {
      const std::optional<float> c = FloatScalar(mul->input(1 - i));
      Value* q = mul->input(i);
      if (!c || q->elem_type() != DataType::kFloat || !q->static_shape() ||
          q->static_shape() != x->static_shape()) {
        continue;
      }
      read.scale = c;
      read.source = x = q;
      break;
    }
  }
  if (Node* gather = OnlyUseProducer(x, "Gather", g);
      gather != nullptr && gather->num_inputs() == 2 && gather->GetInt("axis", 0) == 0) {
    const std::optional<int64_t> index = IndexScalar(gather->input(1));
    Value* data = gather->input(0);
    if (index && data->rank() >= 3) {
      read.index = index;
      read.source = data;
      Node* transpose = data->producer();
      if (transpose != nullptr && transpose->owner() == &g && IsDefaultDomain(*transpose) &&
          transpose->op_type() == "Transpose" && !PermOf(*transpose).empty()) {
        // Read by other Gathers too (q, k and v of one projection): it goes with the last.
        read.perm = PermOf(*transpose);
        read.source = transpose->input(0);
      }
      return read;
    }
  }
  if (Node* transpose = OnlyUseProducer(x, "Transpose", g);
      transpose != nullptr && !PermOf(*transpose).empty()) {
    read.perm = PermOf(*transpose);
    read.source = transpose->input(0);
  }
  return read;
}

constexpr const char* kLayoutAttributes[] = {"q_perm",  "k_perm",  "v_perm",  "q_index",
                                             "k_index", "v_index", "q_scale", "output_perm"};

}  // namespace

absl::StatusOr<int> ReadAttentionLayouts(rules::PassContext& ctx) {
  Graph& g = ctx.model.graph();
  rules::Rewriter& r = ctx.rewriter;
  int changed = 0;
  for (Node* attention : g.NodeList()) {
    if (attention->domain() != kFusedDomain || attention->op_type() != "Attention" ||
        attention->num_inputs() < 3) {
      continue;
    }
    bool read_before = false;
    for (const char* name : kLayoutAttributes) read_before |= attention->HasAttribute(name);
    if (read_before) continue;
    Read reads[3];
    bool any = false;
    for (int i = 0; i < 3; ++i) {
      reads[i] = ReadOf(attention->input(i), /*scalable=*/i == 0, g);
      any |= reads[i].changed();
    }
    Value* y = attention->output(0);
    Node* merge = nullptr;
    if (y->uses().size() == 1 && !y->is_graph_output()) {
      Node* user = y->uses()[0].node;
      if (user->owner() == &g && IsDefaultDomain(*user) && user->op_type() == "Transpose" &&
          user->HasAttribute("perm")) {
        merge = user;
      }
    }
    if (!any && merge == nullptr) continue;

    r.Begin(kReadAttentionLayouts, {attention});
    std::vector<Value*> inputs = attention->inputs();
    for (int i = 0; i < 3; ++i) inputs[i] = reads[i].source;
    Value* result = merge != nullptr ? merge->output(0) : y;
    Node* fused = r.CreateNode(g, "Attention", inputs, {r.UniqueName(result->name() + "_read")},
                               attention, attention->name(), kFusedDomain);
    for (const onnx::AttributeProto& a : attention->attributes()) r.SetAttribute(fused, a);
    const char* names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      const std::string name = names[i];
      if (reads[i].perm) r.SetAttribute(fused, onnx::MakeAttribute(name + "_perm", *reads[i].perm));
      if (reads[i].index) {
        r.SetAttribute(fused, onnx::MakeAttribute(name + "_index", *reads[i].index));
      }
      if (reads[i].scale) r.SetAttribute(fused, onnx::MakeAttribute("q_scale", *reads[i].scale));
    }
    if (merge != nullptr) {
      r.SetAttribute(fused, onnx::MakeAttribute("output_perm", merge->GetInts("perm")));
    }
    r.SetType(fused->output(0), result->type());
    r.ReplaceAllUsesWith(result, fused->output(0));
    if (merge != nullptr) r.EraseNode(merge);
    std::vector<Value*> read = attention->inputs();
    r.EraseNode(attention);
    for (int i = 0; i < 3; ++i) r.ConsiderDead(read[i]);
    if (rules::FinishRewrite(ctx)) ++changed;
  }
  return changed;
}

}  // namespace ovfix::converter
