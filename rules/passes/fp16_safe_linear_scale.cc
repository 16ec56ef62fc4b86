#include "rules/passes/fp16_safe_linear_scale.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/constant.h"
#include "onnx/defs/attr_proto_util.h"
#include "rules/passes/fp16_magnitudes.h"
#include "rules/passes/graph_edit.h"

namespace ovfix::rules {
namespace {

// The scaled output aims at about this magnitude.
constexpr double kScaledTarget = 1024;

bool Is(const Node* n, const char* op) {
  return n != nullptr && n->domain().empty() && n->op_type() == op;
}

Node* OnlyReader(const Value* v) {
  return v->uses().size() == 1 && !v->is_graph_output() ? v->uses().front().node : nullptr;
}

bool IsFloatConstant(const Value* v) {
  if (!IsConstant(v)) return false;
  absl::StatusOr<Tensor> t = ConstantValue(v);
  return t.ok() && t->type() == DataType::kFloat;
}

// The constant inputs that scale `linear`'s output (weight and bias; a MatMul's constant
// side), or none.
std::vector<size_t> ScaledInputs(const Node& linear) {
  if (linear.op_type() == "MatMul") {
    for (size_t i : {size_t{1}, size_t{0}}) {
      if (IsFloatConstant(linear.input(i))) return {i};
    }
    return {};
  }
  std::vector<size_t> scaled;
  for (size_t i = 1; i < linear.inputs().size(); ++i) {
    if (linear.input(i) == nullptr) continue;
    if (!IsFloatConstant(linear.input(i))) return {};
    scaled.push_back(i);
  }
  return scaled;
}

// The normalization that absorbs a scale of `linear`'s output, or null (with `why`).
Node* AbsorbingNorm(Node* linear, std::string& why) {
  if (ScaledInputs(*linear).empty()) {
    why = "its weights are not float32 constants";
    return nullptr;
  }
  Node* next = OnlyReader(linear->output(0));
  while (Is(next, "Relu") || Is(next, "LeakyRelu")) next = OnlyReader(next->output(0));
  if (Is(next, "InstanceNormalization") || Is(next, "LayerNormalization")) {
    for (size_t i = 1; i < next->outputs().size(); ++i) {
      if (next->output(i) != nullptr) {
        why = "the normalization's mean or deviation output is read";
        return nullptr;
      }
    }
    return next;
  }
  why = "no normalization reads it (through Relu/LeakyRelu) alone";
  return nullptr;
}

// A copy of `old` before it reading `inputs`, with a new output (the old output's type).
Node* Clone(Rewriter& r, Node* old, const std::vector<Value*>& inputs) {
  return CloneWithInputs(r, old, inputs, old, "_fp16safe");
}

// New nodes from `linear` to `norm`, so that validation compares the normalization's output
// (the scaled values in between are new values, not changed ones).
void Rewrite(PassContext& ctx, Node* linear, Node* norm, int k) {
  Rewriter& r = ctx.rewriter;
  Graph& g = *linear->owner();
  const float inv = std::ldexp(1.0f, -k);
  std::vector<Value*> inputs = linear->inputs();
  for (size_t i : ScaledInputs(*linear)) {
    Tensor t = ConstantValue(inputs[i])->Clone();
    float* d = t.data<float>();
    for (int64_t j = 0; j < t.numel(); ++j) d[j] *= inv;
    inputs[i] = r.CreateInitializer(g, r.UniqueName(inputs[i]->name() + "_fp16safe"), std::move(t));
  }
  std::vector<Node*> old = {linear};
  Value* y = Clone(r, linear, inputs)->output(0);
  for (Node* n = OnlyReader(linear->output(0)); n != norm; n = OnlyReader(n->output(0))) {
    old.push_back(n);
    y = Clone(r, n, {y})->output(0);
  }
  old.push_back(norm);
  std::vector<Value*> norm_inputs = norm->inputs();
  norm_inputs[0] = y;
  Node* scaled_norm = Clone(r, norm, norm_inputs);
  const float eps = norm->GetFloat("epsilon", 1e-5f);
  r.SetAttribute(scaled_norm, onnx::MakeAttribute("epsilon", std::ldexp(eps, -2 * k)));
  r.ReplaceAllUsesWith(norm->output(0), scaled_norm->output(0));
  for (auto it = old.rbegin(); it != old.rend(); ++it) r.EraseNode(*it);
}

}  // namespace

absl::StatusOr<int> ScaleLinearBeforeNorm(PassContext& ctx) {
  if (ctx.options.islands_honoured) return 0;  // fp32 islands protect these values there
  std::vector<Node*> linears;
  for (Node* n : ctx.model.graph().NodeList()) {
    if (Is(n, "Conv") || Is(n, "ConvTranspose") || Is(n, "MatMul") || Is(n, "Gemm")) {
      linears.push_back(n);
    }
  }
  int committed = 0;
  for (Node* n : linears) {
    std::optional<double> largest = LargestMagnitude(ctx, n->output(0));
    if (!largest || !(*largest > ctx.options.fp16_magnitude_threshold) ||
        !std::isfinite(*largest)) {
      continue;
    }
    std::string why;
    Node* norm = AbsorbingNorm(n, why);
    if (norm == nullptr) {
      ctx.log(absl::StrCat(kFp16SafeLinearScale, ": ", n->Describe(), " (max ", *largest,
                           ") not scaled: ", why));
      continue;
    }
    const int k = static_cast<int>(std::ceil(std::log2(*largest / kScaledTarget)));
    const std::string what = n->Describe();
    ctx.rewriter.Begin(kFp16SafeLinearScale, {n, norm});
    Rewrite(ctx, n, norm, k);
    if (FinishRewrite(ctx)) {
      ++committed;
      ctx.log(absl::StrCat(kFp16SafeLinearScale, ": ", what, " (max ", *largest,
                           ") computes its output / 2^", k));
    }
  }
  return committed;
}

}  // namespace ovfix::rules
