#include "rules/passes/fp16_safe_softmax.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/constant.h"
#include "onnx/defs/attr_proto_util.h"
#include "rules/passes/fp16_magnitudes.h"

namespace ovfix::rules {
namespace {

struct Match {
  Node* exp = nullptr;
  Node* sum = nullptr;
  Node* div = nullptr;
};

bool Is(const Node* n, const char* op) {
  return n != nullptr && n->domain().empty() && n->op_type() == op;
}

// Why `exp` does not start a hand-written softmax, or "" with `m` filled.
std::string Check(Node* exp, Match& m) {
  m.exp = exp;
  const Value* e = exp->output(0);
  if (e->is_graph_output() || e->uses().size() != 2) return "its output has not two readers";
  for (const Use& use : e->uses()) {
    if (Is(use.node, "ReduceSum") && use.input_index == 0) m.sum = use.node;
    if (Is(use.node, "Div") && use.input_index == 0) m.div = use.node;
  }
  if (m.sum == nullptr || m.div == nullptr) return "it is not read by a ReduceSum and a Div";
  if (m.div->input(1) != m.sum->output(0)) return "the Div does not divide by the sum";
  if (m.sum->output(0)->uses().size() != 1 || m.sum->output(0)->is_graph_output()) {
    return "the sum has other readers";
  }
  if (m.sum->GetInt("keepdims", 1) != 1) return "the sum does not keep its dims";
  if (m.sum->GetInt("noop_with_empty_axes", 0) != 0) return "the sum may be a no-op";
  if (m.sum->inputs().size() > 1 && m.sum->input(1) != nullptr && !IsConstant(m.sum->input(1))) {
    return "the sum's axes are not a constant";
  }
  return "";
}

void Rewrite(PassContext& ctx, const Match& m) {
  Rewriter& r = ctx.rewriter;
  Graph& g = *m.exp->owner();
  Value* x = m.exp->input(0);
  const std::string base = x->name();
  Value* axes = m.sum->inputs().size() > 1 ? m.sum->input(1) : nullptr;
  std::vector<Value*> max_inputs = {x};
  const bool axes_input = ctx.model.OpsetVersion("") >= 18;
  if (axes_input && axes != nullptr) max_inputs.push_back(axes);
  Node* max = r.CreateNode(g, "ReduceMax", max_inputs, {r.UniqueName(base + "_max")}, m.exp);
  r.SetAttribute(max, onnx::MakeAttribute("keepdims", int64_t{1}));
  if (!axes_input && axes != nullptr) {
    const Tensor t = *ConstantValue(axes);
    std::vector<int64_t> list(t.numel());
    for (int64_t i = 0; i < t.numel(); ++i) list[i] = static_cast<int64_t>(t.GetAsDouble(i));
    r.SetAttribute(max, onnx::MakeAttribute("axes", list));
  }
  Node* sub = r.CreateNode(g, "Sub", {x, max->output(0)}, {r.UniqueName(base + "_shifted")}, m.exp);
  r.SetType(sub->output(0), x->type());
  Node* exp = r.CreateNode(g, "Exp", {sub->output(0)},
                           {r.UniqueName(m.exp->output(0)->name() + "_fp16safe")}, m.exp);
  r.SetType(exp->output(0), m.exp->output(0)->type());
  std::vector<Value*> sum_inputs = m.sum->inputs();
  sum_inputs[0] = exp->output(0);
  Node* sum = r.CreateNode(g, "ReduceSum", sum_inputs,
                           {r.UniqueName(m.sum->output(0)->name() + "_fp16safe")}, m.sum);
  for (const onnx::AttributeProto& a : m.sum->attributes()) r.SetAttribute(sum, a);
  r.SetType(sum->output(0), m.sum->output(0)->type());
  Node* div = r.CreateNode(g, "Div", {exp->output(0), sum->output(0)},
                           {r.UniqueName(m.div->output(0)->name() + "_fp16safe")}, m.div);
  r.SetType(div->output(0), m.div->output(0)->type());
  r.ReplaceAllUsesWith(m.div->output(0), div->output(0));
  for (Node* n : {m.div, m.sum, m.exp}) r.EraseNode(n);
}

}  // namespace

absl::StatusOr<int> SubtractSoftmaxMax(PassContext& ctx) {
  // Where fp32 islands are honoured they could protect the Exp instead, but at the price of
  // an island (Exp, ReduceSum, Div and their Casts); shifted, the softmax stays in fp16.
  if (ctx.options.islands_honoured && ctx.options.precision != ConvertOptions::Precision::kFp16) {
    return 0;
  }
  std::vector<Node*> exps;
  for (Node* n : ctx.model.graph().NodeList()) {
    if (Is(n, "Exp")) exps.push_back(n);
  }
  int committed = 0;
  for (Node* n : exps) {
    std::optional<double> largest = LargestMagnitude(ctx, n->output(0));
    if (!largest || !(*largest > ctx.options.fp16_magnitude_threshold)) continue;
    Match m;
    if (std::string why = Check(n, m); !why.empty()) {
      ctx.log(absl::StrCat(kFp16SafeSoftmax, ": ", n->Describe(), " (max ", *largest,
                           ") not rewritten: ", why));
      continue;
    }
    ctx.rewriter.Begin(kFp16SafeSoftmax, {n});
    Rewrite(ctx, m);
    if (FinishRewrite(ctx)) ++committed;
  }
  return committed;
}

}  // namespace ovfix::rules
