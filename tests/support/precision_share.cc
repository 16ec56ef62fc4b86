#include "tests/support/precision_share.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "ir/graph_walk.h"
#include "ir/nominal_dims.h"

namespace ovfix::test_models {
namespace {

double Numel(const std::vector<int64_t>& d) {
  double n = 1;
  for (int64_t x : d) n *= static_cast<double>(x);
  return n;
}

bool IsFloatType(DataType t) { return t == DataType::kFloat || t == DataType::kFloat16; }

}  // namespace

double MultiplyAdds(const Node& n) {
  const std::string& op = n.op_type();
  const auto out = NominalDims(n.output(0));
  const auto in = NominalDims(n.input(0));
  const auto w = n.inputs().size() > 1 ? NominalDims(n.input(1)) : std::nullopt;
  if (!out || !in || !w || w->size() < 2) return 0;
  if (op == "Conv") {  // each output element sums C/g * kernel products
    return Numel(*out) * Numel(*w) / static_cast<double>((*w)[0]);
  }
  if (op == "ConvTranspose") {  // each input element scatters into M/g * kernel outputs
    return Numel(*in) * Numel(*w) / static_cast<double>((*w)[0]);
  }
  if (op == "Gemm") {
    const int64_t k = n.GetInt("transA", 0) != 0 ? (*in)[0] : (*in)[1];
    return Numel(*out) * static_cast<double>(k);
  }
  if (op == "MatMul") return Numel(*out) * static_cast<double>(in->back());
  return 0;
}

PrecisionShare CountPrecision(const Model& model) {
  PrecisionShare s;
  for (Graph* g : GraphsRecursive(const_cast<Graph&>(model.graph()))) {
    for (const Node* n : g->nodes()) {
      if (n->op_type() == "Cast") {
        const Value* from = n->input(0);
        if (from != nullptr && IsFloatType(from->elem_type()) &&
            IsFloatType(n->output(0)->elem_type())) {
          ++s.casts;
        }
        continue;
      }
      if (n->op_type() == "Constant" || !n->subgraphs().empty()) continue;
      bool half = false, single = false;
      for (const Value* v : n->outputs()) {
        if (v == nullptr || !v->is_tensor()) continue;
        half = half || v->elem_type() == DataType::kFloat16;
        single = single || v->elem_type() == DataType::kFloat;
      }
      s.fp16_nodes += half;
      s.fp32_nodes += single && !half;
      const double macs = MultiplyAdds(*n);
      (half ? s.fp16_macs : s.fp32_macs) += (half || single) ? macs : 0;
    }
  }
  return s;
}

}  // namespace ovfix::test_models
