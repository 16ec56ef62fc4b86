#include "converter/report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/accuracy.h"
#include "converter/float_outputs.h"
#include "converter/json_writer.h"
#include "converter/output_verdict.h"
#include "ir/graph_walk.h"

namespace ovfix::converter {

using cli::Field;
using cli::OptionalField;
using rules::IslandNode;
using rules::RewriteRecord;
namespace {

void WriteRewrite(cli::JsonWriter& w, const RewriteRecord& r) {
  const bool validated = r.max_error >= 0;
  w.Object({Field("rule", r.rule), Field("matched", r.matched), Field("created", r.created),
            Field("removed", r.removed), Field("validated", validated),
            OptionalField(validated, "error", r.max_error), Field("rolled_back", r.rolled_back),
            OptionalField(!r.observed_shapes.empty(), "observed_shapes", r.observed_shapes),
            OptionalField(!r.note.empty(), r.rolled_back ? "reason" : "note", r.note)});
}

std::string Error(double e) { return absl::StrFormat("%.2g", e); }

// One output's comparison: its criteria, score and every statistic measured.
void WriteOutput(cli::JsonWriter& w, const OutputComparison& c) {
  w.BeginObject().Fields({Field("name", c.name), Field("error", c.error), Field("finite", c.finite),
                          Field("criteria", CriteriaToString(c.criteria)), Field("score", c.score),
                          Field("meets", c.meets),
                          OptionalField(c.beyond_fp16, "beyond_fp16", true),
                          Field("input_set", c.set)});
  WriteStatistics(w, c.stats);
  w.EndObject();
}

// "validation": whether the model was run, and what the end-to-end comparison measured.
void WriteValidation(cli::JsonWriter& w, const ConversionReport& report) {
  w.Key("validation").BeginObject();
  w.Fields({Field("enabled", report.validated),
            OptionalField(!report.validation_note.empty(), "note", report.validation_note)});
  if (const std::optional<EndToEndResult>& e = report.end_to_end) {
    w.Fields(
        {OptionalField(report.end_to_end_tolerance >= 0, "tolerance", report.end_to_end_tolerance),
         Field("max_error", e->max_error), Field("score", e->score), Field("meets", e->meets())});
    w.Array("outputs", e->outputs, WriteOutput);
    if (report.fp32_by_request) w.Fields({Field("fp32_runtime", report.fp32_runtime)});
    if (report.islands_ignored) {
      w.Fields({Field("islands_ignored", true)});
      w.Array("fp16_overflows", report.fp16_overflows,
              [](cli::JsonWriter& w, const Fp16Overflow& o) {
                w.Object({Field("value", o.value), Field("op", o.op), Field("largest", o.largest),
                          Field("why", o.why)});
              });
      if (const std::optional<NonFiniteOrigin>& o = report.first_non_finite) {
        w.Key("first_non_finite")
            .Object({Field("node", o->node), Field("op", o->op), Field("value", o->value),
                     Field("non_finite", o->non_finite), Field("nan", o->nan),
                     Field("why", o->Why())});
      }
    }
  }
  w.Fields(
      {OptionalField(!report.calibration.empty(), "calibration", report.calibration),
       OptionalField(report.validated, "model_runs", report.model_runs),
       Field("outputs_match", report.outputs_match),
       OptionalField(!report.shapes_note.empty(), "shapes_note", report.shapes_note),
       OptionalField(!report.trtexec_shapes.empty(), "trtexec_shapes", report.trtexec_shapes)});
  if (report.end_to_end && !report.end_to_end->set_scores.empty()) {
    const std::vector<double>& scores = report.end_to_end->set_scores;
    std::vector<size_t> sets(scores.size());
    for (size_t k = 0; k < sets.size(); ++k) sets[k] = k;
    w.Array("input_sets", sets, [&](cli::JsonWriter& w, size_t k) {
      w.Object({Field("set", static_cast<int64_t>(k)),
                Field("shape", k < report.set_labels.size() ? report.set_labels[k] : ""),
                Field("score", scores[k]), Field("meets", scores[k] <= 1)});
    });
  }
  w.EndObject();
}

void WriteShapes(cli::JsonWriter& w, const ConversionReport& report) {
  w.Key("shapes").BeginObject();
  w.Fields({Field("observed_facts", report.observed_shape_facts),
            Field("dynamic_values", report.dynamic_values),
            Field("constant_ifs_inlined", report.constant_ifs_inlined)});
  w.Array("bodies_not_run", report.bodies_not_run, [](cli::JsonWriter& w, const BodyNotRun& b) {
    w.Object({Field("body", b.body), Field("left", b.left)});
  });
  w.EndObject();
}

void WritePrecisionCost(cli::JsonWriter& w, const PrecisionCost& c) {
  w.Key("precision_cost")
      .Object({Field("float_nodes", c.float_nodes), Field("fp32_nodes", c.fp32_nodes),
               Field("fp32_node_share", c.NodeShare()), Field("multiply_adds", c.multiply_adds),
               Field("fp32_multiply_adds", c.fp32_multiply_adds),
               Field("fp32_multiply_add_share", c.MultiplyAddShare()),
               Field("nodes_without_shapes", c.nodes_without_shapes),
               Field("weight_bytes", c.weight_bytes),
               Field("fp32_weight_bytes", c.fp32_weight_bytes), Field("casts", c.casts),
               Field("casts_inserted", c.casts_inserted)});
}

void WriteRepair(cli::JsonWriter& w, const Repair& repair) {
  w.Key("repair").BeginObject();
  w.Fields({Field("rounds", repair.rounds), Field("model_runs", repair.model_runs),
            Field("error_before", repair.error_before),
            Field("only_fp32_meets", repair.only_fp32)});
  w.Array("history", repair.history, [](cli::JsonWriter& w, const RepairRound& r) {
    const char* action = r.round == 0 ? "first conversion" : r.give_back ? "give back" : "add";
    w.Object({Field("round", r.round), Field("action", action), Field("nodes", r.nodes_changed),
              Field("fp32_nodes", r.fp32_nodes), Field("fp32_share", r.fp32_share),
              Field("score", r.score), Field("error", r.error), Field("kept", r.kept)});
  });
  w.Array("kept_fp32", repair.kept, [](cli::JsonWriter& w, const RepairedNode& k) {
    w.Object({Field("node", k.node), Field("op_type", k.op_type), Field("round", k.round),
              Field("error_before", k.error_before), Field("error_after", k.error_after)});
  });
  w.EndObject();
}

void WriteCertificate(cli::JsonWriter& w, const IslandCertificate& c) {
  const bool bf16 = c.tried_as == "bf16";
  w.Key(bf16 ? "bf16_islands" : "island_certificate").BeginObject();
  w.Fields({Field("tried", c.tried), Field("needed", c.needed), Field("given_back", c.given_back),
            Field("kept_back", c.kept_back), Field("spec", c.spec), Field("not_tried", c.not_tried),
            Field("model_runs", c.model_runs), Field("unit_bound", c.unit_bound),
            Field("run_bound", c.run_bound), Field("fp32_nodes_before", c.fp32_nodes_before),
            Field("fp32_nodes_after", c.fp32_nodes_after),
            OptionalField(c.final_score >= 0, "final_score", c.final_score),
            OptionalField(!c.note.empty(), "note", c.note),
            OptionalField(!c.skipped.empty(), "skipped", c.skipped)});
  const std::string score_key = absl::StrCat("score_in_", c.tried_as);
  const std::string error_key = absl::StrCat("error_in_", c.tried_as);
  w.Array("islands", c.islands, [&](cli::JsonWriter& w, const CertifiedIsland& i) {
    w.Object({Field("nodes", i.nodes), Field("reason", i.reason), Field("repair", i.repair),
              Field("multiply_adds", i.multiply_adds),
              Field("multiply_add_share", i.multiply_add_share),
              Field("verdict", IslandVerdictName(i.verdict, bf16)),
              OptionalField(i.score >= 0 || std::isnan(i.score), score_key, i.score),
              OptionalField(i.error >= 0, error_key, i.error),
              OptionalField(!i.why.empty(), "why", i.why)});
  });
  w.EndObject();
}

}  // namespace

std::string CertifiedIslandLine(const CertifiedIsland& i, const std::string& tried_as) {
  std::string nodes = i.nodes.front();
  if (i.nodes.size() > 1) absl::StrAppend(&nodes, " +", i.nodes.size() - 1, " node(s)");
  std::string line = absl::StrFormat("%s: %s (%.1f%% of multiply-adds; %s)",
                                     IslandVerdictName(i.verdict, tried_as == "bf16"), nodes,
                                     100 * i.multiply_add_share, i.reason);
  if (i.score >= 0 || std::isnan(i.score)) {
    absl::StrAppend(&line, ", score in ", tried_as, " ", ScoreText(i.score, 3));
  }
  if (!i.why.empty()) absl::StrAppend(&line, ": ", i.why);
  return line;
}

std::string CertificateLines(const IslandCertificate& c, size_t listed) {
  const bool bf16 = c.tried_as == "bf16";
  const char* head = bf16 ? "islands in bf16" : "certificate";
  if (!c.skipped.empty()) return absl::StrCat(head, ": ", c.skipped, "\n");
  std::string out =
      bf16 ? absl::StrFormat("%s: %d unit(s) tried, %d in bf16, %d fp32 needed (%d model runs)",
                             head, c.tried, c.given_back, c.needed, c.model_runs)
           : absl::StrFormat("%s: %d island(s) tried, %d needed, %d given back (%d model runs)",
                             head, c.tried, c.needed, c.given_back, c.model_runs);
  if (c.kept_back > 0) {
    absl::StrAppend(&out, ", ", c.kept_back, bf16 ? " kept in fp32" : " kept back");
  }
  if (c.spec > 0) absl::StrAppend(&out, "; ", c.spec, " kept by the spec");
  if (c.not_tried > 0) {
    absl::StrAppend(&out, "; ", c.not_tried, " not tried (at most ", c.unit_bound, " units, ",
                    c.run_bound, " model runs)");
  }
  absl::StrAppend(&out, "\n");
  if (!c.note.empty()) absl::StrAppend(&out, "  ", c.note, "\n");
  for (size_t i = 0; i < c.islands.size() && i < listed; ++i) {
    absl::StrAppend(&out, "  ", CertifiedIslandLine(c.islands[i], c.tried_as), "\n");
  }
  if (listed > 0 && c.islands.size() > listed) {
    absl::StrAppend(&out, "  … and ", c.islands.size() - listed, " more (--report)\n");
  }
  return out;
}

std::string ReportToJson(const ConversionReport& report) {
  cli::JsonWriter w;
  w.BeginObject().Fields({Field("input", report.input), Field("output", report.output),
                          Field("target", report.target)});
  w.Array("steps", report.steps, [](cli::JsonWriter& w, const StepReport& s) {
    // A step the plan does not run says why (converter/conversion_plan.h StepStatus).
    w.Object({Field("name", s.name), Field("rewrites", s.rewrites),
              Field("rolled_back", s.rolled_back), OptionalField(!s.runs, "not_run", s.why_not)});
  });
  w.Array("rewrites", report.rewrites, WriteRewrite);
  w.Array("fp32_islands", report.islands, [](cli::JsonWriter& w, const IslandNode& i) {
    w.Object({Field("node", i.node), Field("op_type", i.op_type), Field("reason", i.reason),
              OptionalField(i.bf16, "computes_in", std::string("bf16"))});
  });
  const bool layers = !report.layer_precisions.empty();
  w.Fields({OptionalField(!report.opset_note.empty(), "opset", report.opset_note),
            OptionalField(layers, "layer_precisions", report.layer_precisions),
            OptionalField(layers, "layer_output_types", report.layer_output_types)});
  WriteValidation(w, report);
  WriteShapes(w, report);
  if (report.cost) WritePrecisionCost(w, *report.cost);
  if (report.repair) WriteRepair(w, *report.repair);
  if (report.certificate) WriteCertificate(w, *report.certificate);
  if (report.bf16_islands) WriteCertificate(w, *report.bf16_islands);
  if (report.time.measured()) WriteTimeJson(w, report.time);
  w.EndObject();
  return w.str() + "\n";
}

std::string RepairLines(const Repair& r, size_t listed, bool every_round) {
  std::string out = absl::StrFormat(
      "repair: end-to-end error %s beyond the tolerance; %d node(s) kept in fp32 "
      "in %d round(s), %d model run(s)\n",
      Error(r.error_before), r.kept.size(), r.rounds, r.model_runs);
  int not_listed = 0;
  for (const RepairRound& h : r.history) {
    if (h.round == 0) continue;
    if (!every_round && !h.kept) {
      ++not_listed;
      continue;
    }
    absl::StrAppend(&out,
                    absl::StrFormat("  round %d: %s %d node(s): %d in fp32 (%.1f%% of float "
                                    "nodes), error %s, score %s - %s\n",
                                    h.round, h.give_back ? "give back" : "add", h.nodes_changed,
                                    h.fp32_nodes, 100 * h.fp32_share, Error(h.error),
                                    ScoreText(h.score, 3), h.kept ? "kept" : "not kept"));
  }
  if (not_listed > 0) {
    absl::StrAppend(&out, "  … and ", not_listed, " round(s) not kept (--report)\n");
  }
  // A deep model can keep hundreds: the first ones here, all of them in the reports.
  for (size_t i = 0; i < r.kept.size() && i < listed; ++i) {
    const RepairedNode& k = r.kept[i];
    absl::StrAppend(&out, absl::StrFormat("  kept fp32: %-50s error %s -> %s\n", k.node,
                                          Error(k.error_before), Error(k.error_after)));
  }
  if (r.kept.size() > listed) {
    absl::StrAppend(&out, "  … and ", r.kept.size() - listed, " more (--report)\n");
  }
  return out;
}

std::string SummaryTable(const ConversionReport& report) {
  struct Row {
    int applied = 0, rolled_back = 0;
    double max_error = -1;
  };
  std::map<std::string, Row> rows;  // sorted by rule: stable output
  for (const RewriteRecord& r : report.rewrites) {
    Row& row = rows[r.rule];
    (r.rolled_back ? row.rolled_back : row.applied)++;
    if (!r.rolled_back) row.max_error = std::max(row.max_error, r.max_error);
  }
  std::string out = absl::StrFormat("%-44s %8s %12s %10s\n", "rule / pass", "applied",
                                    "rolled back", "max error");
  for (const auto& [rule, row] : rows) {
    absl::StrAppend(&out,
                    absl::StrFormat("%-44s %8d %12d %10s\n", rule, row.applied, row.rolled_back,
                                    row.max_error < 0 ? "-" : Error(row.max_error)));
  }
  if (rows.empty()) absl::StrAppend(&out, "(no rewrites)\n");
  int relied = 0;
  for (const RewriteRecord& r : report.rewrites) {
    relied += !r.rolled_back && !r.observed_shapes.empty() ? 1 : 0;
  }
  if (relied > 0) {
    absl::StrAppend(&out, relied,
                    " rewrite(s) relied on shapes observed in the reference run (see "
                    "observed_shapes in the JSON report)\n");
  }
  if (!report.dynamic_values.empty()) {
    absl::StrAppend(&out, "stayed dynamic (shapes depend on data): ",
                    absl::StrJoin(report.dynamic_values, ", "), "\n");
  }
  for (const BodyNotRun& b : report.bodies_not_run) {
    std::map<std::string, int> kinds;  // "Shape: NAME" counts as a Shape
    for (const std::string& l : b.left) kinds[l.substr(0, l.find(':'))]++;
    std::string left;
    for (const auto& [kind, n] : kinds)
      absl::StrAppend(&left, left.empty() ? "" : ", ", n, " ", kind);
    absl::StrAppend(&out, "no calibration set ran ", b.body, " (static shape facts only): ",
                    left.empty() ? "nothing left unconverted" : absl::StrCat("left ", left), "\n");
  }
  if (!report.islands.empty()) {
    std::map<std::string, int> per_op;
    for (const IslandNode& i : report.islands) per_op[i.op_type]++;
    std::string ops;
    for (const auto& [op, n] : per_op) absl::StrAppend(&ops, ops.empty() ? "" : ", ", op, " ", n);
    const int bf16 = static_cast<int>(std::count_if(report.islands.begin(), report.islands.end(),
                                                    [](const IslandNode& i) { return i.bf16; }));
    absl::StrAppend(&out, "fp32 islands: ", report.islands.size() - bf16, " node(s)",
                    bf16 > 0 ? absl::StrCat(" and ", bf16, " in bf16") : "", " (", ops, ")\n");
  }
  if (report.cost) absl::StrAppend(&out, PrecisionCostLine(*report.cost), "\n");
  if (!report.calibration.empty()) absl::StrAppend(&out, report.calibration, "\n");
  if (report.repair) absl::StrAppend(&out, RepairLines(*report.repair, 20, true));
  if (report.certificate) absl::StrAppend(&out, CertificateLines(*report.certificate, 20));
  if (report.bf16_islands) absl::StrAppend(&out, CertificateLines(*report.bf16_islands, 20));
  if (report.end_to_end) {
    const EndToEndResult& e = *report.end_to_end;
    // The criteria most outputs share are said once (when more than one output shares them,
    // or there is one output); an output judged otherwise says its own.
    std::map<std::string, int> uses;
    for (const OutputComparison& c : e.outputs) uses[CriteriaToString(c.criteria)]++;
    std::string common;
    int most = 0;
    for (const auto& [text, n] : uses) {
      if (n > most) {
        common = text;
        most = n;
      }
    }
    if (most < 2 && e.outputs.size() > 1) common.clear();
    const bool only_fp32 = report.repair && report.repair->only_fp32;
    absl::StrAppend(
        &out, "end-to-end: score ", ScoreText(e.score), " (",
        common.empty()     ? "each output's criteria"
        : uses.size() == 1 ? absl::StrCat("criteria ", common)
                           : absl::StrCat("criteria ", common, " unless an output names its own"),
        "; at most 1 meets them), max error ", Error(e.max_error), " of the output range",
        report.outputs_match ? " - outputs preserved"
        : only_fp32          ? " - only the fp32 model meets the criterion"
                             : " - OUTPUTS CHANGED",
        report.validated ? absl::StrCat(" (", report.model_runs, " model runs)") : "", "\n");
    for (const OutputComparison& c : e.outputs) {
      const std::string criteria = CriteriaToString(c.criteria);
      absl::StrAppend(
          &out, "  ", c.name, ": ", DescribeStatistics(c.stats), c.finite ? "" : " (non-finite)",
          "; score ", ScoreText(c.score),
          criteria == common ? "" : absl::StrCat(" (", criteria, ")"),
          c.beyond_fp16 ? " - beyond fp16's range in the original, not judged"
          : c.meets     ? ""
                        : " FAILS",
          c.set > 0 ? absl::StrCat(" on input set ", c.set) : "",
          c.set < report.set_labels.size() && c.set > 0 && !report.set_labels[c.set].empty()
              ? absl::StrCat(" (", report.set_labels[c.set], ")")
              : "",
          "\n");
    }
    if (e.set_scores.size() > 1) {
      // Each set's score, the worst named: a shape or sample that fails shows here.
      size_t worst = 0;
      bool equal = true;
      for (size_t k = 0; k < e.set_scores.size(); ++k) {
        equal = equal && e.set_scores[k] == e.set_scores[0];
        if (!(e.set_scores[k] <= e.set_scores[worst])) worst = k;
      }
      if (equal) worst = e.set_scores.size();  // no set is worse than another
      absl::StrAppend(&out, "per input set:\n");
      for (size_t k = 0; k < e.set_scores.size(); ++k) {
        const std::string label = k < report.set_labels.size() ? report.set_labels[k] : "";
        absl::StrAppend(&out, "  set ", k, label.empty() ? "" : absl::StrCat(" (", label, ")"),
                        ": score ", ScoreText(e.set_scores[k]), k == worst ? " - the worst" : "",
                        e.set_scores[k] <= 1 ? "" : " FAILS", "\n");
      }
    }
    if (!report.shapes_note.empty()) absl::StrAppend(&out, report.shapes_note, "\n");
    if (!report.trtexec_shapes.empty()) {
      absl::StrAppend(&out, "TensorRT profile (trtexec): ", report.trtexec_shapes, "\n");
    }
    if (report.islands_ignored) {
      absl::StrAppend(&out,
                      "the backend ignores fp32 islands: measured with every float tensor in "
                      "fp16; values still beyond fp16's range: ",
                      report.fp16_overflows.size(), "\n");
      for (const Fp16Overflow& o : report.fp16_overflows) {
        absl::StrAppend(&out, "  ", o.value, " (", o.op, "): max |x| ", Error(o.largest), ": ",
                        o.why, "\n");
      }
      if (const std::optional<NonFiniteOrigin>& o = report.first_non_finite) {
        absl::StrAppend(&out, "  first NaN/inf with every float tensor in fp16: ", o->node, ", ",
                        o->non_finite, " element(s): ", o->Why(), "\n");
      }
      if (report.fp16_overflows.empty() && !report.outputs_match && !report.first_non_finite) {
        absl::StrAppend(&out,
                        "  none: the error is fp16's rounding, which no rescaling changes (the "
                        "backend needs fp32 for this model)\n");
      }
      if (!report.outputs_match && !report.fp32_runtime.empty()) {
        absl::StrAppend(&out, "  the way out: --precision fp32 writes the file for the backend ",
                        "set to compute in fp32 (", report.fp32_runtime, ")\n");
      }
    }
    if (report.fp32_by_request) {
      absl::StrAppend(&out, "precision fp32: validated in fp32, for the backend set to compute ",
                      "in fp32 (", report.fp32_runtime, ")\n");
    }
  } else {
    absl::StrAppend(
        &out, "end-to-end: not validated",
        report.validation_note.empty() ? "" : absl::StrCat(" (", report.validation_note, ")"),
        "\n");
  }
  return out;
}

ProgressBar::ProgressBar(std::FILE* out)
    : out_(out), active_(out != nullptr && isatty(fileno(out)) != 0) {}
ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(int done, int total, const std::string& label) {
  if (!active_ || total <= 0) return;
  constexpr int kWidth = 30;
  const int filled = done * kWidth / total;
  std::fprintf(out_, "\r[%s%s] %d/%d %-40.40s", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), done, total, label.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (!active_ || !drawn_) return;
  std::fprintf(out_, "\r%*s\r", 90, "");
  std::fflush(out_);
  drawn_ = false;
}

FloatNodeCounts CountFloatNodes(const Model& model) {
  FloatNodeCounts count;
  for (Graph* g : GraphsRecursive(const_cast<Graph&>(model.graph()))) {
    for (const Node* n : g->nodes()) {
      if (n->op_type() == "Cast" || n->op_type() == "Constant" || !n->subgraphs().empty()) {
        continue;
      }
      const auto [half, single, bfloat16] = FloatTypesOfOutputs(*n);
      count.float16 += half;
      count.float32 += single && !half;
    }
  }
  return count;
}

}  // namespace ovfix::converter
