#include "rules/passes/fp16_island_rules.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/constant.h"
#include "ir/float16.h"
#include "ir/status_macros.h"
#include "onnx/defs/data_type_utils.h"
#include "onnx/defs/schema.h"
#include "rules/passes/island_marks.h"
#include "rules/passes/spec_types.h"

namespace ovfix::rules {
namespace {

constexpr double kFloat16Max = 65504;
constexpr double kFloat16MinNormal = 6.103515625e-05;  // 2^-14
constexpr float kRoundsToInf = 65520.0f;  // the smallest float that fp16 rounding makes inf
// The largest magnitude at which calibration shows a guard against overflow unneeded: 128x
// below fp16's max (ModelOpt AutoCast keeps fp32 from 512 on by default).
constexpr double kCalmLimit = kFloat16Max / 128;

using Islands = IslandMarks::Islands;

bool IsReduction(const Node& n) {
  return n.domain().empty() && absl::StartsWith(n.op_type(), "Reduce");
}
// Largest and smallest non-zero magnitude of a float constant.
struct ConstantRange {
  double largest = 0;
  double smallest_nonzero = 0;
};
std::optional<ConstantRange> FloatConstantRange(const Value* v, const IslandOptions& o) {
  if (!IsFloat32(v)) return std::nullopt;
  if (o.constant_magnitudes) {
    if (std::optional<MagnitudeRange> m = o.constant_magnitudes(v)) {
      return ConstantRange{m->largest, m->smallest_nonzero};
    }
  }
  absl::StatusOr<Tensor> t = ConstantValue(v);
  if (!t.ok() || t->numel() == 0 || t->type() != DataType::kFloat) return std::nullopt;
  const MagnitudeRange m = FloatMagnitudes(t->data<float>(), t->numel());
  ConstantRange r;
  r.largest = m.largest;
  r.smallest_nonzero = m.smallest_nonzero;
  return r;
}

// The only non-constant input of `n`, or nullptr when it has none or several.
Value* SoleVariableInput(const Node& n) {
  Value* found = nullptr;
  for (Value* v : n.inputs()) {
    if (v == nullptr || IsConstant(v)) continue;
    if (found != nullptr && found != v) return nullptr;
    found = v;
  }
  return found;
}

bool IsNormalization(const Node& n) {
  static const absl::flat_hash_set<std::string> kNormalizations = {
      "LayerNormalization", "InstanceNormalization",     "GroupNormalization",
      "LpNormalization",    "MeanVarianceNormalization", "RMSNormalization"};
  return n.domain().empty() && kNormalizations.contains(n.op_type());
}

// What the spec fixes: float inputs or outputs with no float16, or typed by an attribute.
std::string_view SpecReason(const Node& n, int64_t opset) {
  // Ops whose float inputs or outputs have no float16 in the ONNX spec (QuantizeLinear and
  // DequantizeLinear take float16 scales from opset 19).
  static const absl::flat_hash_set<std::string> kNoFloat16 = {
      "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "NonMaxSuppression"};
  const bool quantize = n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear";
  if (kNoFloat16.contains(n.op_type()) && !(quantize && opset >= 19)) {
    return "no float16 in the ONNX spec for this op";
  }
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    if (IsFloat32(n.output(i)) && !SpecAllowsFloat16(n, opset, true, i)) {
      return "no float16 in the ONNX spec for this op";
    }
  }
  if (n.op_type() == "Constant" && n.HasAttribute("sparse_value")) return "sparse constant";
  if (OutputTypeSetByAttribute(n, opset)) {
    return "output type set by an attribute";
  }
  return "";
}

std::string_view OpKindReason(const Node& n, int64_t opset) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return "op outside the ONNX domain";
  if (!n.subgraphs().empty())
    return "control flow (fp32 at its inputs and outputs; its bodies are converted inside)";
  if (IsReduction(n)) return "reduction";
  if (IsNormalization(n)) return "normalization";
  if (n.op_type() == "Softmax" || n.op_type() == "LogSoftmax") return "softmax";
  if (n.op_type() == "Attention") return "attention (a softmax of scaled dot products)";
  if (n.op_type() == "Range") return "float Range";
  return SpecReason(n, opset);
}

class Decider : public IslandMarks {
 public:
  Decider(const Graph& g, const IslandOptions& o) : IslandMarks(g, o, /*join_between=*/false) {}

 private:
  void Decide(const std::vector<Node*>& nodes) override {
    for (const Node* n : nodes) {
      if (!IsFloatNode(*n)) continue;
      if (const std::string why(OpKindReason(*n, o_.opset)); !why.empty()) {
        const bool name_op = IsReduction(*n) || why == "normalization" || why == "softmax";
        if (name_op && o_.structural && Calm(*n) && SpecReason(*n, o_.opset).empty()) {
          continue;  // an overflow guard calibration shows unneeded
        }
        if (o_.structural || !(name_op || why == "float Range")) {
          Mark(n, name_op ? absl::StrCat(why, " (", n->op_type(), ")") : why);
        }
      }
    }
    if (!o_.structural) {
      for (const Node* n : nodes) {
        if (IsFloatNode(*n)) ConstantRules(*n);
        if (IsFloatNode(*n) && o_.observed) Calibration(*n);
      }
      return;
    }
    for (const Node* n : nodes) {
      if (IsReduction(*n) && IsFloat32(n->input(0))) GrowthFeeding(*n);
    }
    for (const Node* n : nodes) {
      if (IsReduction(*n) && IsFloat32(n->output(0))) {
        NormalizationTail(
            n->output(0), 0, {},
            absl::StrCat("normalization tail after ", n->Describe(), " (Add eps -> Sqrt -> Div)"),
            /*rooted=*/false, /*guarded=*/n);
      }
    }
    for (const Node* n : nodes) {
      if (IsFloatNode(*n)) IntegerFeeding(*n, "");
    }
    QuantizerFeeding(nodes);
    for (const Node* n : nodes) AngleFeeding(*n, "fp16");
    for (const Node* n : nodes) {
      if (IsFloatNode(*n)) ConstantRules(*n);
    }
    if (o_.observed) {
      for (const Node* n : nodes) {
        if (IsFloatNode(*n)) Calibration(*n);
      }
      for (const Node* n : nodes) ResidualMatMul(*n);
    }
  }

  // Whether calibration on real data saw every float value `n` reads and computes, and what
  // it holds inside (a norm's variance, the squares of ReduceL2), at most kCalmLimit: then a
  // guard against overflow at `n` is not needed.
  bool Calm(const Node& n) const {
    if (!o_.release_calm || !o_.observed || !n.domain().empty()) return false;
    const std::string& op = n.op_type();
    // Sums calibration cannot bound (exponentials, p-norms over a whole axis), and norms whose
    // function body in onnx reads float constants beside its input (no float16 there).
    static const absl::flat_hash_set<std::string> kNeverReleased = {
        "ReduceLogSumExp", "ReduceLogSum", "LpNormalization", "MeanVarianceNormalization",
        "GroupNormalization"};
    if (kNeverReleased.contains(op)) return false;
    // The largest magnitude observed of `values`' variable floats; nullopt if one is unknown.
    auto largest = [&](const auto& values) -> std::optional<double> {
      double l = 0;
      for (const Value* v : values) {
        if (!IsFloat32(v) || IsConstant(v)) continue;
        const std::optional<double> m = Largest(v);
        if (!m || !std::isfinite(*m)) return std::nullopt;
        l = std::max(l, *m);
      }
      return l;
    };
    const std::optional<double> in = largest(n.inputs()), out = largest(n.outputs());
    if (!in || !out) return false;
    double inside = std::max(*in, *out);
    if (op == "ReduceL2") inside = std::max(inside, *out * *out);
    if (IsNormalization(n)) inside = std::max(inside, 4 * *in * *in);  // (x - mean)^2
    return inside <= kCalmLimit;
  }
  // The largest |x| calibration saw of `v`: inf when one was not finite or rounds to inf in
  // fp16; nullopt when it was not observed.
  std::optional<double> Largest(const Value* v) const {
    const std::optional<MagnitudeRange> r = o_.observed(v);
    if (!r) return std::nullopt;
    return r->nan || !(r->largest < kRoundsToInf) ? INFINITY : r->largest;
  }
  // The smallest |x| calibration saw of `v`, zeros included.
  std::optional<double> Smallest(const Value* v) const {
    const std::optional<MagnitudeRange> r = o_.observed(v);
    if (!r || r->nan) return std::nullopt;
    return r->zero ? 0.0 : r->smallest_nonzero;
  }
  // An epsilon added to a value calibration on real data saw at least 2^10 times larger
  // (and calm): the sum is the value to fp16's precision. Converted, the epsilon becomes
  // fp16's smallest normal, so it still keeps the sum off zero (Fp16IslandsPass).
  bool EpsilonNegligible(const Node& n) const {
    if (!o_.release_calm || !o_.observed) return false;
    const Value* x = SoleVariableInput(n);
    if (x == nullptr || !IsFloat32(x)) return false;
    const std::optional<double> smallest = Smallest(x), largest = Largest(x);
    return smallest && largest && *smallest >= kFloat16MinNormal * 1024 && *largest <= kCalmLimit;
  }
  bool AllCalm(const std::vector<const Node*>& nodes) const {
    return std::all_of(nodes.begin(), nodes.end(), [&](const Node* q) { return Calm(*q); });
  }

  // Pow / Mul(x, x) / Exp reaching the reduction through shape and scaling ops.
  void GrowthFeeding(const Node& reduction) {
    std::vector<const Node*> path;
    const Value* v = reduction.input(0);
    for (int step = 0; step < 6 && v != nullptr; ++step) {
      const Node* p = v->producer();
      if (p == nullptr || p->owner() != &g_) return;
      const bool square = IsOp(*p, "Mul") && p->input(0) == p->input(1);
      if (IsOp(*p, "Pow") || IsOp(*p, "Exp") || square) {
        path.push_back(p);
        if (Calm(reduction) && AllCalm(path)) return;  // calibration saw no growth to fear
        const std::string why = absl::StrCat("feeds ", reduction.Describe(), " with growth (",
                                             square ? "Mul x*x" : p->op_type(), ")");
        for (const Node* q : path) Mark(q, why);
        return;
      }
      static const absl::flat_hash_set<std::string> kThrough = {
          "Mul",     "Div",       "Add",     "Sub",       "Neg",     "Abs",
          "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity"};
      if (!p->domain().empty() || !kThrough.contains(p->op_type())) return;
      path.push_back(p);
      v = SoleVariableInput(*p);
    }
  }

  // Float nodes whose values reach a quantizer (QuantizeLinear, DynamicQuantizeLinear) through
  // float values: fp16's rounding moves values across the quantizer's rounding boundaries, so
  // integer codes flip by a step, and every later layer carries the steps on (before this
  // rule, an int8 UNet's repair took 18 rounds to keep 95% of its float nodes in fp32). The
  // dequantizing arithmetic between integer layers (Cast of ConvInteger's sum, the scale
  // products) is on such paths; float math after the last quantizer is not. Each node gets
  // the nearest quantizer downstream as its reason.
  void QuantizerFeeding(const std::vector<Node*>& nodes) {
    std::deque<std::pair<const Value*, const Node*>> queue;
    for (const Node* n : nodes) {
      if (!n->domain().empty() ||
          !(IsOp(*n, "QuantizeLinear") || IsOp(*n, "DynamicQuantizeLinear"))) {
        continue;
      }
      for (const Value* in : n->inputs()) queue.emplace_back(in, n);
    }
    absl::flat_hash_set<const Node*> seen;
    while (!queue.empty()) {
      const auto [v, quantizer] = queue.front();
      queue.pop_front();
      if (!IsFloat32(v) || IsConstant(v)) continue;
      const Node* p = v->producer();
      if (p == nullptr || p->owner() != &g_ || !seen.insert(p).second) continue;
      Mark(p, absl::StrCat("feeds ", quantizer->Describe(),
                           " (fp16 rounding before a quantizer flips its integer codes)"));
      for (const Value* in : p->inputs()) queue.emplace_back(in, quantizer);
    }
  }

  // A MatMul or Gemm adding into a residual stream (an Add whose other input is not a
  // constant) where calibration saw either near fp16's limit: residual sums grow block after
  // block, so both stay fp32 from half the calibration threshold on.
  void ResidualMatMul(const Node& n) {
    if (!IsOp(n, "Add") || !o_.observed || n.inputs().size() != 2) return;
    for (size_t i = 0; i < 2; ++i) {
      const Value* product = n.input(i);
      const Value* stream = n.input(1 - i);
      if (product == nullptr || stream == nullptr || IsConstant(stream)) continue;
      const Node* p = product->producer();
      if (p == nullptr || p->owner() != &g_ || !(IsOp(*p, "MatMul") || IsOp(*p, "Gemm"))) continue;
      double largest = 0;
      for (const Value* v : {product, stream, static_cast<const Value*>(n.output(0))}) {
        if (std::optional<double> m = Largest(v)) largest = std::max(largest, *m);
      }
      if (!(largest > o_.magnitude_threshold / 2)) continue;
      const std::string why =
          absl::StrFormat("%s into a residual Add with observed |x| up to %.3g, near fp16's limit",
                          p->op_type(), largest);
      Mark(p, why);
      Mark(&n, why);
      return;
    }
  }

  // Reduce -> (Add/Sub eps) -> Sqrt (or Pow 0.5) -> Div/Reciprocal/Mul: a decomposed norm.
  // `guarded`: the reduction it starts from, when the tail guards against its overflow (not
  // for an epsilon fp16 cannot hold): calm, with a calm tail, nothing is marked.
  void NormalizationTail(const Value* v, int depth, std::vector<const Node*> path,
                         const std::string& why, bool rooted = false,
                         const Node* guarded = nullptr) {
    if (v == nullptr || depth > 4) return;
    for (const Use& u : v->uses()) {
      const Node* c = u.node;
      if (c->owner() != &g_ || !c->domain().empty()) continue;
      std::vector<const Node*> next = path;
      next.push_back(c);
      const std::string& op = c->op_type();
      bool root = op == "Sqrt";
      if (op == "Pow") {
        absl::StatusOr<Tensor> e = ConstantValue(c->input(1));
        root = e.ok() && e->numel() == 1 && std::abs(std::abs(e->GetAsDouble(0)) - 0.5) < 1e-6;
      }
      if ((op == "Div" || op == "Reciprocal" || op == "Mul") && rooted) {
        if (guarded != nullptr && Calm(*guarded) && AllCalm(next)) continue;
        for (const Node* q : next) Mark(q, why);
      } else if (root) {
        NormalizationTail(c->output(0), depth + 1, next, why, true, guarded);
      } else if ((op == "Add" || op == "Sub") && SoleVariableInput(*c) == v && !rooted) {
        NormalizationTail(c->output(0), depth + 1, next, why, false, guarded);
      }
    }
  }

  void ConstantRules(const Node& n) {
    for (const Value* in : n.inputs()) {
      std::optional<ConstantRange> r = FloatConstantRange(in, o_);
      if (!r) continue;
      if (r->largest > kFloat16Max) {
        Mark(&n, absl::StrFormat("constant '%s' of magnitude %.3g exceeds fp16's max 65504",
                                 in->name(), r->largest));
        return;
      }
      const bool epsilon = r->largest > 0 && r->largest < kFloat16MinNormal && o_.structural;
      if (epsilon && (IsOp(n, "Add") || IsOp(n, "Sub")) && EpsilonNegligible(n)) return;
      if (epsilon && (IsOp(n, "Add") || IsOp(n, "Sub") || IsOp(n, "Div"))) {
        const std::string why =
            absl::StrFormat("%s a small constant %.3g that fp16 cannot hold (below 2^-14)",
                            IsOp(n, "Div") ? "divides by" : "adds", r->largest);
        Mark(&n, why);
        NormalizationTail(n.output(0), 1, {}, why, false);
        return;
      }
    }
  }

  void Calibration(const Node& n) {
    auto check = [&](const Value* v, bool output) {
      if (!IsFloat32(v) || IsConstant(v)) return false;
      std::optional<double> m = Largest(v);
      if (!m || !(*m > o_.magnitude_threshold)) return false;
      const std::string what = output ? "computes" : "reads";
      if (std::isinf(*m)) {
        Mark(&n, absl::StrCat(what, " '", v->name(), "', which fp16 rounding makes inf"));
      } else {
        Mark(&n, absl::StrFormat("%s '%s' with observed |x| up to %.3g > %g", what, v->name(), *m,
                                 o_.magnitude_threshold));
      }
      return true;
    };
    for (const Value* v : n.outputs()) {
      if (check(v, true)) return;
    }
    if (!o_.structural) return;  // the magnitude-only policy looks at outputs
    for (const Value* v : n.inputs()) {
      if (check(v, false)) return;
    }
  }
};

}  // namespace

bool SpecAllowsFloat16(const Node& n, int64_t opset, bool output, size_t index) {
  static const onnx::DataType kHalf = onnx::Utils::DataTypeUtils::ToType("tensor(float16)");
  return SpecAllowsType(n, opset, output, index, kHalf);
}

bool IsFloat32(const Value* v) {
  return v != nullptr && v->is_tensor() && v->elem_type() == DataType::kFloat;
}

absl::StatusOr<Islands> DecideIslands(const Graph& g, const IslandOptions& options) {
  return Decider(g, options).Run();
}

}  // namespace ovfix::rules
