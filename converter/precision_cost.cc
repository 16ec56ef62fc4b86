#include "converter/precision_cost.h"

#include "absl/strings/str_format.h"
#include "converter/float_outputs.h"
#include "ir/graph_walk.h"
#include "ir/nominal_dims.h"

namespace ovfix::converter {
namespace {

// bfloat16 counts as float16 does: a 16-bit float.
bool IsFloatType(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBfloat16 || t == DataType::kFloat;
}

double Numel(const std::vector<int64_t>& dims) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(d);
  return n;
}

// Multiply-adds of one float node, or nullopt when its shapes are not known.
std::optional<double> MultiplyAdds(const Node& n) {
  const std::optional<std::vector<int64_t>> out = NominalDims(n.output(0));
  if (!out) return std::nullopt;
  const std::string& op = n.op_type();
  if (op == "Conv" || op == "ConvTranspose" || op == "DeformConv") {
    const std::optional<std::vector<int64_t>> w = NominalDims(n.input(1));
    if (!w || w->empty() || (*w)[0] <= 0) return std::nullopt;
    const double per_filter = Numel(*w) / static_cast<double>((*w)[0]);
    if (op == "Conv" || op == "DeformConv") return Numel(*out) * per_filter;
    // ConvTranspose: W is [C, M/group, k...]; each input element meets M/group x k taps.
    const std::optional<std::vector<int64_t>> x = NominalDims(n.input(0));
    if (!x) return std::nullopt;
    return Numel(*x) * per_filter;
  }
  if (op == "MatMul" || op == "Gemm") {
    const std::optional<std::vector<int64_t>> a = NominalDims(n.input(0));
    if (!a || a->empty()) return std::nullopt;
    int64_t inner = a->back();
    if (op == "Gemm" && n.GetInt("transA", 0) != 0) inner = (*a)[0];
    return Numel(*out) * static_cast<double>(inner);
  }
  if (op == "Attention") {
    // Q K^T and the weights times V: per output element of Y, one row of scores (the total
    // sequence, K's second-to-last dim in 4-D, its middle dim in 3-D) twice over.
    const std::optional<std::vector<int64_t>> k = NominalDims(n.input(1));
    if (!k || k->size() < 3) return std::nullopt;
    const double total_sequence = static_cast<double>((*k)[k->size() == 4 ? 2 : 1]);
    return 2 * Numel(*out) * total_sequence;
  }
  return Numel(*out);
}

int64_t FloatBytes(const Tensor& t, bool& fp32) {
  fp32 = t.type() == DataType::kFloat;
  return IsFloatType(t.type()) ? static_cast<int64_t>(t.nbytes()) : 0;
}

std::string Bytes(double b) {
  if (b >= 1e9) return absl::StrFormat("%.1f GB", b / 1e9);
  if (b >= 1e6) return absl::StrFormat("%.1f MB", b / 1e6);
  if (b >= 1e3) return absl::StrFormat("%.1f kB", b / 1e3);
  return absl::StrFormat("%.0f B", b);
}

std::string Count(double n) {
  if (n >= 1e9) return absl::StrFormat("%.2fG", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.2fM", n / 1e6);
  if (n >= 1e3) return absl::StrFormat("%.1fk", n / 1e3);
  return absl::StrFormat("%.0f", n);
}

}  // namespace

int CountCasts(const Model& model) {
  int casts = 0;
  for (Graph* g : GraphsRecursive(const_cast<Graph&>(model.graph()))) {
    for (const Node* n : g->nodes()) casts += n->op_type() == "Cast" || n->op_type() == "CastLike";
  }
  return casts;
}

PrecisionCost MeasurePrecisionCost(const Model& converted, int casts_before) {
  PrecisionCost cost;
  cost.casts = CountCasts(converted);
  cost.casts_inserted = std::max(0, cost.casts - casts_before);
  for (Graph* g : GraphsRecursive(const_cast<Graph&>(converted.graph()))) {
    const bool main = g == &converted.graph();
    for (const Value* v : g->initializers()) {
      bool fp32 = false;
      const int64_t bytes = FloatBytes(v->tensor(), fp32);
      cost.weight_bytes += bytes;
      if (fp32) cost.fp32_weight_bytes += bytes;
    }
    for (const Node* n : g->nodes()) {
      if (n->op_type() == "Constant") {
        absl::StatusOr<Tensor> t = n->GetTensor("value");
        if (t.ok()) {
          bool fp32 = false;
          const int64_t bytes = FloatBytes(*t, fp32);
          cost.weight_bytes += bytes;
          if (fp32) cost.fp32_weight_bytes += bytes;
        }
        continue;
      }
      // As CountFloatNodes counts: Casts and control flow aside.
      if (n->op_type() == "Cast" || n->op_type() == "CastLike" || !n->subgraphs().empty()) {
        continue;
      }
      const auto [half, single, bfloat16] = FloatTypesOfOutputs(*n);
      if (!half && !single) continue;
      const bool fp32 = !half;
      const std::optional<double> macs = MultiplyAdds(*n);
      if (!macs) cost.nodes_without_shapes++;
      ++cost.float_nodes;
      cost.fp32_nodes += fp32;
      cost.bf16_nodes += bfloat16;
      cost.fp16_nodes += half && !bfloat16;
      cost.multiply_adds += macs.value_or(0);
      if (fp32) cost.fp32_multiply_adds += macs.value_or(0);
      if (bfloat16) cost.bf16_multiply_adds += macs.value_or(0);
      if (main) {
        cost.nodes.push_back({n->Describe(), n->op_type(), fp32, bfloat16, macs.value_or(0)});
      }
    }
  }
  if (cost.bf16_nodes > 0 && cost.fp16_nodes == 0) cost.half_name = "bf16";
  return cost;
}

std::string PrecisionCostLine(const PrecisionCost& c) {
  std::string line = absl::StrFormat(
      "fp32 cost: %d of %d float node(s) (%.1f%%), %.1f%% of %s multiply-adds, %s of %s of "
      "weights, %d Cast(s) inserted",
      c.fp32_nodes, c.float_nodes, 100 * c.NodeShare(), 100 * c.MultiplyAddShare(),
      Count(c.multiply_adds), Bytes(static_cast<double>(c.fp32_weight_bytes)),
      Bytes(static_cast<double>(c.weight_bytes)), c.casts_inserted);
  if (c.bf16_nodes > 0 && c.fp16_nodes > 0) {
    const double total = c.multiply_adds > 0 ? c.multiply_adds : 1;
    line += absl::StrFormat(
        "; bf16: %d node(s), %.1f%% of multiply-adds; fp16: %.1f%%", c.bf16_nodes,
        100 * c.bf16_multiply_adds / total,
        100 * (c.multiply_adds - c.fp32_multiply_adds - c.bf16_multiply_adds) / total);
  }
  if (c.nodes_without_shapes > 0) {
    line += absl::StrFormat(" (%d node(s) of unknown shape not in the multiply-adds)",
                            c.nodes_without_shapes);
  }
  return line;
}

}  // namespace ovfix::converter
