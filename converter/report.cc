#include "converter/report.h"

#include <unistd.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/float_outputs.h"
#include "converter/json_writer.h"
#include "ir/graph_walk.h"

namespace ovfix::converter {

using rules::IslandNode;
using rules::RewriteRecord;
namespace {

void WriteRewrite(cli::JsonWriter& w, const RewriteRecord& r) {
  w.BeginObject();
  w.Key("rule").String(r.rule);
  w.Key("matched").BeginArray();
  for (const std::string& n : r.matched) w.String(n);
  w.EndArray();
  w.Key("created").BeginArray();
  for (const std::string& n : r.created) w.String(n);
  w.EndArray();
  w.Key("removed").Int(r.removed);
  w.Key("validated").Bool(r.max_error >= 0);
  if (r.max_error >= 0) w.Key("error").Number(r.max_error);
  w.Key("rolled_back").Bool(r.rolled_back);
  if (!r.observed_shapes.empty()) {
    w.Key("observed_shapes").BeginArray();
    for (const std::string& n : r.observed_shapes) w.String(n);
    w.EndArray();
  }
  if (!r.note.empty()) w.Key(r.rolled_back ? "reason" : "note").String(r.note);
  w.EndObject();
}

std::string Error(double e) { return absl::StrFormat("%.2g", e); }

// One output's comparison: its criteria, score and every statistic measured.
void WriteOutput(cli::JsonWriter& w, const OutputComparison& c) {
  const OutputStatistics& s = c.stats;
  w.BeginObject();
  w.Key("name").String(c.name);
  w.Key("error").Number(c.error);
  w.Key("finite").Bool(c.finite);
  w.Key("criteria").String(CriteriaToString(c.criteria));
  w.Key("score").Number(c.score);
  w.Key("meets").Bool(c.meets);
  if (c.beyond_fp16) w.Key("beyond_fp16").Bool(true);
  w.Key("input_set").Int(static_cast<int64_t>(c.set));
  w.Key("elements").Int(s.elements);
  w.Key("max").Number(s.max);
  w.Key("mean").Number(s.mean);
  for (const Percentile& p : s.percentiles) {
    w.Key(absl::StrFormat("p%g", p.q)).Number(p.value);
  }
  w.Key("beyond").BeginArray();
  for (const ShareBeyond& b : s.beyond) {
    w.BeginObject();
    w.Key("error").Number(b.error);
    w.Key("share").Number(b.share);
    w.Key("elements").Int(b.count);
    w.EndObject();
  }
  w.EndArray();
  w.Key("non_finite").Int(s.non_finite);
  if (!s.topk.empty()) {
    w.Key("topk").BeginArray();
    for (const TopKAgreement& t : s.topk) {
      w.BeginObject();
      w.Key("k").Int(t.k);
      w.Key("rows").Int(t.rows);
      w.Key("differing").Int(t.differing);
      w.EndObject();
    }
    w.EndArray();
  }
  if (!s.masks.empty()) {
    w.Key("masks").BeginArray();
    for (const MaskAgreement& m : s.masks) {
      w.BeginObject();
      w.Key("threshold").Number(m.threshold);
      w.Key("elements").Int(m.elements);
      w.Key("flipped").Int(m.flipped);
      w.EndObject();
    }
    w.EndArray();
  }
  if (!s.boxes.empty()) {
    w.Key("boxes").BeginArray();
    for (const BoxAgreement& b : s.boxes) {
      w.BeginObject();
      w.Key("iou").Number(b.iou);
      w.Key("reference").Int(b.reference);
      w.Key("converted").Int(b.converted);
      w.Key("unmatched_reference").Int(b.unmatched_reference);
      w.Key("unmatched_converted").Int(b.unmatched_converted);
      w.Key("worst_score_difference").Number(b.worst_score_difference);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

}  // namespace

std::string ReportToJson(const ConversionReport& report) {
  cli::JsonWriter w;
  w.BeginObject();
  w.Key("input").String(report.input);
  w.Key("output").String(report.output);
  w.Key("target").String(report.target);
  w.Key("steps").BeginArray();
  for (const StepReport& s : report.steps) {
    w.BeginObject();
    w.Key("name").String(s.name);
    w.Key("rewrites").Int(s.rewrites);
    w.Key("rolled_back").Int(s.rolled_back);
    w.EndObject();
  }
  w.EndArray();
  w.Key("rewrites").BeginArray();
  for (const RewriteRecord& r : report.rewrites) WriteRewrite(w, r);
  w.EndArray();
  w.Key("fp32_islands").BeginArray();
  for (const IslandNode& i : report.islands) {
    w.BeginObject();
    w.Key("node").String(i.node);
    w.Key("op_type").String(i.op_type);
    w.Key("reason").String(i.reason);
    w.EndObject();
  }
  w.EndArray();
  if (!report.opset_note.empty()) w.Key("opset").String(report.opset_note);
  if (!report.layer_precisions.empty()) {
    w.Key("layer_precisions").String(report.layer_precisions);
    w.Key("layer_output_types").String(report.layer_output_types);
  }
  w.Key("validation").BeginObject();
  w.Key("enabled").Bool(report.validated);
  if (!report.validation_note.empty()) w.Key("note").String(report.validation_note);
  if (report.end_to_end) {
    if (report.end_to_end_tolerance >= 0) {
      w.Key("tolerance").Number(report.end_to_end_tolerance);
    }
    w.Key("max_error").Number(report.end_to_end->max_error);
    w.Key("score").Number(report.end_to_end->score);
    w.Key("meets").Bool(report.end_to_end->meets());
    w.Key("outputs").BeginArray();
    for (const OutputComparison& c : report.end_to_end->outputs) WriteOutput(w, c);
    w.EndArray();
    if (report.islands_ignored) {
      w.Key("islands_ignored").Bool(true);
      w.Key("fp16_overflows").BeginArray();
      for (const Fp16Overflow& o : report.fp16_overflows) {
        w.BeginObject();
        w.Key("value").String(o.value);
        w.Key("op").String(o.op);
        w.Key("largest").Number(o.largest);
        w.Key("why").String(o.why);
        w.EndObject();
      }
      w.EndArray();
    }
  }
  if (!report.calibration.empty()) w.Key("calibration").String(report.calibration);
  if (report.validated) w.Key("model_runs").Int(report.model_runs);
  w.Key("outputs_match").Bool(report.outputs_match);
  w.EndObject();
  w.Key("shapes").BeginObject();
  w.Key("observed_facts").Int(report.observed_shape_facts);
  w.Key("dynamic_values").BeginArray();
  for (const std::string& n : report.dynamic_values) w.String(n);
  w.EndArray();
  w.Key("constant_ifs_inlined").Int(report.constant_ifs_inlined);
  w.Key("bodies_not_run").BeginArray();
  for (const BodyNotRun& b : report.bodies_not_run) {
    w.BeginObject();
    w.Key("body").String(b.body);
    w.Key("left").BeginArray();
    for (const std::string& l : b.left) w.String(l);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  if (report.cost) {
    const PrecisionCost& c = *report.cost;
    w.Key("precision_cost").BeginObject();
    w.Key("float_nodes").Int(c.float_nodes);
    w.Key("fp32_nodes").Int(c.fp32_nodes);
    w.Key("fp32_node_share").Number(c.NodeShare());
    w.Key("multiply_adds").Number(c.multiply_adds);
    w.Key("fp32_multiply_adds").Number(c.fp32_multiply_adds);
    w.Key("fp32_multiply_add_share").Number(c.MultiplyAddShare());
    w.Key("nodes_without_shapes").Int(c.nodes_without_shapes);
    w.Key("weight_bytes").Int(c.weight_bytes);
    w.Key("fp32_weight_bytes").Int(c.fp32_weight_bytes);
    w.Key("casts").Int(c.casts);
    w.Key("casts_inserted").Int(c.casts_inserted);
    w.EndObject();
  }
  if (report.repair) {
    w.Key("repair").BeginObject();
    w.Key("rounds").Int(report.repair->rounds);
    w.Key("model_runs").Int(report.repair->model_runs);
    w.Key("error_before").Number(report.repair->error_before);
    w.Key("only_fp32_meets").Bool(report.repair->only_fp32);
    w.Key("history").BeginArray();
    for (const RepairRound& r : report.repair->history) {
      w.BeginObject();
      w.Key("round").Int(r.round);
      w.Key("action").String(r.round == 0 ? "first conversion" : r.give_back ? "give back" : "add");
      w.Key("nodes").Int(r.nodes_changed);
      w.Key("fp32_nodes").Int(r.fp32_nodes);
      w.Key("fp32_share").Number(r.fp32_share);
      w.Key("score").Number(r.score);
      w.Key("error").Number(r.error);
      w.Key("kept").Bool(r.kept);
      w.EndObject();
    }
    w.EndArray();
    w.Key("kept_fp32").BeginArray();
    for (const RepairedNode& k : report.repair->kept) {
      w.BeginObject();
      w.Key("node").String(k.node);
      w.Key("op_type").String(k.op_type);
      w.Key("round").Int(k.round);
      w.Key("error_before").Number(k.error_before);
      w.Key("error_after").Number(k.error_after);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
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
    absl::StrAppend(&out, absl::StrFormat("  round %d: %s %d node(s): %d in fp32 (%.1f%% of float "
                                          "nodes), error %s, score %.3g - %s\n",
                                          h.round, h.give_back ? "give back" : "add",
                                          h.nodes_changed, h.fp32_nodes, 100 * h.fp32_share,
                                          Error(h.error), h.score, h.kept ? "kept" : "not kept"));
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
    absl::StrAppend(&out, "fp32 islands: ", report.islands.size(), " node(s) (", ops, ")\n");
  }
  if (report.cost) absl::StrAppend(&out, PrecisionCostLine(*report.cost), "\n");
  if (!report.calibration.empty()) absl::StrAppend(&out, report.calibration, "\n");
  if (report.repair) absl::StrAppend(&out, RepairLines(*report.repair, 20, true));
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
        &out, "end-to-end: score ", Error(e.score), " (",
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
      absl::StrAppend(&out, "  ", c.name, ": ", DescribeStatistics(c.stats),
                      c.finite ? "" : " (non-finite)", "; score ", Error(c.score),
                      criteria == common ? "" : absl::StrCat(" (", criteria, ")"),
                      c.beyond_fp16 ? " - beyond fp16's range in the original, not judged"
                      : c.meets     ? ""
                                    : " FAILS",
                      c.set > 0 ? absl::StrCat(" on input set ", c.set) : "", "\n");
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
      if (report.fp16_overflows.empty() && !report.outputs_match) {
        absl::StrAppend(&out,
                        "  none: the error is fp16's rounding, which no rescaling changes (the "
                        "backend needs fp32 for this model)\n");
      }
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
