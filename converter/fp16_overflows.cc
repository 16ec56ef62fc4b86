#include "converter/fp16_overflows.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/model_run.h"
#include "exec/random_inputs.h"
#include "ir/float16.h"
#include "ir/status_macros.h"

namespace ovfix::converter {
namespace {

constexpr double kFloat16Largest = 65504;

bool IsSumOfSquares(const std::string& op) {
  return op == "ReduceSum" || op == "ReduceSumSquare" || op == "ReduceMean" || op == "Pow" ||
         op == "Mul";
}

std::string WhyNoRewrite(const Graph& g, const Value& v, const std::string& op) {
  for (const Value* out : g.outputs()) {
    if (out == &v) return "a graph output: the original's own values exceed fp16's range";
  }
  for (const Use& use : v.uses()) {
    for (const Value* o : use.node->outputs()) {
      if (o != nullptr && o->is_graph_output() && IsSumOfSquares(op)) {
        return absl::StrCat("feeds graph output '", o->name(),
                            "', whose own values exceed fp16's range");
      }
    }
  }
  if (IsSumOfSquares(op)) {
    // The readers that would have to take the scale, named: the one that blocks it is there.
    std::vector<std::string> readers;
    for (const Use& use : v.uses()) {
      const Value* o = use.node->outputs().empty() ? nullptr : use.node->output(0);
      readers.push_back(
          absl::StrCat(use.node->op_type(), " '", o != nullptr ? o->name() : "", "'"));
    }
    return absl::StrCat(
        "no fp16-safe rewrite fits: a scaled sum of squares needs a reader that takes the scale "
        "(Sqrt, after an optional Add of a constant), and ",
        readers.empty()
            ? "it has no reader"
            : absl::StrCat("none of its readers does (", absl::StrJoin(readers, ", "), ")"));
  }
  return absl::StrCat("no fp16-safe rewrite handles ", op,
                      " (sums of squares before a Sqrt are rescaled; other large activations "
                      "are not)");
}

}  // namespace

absl::StatusOr<std::vector<Fp16Overflow>> ListFp16Overflows(const Model& model,
                                                            const exec::TensorMap& inputs) {
  std::map<std::string, double> largest;
  // One run that looks at each value as it is computed and keeps none of them.
  exec::SessionOptions options;
  options.random_seed = exec::kValidationSeed;
  options.on_value = [&](const Value& v, const Tensor& t) {
    if (!IsFloatingPoint(t.type())) return;
    double m = 0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double x = std::abs(t.GetAsDouble(k));
      if (!(x <= m)) m = x;
    }
    if (!(m <= kFloat16Largest)) largest[v.name()] = std::max(largest[v.name()], m);
  };
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<exec::Session> session,
                         exec::CreateSession(model, options));
  OVFIX_RETURN_IF_ERROR(session->Run(MatchInputTypes(model.graph(), inputs)).status());
  std::vector<Fp16Overflow> found;
  const Graph& g = model.graph();
  for (const Node* n : g.nodes()) {
    for (const Value* o : n->outputs()) {
      if (o == nullptr) continue;
      auto it = largest.find(o->name());
      if (it == largest.end()) continue;
      found.push_back({o->name(), n->op_type(), it->second, WhyNoRewrite(g, *o, n->op_type())});
    }
  }
  return found;
}

}  // namespace ovfix::converter
