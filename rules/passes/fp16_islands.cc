#include "rules/passes/fp16_islands.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/float16.h"
#include "ir/graph_walk.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "onnx/defs/attr_proto_util.h"
#include "rules/light_proto.h"
#include "rules/passes/bf16_island_rules.h"
#include "rules/passes/fp16_island_rules.h"
#include "rules/passes/graph_edit.h"

namespace ovfix::rules {
namespace {

using Islands = absl::flat_hash_map<const Node*, std::string>;
using NodeSet = absl::flat_hash_set<const Node*>;

bool Is(const Node& n, std::string_view op) { return n.domain().empty() && n.op_type() == op; }

// The type input `i` of `n` must have after the conversion; kUndefined when any float type
// will do (the op only looks at the shape).
// `half` is the type the conversion computes in (float16, or bfloat16).
// Islands in `bf16` compute in bfloat16 where the spec types the input so, else in float.
DataType Required(const Node& n, size_t i, const Graph& g, const Islands& islands,
                  const NodeSet& bf16, int64_t opset, DataType half) {
  if (n.owner() != &g) return DataType::kFloat;  // subgraphs are not converted
  if ((Is(n, "Shape") || Is(n, "Size")) && i == 0) return DataType::kUndefined;
  if (islands.contains(&n)) {
    return bf16.contains(&n) && SpecAllowsBfloat16(n, opset, false, i) ? DataType::kBfloat16
                                                                       : DataType::kFloat;
  }
  // Inputs that the spec types as float whatever the data type is (Resize's scales,
  // QLinearConv's scales, IsInf's input before opset 20).
  const bool allowed = half == DataType::kBfloat16 ? SpecAllowsBfloat16(n, opset, false, i)
                                                   : SpecAllowsFloat16(n, opset, false, i);
  return allowed ? half : DataType::kFloat;
}

// The islands of `g` that compute in bfloat16: those `outputs` names (by first output) whose
// op takes bfloat16 wherever it takes float16 (inputs and outputs) and that compute no output
// of the graph (an island's graph output stays fp32, as the conversion's outputs do).
NodeSet Bf16Islands(const Graph& g, const Islands& islands, const std::set<std::string>& outputs,
                    int64_t opset) {
  NodeSet bf16;
  if (outputs.empty()) return bf16;
  for (const auto& [n, reason] : islands) {
    if (n->outputs().empty() || n->output(0) == nullptr || !n->subgraphs().empty() ||
        !outputs.contains(n->output(0)->name())) {
      continue;
    }
    bool takes = true;
    for (size_t i = 0; takes && i < n->inputs().size(); ++i) {
      if (n->input(i) == nullptr || !IsFloat32(n->input(i))) continue;
      takes = SpecAllowsBfloat16(*n, opset, false, i) || !SpecAllowsFloat16(*n, opset, false, i);
    }
    for (size_t k = 0; takes && k < n->outputs().size(); ++k) {
      const Value* o = n->output(k);
      if (o == nullptr || !IsFloat32(o)) continue;
      takes = SpecAllowsBfloat16(*n, opset, true, k) && !o->is_graph_output();
    }
    if (takes) bf16.insert(n);
  }
  return bf16;
}

// The node of the main graph that holds `n` (itself, or the If/Loop/Scan around it).
Node* TopLevel(Node* n, const Graph& g) {
  while (n->owner() != &g && n->owner()->owner_node() != nullptr) n = n->owner()->owner_node();
  return n;
}

onnx::TypeProto WithElemType(const onnx::TypeProto& type, DataType t) {
  onnx::TypeProto out = type;
  out.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
  return out;
}

onnx::AttributeProto TensorAttribute(const std::string& name, const Tensor& t) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = TensorToProto(t);
  return a;
}

// Floats from here up round to inf in fp16 (65504 plus half its spacing).
// The magnitudes of a calibration activation (float, or any numeric type).
MagnitudeRange RangeOf(const Tensor& t) {
  if (t.type() == DataType::kFloat) return FloatMagnitudes(t.data<float>(), t.numel());
  MagnitudeRange r;
  double least = INFINITY;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double a = std::abs(t.GetAsDouble(i));
    if (std::isnan(a)) {
      r.nan = true;
      continue;
    }
    r.largest = std::max(r.largest, static_cast<float>(a));
    if (a == 0) r.zero = true;
    if (a > 0) least = std::min(least, a);
  }
  r.smallest_nonzero = r.largest > 0 ? static_cast<float>(least) : 0;
  return r;
}

// An epsilon fp16 cannot hold (one non-zero value below its smallest normal) that every
// reader adds or subtracts, as float16: fp16's smallest normal with its sign, not the zero
// rounding would make, so that the sum still stays off zero. The islands leave such an Add
// in fp16 only where calibration saw the other operand 2^10 times larger than that
// (fp16_island_rules.cc); nullopt for any other constant.
std::optional<Tensor> HalfEpsilon(const Value* v, const Tensor& t, DataType type) {
  if (type != DataType::kFloat16) return std::nullopt;  // bfloat16 has float's range
  constexpr float kMinNormal = 6.103515625e-05f;        // 2^-14
  if (t.type() != DataType::kFloat || t.numel() != 1 || !v->has_uses()) return std::nullopt;
  const float x = t.data<float>()[0];
  if (!(std::abs(x) > 0 && std::abs(x) < kMinNormal)) return std::nullopt;
  for (const Use& u : v->uses()) {
    if (!u.node->domain().empty() || (u.node->op_type() != "Add" && u.node->op_type() != "Sub")) {
      return std::nullopt;
    }
  }
  Tensor half = ConvertTensor(t, DataType::kFloat16);
  half.data<uint16_t>()[0] = FloatToHalfBits(std::copysign(kMinNormal, x));
  return half;
}

// Converts one graph. The main graph's inputs and outputs follow keep_io_types; a body of
// If/Loop/Scan keeps its interface in float (its inputs, its outputs, and the outer values it
// reads, which reach it as float), so the types of the node holding it, of both If branches
// and of Loop-carried values stay as they were, and Casts inside the body lead to and from
// its float16 nodes.
class Converter {
 public:
  Converter(PassContext& ctx, Graph& g, const Islands& islands, const NodeSet& bf16, DataType half)
      : ctx_(ctx),
        r_(ctx.rewriter),
        g_(g),
        body_(g.owner_node() != nullptr),
        islands_(islands),
        bf16_(bf16),
        opset_(ctx.model.OpsetVersion("")),
        half_(half) {}

  void Run() {
    Plan();
    const std::vector<Node*> nodes = g_.NodeList();
    if (body_ || ctx_.options.keep_io_types) CastOutputsBack();
    for (Value* v : float_values_) {
      if (v->is_initializer() && !v->is_graph_input()) {
        if (type_after_[v] == half_) {
          std::optional<Tensor> epsilon = HalfEpsilon(v, v->tensor(), half_);
          r_.SetInitializer(
              v, epsilon ? *std::move(epsilon) : ConvertTensorLazily(v->tensor(), half_));
          ++weights_;
        }
      } else if (type_after_[v] != DataType::kFloat) {  // fp16, or a bf16 island's output
        r_.SetType(v, WithElemType(v->type(), type_after_[v]));
      }
    }
    for (Node* n : nodes) {
      if (!islands_.contains(n)) RetypeAttributes(n);
    }
    for (Node* n : nodes) {
      for (size_t i = 0; i < n->inputs().size(); ++i) Connect(n, i);
    }
    // Readers inside subgraphs read float.
    for (Value* v : float_values_) {
      const std::vector<Use> uses = v->uses();
      for (const Use& u : uses) {
        if (u.node->owner() != &g_) Connect(u.node, static_cast<size_t>(u.input_index));
      }
    }
  }

  int casts() const { return casts_; }
  int weights() const { return weights_; }

 private:
  void Plan() {
    auto add = [&](Value* v, DataType t) {
      if (!IsFloat32(v) || type_after_.contains(v)) return;
      float_values_.push_back(v);
      type_after_[v] = t;
    };
    // Whether some reader of `v` wants it of type `t` / every reader does.
    auto wanted = [&](const Value* v, DataType t) {
      bool all = v->has_uses(), any = false;
      for (const Use& u : v->uses()) {
        const bool want = Required(*u.node, u.input_index, g_, islands_, bf16_, opset_, half_) == t;
        all = all && want;
        any = any || want;
      }
      return std::pair<bool, bool>{any, all};
    };
    for (Value* v : g_.inputs()) {
      if (!v->is_initializer() || v->is_graph_input()) {
        // An input only islands read stays float: rounding it would buy nothing (and a bf16
        // island reads it rounded from float, not from fp16).
        bool only_float_readers = v->has_uses();
        for (const Use& u : v->uses()) {
          const DataType t = Required(*u.node, u.input_index, g_, islands_, bf16_, opset_, half_);
          only_float_readers = only_float_readers &&
                               (t == DataType::kFloat || (t != half_ && t == DataType::kBfloat16));
        }
        add(v,
            body_ || ctx_.options.keep_io_types || only_float_readers ? DataType::kFloat : half_);
      }
    }
    if (body_) {
      for (Node* n : g_.nodes()) {
        for (Value* v : n->inputs()) {
          if (v != nullptr && v->owner() != &g_) add(v, DataType::kFloat);
        }
      }
    }
    for (Value* v : g_.initializers()) {
      if (v->is_graph_input()) continue;
      // fp16 when every reader wants fp16; else fp32 with an fp16 (bf16) copy for fp16 (bf16)
      // readers: a bf16 copy is rounded from the float weight, never from an fp16 one.
      const bool all_half = v->has_uses() && !wanted(v, DataType::kFloat).first &&
                            (half_ == DataType::kBfloat16 || !wanted(v, DataType::kBfloat16).first);
      add(v, all_half ? half_ : DataType::kFloat);
    }
    for (Node* n : g_.nodes()) {
      for (Value* o : n->outputs()) {
        add(o, !islands_.contains(n) ? half_
               : bf16_.contains(n)   ? DataType::kBfloat16
                                     : DataType::kFloat);
      }
    }
  }

  // keep_io_types: fp16 outputs get a Cast back to float that takes the output's name.
  void CastOutputsBack() {
    const std::vector<Value*> outputs = g_.outputs();
    for (Value* v : outputs) {
      auto it = type_after_.find(v);
      if (it == type_after_.end() || it->second != half_ || v->is_graph_input()) {
        continue;
      }
      Node* cast = r_.CreateNode(g_, "Cast", {v}, {v->name() + "_fp32"}, nullptr,
                                 v->name() + "/output_to_fp32");
      r_.SetAttribute(cast, onnx::MakeAttribute("to", static_cast<int64_t>(DataType::kFloat)));
      RedirectGraphOutput(r_, v, cast->output(0));
      ++casts_;
    }
  }

  // Ops whose output type comes from an attribute follow the conversion.
  void RetypeAttributes(Node* n) {
    const int64_t kFloatCode = static_cast<int64_t>(DataType::kFloat);
    const int64_t kHalfCode = static_cast<int64_t>(half_);
    if (Is(*n, "Cast") && n->GetInt("to", 0) == kFloatCode) {
      r_.SetAttribute(n, onnx::MakeAttribute("to", kHalfCode));
      return;
    }
    if (Is(*n, "ConstantOfShape") && !n->HasAttribute("value")) {
      // The default value is a float 0: spell it as a float16 0.
      r_.SetAttribute(n, TensorAttribute("value", Tensor(half_, {1})));
      return;
    }
    if (Is(*n, "Constant") || Is(*n, "ConstantOfShape")) {
      if (const onnx::AttributeProto* a = n->FindAttribute("value");
          a != nullptr && a->has_t() && a->t().data_type() == kFloatCode) {
        absl::StatusOr<Tensor> t = n->GetTensor("value");
        if (t.ok()) {
          std::optional<Tensor> epsilon = HalfEpsilon(n->output(0), *t, half_);
          r_.SetAttribute(n, TensorAttribute("value", epsilon ? *std::move(epsilon)
                                                              : ConvertTensor(*t, half_)));
        }
        return;
      }
      if (Is(*n, "Constant") &&
          (n->HasAttribute("value_float") || n->HasAttribute("value_floats"))) {
        std::vector<float> values = n->HasAttribute("value_float")
                                        ? std::vector<float>{n->GetFloat("value_float", 0)}
                                        : n->GetFloats("value_floats");
        std::vector<int64_t> dims;
        if (n->HasAttribute("value_floats")) dims.push_back(static_cast<int64_t>(values.size()));
        Tensor t = Tensor::FromVector<float>(DataType::kFloat, dims, values);
        r_.RemoveAttribute(n, "value_float");
        r_.RemoveAttribute(n, "value_floats");
        r_.SetAttribute(n, TensorAttribute("value", ConvertTensor(t, half_)));
      }
    }
  }

  // Input `i` of `n` gets the type it needs: a converted copy of a constant, or a Cast
  // shared by every reader that needs that type.
  void Connect(Node* n, size_t i) {
    Value* v = n->input(i);
    auto it = type_after_.find(v);
    if (v == nullptr || it == type_after_.end()) return;
    const DataType need = Required(*n, i, g_, islands_, bf16_, opset_, half_);
    if (need == DataType::kUndefined || need == it->second) return;
    Value*& converted = converted_[{v, need}];
    if (converted == nullptr) {
      const std::string suffix = "_" + TypeName(need);
      if (v->is_initializer() && !v->is_graph_input()) {
        std::optional<Tensor> epsilon;
        if (need == half_ && (Is(*n, "Add") || Is(*n, "Sub"))) {
          // read by fp32 nodes too, by fp16 Adds here
          epsilon = HalfEpsilon(v, v->tensor(), half_);
        }
        converted = r_.CreateInitializer(
            g_, v->name() + suffix,
            epsilon ? *std::move(epsilon) : ConvertTensorLazily(v->tensor(), need));
        if (need == half_) ++weights_;
      } else {
        Node* cast = r_.CreateNode(g_, "Cast", {v}, {v->name() + suffix}, TopLevel(n, g_),
                                   v->name() + "/to_" + TypeName(need));
        r_.SetAttribute(cast, onnx::MakeAttribute("to", static_cast<int64_t>(need)));
        r_.SetType(cast->output(0), WithElemType(v->type(), need));
        converted = cast->output(0);
        ++casts_;
      }
    }
    r_.SetInput(n, i, converted);
  }

  static std::string TypeName(DataType t) {
    return t == DataType::kBfloat16 ? "bf16" : t == DataType::kFloat16 ? "fp16" : "fp32";
  }

  PassContext& ctx_;
  Rewriter& r_;
  Graph& g_;
  const bool body_;
  const Islands& islands_;
  const NodeSet& bf16_;  // the islands that compute in bfloat16
  int64_t opset_;
  const DataType half_;  // float16 or bfloat16
  std::vector<Value*> float_values_;
  absl::flat_hash_map<const Value*, DataType> type_after_;
  absl::flat_hash_map<std::pair<const Value*, DataType>, Value*> converted_;
  int casts_ = 0;
  int weights_ = 0;
};

}  // namespace

absl::StatusOr<int> Fp16IslandsPass::Run(PassContext& ctx) {
  islands_.clear();
  Graph& g = ctx.model.graph();
  OVFIX_RETURN_IF_ERROR(InferTypes(ctx));
  IslandOptions options;
  options.keep_fp32 = ctx.options.keep_fp32;
  options.magnitude_threshold = ctx.options.fp16_magnitude_threshold;
  options.opset = ctx.model.OpsetVersion("");
  options.keep_outputs = ctx.options.keep_fp32_outputs;
  options.release_outputs = ctx.options.fp16_outputs;
  options.structural = ctx.options.fp16_islands == ConvertOptions::Fp16Islands::kStructural;
  options.release_calm = ctx.options.fp16_calibrated_on_data;
  absl::flat_hash_map<const Value*, MagnitudeRange> magnitudes;
  magnitudes_by_name_.clear();
  Validator* reference = ctx.validator;
  if (reference != nullptr) {
    options.observed = [&](const Value* v) -> std::optional<MagnitudeRange> {
      if (auto it = magnitudes.find(v); it != magnitudes.end()) return it->second;
      std::optional<MagnitudeRange> m = reference->CapturedMagnitudes(v);
      if (!m) {
        if (absl::StatusOr<Tensor> t = reference->Activation(v); t.ok()) m = RangeOf(*t);
      }
      if (m) magnitudes_by_name_[v->name()] = magnitudes[v] = *m;
      return m;
    };
    options.constant_magnitudes = [reference](const Value* v) -> std::optional<MagnitudeRange> {
      if (!v->is_initializer() || v->is_graph_input()) return std::nullopt;
      return reference->CapturedMagnitudes(v);
    };
  } else if (ctx.magnitudes != nullptr) {
    options.observed = [&](const Value* v) -> std::optional<MagnitudeRange> {
      auto it = ctx.magnitudes->find(v->name());
      if (it == ctx.magnitudes->end()) return std::nullopt;
      return it->second;
    };
  } else {
    ctx.log(absl::StrCat(name(),
                         ": no calibration run (--no-validate): islands from the "
                         "graph and --keep-fp32 only"));
  }
  // Every graph, each before the bodies inside it: a body reads the outer values as the
  // conversion of the graph around it left them (float).
  ctx.rewriter.Begin(name());
  int casts = 0, weights = 0, bf16_count = 0;
  // bfloat16 keeps float's range and loses precision instead: its own island policy.
  const bool bf16 = ctx.options.precision == ConvertOptions::Precision::kBf16;
  const DataType half = bf16 ? DataType::kBfloat16 : DataType::kFloat16;
  for (Graph* graph : GraphsRecursive(g)) {
    absl::StatusOr<Islands> islands =
        bf16 ? DecideBf16Islands(*graph, options) : DecideIslands(*graph, options);
    if (!islands.ok()) {
      ctx.rewriter.Rollback(std::string(islands.status().message()));
      return islands.status();
    }
    const NodeSet bf16_islands =
        bf16 ? NodeSet() : Bf16Islands(*graph, *islands, ctx.options.bf16_outputs, options.opset);
    for (const Node* n : graph->nodes()) {
      // An If, Loop or Scan is marked so that its interface stays float; what it computes is
      // its bodies' nodes, listed (and counted by the fp32 cost) on their own.
      if (!n->subgraphs().empty()) continue;
      if (auto it = islands->find(n); it != islands->end()) {
        islands_.push_back(
            {n->Describe(), n->op_type(), it->second,
             n->outputs().empty() || n->output(0) == nullptr ? std::string() : n->output(0)->name(),
             bf16_islands.contains(n)});
      }
    }
    bf16_count += static_cast<int>(bf16_islands.size());
    Converter converter(ctx, *graph, *islands, bf16_islands, half);
    converter.Run();
    casts += converter.casts();
    weights += converter.weights();
  }
  const bool committed = FinishRewrite(ctx);
  RewriteRecord& record = ctx.rewriter.records().back();
  std::string summary =
      absl::StrCat(islands_.size() - bf16_count, " node(s) kept in fp32, ", casts,
                   " Cast(s) inserted, ", weights, " weight(s) in ", bf16 ? "bfloat16" : "float16");
  if (bf16_count > 0) absl::StrAppend(&summary, ", ", bf16_count, " island node(s) in bfloat16");
  record.note = record.note.empty() ? summary : absl::StrCat(summary, "; ", record.note);
  if (!committed) return 0;
  ctx.log(absl::StrCat(name(), ": ", summary));
  return 1;
}

}  // namespace ovfix::rules
