#include "rules/passes/fp16_safe_sum_of_squares.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/constant.h"
#include "ir/status_macros.h"
#include "rules/passes/fp16_magnitudes.h"
#include "rules/passes/graph_edit.h"

namespace ovfix::rules {
namespace {

// The scaled sum aims at about this magnitude: far from fp16's limit, far from its
// subnormals.
constexpr double kScaledSumTarget = 256;

std::optional<double> ScalarConstant(const Value* v) {
  if (!IsConstant(v)) return std::nullopt;
  absl::StatusOr<Tensor> t = ConstantValue(v);
  if (!t.ok() || t->numel() != 1 || !IsFloatingPoint(t->type())) return std::nullopt;
  return t->GetAsDouble(0);
}

bool SingleUse(const Value* v) { return v->uses().size() == 1 && !v->is_graph_output(); }

Node* OnlyReader(const Value* v) { return SingleUse(v) ? v->uses().front().node : nullptr; }

bool Is(const Node* n, const char* op) {
  return n != nullptr && n->domain().empty() && n->op_type() == op;
}

// A sum of squares and the square root that consumes it.
struct Match {
  Node* square = nullptr;  // Pow(x, 2) or Mul(x, x); null for ReduceSumSquare / ReduceL2
  Node* reduce = nullptr;
  Node* add = nullptr;  // + eps, optional
  Value* eps = nullptr;
  Node* root = nullptr;  // Sqrt or Pow(., +-0.5); null for ReduceL2
  double root_exponent = 0.5;
  Value* x = nullptr;
};

// Why `reduce` is not a sum of squares under a square root, or "" with `m` filled.
std::string Check(Node* reduce, Match& m) {
  m.reduce = reduce;
  const std::string& op = reduce->op_type();
  if (op == "ReduceL2" || op == "ReduceSumSquare") {
    m.x = reduce->input(0);
    if (op == "ReduceL2") return "";
  } else {
    // The square may have other readers (an `energy` output beside a pixel norm): the
    // rewrite computes its own scaled square and leaves the original to them.
    Node* sq = reduce->input(0) != nullptr ? reduce->input(0)->producer() : nullptr;
    if (sq == nullptr) return "its input is not a square";
    if (Is(sq, "Pow") && ScalarConstant(sq->input(1)) == 2.0) {
      m.square = sq;
    } else if (Is(sq, "Mul") && sq->input(0) == sq->input(1)) {
      m.square = sq;
    } else {
      return "its input is not Pow(x, 2) or Mul(x, x)";
    }
    m.x = sq->input(0);
  }
  if (m.x == nullptr || m.x->elem_type() != DataType::kFloat) return "it does not sum float32";
  Node* next = OnlyReader(reduce->output(0));
  if (Is(next, "Add")) {
    const int other = next->input(0) == reduce->output(0) ? 1 : 0;
    if (!ScalarConstant(next->input(other))) return "it is added to something other than an eps";
    m.add = next;
    m.eps = next->input(other);
    next = OnlyReader(next->output(0));
  }
  if (Is(next, "Sqrt")) {
    m.root = next;
    return "";
  }
  const Value* base = m.add != nullptr ? m.add->output(0) : reduce->output(0);
  if (Is(next, "Pow") && next->input(0) == base) {
    std::optional<double> e = ScalarConstant(next->input(1));
    if (e == 0.5 || e == -0.5) {
      m.root = next;
      m.root_exponent = *e;
      return "";
    }
  }
  return "no square root consumes it (the scale would have to be undone in fp16)";
}

Value* ScalarInitializer(PassContext& ctx, Graph& g, const std::string& name, float v) {
  return ctx.rewriter.CreateInitializer(g, ctx.rewriter.UniqueName(name),
                                        Tensor::FromVector<float>(DataType::kFloat, {}, {v}));
}

Node* Clone(PassContext& ctx, Node* old, const std::vector<Value*>& inputs, Node* before) {
  return CloneWithInputs(ctx.rewriter, old, inputs, before, "_fp16safe");
}

void Rewrite(PassContext& ctx, const Match& m, int k) {
  Rewriter& r = ctx.rewriter;
  Graph& g = *m.reduce->owner();
  Node* last = m.root != nullptr ? m.root : m.reduce;
  const std::string base = m.reduce->output(0)->name();
  Value* inv_s = ScalarInitializer(ctx, g, base + "_inv_scale", std::ldexp(1.0f, -k));
  Node* scaled = r.CreateNode(g, "Mul", {m.x, inv_s}, {r.UniqueName(m.x->name() + "_scaled")},
                              m.square != nullptr ? m.square : m.reduce);
  r.SetType(scaled->output(0), m.x->type());
  Value* xs = scaled->output(0);
  Value* sum_input = xs;
  if (m.square != nullptr) {
    const bool pow = m.square->op_type() == "Pow";
    sum_input = Clone(ctx, m.square, {xs, pow ? m.square->input(1) : xs}, m.reduce)->output(0);
  }
  std::vector<Value*> reduce_inputs = m.reduce->inputs();
  reduce_inputs[0] = sum_input;
  Value* y = Clone(ctx, m.reduce, reduce_inputs, m.reduce)->output(0);
  if (m.add != nullptr) {
    const double eps = *ScalarConstant(m.eps);
    Value* eps_scaled = ScalarInitializer(ctx, g, base + "_eps_scaled",
                                          static_cast<float>(std::ldexp(eps, -2 * k)));
    y = Clone(ctx, m.add, {y, eps_scaled}, m.add)->output(0);
  }
  if (m.root != nullptr) {
    std::vector<Value*> root_inputs = m.root->inputs();
    root_inputs[0] = y;
    y = Clone(ctx, m.root, root_inputs, m.root)->output(0);
  }
  // ReduceL2 and square roots scale by s; a reciprocal square root by 1/s.
  const int out_k = m.root_exponent < 0 ? -k : k;
  Value* s = ScalarInitializer(ctx, g, base + "_scale", std::ldexp(1.0f, out_k));
  Node* unscale = r.CreateNode(g, "Mul", {y, s},
                               {r.UniqueName(last->output(0)->name() + "_fp16safe_out")}, last);
  r.SetType(unscale->output(0), last->output(0)->type());
  r.ReplaceAllUsesWith(last->output(0), unscale->output(0));
  for (Node* n : {m.root, m.add, m.reduce}) {
    if (n != nullptr) r.EraseNode(n);
  }
  // A square other nodes or the graph's outputs still read stays for them.
  if (m.square != nullptr && !m.square->output(0)->has_uses() &&
      !m.square->output(0)->is_graph_output()) {
    r.EraseNode(m.square);
  }
}

}  // namespace

absl::StatusOr<int> RescaleSumsOfSquares(PassContext& ctx) {
  if (ctx.options.islands_honoured) return 0;  // fp32 islands protect these sums there
  OVFIX_RETURN_IF_ERROR(InferTypes(ctx));
  const double threshold = ctx.options.fp16_magnitude_threshold;
  int committed = 0;
  // The reductions first: a rewrite erases the nodes around the one it starts from (never
  // another reduction), and a commit frees what it erased.
  std::vector<Node*> reductions;
  for (Node* n : ctx.model.graph().NodeList()) {
    const std::string& op = n->op_type();
    if (n->domain().empty() &&
        (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceSumSquare" || op == "ReduceL2")) {
      reductions.push_back(n);
    }
  }
  for (Node* n : reductions) {
    const std::string& op = n->op_type();
    Match m;
    // The largest square: the sum's (or, for ReduceL2, its output squared) or a square's.
    std::optional<double> largest = LargestMagnitude(ctx, n->output(0));
    if (!largest) continue;
    double sum = op == "ReduceL2" ? *largest * *largest : *largest;
    if (std::string why = Check(n, m); !why.empty()) {
      if (sum > threshold) {
        ctx.log(absl::StrCat(kFp16SafeSumOfSquares, ": ", n->Describe(), " (max ", sum,
                             ") not rescaled: ", why));
      }
      continue;
    }
    if (m.square != nullptr) {
      if (std::optional<double> sq = LargestMagnitude(ctx, m.square->output(0))) {
        sum = std::max(sum, *sq);
      }
    }
    if (!(sum > threshold) || !std::isfinite(sum)) continue;
    // s^2 >= sum / target, s = 2^k.
    const int k = static_cast<int>(std::ceil(0.5 * std::log2(sum / kScaledSumTarget)));
    const std::string what = n->Describe();  // the commit frees `n`
    ctx.rewriter.Begin(kFp16SafeSumOfSquares, {n});
    Rewrite(ctx, m, k);
    if (FinishRewrite(ctx)) {
      ++committed;
      ctx.log(absl::StrCat(kFp16SafeSumOfSquares, ": ", what, " (max ", sum, ") computed on x / 2^",
                           k));
    }
  }
  return committed;
}

}  // namespace ovfix::rules
