#include "rules/passes/fold_batch_normalization.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/constant.h"
#include "ir/graph_walk.h"
#include "onnx/defs/attr_proto_util.h"

namespace ovfix::rules {
namespace {

// What folding needs, read from the graph.
struct Plan {
  Node* producer = nullptr;    // the Conv, ConvTranspose or Gemm
  int64_t channels = 0;        // M: output channels (Gemm: N)
  Tensor weight;               // float32
  std::optional<Tensor> bias;  // float32, numel 1 or M (Gemm's C) or M
  Tensor scale, shift, mean, var;
  double epsilon = 1e-5;
};

// The data of `v` when it is a float32 constant.
std::optional<Tensor> FloatConstant(const Value* v) {
  if (!IsConstant(v)) return std::nullopt;
  absl::StatusOr<Tensor> t = ConstantValue(v);
  if (!t.ok() || t->type() != DataType::kFloat) return std::nullopt;
  return *std::move(t);
}

// Why `bn` cannot be folded into its producer, or "" with `plan` filled.
std::string Check(const Node& bn, Plan& plan) {
  for (size_t i = 1; i < bn.outputs().size(); ++i) {
    if (bn.output(i) != nullptr) return "it has training outputs";
  }
  if (bn.GetInt("training_mode", 0) != 0) return "training_mode is set";
  if (bn.inputs().size() != 5) return "it does not have 5 inputs";
  const Value* x = bn.input(0);
  Node* p = x != nullptr ? x->producer() : nullptr;
  if (p == nullptr || !p->domain().empty() ||
      (p->op_type() != "Conv" && p->op_type() != "ConvTranspose" && p->op_type() != "Gemm")) {
    return "its input is not computed by a Conv, ConvTranspose or Gemm";
  }
  plan.producer = p;
  if (p->owner() != bn.owner()) return "its producer is in another graph";
  if (x->uses().size() != 1 || x->is_graph_output()) {
    return absl::StrCat("'", x->name(), "' has other readers than the BatchNormalization");
  }
  Tensor* stats[] = {&plan.scale, &plan.shift, &plan.mean, &plan.var};
  for (int i = 0; i < 4; ++i) {
    std::optional<Tensor> t = FloatConstant(bn.input(i + 1));
    if (!t) return absl::StrCat("its input ", i + 1, " is not a float32 constant");
    *stats[i] = *std::move(t);
  }
  plan.channels = plan.scale.numel();
  for (const Tensor* t : stats) {
    if (t->rank() != 1 || t->numel() != plan.channels) return "its statistics are not 1-D of C";
  }
  plan.epsilon = bn.GetFloat("epsilon", 1e-5f);
  std::optional<Tensor> w = FloatConstant(p->input(1));
  if (!w) return "the weight is not a float32 constant";
  plan.weight = *std::move(w);
  const Tensor& wt = plan.weight;
  const int64_t m = plan.channels;
  if (p->op_type() == "Conv") {
    if (wt.rank() < 3 || wt.dim(0) != m) return "the weight's first dim is not the channels";
  } else if (p->op_type() == "ConvTranspose") {
    const int64_t group = p->GetInt("group", 1);
    if (wt.rank() < 3 || group <= 0 || wt.dim(1) * group != m || wt.dim(0) % group != 0) {
      return "the weight's second dim times group is not the channels";
    }
  } else {
    if (wt.rank() != 2) return "the weight is not 2-D";
    const int64_t n = p->GetInt("transB", 0) != 0 ? wt.dim(0) : wt.dim(1);
    if (n != m) return "the weight's output dim is not the channels";
    if (x->rank() != 2) return "the Gemm output's rank is unknown";
  }
  const Value* b = p->inputs().size() > 2 ? p->input(2) : nullptr;
  if (b != nullptr) {
    std::optional<Tensor> bt = FloatConstant(b);
    if (!bt) return "the bias is not a float32 constant";
    const bool per_channel =
        bt->numel() == m && (bt->rank() == 1 || (bt->rank() == 2 && bt->dim(0) == 1));
    const bool scalar = p->op_type() == "Gemm" && bt->numel() == 1;
    if (!per_channel && !scalar) return "the bias is not one value per channel";
    plan.bias = *std::move(bt);
  }
  return "";
}

// Scales every element of the weight `w` of `p` by its output channel's factor. The loops
// follow the weight's layout (the channel of an element is never computed one by one: a
// ResNet-50 has 23 million weights).
void ScaleByOutputChannel(const Node& p, Tensor& w, const std::vector<double>& s) {
  float* wd = w.data<float>();
  auto scale = [&](int64_t begin, int64_t count, int64_t c) {
    for (int64_t i = begin; i < begin + count; ++i) wd[i] = static_cast<float>(wd[i] * s[c]);
  };
  if (p.op_type() == "Conv") {
    // [M, C/group, k...]: channel-major.
    const int64_t m = w.dim(0), inner = w.numel() / std::max<int64_t>(m, 1);
    for (int64_t c = 0; c < m; ++c) scale(c * inner, inner, c);
    return;
  }
  if (p.op_type() == "ConvTranspose") {
    // [C, M/group, k...]: input channel c of group c / per_group_in, output channel j within it.
    int64_t inner = 1;
    for (size_t d = 2; d < w.rank(); ++d) inner *= w.dim(d);
    const int64_t per_group_out = w.dim(1);
    const int64_t per_group_in = w.dim(0) / p.GetInt("group", 1);
    for (int64_t c = 0; c < w.dim(0); ++c) {
      for (int64_t j = 0; j < per_group_out; ++j) {
        scale((c * per_group_out + j) * inner, inner, (c / per_group_in) * per_group_out + j);
      }
    }
    return;
  }
  // Gemm: B is [K, N] (the channel is the column), or [N, K] with transB (the row).
  const int64_t rows = w.dim(0), cols = w.dim(1);
  if (p.GetInt("transB", 0) != 0) {
    for (int64_t n = 0; n < rows; ++n) scale(n * cols, cols, n);
  } else {
    for (int64_t k = 0; k < rows; ++k) {
      float* row = wd + k * cols;
      for (int64_t n = 0; n < cols; ++n) row[n] = static_cast<float>(row[n] * s[n]);
    }
  }
}

void Fold(PassContext& ctx, Node* bn, const Plan& plan) {
  Rewriter& r = ctx.rewriter;
  Graph& g = *bn->owner();
  Node* p = plan.producer;
  const int64_t m = plan.channels;
  std::vector<double> s(m);
  for (int64_t c = 0; c < m; ++c) {
    s[c] = plan.scale.GetAsDouble(c) / std::sqrt(plan.var.GetAsDouble(c) + plan.epsilon);
  }
  Tensor w = plan.weight.Clone();
  ScaleByOutputChannel(*p, w, s);
  const bool gemm = p->op_type() == "Gemm";
  const double beta = gemm ? p->GetFloat("beta", 1.0f) : 1.0;
  std::vector<float> bias(m);
  for (int64_t c = 0; c < m; ++c) {
    double b = 0;
    if (plan.bias) b = beta * plan.bias->GetAsDouble(plan.bias->numel() == 1 ? 0 : c);
    bias[c] = static_cast<float>((b - plan.mean.GetAsDouble(c)) * s[c] + plan.shift.GetAsDouble(c));
  }
  const std::string base = p->name().empty() ? p->output(0)->name() : p->name();
  Value* new_w = r.CreateInitializer(g, p->input(1)->name() + "_bn_folded", std::move(w));
  Value* new_b = r.CreateInitializer(g, base + "_bn_folded_bias",
                                     Tensor::FromVector<float>(DataType::kFloat, {m}, bias));
  Node* folded = r.CreateNode(g, p->op_type(), {p->input(0), new_w, new_b},
                              {bn->output(0)->name() + "_folded"}, bn, p->name());
  for (const onnx::AttributeProto& a : p->attributes()) r.SetAttribute(folded, a);
  if (gemm) r.SetAttribute(folded, onnx::MakeAttribute("beta", 1.0f));
  r.SetType(folded->output(0), bn->output(0)->type());
  r.ReplaceAllUsesWith(bn->output(0), folded->output(0));
  r.EraseNode(bn);
  r.EraseNode(p);
}

}  // namespace

absl::StatusOr<int> FoldBatchNormalization(PassContext& ctx) {
  int folded = 0;
  VisitGraphs(ctx.model.graph(), [&](Graph& g) {
    for (Node* n : g.NodeList()) {
      if (n->op_type() != "BatchNormalization" || !n->domain().empty()) continue;
      Plan plan;
      if (std::string why = Check(*n, plan); !why.empty()) {
        if (plan.producer != nullptr) {
          ctx.log(absl::StrCat(kFoldBatchNormalization, ": ", n->Describe(), " not folded into ",
                               plan.producer->Describe(), ": ", why));
        }
        continue;
      }
      ctx.rewriter.Begin(kFoldBatchNormalization, {plan.producer, n});
      Fold(ctx, n, plan);
      if (FinishRewrite(ctx)) ++folded;
    }
    return absl::OkStatus();
  });
  return folded;
}

}  // namespace ovfix::rules
