#include "rules/passes/constant_folding.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/graph_walk.h"
#include "ir/status_macros.h"
#include "rules/light_proto.h"
#include "rules/passes/graph_edit.h"

namespace ovfix::rules {
namespace {

// Ops whose result is not a function of their inputs, or that the executor cannot run as a
// single node on tensors.
bool NeverFolded(const Node& n) {
  static const absl::flat_hash_set<std::string> kOps = {"RandomNormal",
                                                        "RandomUniform",
                                                        "RandomNormalLike",
                                                        "RandomUniformLike",
                                                        "Multinomial",
                                                        "Bernoulli",
                                                        "If",
                                                        "Loop",
                                                        "Scan",
                                                        "SequenceConstruct",
                                                        "SequenceEmpty",
                                                        "SequenceAt",
                                                        "SequenceInsert",
                                                        "SequenceErase",
                                                        "SequenceLength",
                                                        "SplitToSequence",
                                                        "ConcatFromSequence",
                                                        "Optional",
                                                        "OptionalGetElement",
                                                        "OptionalHasElement"};
  return !n.domain().empty() || kOps.contains(n.op_type()) || !n.subgraphs().empty();
}

// DequantizeLinear of constant integers (the weights and biases of a QDQ model) stays: the
// group it belongs to (DequantizeLinear into Conv or MatMul, then QuantizeLinear) is what
// backends recognize and run as integer kernels (onnxruntime, TensorRT's explicit quantization,
// the cpu executor's QDQ fusion), and its float value is four times the bytes of the integers.
bool KeepsQuantizedForm(const Node& n) {
  if (n.op_type() != "DequantizeLinear" || n.num_inputs() == 0 || n.input(0) == nullptr) {
    return false;
  }
  const Value* x = n.input(0);
  const DataType t = x->is_initializer() ? x->tensor().type() : x->elem_type();
  return t == DataType::kInt8 || t == DataType::kUint8 || t == DataType::kInt16 ||
         t == DataType::kUint16 || t == DataType::kInt32;
}

// What the evaluator reads (NodeEvaluator: initializers only), or an omitted input.
bool IsFoldedInput(const Value* v) {
  return v == nullptr || (v->is_initializer() && !v->is_graph_input());
}

// Shape or Size of a value whose dims are all known: the constant, computed from the type.
std::optional<Tensor> ShapeConstant(const Node& n, int opset) {
  if (n.op_type() != "Shape" && n.op_type() != "Size") return std::nullopt;
  const Value* in = n.input(0);
  if (in == nullptr || IsFoldedInput(in)) return std::nullopt;  // constants fold normally
  std::optional<std::vector<int64_t>> dims = in->static_shape();
  if (!dims) return std::nullopt;
  if (n.op_type() == "Size") {
    return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {Tensor::NumElements(*dims)});
  }
  const int64_t rank = static_cast<int64_t>(dims->size());
  int64_t start = 0, end = rank;
  if (opset >= 15) {
    start = n.GetInt("start", 0);
    end = n.GetInt("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
  }
  std::vector<int64_t> slice(dims->begin() + start, dims->begin() + end);
  return Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(slice.size())}, slice);
}

// The folded outputs of `n`, or nullopt when it does not fold.
std::optional<std::vector<Tensor>> Fold(const Model& model, const Node& n, int64_t limit,
                                        NodeEvaluator* evaluator) {
  if (NeverFolded(n) || KeepsQuantizedForm(n)) return std::nullopt;
  for (const Value* o : n.outputs()) {
    if (o != nullptr && o->is_graph_output()) return std::nullopt;  // outputs stay computed
  }
  if (std::optional<Tensor> t = ShapeConstant(n, static_cast<int>(model.OpsetVersion("")))) {
    return std::vector<Tensor>{*t};
  }
  if (evaluator == nullptr) return std::nullopt;
  if (!std::all_of(n.inputs().begin(), n.inputs().end(), IsFoldedInput)) return std::nullopt;
  absl::StatusOr<std::vector<Tensor>> outputs = evaluator->Evaluate(model, n);
  if (!outputs.ok()) return std::nullopt;
  for (size_t i = 0; i < outputs->size(); ++i) {
    if (n.output(i) == nullptr) continue;
    const Tensor& t = (*outputs)[i];
    if (!t.defined() || t.numel() > limit) return std::nullopt;
  }
  return *std::move(outputs);
}

// One walk over `g` in order, folding what folds; a chain folds front to back in one walk.
int FoldGraph(PassContext& ctx, Graph& g, const std::string& pass) {
  int folded = 0;
  // Folding erases the folded node and adds initializers, never nodes: the list taken once
  // stays valid apart from the nodes the commits removed.
  absl::flat_hash_set<const Node*> removed;
  for (Node* n : g.NodeList()) {
    if (removed.contains(n)) continue;
    std::optional<std::vector<Tensor>> outputs =
        Fold(ctx.model, *n, ctx.options.fold_size_limit, ctx.evaluator);
    if (!outputs) continue;
    ctx.rewriter.Begin(pass, {n});
    // (constant, its name, the name of the value it replaces)
    std::vector<std::tuple<Value*, std::string, std::string>> constants;
    for (size_t i = 0; i < outputs->size(); ++i) {
      Value* o = n->output(i);
      if (o == nullptr) continue;
      Value* c = ctx.rewriter.CreateInitializer(g, o->name(), std::move((*outputs)[i]));
      ctx.rewriter.ReplaceAllUsesWith(o, c);
      constants.emplace_back(c, c->name(), o->name());
    }
    ctx.rewriter.EraseNode(n);
    if (!FinishRewrite(ctx)) continue;
    ++folded;
    removed.insert(ctx.rewriter.last_removed().begin(), ctx.rewriter.last_removed().end());
    // The constant takes the name of the value it replaced (free once that is gone). A
    // constant nothing read is gone with the commit: looked up by name, not dereferenced.
    for (auto& [c, name, original] : constants) {
      if (g.FindValue(name) == c && !ctx.rewriter.NameTaken(original)) {
        g.RenameValue(c, original);
      }
    }
  }
  return folded;
}

}  // namespace

absl::StatusOr<int> FoldConstants(PassContext& ctx) {
  int folded = 0;
  // A new sweep runs when folding made more shapes known.
  for (int sweep = 0; sweep < 8; ++sweep) {
    int this_sweep = 0;
    VisitGraphs(ctx.model.graph(),
                [&](Graph& g) { this_sweep += FoldGraph(ctx, g, kConstantFolding); });
    folded += this_sweep;
    if (this_sweep == 0) break;
    OVFIX_RETURN_IF_ERROR(InferTypes(ctx));
  }
  if (folded > 0) ctx.log(absl::StrCat(kConstantFolding, ": folded ", folded, " node(s)"));
  return folded;
}

}  // namespace ovfix::rules
