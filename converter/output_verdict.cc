#include "converter/output_verdict.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "exec/compare.h"

namespace ovfix::converter {

Criteria DefaultCriteriaFor(bool float16, int64_t elements) {
  return float16 ? DefaultPrecisionCriteria(elements) : MaxErrorCriteria(1e-4);
}

Criteria DefaultBfloat16Criteria(int64_t elements) {
  if (elements < kManyElements) return {{CriterionKind::kMax, 0, 0.02}};
  return {{CriterionKind::kMax, 0, 0.1},
          {CriterionKind::kPercentile, 99, 0.02},
          {CriterionKind::kMean, 0, 0.005}};
}

double ResolutionFor(bool float16) { return float16 ? exec::kFloat16Resolution : 0; }

OutputVerdict JudgeOutput(const std::string& name, const Tensor& actual, const Tensor& expected,
                          bool float16, const AccuracySpec& spec) {
  OutputVerdict v;
  v.name = name;
  const Criteria* given = spec.Find(name);
  v.criteria = given != nullptr ? *given : DefaultCriteriaFor(float16, expected.numel());
  v.stats =
      MeasureOutput(actual, expected, ResolutionFor(float16), v.criteria, kReportedBeyondError);
  v.score = CriteriaScore(v.criteria, v.stats);
  v.meets = v.score <= 1 && v.stats.non_finite == 0;
  return v;
}

std::string DescribeVerdict(const OutputVerdict& v) {
  return absl::StrCat(DescribeStatistics(v.stats), "; score ", absl::StrFormat("%.2g", v.score),
                      " (", CriteriaToString(v.criteria), ")");
}

absl::Status CheckAccuracySpec(const AccuracySpec& spec,
                               const std::vector<std::pair<std::string, Tensor>>& outputs) {
  auto reference = [&](const std::string& name) -> const Tensor* {
    for (const auto& [n, t] : outputs) {
      if (n == name) return &t;
    }
    return nullptr;
  };
  for (const auto& [name, criteria] : spec.per_output) {
    const Tensor* t = reference(name);
    if (t == nullptr) {
      std::vector<std::string> names;
      for (const auto& [n, unused] : outputs) names.push_back(n);
      return absl::InvalidArgumentError(absl::StrCat(
          "--accuracy ", name, "=", CriteriaToString(criteria), ": the model has no output '", name,
          "' (its outputs: ", absl::StrJoin(names, ", "), ")"));
    }
    for (const Criterion& c : criteria) {
      if (absl::Status s = CheckApplies(c, t->dims()); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--accuracy ", name, "=", CriteriaToString(criteria), ": output '", name,
                         "' is ", DescribeTensor(*t), "; ", s.message()));
      }
    }
  }
  if (spec.default_criteria) {
    for (const auto& [name, t] : outputs) {
      if (spec.per_output.contains(name)) continue;
      for (const Criterion& c : *spec.default_criteria) {
        if (absl::Status s = CheckApplies(c, t.dims()); !s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--accuracy ", CriteriaToString(*spec.default_criteria), ": output '",
                           name, "' is ", DescribeTensor(t), "; ", s.message(),
                           " (name the outputs it fits: NAME=", c.ToString(), ")"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace ovfix::converter
