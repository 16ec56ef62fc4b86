#include "converter/output_verdict.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/html_escape.h"
#include "exec/compare.h"

namespace ovfix::converter {
namespace {

using cli::Field;

struct SixteenBitTypes {
  bool float16 = false, bfloat16 = false;
  void Note(DataType t) {
    float16 = float16 || t == DataType::kFloat16;
    bfloat16 = bfloat16 || t == DataType::kBfloat16;
  }
};

// The 16-bit float types `g` and the bodies in it hold: in values, initializers and Casts.
void Collect(const Graph& g, SixteenBitTypes& types) {
  for (const Value* v : g.inputs()) {
    if (v->is_tensor()) types.Note(v->elem_type());
  }
  for (const Value* v : g.initializers()) types.Note(v->elem_type());
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "Cast") types.Note(static_cast<DataType>(n->GetInt("to", 0)));
    for (const Value* v : n->outputs()) {
      if (v != nullptr && v->is_tensor()) types.Note(v->elem_type());
    }
    for (const Subgraph& body : n->subgraphs()) {
      if (body.graph != nullptr) Collect(*body.graph, types);
    }
  }
}

std::string Number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.3g", v);
}

}  // namespace

JudgedPrecision JudgedPrecisionOf(const Model* candidate,
                                  std::initializer_list<exec::Precision> runs) {
  for (exec::Precision p : runs) {
    if (p != exec::Precision::kFp32) return JudgedPrecision::kFloat16;
  }
  if (candidate == nullptr) return JudgedPrecision::kFloat32;
  SixteenBitTypes types;
  Collect(candidate->graph(), types);
  if (types.float16) return JudgedPrecision::kFloat16;
  return types.bfloat16 ? JudgedPrecision::kBfloat16 : JudgedPrecision::kFloat32;
}

Criteria DefaultCriteria(JudgedPrecision precision, int64_t elements) {
  if (precision == JudgedPrecision::kBfloat16) return DefaultBfloat16Criteria(elements);
  return DefaultCriteriaFor(precision == JudgedPrecision::kFloat16, elements);
}

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
                          JudgedPrecision precision, const AccuracySpec& spec) {
  OutputVerdict v;
  v.name = name;
  const Criteria* given = spec.Find(name);
  v.criteria = given != nullptr ? *given : DefaultCriteria(precision, expected.numel());
  v.stats = MeasureOutput(actual, expected, ResolutionFor(precision != JudgedPrecision::kFloat32),
                          v.criteria, kReportedBeyondError);
  v.score = CriteriaScore(v.criteria, v.stats);
  v.meets = v.score <= 1 && v.stats.non_finite == 0;
  for (const Criterion& c : v.criteria) {
    const double measured = CriterionMeasure(c, v.stats);
    v.checks.push_back({c, measured, measured <= c.bound && v.stats.non_finite == 0});
  }
  return v;
}

std::vector<OutputVerdict> JudgeOutputs(const NamedOutputs& expected, const NamedOutputs& actual,
                                        JudgedPrecision precision, const AccuracySpec& spec) {
  std::vector<OutputVerdict> verdicts;
  for (const auto& [name, reference] : expected) {
    const std::string& wanted = name;  // clang 14 captures no structured binding
    auto found = std::find_if(actual.begin(), actual.end(),
                              [&](const auto& a) { return a.first == wanted; });
    if (found != actual.end()) {
      verdicts.push_back(JudgeOutput(name, found->second, reference, precision, spec));
      continue;
    }
    OutputVerdict missing;
    missing.name = name;
    missing.computed = false;
    const Criteria* given = spec.Find(name);
    missing.criteria = given != nullptr ? *given : DefaultCriteria(precision, reference.numel());
    missing.score = std::numeric_limits<double>::infinity();
    missing.meets = false;
    verdicts.push_back(std::move(missing));
  }
  return verdicts;
}

std::string DescribeVerdict(const OutputVerdict& v) {
  if (!v.computed) return absl::StrCat("not computed (", CriteriaToString(v.criteria), ")");
  return absl::StrCat(DescribeStatistics(v.stats), "; score ", ScoreText(v.score), " (",
                      CriteriaToString(v.criteria), ")");
}

void WriteStatistics(cli::JsonWriter& w, const OutputStatistics& s) {
  w.Fields({Field("elements", s.elements), Field("max", s.max), Field("max_abs_error", s.max_abs),
            Field("mean", s.mean)});
  for (const Percentile& p : s.percentiles) w.Fields({Field(absl::StrFormat("p%g", p.q), p.value)});
  w.Array("beyond", s.beyond, [](cli::JsonWriter& w, const ShareBeyond& b) {
    w.Object({Field("error", b.error), Field("share", b.share), Field("elements", b.count)});
  });
  w.Fields({Field("non_finite", s.non_finite)});
  w.ArrayUnlessEmpty("topk", s.topk, [](cli::JsonWriter& w, const TopKAgreement& t) {
    w.Object({Field("k", t.k), Field("rows", t.rows), Field("differing", t.differing)});
  });
  w.ArrayUnlessEmpty("masks", s.masks, [](cli::JsonWriter& w, const MaskAgreement& m) {
    w.Object({Field("threshold", m.threshold), Field("elements", m.elements),
              Field("flipped", m.flipped)});
  });
  w.ArrayUnlessEmpty("boxes", s.boxes, [](cli::JsonWriter& w, const BoxAgreement& b) {
    w.Object({Field("iou", b.iou), Field("reference", b.reference), Field("converted", b.converted),
              Field("unmatched_reference", b.unmatched_reference),
              Field("unmatched_converted", b.unmatched_converted),
              Field("worst_score_difference", b.worst_score_difference)});
  });
}

void WriteVerdict(cli::JsonWriter& w, const OutputVerdict& v) {
  w.BeginObject().Fields({Field("name", v.name), Field("computed", v.computed),
                          Field("criteria", CriteriaToString(v.criteria)), Field("score", v.score),
                          Field("meets", v.meets),
                          Field("statistics", v.computed ? DescribeStatistics(v.stats) : "")});
  w.Array("checks", v.checks, [](cli::JsonWriter& w, const CriterionCheck& c) {
    w.Object({Field("criterion", c.criterion.ToString()), Field("measured", c.measured),
              Field("bound", c.criterion.bound), Field("meets", c.meets)});
  });
  if (v.computed) WriteStatistics(w, v.stats);
  w.EndObject();
}

std::string VerdictTableHtml(const std::vector<OutputVerdict>& verdicts) {
  std::string html =
      "<table><tr><th class=\"l\">output</th><th class=\"l\">criteria</th>"
      "<th class=\"l\">measured</th><th class=\"l\">statistics</th><th>score</th>"
      "<th class=\"l\">verdict</th></tr>\n";
  for (const OutputVerdict& v : verdicts) {
    std::vector<std::string> measured;
    for (const CriterionCheck& c : v.checks) {
      measured.push_back(
          absl::StrCat(c.criterion.ToString(), ": ", Number(c.measured), c.meets ? "" : " FAILS"));
    }
    absl::StrAppend(&html, "<tr><td class=\"l\">", HtmlEscape(v.name), "</td><td class=\"l\">",
                    HtmlEscape(CriteriaToString(v.criteria)), "</td><td class=\"l\">",
                    HtmlEscape(absl::StrJoin(measured, "; ")), "</td><td class=\"l\">",
                    HtmlEscape(v.computed ? DescribeStatistics(v.stats) : "not computed"),
                    "</td><td>", ScoreText(v.score, 3), "</td><td class=\"l\">",
                    v.meets ? "meets" : "FAILS", "</td></tr>\n");
  }
  return html + "</table>\n";
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
