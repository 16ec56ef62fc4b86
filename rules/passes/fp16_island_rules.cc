#include "rules/passes/fp16_island_rules.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/constant.h"
#include "ir/float16.h"
#include "onnx/defs/data_type_utils.h"
#include "onnx/defs/schema.h"
#include "re2/re2.h"
#include "rules/passes/spec_types.h"

namespace ovfix::rules {
namespace {

constexpr double kFloat16Max = 65504;
constexpr double kFloat16MinNormal = 6.103515625e-05;  // 2^-14
constexpr float kRoundsToInf = 65520.0f;  // the smallest float that fp16 rounding makes inf
// The largest magnitude at which calibration shows a guard against overflow unneeded: 128x
// below fp16's max (ModelOpt AutoCast keeps fp32 from 512 on by default).
constexpr double kCalmLimit = kFloat16Max / 128;

using Islands = absl::flat_hash_map<const Node*, std::string>;

bool Is(const Node& n, std::string_view op) { return n.domain().empty() && n.op_type() == op; }
bool IsReduction(const Node& n) {
  return n.domain().empty() && absl::StartsWith(n.op_type(), "Reduce");
}
bool IsFloatNode(const Node& n) {
  for (const Value* v : n.inputs()) {
    if (IsFloat32(v)) return true;
  }
  for (const Value* v : n.outputs()) {
    if (IsFloat32(v)) return true;
  }
  return false;
}

// Largest and smallest non-zero magnitude of a float constant.
struct ConstantRange {
  double largest = 0;
  double smallest_nonzero = 0;
};
std::optional<ConstantRange> FloatConstantRange(const Value* v) {
  if (!IsFloat32(v)) return std::nullopt;
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

// A float output whose type parameter in onnx's schema no input shares: an attribute sets
// it (a window's output_datatype, MelWeightMatrix's), so retyping the value to float16
// would contradict the node. Cast and the constants are retyped with their attribute.
bool OutputTypeFromAttribute(const Node& n, int64_t opset) {
  if (!n.domain().empty() || Is(n, "Cast") || Is(n, "Constant") || Is(n, "ConstantOfShape")) {
    return false;
  }
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), "");
  if (schema == nullptr || schema->outputs().empty()) return false;
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    if (!IsFloat32(n.output(i))) continue;
    const std::string& param =
        schema->outputs()[std::min(i, schema->outputs().size() - 1)].GetTypeStr();
    bool shared = false;
    for (const auto& input : schema->inputs()) shared = shared || input.GetTypeStr() == param;
    if (!shared) return true;
  }
  return false;
}

bool IsNormalization(const Node& n) {
  static const absl::flat_hash_set<std::string> kNormalizations = {
      "LayerNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
      "MeanVarianceNormalization"};
  return n.domain().empty() && kNormalizations.contains(n.op_type());
}

// What the spec fixes: float inputs or outputs with no float16, or typed by an attribute.
std::string_view SpecReason(const Node& n, int64_t opset) {
  // Ops whose float inputs or outputs have no float16 in the ONNX spec (opset <= 18).
  static const absl::flat_hash_set<std::string> kNoFloat16 = {
      "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "NonMaxSuppression"};
  static const absl::flat_hash_set<std::string> kTypeFromAttribute = {
      "RandomNormal",      "RandomUniform", "RandomNormalLike",
      "RandomUniformLike", "Multinomial",   "Bernoulli"};
  if (kNoFloat16.contains(n.op_type())) return "no float16 in the ONNX spec for this op";
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    if (IsFloat32(n.output(i)) && !SpecAllowsFloat16(n, opset, true, i)) {
      return "no float16 in the ONNX spec for this op";
    }
  }
  if (n.op_type() == "Constant" && n.HasAttribute("sparse_value")) return "sparse constant";
  if (kTypeFromAttribute.contains(n.op_type()) || (Is(n, "EyeLike") && n.HasAttribute("dtype")) ||
      OutputTypeFromAttribute(n, opset)) {
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
  if (n.op_type() == "Range") return "float Range";
  return SpecReason(n, opset);
}

class Decider {
 public:
  Decider(const Graph& g, const IslandOptions& o) : g_(g), o_(o) {}

  absl::StatusOr<Islands> Run() {
    std::vector<std::unique_ptr<RE2>> patterns;
    for (const std::string& p : o_.keep_fp32) {
      auto re = std::make_unique<RE2>(p, RE2::Quiet);
      if (!re->ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--keep-fp32 '", p, "': not a valid regex: ", re->error()));
      }
      patterns.push_back(std::move(re));
    }
    const std::vector<Node*> nodes = g_.NodeList();
    for (const Node* n : nodes) {
      if (!IsFloatNode(*n)) continue;
      if (!n->outputs().empty() && n->output(0) != nullptr) {
        if (auto it = o_.keep_outputs.find(n->output(0)->name()); it != o_.keep_outputs.end()) {
          Mark(n, it->second);
        }
      }
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (RE2::FullMatch(n->name(), *patterns[i]) || RE2::FullMatch(n->op_type(), *patterns[i])) {
          Mark(n, absl::StrCat("--keep-fp32 '", o_.keep_fp32[i], "'"));
          break;
        }
      }
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
      return std::move(islands_);
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
      if (IsFloatNode(*n)) IntegerFeeding(*n);
    }
    for (const Node* n : nodes) AngleFeeding(*n);
    for (const Node* n : nodes) {
      if (IsFloatNode(*n)) ConstantRules(*n);
    }
    if (o_.observed) {
      for (const Node* n : nodes) {
        if (IsFloatNode(*n)) Calibration(*n);
      }
      for (const Node* n : nodes) ResidualMatMul(*n);
    }
    Closure(nodes);
    Pull(nodes);
    return std::move(islands_);
  }

 private:
  void Mark(const Node* n, std::string reason) {
    if (n->owner() == &g_) islands_.try_emplace(n, std::move(reason));
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
      const bool square = Is(*p, "Mul") && p->input(0) == p->input(1);
      if (Is(*p, "Pow") || Is(*p, "Exp") || square) {
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

  // A float value made into integers (Cast to an integer type, Round/Floor/Ceil,
  // QuantizeLinear), and the element-wise arithmetic that computes it, back through every
  // variable float input up to a few steps: a scale or a size computed in fp16 would move
  // the integers.
  void IntegerFeeding(const Node& n) {
    const bool to_integer = Is(n, "Cast") && IsFloat32(n.input(0)) &&
                            IsInteger(static_cast<DataType>(n.GetInt("to", 0)));
    const bool rounds =
        (Is(n, "Round") || Is(n, "Floor") || Is(n, "Ceil")) && IsFloat32(n.input(0));
    if (!to_integer && !rounds && !Is(n, "QuantizeLinear")) return;
    const std::string why = absl::StrCat("computes integers from floats (", n.Describe(), ")");
    static const absl::flat_hash_set<std::string> kArithmetic = {
        "Mul",   "Div",   "Add",  "Sub",     "Neg",     "Abs",       "Clip",    "Max",     "Min",
        "Round", "Floor", "Ceil", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"};
    MarkWithFeeding(n, why, kArithmetic);
  }

  // Sin/Cos of an angle (rotary position embeddings): fp16 spaces values near 1000 half a
  // radian apart, so the angle and the arithmetic that computes it (positions times
  // frequencies, their concatenation) stay fp32.
  void AngleFeeding(const Node& n) {
    if (!(Is(n, "Sin") || Is(n, "Cos")) || !IsFloat32(n.input(0))) return;
    static const absl::flat_hash_set<std::string> kAngleArithmetic = {
        "Mul",     "Div",       "Add",     "Sub",    "Neg",   "MatMul",
        "Einsum",  "Concat",    "Reshape", "Expand", "Tile",  "Transpose",
        "Squeeze", "Unsqueeze", "Flatten", "Gather", "Slice", "Identity"};
    MarkWithFeeding(n, absl::StrCat("angle of ", n.Describe(), " (fp16 cannot resolve it)"),
                    kAngleArithmetic);
  }

  // Marks `n`, then the nodes of `through` that compute its variable float inputs, back up to
  // a few steps.
  void MarkWithFeeding(const Node& n, const std::string& why,
                       const absl::flat_hash_set<std::string>& through) {
    Mark(&n, why);
    constexpr int kMaxDepth = 8;
    std::vector<std::pair<const Node*, int>> stack = {{&n, 0}};
    absl::flat_hash_set<const Node*> seen = {&n};
    while (!stack.empty()) {
      const auto [node, depth] = stack.back();
      stack.pop_back();
      if (depth == kMaxDepth) continue;
      for (const Value* v : node->inputs()) {
        if (!IsFloat32(v) || IsConstant(v)) continue;
        const Node* p = v->producer();
        if (p == nullptr || p->owner() != &g_ || !p->domain().empty() ||
            !through.contains(p->op_type()) || !seen.insert(p).second) {
          continue;
        }
        Mark(p, why);
        stack.emplace_back(p, depth + 1);
      }
    }
  }

  // A MatMul or Gemm adding into a residual stream (an Add whose other input is not a
  // constant) where calibration saw either near fp16's limit: residual sums grow block after
  // block, so both stay fp32 from half the calibration threshold on.
  void ResidualMatMul(const Node& n) {
    if (!Is(n, "Add") || !o_.observed || n.inputs().size() != 2) return;
    for (size_t i = 0; i < 2; ++i) {
      const Value* product = n.input(i);
      const Value* stream = n.input(1 - i);
      if (product == nullptr || stream == nullptr || IsConstant(stream)) continue;
      const Node* p = product->producer();
      if (p == nullptr || p->owner() != &g_ || !(Is(*p, "MatMul") || Is(*p, "Gemm"))) continue;
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
      std::optional<ConstantRange> r = FloatConstantRange(in);
      if (!r) continue;
      if (r->largest > kFloat16Max) {
        Mark(&n, absl::StrFormat("constant '%s' of magnitude %.3g exceeds fp16's max 65504",
                                 in->name(), r->largest));
        return;
      }
      const bool epsilon = r->largest > 0 && r->largest < kFloat16MinNormal && o_.structural;
      if (epsilon && (Is(n, "Add") || Is(n, "Sub")) && EpsilonNegligible(n)) return;
      if (epsilon && (Is(n, "Add") || Is(n, "Sub") || Is(n, "Div"))) {
        const std::string why =
            absl::StrFormat("%s a small constant %.3g that fp16 cannot hold (below 2^-14)",
                            Is(n, "Div") ? "divides by" : "adds", r->largest);
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

  // A node whose float inputs (two or more, not constants) all come from islands joins them
  // rather than casting each of them down.
  void Closure(const std::vector<Node*>& nodes) {
    for (const Node* n : nodes) {
      if (islands_.contains(n) || !IsFloatNode(*n)) continue;
      int from_islands = 0, others = 0;
      for (const Value* v : n->inputs()) {
        if (!IsFloat32(v) || IsConstant(v)) continue;
        const Node* p = v->producer();
        (p != nullptr && islands_.contains(p)) ? ++from_islands : ++others;
      }
      if (from_islands >= 2 && others == 0) Mark(n, "all its float inputs come from fp32 islands");
    }
  }

  // Float made from non-float inputs (Cast from int, Constant) that only islands read stays
  // float rather than going to fp16 and back.
  void Pull(const std::vector<Node*>& nodes) {
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Node* n = *it;
      if (islands_.contains(n) || !IsFloatNode(*n)) continue;
      bool float_inputs = false;
      for (const Value* v : n->inputs()) float_inputs = float_inputs || IsFloat32(v);
      if (float_inputs) continue;
      bool only_islands = true, read = false;
      for (const Value* o : n->outputs()) {
        if (!IsFloat32(o)) continue;
        if (o->is_graph_output()) only_islands = false;
        for (const Use& u : o->uses()) {
          read = true;
          only_islands = only_islands && islands_.contains(u.node);
        }
      }
      if (read && only_islands) Mark(n, "makes float that only fp32 islands read");
    }
  }

  const Graph& g_;
  const IslandOptions& o_;
  Islands islands_;
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
