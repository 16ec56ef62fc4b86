#include "rules/passes/fp16_safe_mask.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/constant.h"

namespace ovfix::rules {
namespace {

constexpr double kFp16Max = 65504;
// What a mask value beyond fp16's range becomes: 2^12, exact in fp16. Masking needs
// exp(bias + s - max) to be 0 for every masked score s, in fp32 (exp underflows below -104)
// and in fp16 (below -17.3): with -4096 that holds unless a masked score exceeds the row's
// largest unmasked one by 3992, far beyond any attention logit. Staying finite needs
// |s + bias| <= 65504: any |s| < 61408, and several such masks added together (a causal and a
// padding one) still fit. A larger bound (-30000, -1e4) would mask no better but leave less
// of that headroom, and gpu-fp16 would keep the mask chain in fp32 islands: the scores plus
// -4096 stay within its fp16_magnitude_threshold (8192) for any score above -4096.
// The option mask_bound (32-32768, declared in the registry) sets another: a model that adds
// more masks together wants less.
// A mask is built by a handful of nodes; a constant reaching further is something else.
constexpr size_t kLargestPath = 256;
// Constants this small are read to say why a value beyond fp16 was left alone; larger ones
// (weights) are read only once their uses are known to build a mask.
constexpr int64_t kLoggedConstantSize = 4096;

bool Is(const Node* n, const char* op) {
  return n != nullptr && n->domain().empty() && n->op_type() == op;
}

bool IsAnyOf(const Node& n, std::initializer_list<const char*> ops) {
  for (const char* op : ops) {
    if (Is(&n, op)) return true;
  }
  return false;
}

// Ops that carry a mask to the scores unchanged but for its layout or float type: the mask is
// their data input (0), never a shape, axes or indices.
bool Carries(const Node& n) {
  if (Is(&n, "Cast")) {
    const auto to = static_cast<DataType>(n.GetInt("to", 0));
    return to == DataType::kFloat || to == DataType::kFloat16 || to == DataType::kDouble;
  }
  return IsAnyOf(n, {"Expand", "Unsqueeze", "Reshape", "Squeeze", "Slice", "Tile", "Transpose",
                     "Identity", "Flatten"});
}

// Whether `n` builds a mask from what it reads at `input`.
bool BuildsMask(const Node& n, int input) {
  if (IsAnyOf(n, {"Mul", "Sub", "Add", "Neg", "Concat"})) return true;
  if (Is(&n, "Where")) return input == 1 || input == 2;  // a branch, not the condition
  return Carries(n) && input == 0;
}

// The nodes from a constant to the Softmax/Attention nodes its mask reaches.
struct MaskPath {
  std::vector<Node*> nodes;  // in topological order, the readers below included
  std::vector<Node*> readers;
};

// Why the node that joins the mask to `softmax`'s scores is not an additive bias (or a
// Where choosing between the two), or "".
std::string CheckBias(const Node& softmax, const Value* constant,
                      const absl::flat_hash_set<const Node*>& path) {
  auto from_mask = [&](const Value* v) {
    return v == constant || (v != nullptr && path.contains(v->producer()));
  };
  const Node* join = softmax.input(0)->producer();
  while (join != nullptr && path.contains(join) && Carries(*join)) {
    join = join->input(0)->producer();
  }
  if (join == nullptr || !path.contains(join) || !IsAnyOf(*join, {"Add", "Sub", "Where"})) {
    return absl::StrCat(softmax.Describe(), " reads the mask but not as a bias of its scores");
  }
  for (size_t i = Is(join, "Where") ? 1 : 0; i < join->inputs().size(); ++i) {
    if (!from_mask(join->input(i))) return "";
  }
  return absl::StrCat(join->Describe(), " before ", softmax.Describe(),
                      " adds no scores to the mask");
}

// Why not every use of `constant` flows into the bias of a Softmax or an Attention's attn_mask,
// or "" with `mask` filled.
std::string Trace(const Graph& g, const Value* constant, MaskPath& mask) {
  absl::flat_hash_set<const Node*> path;
  std::vector<const Value*> work = {constant};
  while (!work.empty()) {
    const Value* v = work.back();
    work.pop_back();
    if (v->is_graph_output()) return absl::StrCat("it reaches graph output '", v->name(), "'");
    for (const Use& u : v->uses()) {
      Node* n = u.node;
      if (n->owner() != &g) return "it is read inside a subgraph";
      const bool reader = Is(n, "Softmax") || Is(n, "Attention");
      if (Is(n, "Attention")) {
        if (u.input_index != 3) return absl::StrCat("it reaches ", n->Describe(), " as q, k or v");
        const Value* scores = n->output(3);
        const int64_t mode = n->GetInt("qk_matmul_output_mode", 0);
        if (scores != nullptr && (scores->has_uses() || scores->is_graph_output()) &&
            (mode == 1 || mode == 2)) {
          return absl::StrCat(n->Describe(), " outputs its masked scores");
        }
      } else if (!reader && !BuildsMask(*n, u.input_index)) {
        return absl::StrCat("it reaches ", n->Describe(), ", which builds no attention mask");
      }
      if (!path.insert(n).second) continue;
      if (reader) {
        mask.readers.push_back(n);
      } else {
        for (const Value* o : n->outputs()) {
          if (o != nullptr) work.push_back(o);
        }
      }
      if (path.size() > kLargestPath) return "its uses reach too many nodes for a mask";
    }
  }
  if (mask.readers.empty()) return "it reaches no Softmax or Attention";
  for (const Node* reader : mask.readers) {
    if (!Is(reader, "Softmax")) continue;
    if (std::string why = CheckBias(*reader, constant, path); !why.empty()) return why;
  }
  mask.readers.clear();
  for (Node* n : g.NodeList()) {
    if (!path.contains(n)) continue;
    mask.nodes.push_back(n);
    if (Is(n, "Softmax") || Is(n, "Attention")) mask.readers.push_back(n);
  }
  return "";
}

// What Bounded replaced.
struct Replaced {
  double bound = 0;
  int count = 0;
  double largest = 0;
  bool negative = false, positive = false;
  std::string Bound() const {
    return absl::StrCat(negative && positive ? "+-" : negative ? "-" : "", bound);
  }
};

// `t` with every value beyond fp16's range set to +-replaced.bound (its sign kept).
Tensor Bounded(const Tensor& t, Replaced& replaced) {
  Tensor bounded = t.Clone();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.GetAsDouble(i);
    if (!(std::abs(v) > kFp16Max)) continue;  // NaN stays
    bounded.SetFromDouble(i, std::copysign(replaced.bound, v));
    replaced.largest = std::max(replaced.largest, std::abs(v));
    (v < 0 ? replaced.negative : replaced.positive) = true;
    ++replaced.count;
  }
  return bounded;
}

// A copy of `old` before it reading `inputs`, with new outputs of the old ones' types.
Node* Clone(Rewriter& r, Node* old, const std::vector<Value*>& inputs) {
  std::vector<std::string> names;
  for (const Value* o : old->outputs()) {
    names.push_back(o == nullptr || o->name().empty() ? "" : o->name() + "_fp16safe");
  }
  Node* n = r.CreateNode(*old->owner(), old->op_type(), inputs, names, old,
                         old->name().empty() ? "" : old->name() + "_fp16safe", old->domain());
  for (const onnx::AttributeProto& a : old->attributes()) r.SetAttribute(n, a);
  for (size_t i = 0; i < old->outputs().size(); ++i) {
    if (old->output(i) != nullptr && n->output(i) != nullptr) {
      r.SetType(n->output(i), old->output(i)->type());
    }
  }
  return n;
}

// The path copied from the bounded constant to the readers, whose outputs then replace the
// old ones: validation compares what reads the Softmax/Attention outputs, not the mask itself
// (which changes by design).
void Rewrite(PassContext& ctx, Value* constant, Tensor bounded, const MaskPath& mask) {
  Rewriter& r = ctx.rewriter;
  Graph& g = ctx.model.graph();
  absl::flat_hash_map<const Value*, Value*> copy;
  copy[constant] = r.CreateInitializer(g, constant->name() + "_fp16safe", std::move(bounded));
  for (Node* n : mask.nodes) {
    std::vector<Value*> inputs = n->inputs();
    for (Value*& v : inputs) {
      if (auto it = copy.find(v); it != copy.end()) v = it->second;
    }
    Node* c = Clone(r, n, inputs);
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      if (n->output(i) != nullptr) copy[n->output(i)] = c->output(i);
    }
  }
  for (Node* reader : mask.readers) {
    for (Value* o : reader->outputs()) {
      if (o != nullptr && (o->has_uses() || o->is_graph_output())) {
        r.ReplaceAllUsesWith(o, copy.at(o));
      }
    }
  }
  for (auto it = mask.nodes.rbegin(); it != mask.nodes.rend(); ++it) r.EraseNode(*it);
}

}  // namespace

absl::StatusOr<int> BoundAttentionMasks(PassContext& ctx) {
  // Where fp32 islands are honoured and the model stays fp32 there is no fp16 to fit.
  if (ctx.options.islands_honoured && ctx.options.precision != ConvertOptions::Precision::kFp16) {
    return 0;
  }
  Graph& g = ctx.model.graph();
  std::vector<Value*> constants;
  absl::flat_hash_set<const Value*> seen;
  for (Node* n : g.NodeList()) {
    for (Value* v : n->inputs()) {
      if (v != nullptr && seen.insert(v).second && IsConstant(v)) constants.push_back(v);
    }
  }
  int committed = 0;
  for (Value* v : constants) {
    MaskPath mask;
    const std::string why = Trace(g, v, mask);
    absl::StatusOr<Tensor> t = ConstantValue(v);
    if (!t.ok() || (!why.empty() && t->numel() > kLoggedConstantSize)) continue;
    const DataType type = t->type();
    if (type != DataType::kFloat && type != DataType::kFloat16 && type != DataType::kDouble) {
      continue;
    }
    Replaced replaced;
    replaced.bound = DeclaredNumber(ctx.options, "mask_bound");
    Tensor bounded = Bounded(*t, replaced);
    if (replaced.count == 0) continue;
    if (!why.empty()) {
      ctx.log(absl::StrCat(kFp16SafeMask, ": constant '", v->name(), "' (max |v| ",
                           replaced.largest, ") not bounded: ", why));
      continue;
    }
    std::vector<Node*> matched = {v->uses().front().node};
    std::vector<std::string> readers;
    for (Node* reader : mask.readers) {
      matched.push_back(reader);
      readers.push_back(reader->Describe());
    }
    const std::string name = v->name();
    ctx.rewriter.Begin(kFp16SafeMask, matched);
    Rewrite(ctx, v, std::move(bounded), mask);
    if (!FinishRewrite(ctx)) continue;
    ++committed;
    RewriteRecord& record = ctx.rewriter.records().back();
    record.note = absl::StrCat(
        "mask constant '", name, "': ", replaced.count, " value(s) of magnitude up to ",
        replaced.largest, " (inf in fp16, where 0 * inf is NaN) set to ", replaced.Bound(),
        ": finite in fp16, and still a zero softmax weight for the masked keys of ",
        absl::StrJoin(readers, ", "));
    ctx.log(absl::StrCat(kFp16SafeMask, ": ", record.note));
  }
  return committed;
}

}  // namespace ovfix::rules
