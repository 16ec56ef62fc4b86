#include "cli/convert_summary.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "converter/precision_cost.h"

namespace ovfix::cli {
namespace {

using converter::ConversionReport;
using converter::ModelStats;

constexpr size_t kOpRows = 8;
constexpr size_t kListed = 5;

std::string Bytes(int64_t n) {
  if (n < 0) return "-";
  if (n >= 1000 * 1000) return absl::StrFormat("%.1f MB", n / 1e6);
  if (n >= 1000) return absl::StrFormat("%.1f kB", n / 1e3);
  return absl::StrCat(n, " B");
}

std::string Row(const std::string& label, const std::string& before, const std::string& after) {
  return absl::StrFormat("%-28s %12s  ->  %s\n", label, before, after);
}

std::string Rows(const ModelStats& before, const ModelStats& after) {
  std::string out = absl::StrFormat("%-28s %12s      %s\n", "", "before", "after");
  absl::StrAppend(&out, Row("nodes", absl::StrCat(before.nodes), absl::StrCat(after.nodes)));
  // Op types whose count changed, largest change first; Casts added are one of them.
  std::map<std::string, std::pair<int64_t, int64_t>> counts;
  for (const auto& [op, n] : before.ops) counts[op].first = n;
  for (const auto& [op, n] : after.ops) counts[op].second = n;
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> changed;
  for (const auto& entry : counts) {
    if (entry.second.first != entry.second.second) changed.push_back(entry);
  }
  std::stable_sort(changed.begin(), changed.end(), [](const auto& a, const auto& b) {
    return std::llabs(a.second.second - a.second.first) >
           std::llabs(b.second.second - b.second.first);
  });
  for (size_t i = 0; i < changed.size() && i < kOpRows; ++i) {
    const auto& [op, n] = changed[i];
    absl::StrAppend(&out, Row("  " + op, absl::StrCat(n.first), absl::StrCat(n.second)));
  }
  if (changed.size() > kOpRows) {
    absl::StrAppend(&out, "  … and ", changed.size() - kOpRows,
                    " more op types changed (inspect the model for all)\n");
  }
  absl::StrAppend(&out, Row("weights", Bytes(before.weight_bytes), Bytes(after.weight_bytes)));
  absl::StrAppend(&out, Row("file size", Bytes(before.file_bytes), Bytes(after.file_bytes)));
  return out;
}

// "explicit_broadcast 12, constant_folding 3": rewrites committed per rule or pass.
std::string RewriteLine(const ConversionReport& report) {
  std::map<std::string, int> applied;
  int rolled_back = 0;
  for (const rules::RewriteRecord& r : report.rewrites) {
    if (r.rolled_back) {
      ++rolled_back;
    } else {
      ++applied[r.rule];
    }
  }
  std::vector<std::pair<std::string, int>> rows(applied.begin(), applied.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> items;
  int total = 0;
  for (const auto& [rule, n] : rows) {
    items.push_back(absl::StrCat(rule, " ", n));
    total += n;
  }
  std::string out = absl::StrCat("rewrites: ", total);
  if (!items.empty()) absl::StrAppend(&out, " (", FirstFew(items, kListed), ")");
  if (rolled_back > 0) absl::StrAppend(&out, "; ", rolled_back, " rolled back");
  return out + "\n";
}

std::string IslandLine(const ConversionReport& report) {
  std::map<std::string, int> per_op;
  for (const rules::IslandNode& i : report.islands) per_op[i.op_type]++;
  std::vector<std::pair<std::string, int>> rows(per_op.begin(), per_op.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> items;
  for (const auto& [op, n] : rows) items.push_back(absl::StrCat(op, " ", n));
  const auto bf16 = std::count_if(report.islands.begin(), report.islands.end(),
                                  [](const rules::IslandNode& i) { return i.bf16; });
  return absl::StrCat("fp32 islands: ", report.islands.size() - bf16, " node(s)",
                      bf16 > 0 ? absl::StrCat(" and ", bf16, " in bf16") : "", " (",
                      FirstFew(items, kListed), ")\n");
}

// One line per body no calibration set ran that still holds what the target exists to remove
// (its kinds counted: "left 3 element-wise input of unknown rank, 1 Shape"), and one for the
// others: the file is complete only for the inputs the calibration sets stand for.
std::string BodiesNotRunLines(const ConversionReport& report) {
  std::string out;
  int listed = 0, more = 0, clean = 0;
  for (const converter::BodyNotRun& b : report.bodies_not_run) {
    if (b.left.empty()) {
      ++clean;
      continue;
    }
    if (static_cast<size_t>(listed) == kListed) {
      ++more;
      continue;
    }
    ++listed;
    std::map<std::string, int> kinds;  // "Shape: NAME" counts as a Shape
    for (const std::string& l : b.left) kinds[l.substr(0, l.find(':'))]++;
    std::vector<std::string> items;
    for (const auto& [kind, n] : kinds) items.push_back(absl::StrCat(n, " ", kind));
    absl::StrAppend(&out, "no calibration set ran ", b.body, " (static shape facts only): left ",
                    absl::StrJoin(items, ", "), "; give --calibration-data that takes it\n");
  }
  if (more > 0) {
    absl::StrAppend(&out, "… and ", more, " more bodies no calibration set ran, with ",
                    "something left (--report)\n");
  }
  if (clean > 0) {
    absl::StrAppend(&out, "no calibration set ran ", clean, listed + more > 0 ? " other" : "",
                    " If/Loop bodies: nothing left unconverted in them\n");
  }
  return out;
}

}  // namespace

std::string FirstFew(const std::vector<std::string>& items, size_t shown) {
  if (items.size() <= shown) return absl::StrJoin(items, ", ");
  std::vector<std::string> first(items.begin(), items.begin() + static_cast<long>(shown));
  return absl::StrCat(absl::StrJoin(first, ", "), " … and ", items.size() - shown,
                      " more (--report)");
}

std::string ActionableRollbacks(const ConversionReport& report) {
  // One line per rule: how often, the first node and the reason; for the user's own rules
  // whatever the reason, for built-in ones where the user can act on it.
  std::vector<std::string> rules;
  std::map<std::string, std::pair<int, const rules::RewriteRecord*>> by_rule;
  for (const rules::RewriteRecord& r : report.rewrites) {
    if (!r.rolled_back) continue;
    if (!report.user_rules.contains(r.rule) && !absl::StrContains(r.note, "no cpu kernel")) {
      continue;
    }
    auto [it, added] = by_rule.try_emplace(r.rule, 0, &r);
    if (added) rules.push_back(r.rule);
    ++it->second.first;
  }
  std::string out;
  for (size_t i = 0; i < rules.size() && i < 3; ++i) {
    const auto& [count, first] = by_rule.at(rules[i]);
    absl::StrAppend(
        &out, "rolled back: ", rules[i], " ", count, "x (",
        first->matched.empty() ? "" : absl::StrCat("first at ", first->matched[0], ": "),
        first->note, "): change the rule, or --disable ", rules[i], "\n");
  }
  if (rules.size() > 3) {
    absl::StrAppend(&out, "… and ", rules.size() - 3, " more rules rolled back so (--report)\n");
  }
  return out;
}

std::string ConvertSummary(const ConversionReport& report, const ConvertSummaryFacts& facts) {
  std::string out = Rows(facts.before, facts.after);
  if (report.cost) {
    absl::StrAppend(&out, converter::PrecisionCostLine(*report.cost), "\n");
  } else if (facts.fp16 || facts.precision.float16 > 0) {
    const int floats = facts.precision.float16 + facts.precision.float32;
    absl::StrAppend(&out, absl::StrFormat("fp32 share: %.0f%% of float nodes (%d of %d)\n",
                                          100 * facts.precision.Float32Share(),
                                          facts.precision.float32, floats));
  }
  absl::StrAppend(&out, RewriteLine(report));
  absl::StrAppend(&out, ActionableRollbacks(report));
  if (!report.islands.empty()) absl::StrAppend(&out, IslandLine(report));
  if (!report.opset_note.empty()) {
    absl::StrAppend(&out, "bf16: ", report.opset_note, "\n");
    // A bfloat16 conversion that left most of the model in fp32 says so, and what else to do.
    if (report.cost && report.cost->NodeShare() > 0.5) {
      absl::StrAppend(&out,
                      absl::StrFormat("bf16: %d of %d float node(s) (%.0f%%) stay fp32, so the "
                                      "file computes mostly in fp32; --precision fp16 computes "
                                      "them in fp16 with fp32 islands instead\n",
                                      report.cost->fp32_nodes, report.cost->float_nodes,
                                      100 * report.cost->NodeShare()));
    }
  }
  if (!report.dynamic_values.empty()) {
    absl::StrAppend(&out, "stayed dynamic (shapes depend on data): ",
                    FirstFew(report.dynamic_values, kListed), "\n");
  }
  absl::StrAppend(&out, BodiesNotRunLines(report));
  if (!report.calibration.empty()) absl::StrAppend(&out, report.calibration, "\n");
  if (report.repair) absl::StrAppend(&out, converter::RepairLines(*report.repair, kListed, false));
  if (report.certificate)
    absl::StrAppend(&out, converter::CertificateLines(*report.certificate, 0));
  if (report.bf16_islands)
    absl::StrAppend(&out, converter::CertificateLines(*report.bf16_islands, 0));
  if (facts.verbose && report.time.measured()) {
    absl::StrAppend(&out, converter::TimeLine(report.time), "\n");
  } else {
    absl::StrAppend(&out, absl::StrFormat("time: %.1f s\n", report.seconds));
  }
  // The accuracy line as the report prints it (converter/report.h), whatever it says.
  bool accuracy = false;
  for (absl::string_view line : absl::StrSplit(converter::SummaryTable(report), '\n')) {
    accuracy = accuracy || absl::StartsWith(line, "end-to-end");
    if (accuracy && !line.empty()) absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace ovfix::cli
