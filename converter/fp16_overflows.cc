#include "converter/fp16_overflows.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/conversion_time.h"
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
  ScopedModelRun timed;
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

std::string NonFiniteOrigin::Why() const {
  if (largest_fp32 > kFloat16Largest) {
    return absl::StrCat("its values reach ", absl::StrFormat("%.3g", largest_fp32),
                        " in fp32, beyond fp16's 65504: it overflows");
  }
  if (nan && largest_input == 0) {
    return "NaN from inputs that are all 0 in fp16: their values underflow (below 6e-8), and "
           "0 / 0 or 0 * inf is NaN";
  }
  if (nan) {
    return absl::StrCat("NaN from finite inputs (largest |x| ",
                        absl::StrFormat("%.3g", largest_input),
                        "): an intermediate inside the op overflows fp16 (inf - inf, 0 * inf) or a "
                        "value that underflowed to 0 is divided by or taken the log of");
  }
  return absl::StrCat("infinite from finite inputs (largest |x| ",
                      absl::StrFormat("%.3g", largest_input),
                      "): the op's result or an intermediate exceeds fp16's 65504");
}

absl::StatusOr<std::optional<NonFiniteOrigin>> FirstNonFiniteInFp16(const Model& model,
                                                                    const exec::TensorMap& inputs) {
  std::set<const Value*> non_finite;
  std::map<const Value*, double> largest;  // finite values' largest |x|, for the inputs
  std::optional<NonFiniteOrigin> origin;
  exec::SessionOptions options;
  options.random_seed = exec::kValidationSeed;
  options.precision = exec::Precision::kFp16Storage;
  options.islands_ignored = true;
  options.on_value = [&](const Value& v, const Tensor& t) {
    if (origin || !IsFloatingPoint(t.type())) return;
    int64_t bad = 0;
    bool nan = false;
    double m = 0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double x = t.GetAsDouble(k);
      if (std::isfinite(x)) {
        m = std::max(m, std::abs(x));
      } else {
        ++bad;
        nan = nan || std::isnan(x);
      }
    }
    largest[&v] = m;
    if (bad == 0) return;
    non_finite.insert(&v);
    const Node* n = v.producer();
    if (n == nullptr) return;
    double in = 0;
    for (const Value* i : n->inputs()) {
      if (i == nullptr) continue;
      if (non_finite.contains(i)) return;  // it only carries a non-finite value further
      if (auto it = largest.find(i); it != largest.end()) in = std::max(in, it->second);
    }
    origin = NonFiniteOrigin{n->Describe(), n->op_type(), v.name(), bad, nan, in, -1};
  };
  ScopedModelRun timed;
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<exec::Session> session,
                         exec::CreateSession(model, options));
  OVFIX_RETURN_IF_ERROR(session->Run(MatchInputTypes(model.graph(), inputs)).status());
  if (origin) {
    // Its output in fp32: an overflow of the value itself, or of something inside the op.
    exec::SessionOptions fp32;
    fp32.random_seed = exec::kValidationSeed;
    fp32.on_value = [&](const Value& v, const Tensor& t) {
      if (v.name() != origin->value || !IsFloatingPoint(t.type())) return;
      double m = 0;
      for (int64_t k = 0; k < t.numel(); ++k) {
        const double x = std::abs(t.GetAsDouble(k));
        if (!(x <= m)) m = x;
      }
      origin->largest_fp32 = std::max(origin->largest_fp32, m);
    };
    ScopedModelRun timed_fp32;
    OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<exec::Session> plain, exec::CreateSession(model, fp32));
    OVFIX_RETURN_IF_ERROR(plain->Run(MatchInputTypes(model.graph(), inputs)).status());
  }
  return origin;
}

}  // namespace ovfix::converter
