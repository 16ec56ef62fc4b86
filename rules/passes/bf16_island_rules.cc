#include "rules/passes/bf16_island_rules.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/constant.h"
#include "ir/status_macros.h"
#include "onnx/defs/data_type_utils.h"
#include "onnx/defs/schema.h"
#include "rules/passes/island_marks.h"
#include "rules/passes/spec_types.h"

namespace ovfix::rules {
namespace {

using Islands = IslandMarks::Islands;

// Reductions that add their elements up (ReduceMax/Min pick one: exact in bfloat16).
bool IsSummingReduction(const Node& n) {
  static const absl::flat_hash_set<std::string> kSums = {
      "ReduceSum", "ReduceMean",   "ReduceSumSquare", "ReduceL1",
      "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceProd"};
  return n.domain().empty() && kSums.contains(n.op_type());
}

bool IsNormalization(const Node& n) {
  static const absl::flat_hash_set<std::string> kNormalizations = {
      "LayerNormalization",        "InstanceNormalization", "GroupNormalization", "LpNormalization",
      "MeanVarianceNormalization", "BatchNormalization",    "RMSNormalization"};
  return n.domain().empty() && kNormalizations.contains(n.op_type());
}

// Elements added up per output of a reduction: numel(input) / numel(output), nullopt when a
// dim is unknown.
std::optional<int64_t> ElementsPerOutput(const Node& n) {
  const Value* in = n.input(0);
  const Value* out = n.output(0);
  if (in == nullptr || out == nullptr) return std::nullopt;
  const std::optional<std::vector<int64_t>> a = in->static_shape(), b = out->static_shape();
  if (!a || !b) return std::nullopt;
  int64_t na = 1, nb = 1;
  for (int64_t d : *a) na *= d;
  for (int64_t d : *b) nb *= d;
  if (nb <= 0) return std::nullopt;
  return na / nb;
}

// What the spec fixes: an op with no bfloat16 at this opset, or typed by an attribute.
std::string SpecReason(const Node& n, int64_t opset) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return "op outside the ONNX domain";
  if (!n.subgraphs().empty()) {
    return "control flow (fp32 at its inputs and outputs; its bodies are converted inside)";
  }
  if (IsOp(n, "Range")) return "float Range";
  if (OutputTypeSetByAttribute(n, opset)) {
    return "output type set by an attribute";
  }
  if (n.op_type() == "Constant" && n.HasAttribute("sparse_value")) return "sparse constant";
  bool allowed = true;
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    if (IsFloat32(n.output(i))) allowed = allowed && SpecAllowsBfloat16(n, opset, true, i);
  }
  // The first input carries the data of every op that has no float output (Shape aside).
  if (!n.inputs().empty() && IsFloat32(n.input(0)) && !IsOp(n, "Shape") && !IsOp(n, "Size")) {
    allowed = allowed && SpecAllowsBfloat16(n, opset, false, 0);
  }
  if (!allowed)
    return absl::StrCat("no bfloat16 in the ONNX spec for ", n.op_type(), " at opset ", opset);
  return "";
}

class Decider : public IslandMarks {
 public:
  Decider(const Graph& g, const IslandOptions& o) : IslandMarks(g, o, /*join_between=*/true) {}

 private:
  void Decide(const std::vector<Node*>& nodes) override {
    // What the spec leaves out always goes; the rest only with the structural rules.
    for (const Node* n : nodes) {
      if (IsFloatNode(*n)) SpecRule(*n);
    }
    if (!o_.structural) return;
    for (const Node* n : nodes) {
      if (IsFloatNode(*n)) OpKind(*n);
    }
    for (const Node* n : nodes) {
      if (IsFloatNode(*n)) Centering(*n);
    }
    ResidualStreams(nodes);
    if (o_.observed) {
      for (const Node* n : nodes) {
        if (IsFloatNode(*n)) Cancellation(*n);
      }
    }
    for (const Node* n : nodes) {
      if (IsFloatNode(*n)) IntegerFeeding(*n, "bfloat16 holds integers exactly only up to 256");
    }
    for (const Node* n : nodes) AngleFeeding(*n, "bfloat16");
  }

  // An op or a type without bfloat16 in the ONNX spec at the model's opset.
  void SpecRule(const Node& n) {
    if (std::string why = SpecReason(n, o_.opset); !why.empty()) Mark(&n, std::move(why));
  }

  void OpKind(const Node& n) {
    if (IsSummingReduction(n) && IsFloat32(n.input(0))) {
      const std::optional<int64_t> count = ElementsPerOutput(n);
      if (count && *count <= kShortSum) return;
      Mark(&n,
           count ? absl::StrCat("long sum (", n.op_type(), " of ", *count, " elements per output)")
                 : absl::StrCat("long sum (", n.op_type(), ", element count unknown)"));
    } else if (IsOp(n, "CumSum")) {
      Mark(&n, "long sum (CumSum)");
    } else if (IsNormalization(n)) {
      Mark(&n, absl::StrCat("normalization statistics (", n.op_type(), ")"));
    } else if (IsOp(n, "Softmax") || IsOp(n, "LogSoftmax")) {
      Mark(&n, absl::StrCat("softmax denominator (", n.op_type(), ")"));
    }
  }

  // Sub(x, m) where m is a mean of x (through shape ops): x - mean(x).
  void Centering(const Node& n) {
    if (!IsOp(n, "Sub") || n.inputs().size() != 2) return;
    for (int i = 0; i < 2; ++i) {
      const Value* x = n.input(i);
      const Value* m = n.input(1 - i);
      if (x == nullptr || m == nullptr || IsConstant(x) || IsConstant(m)) continue;
      const Node* p = m->producer();
      for (int step = 0; step < 4 && p != nullptr; ++step) {
        static const absl::flat_hash_set<std::string> kShape = {"Reshape", "Unsqueeze", "Squeeze",
                                                                "Expand", "Identity"};
        if (!p->domain().empty() || !kShape.contains(p->op_type())) break;
        p = p->input(0) != nullptr ? p->input(0)->producer() : nullptr;
      }
      if (p != nullptr && p->domain().empty() &&
          (p->op_type() == "ReduceMean" || p->op_type() == "ReduceSum") && p->input(0) == x) {
        Mark(&n, absl::StrCat("centering: subtracts ", p->Describe(),
                              " from its input (a small difference of large values)"));
        return;
      }
    }
  }

  // A chain of Adds of two variable inputs, each reading the one before (a residual stream:
  // x + f(x), block after block) is a sum across layers: more than kShortSum of them and
  // the stream's bfloat16 rounding (2^-9 of it per block) outgrows what the branches add.
  void ResidualStreams(const std::vector<Node*>& nodes) {
    auto chained_add = [&](const Node& n) {
      if (!IsOp(n, "Add") || n.inputs().size() != 2) return false;
      for (const Value* v : n.inputs()) {
        if (v == nullptr || IsConstant(v) || !IsFloat32(v)) return false;
      }
      return true;
    };
    absl::flat_hash_map<const Node*, int> depth;  // Adds of the chain up to and with this one
    absl::flat_hash_map<const Node*, const Node*> previous;
    for (const Node* n : nodes) {  // graph order: producers first
      if (!chained_add(*n)) continue;
      int d = 1;
      for (const Value* v : n->inputs()) {
        const Node* p = v->producer();
        if (auto it = depth.find(p); p != nullptr && it != depth.end() && it->second + 1 > d) {
          d = it->second + 1;
          previous[n] = p;
        }
      }
      depth[n] = d;
    }
    absl::flat_hash_set<const Node*> marked;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      auto d = depth.find(*it);
      if (d == depth.end() || d->second <= kShortSum || marked.contains(*it)) continue;
      const std::string why = absl::StrCat("residual stream of ", d->second,
                                           " chained Adds (a long sum across layers)");
      for (const Node* q = *it; q != nullptr && marked.insert(q).second;) {
        Mark(q, why);
        auto p = previous.find(q);
        q = p == previous.end() ? nullptr : p->second;
      }
    }
  }

  // An Add/Sub of two variable inputs whose result calibration saw far below its inputs.
  void Cancellation(const Node& n) {
    if (!(IsOp(n, "Add") || IsOp(n, "Sub")) || n.inputs().size() != 2) return;
    double in = 0;
    for (const Value* v : n.inputs()) {
      if (v == nullptr || IsConstant(v) || !IsFloat32(v)) return;
      const std::optional<MagnitudeRange> r = o_.observed(v);
      if (!r || r->nan) return;
      in = std::max(in, static_cast<double>(r->largest));
    }
    const std::optional<MagnitudeRange> out = o_.observed(n.output(0));
    if (!out || out->nan || !std::isfinite(in) || in == 0) return;
    if (in < kCancellation * out->largest) return;
    Mark(&n, absl::StrFormat("cancellation: observed inputs up to %.3g, output up to %.3g "
                             "(bfloat16 keeps 8 bits of the inputs)",
                             in, out->largest));
  }
};

}  // namespace

bool SpecAllowsBfloat16(const Node& n, int64_t opset, bool output, size_t index) {
  static const onnx::DataType kBfloat16 = onnx::Utils::DataTypeUtils::ToType("tensor(bfloat16)");
  return SpecAllowsType(n, opset, output, index, kBfloat16);
}

absl::StatusOr<Islands> DecideBf16Islands(const Graph& g, const IslandOptions& options) {
  return Decider(g, options).Run();
}

}  // namespace ovfix::rules
