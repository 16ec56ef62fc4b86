#include "converter/report_html.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "converter/accuracy.h"
#include "converter/html_escape.h"

namespace ovfix::converter {
namespace {

std::string Number(double v) {
  if (std::isinf(v)) return "inf";
  if (std::isnan(v)) return "NaN";
  return absl::StrFormat("%.3g", v);
}

// A score: never "1" for one above 1 (accuracy.h).
std::string Score(double v) { return std::isfinite(v) ? ScoreText(v, 3) : Number(v); }

std::string Percent(double share) { return absl::StrFormat("%.1f%%", 100 * share); }

std::string Bytes(double b) {
  if (b >= 1e6) return absl::StrFormat("%.1f MB", b / 1e6);
  if (b >= 1e3) return absl::StrFormat("%.1f kB", b / 1e3);
  return absl::StrFormat("%.0f B", b);
}

constexpr char kStyle[] = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 980px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.ok { color: #1a7f37; font-weight: 600; } .bad { color: #c62828; font-weight: 600; }
.bar { display: inline-block; height: 10px; background: #e8833a; vertical-align: middle; }
.bar16 { display: inline-block; height: 10px; background: #4a7fc1; vertical-align: middle; }
.big { font-size: 22px; font-weight: 600; } .cards { display: flex; gap: 14px; flex-wrap: wrap; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 170px; }
.muted { color: #777; } code { font-size: 12px; }
)";

std::string Card(const std::string& value, const std::string& what) {
  return absl::StrCat("<div class=card><div class=big>", value, "</div><div class=muted>", what,
                      "</div></div>");
}

std::string CostSection(const PrecisionCost& c) {
  std::string out = "<h2>What stays in fp32</h2><div class=cards>";
  absl::StrAppend(&out, Card(Percent(c.NodeShare()), absl::StrFormat("of float nodes (%d of %d)",
                                                                     c.fp32_nodes, c.float_nodes)));
  const double m = c.multiply_adds;
  const std::string macs = m >= 1e9   ? absl::StrFormat("%.2fG", m / 1e9)
                           : m >= 1e6 ? absl::StrFormat("%.2fM", m / 1e6)
                           : m >= 1e3 ? absl::StrFormat("%.1fk", m / 1e3)
                                      : absl::StrFormat("%.0f", m);
  absl::StrAppend(&out, Card(Percent(c.MultiplyAddShare()), "of " + macs + " multiply-adds"));
  absl::StrAppend(&out, Card(Bytes(static_cast<double>(c.fp32_weight_bytes)),
                             absl::StrCat("of weights in fp32 (of ",
                                          Bytes(static_cast<double>(c.weight_bytes)), ")")));
  absl::StrAppend(&out, Card(absl::StrCat(c.casts_inserted), "Casts inserted (kernel launches)"));
  absl::StrAppend(&out, "</div>");
  if (c.nodes_without_shapes > 0) {
    absl::StrAppend(&out, "<p class=muted>", c.nodes_without_shapes,
                    " node(s) of unknown shape are not in the multiply-adds.</p>");
  }
  return out;
}

// The 16-bit float type of the conversion, as the page names it.
std::string HalfName(const ConversionReport& r) { return r.cost ? r.cost->half_name : "fp16"; }

// For targets whose backend ignores fp32 islands (every tensor fp16 there): the values of the
// converted model beyond fp16's range, which the backend turns into inf, and why no fp16-safe
// rewrite kept them within it.
std::string Fp16OverflowSection(const ConversionReport& r) {
  std::string out =
      "<h2>Values beyond fp16's range</h2><p class=muted>This target's backend stores every "
      "float tensor in fp16 whatever the model's Casts say; a value whose magnitude exceeds "
      "65504 becomes inf there.</p>";
  if (r.fp16_overflows.empty()) {
    return out + "<p class=ok>None: every value calibration saw stays within fp16's range.</p>";
  }
  absl::StrAppend(&out,
                  "<table><tr><th>value</th><th>op</th><th>largest |x|</th><th>why no "
                  "rewrite fits</th></tr>");
  for (const Fp16Overflow& o : r.fp16_overflows) {
    absl::StrAppend(&out, "<tr><td><code>", HtmlEscape(o.value), "</code></td><td>",
                    HtmlEscape(o.op), "</td><td class=bad>", Number(o.largest),
                    "</td><td style='text-align:left'>", HtmlEscape(o.why), "</td></tr>");
  }
  absl::StrAppend(&out, "</table>");
  return out;
}

std::string OutputsSection(const ConversionReport& r) {
  std::string out = "<h2>Outputs</h2>";
  if (!r.end_to_end) return out + "<p>Not validated.</p>";
  absl::StrAppend(&out,
                  "<p>Errors relative to each output's range; score = the worst of the output's "
                  "criteria over its bound (at most 1 meets them).</p>",
                  "<table><tr><th>output</th><th>criteria</th><th>max error</th><th>mean</th>"
                  "<th>p99</th><th>p99.9</th><th>score</th><th>finite</th><th>verdict</th></tr>");
  for (const OutputComparison& c : r.end_to_end->outputs) {
    absl::StrAppend(&out, "<tr><td><code>", HtmlEscape(c.name), "</code></td><td><code>",
                    HtmlEscape(CriteriaToString(c.criteria)), "</code></td><td>", Number(c.error),
                    "</td><td>", Number(c.stats.mean), "</td><td>",
                    Number(c.stats.PercentileValue(99)), "</td><td>",
                    Number(c.stats.PercentileValue(99.9)), "</td><td>", Score(c.score), "</td><td>",
                    c.finite ? "yes" : "no", "</td><td class=", c.meets ? "ok>meets" : "bad>misses",
                    "</td></tr>");
  }
  absl::StrAppend(&out, "</table>");
  return out;
}

// Error (log scale) against fp32 share, one point per evaluation; the rounds kept joined.
std::string RoundsPlot(const Repair& repair, double tolerance) {
  constexpr double kW = 640, kH = 300, kLeft = 64, kRight = 20, kTop = 16, kBottom = 44;
  double lo = tolerance > 0 ? tolerance : 1e-6, hi = lo;
  for (const RepairRound& h : repair.history) {
    if (std::isfinite(h.error) && h.error > 0) {
      lo = std::min(lo, h.error);
      hi = std::max(hi, h.error);
    }
  }
  const double log_lo = std::floor(std::log10(lo)), log_hi = std::ceil(std::log10(hi) + 1e-9);
  const double span = std::max(1.0, log_hi - log_lo);
  auto x = [&](double share) { return kLeft + share * (kW - kLeft - kRight); };
  auto y = [&](double error) {
    const double e = !std::isfinite(error) ? hi : std::max(error, std::pow(10.0, log_lo));
    return kTop + (log_hi - std::log10(e)) / span * (kH - kTop - kBottom);
  };
  std::string svg = absl::StrFormat(
      "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
      "font-size='11' font-family='sans-serif'>",
      kW, kH);
  absl::StrAppend(&svg, absl::StrFormat("<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' "
                                        "fill='#fafafa' stroke='#bbb'/>",
                                        kLeft, kTop, kW - kLeft - kRight, kH - kTop - kBottom));
  for (int k = 0; k <= 10; k += 2) {
    const double px = x(k / 10.0);
    absl::StrAppend(&svg,
                    absl::StrFormat("<line x1='%.1f' y1='%.0f' x2='%.1f' y2='%.0f' "
                                    "stroke='#e4e4e4'/><text x='%.1f' y='%.0f' "
                                    "text-anchor='middle'>%d%%</text>",
                                    px, kTop, px, kH - kBottom, px, kH - kBottom + 14, k * 10));
  }
  for (double d = log_lo; d <= log_hi + 1e-9; d += 1) {
    const double py = y(std::pow(10.0, d));
    absl::StrAppend(
        &svg, absl::StrFormat("<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' "
                              "stroke='#e4e4e4'/><text x='%.0f' y='%.1f' "
                              "text-anchor='end'>1e%d</text>",
                              kLeft, py, kW - kRight, py, kLeft - 6, py + 4, static_cast<int>(d)));
  }
  if (tolerance > 0) {
    const double py = y(tolerance);
    absl::StrAppend(&svg, absl::StrFormat("<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' "
                                          "stroke='#1a7f37' stroke-dasharray='6 4'/>"
                                          "<text x='%.0f' y='%.1f' fill='#1a7f37' "
                                          "text-anchor='end'>tolerance</text>",
                                          kLeft, py, kW - kRight, py, kW - kRight - 4, py - 4));
  }
  std::string path;
  for (const RepairRound& h : repair.history) {
    if (!h.kept) continue;
    absl::StrAppend(&path, path.empty() ? "M" : " L",
                    absl::StrFormat("%.1f %.1f", x(h.fp32_share), y(h.error)));
  }
  absl::StrAppend(&svg, "<path d='", path, "' fill='none' stroke='#4a7fc1' stroke-width='1.5'/>");
  std::vector<std::pair<double, double>> labelled;  // where labels are, so none overlap
  for (const RepairRound& h : repair.history) {
    const double px = x(h.fp32_share), py = y(h.error);
    bool crowded = false;
    for (const auto& [lx, ly] : labelled)
      crowded |= std::abs(lx - px) < 12 && std::abs(ly - py) < 10;
    if (!crowded) labelled.push_back({px, py});
    const bool near_right = px > kW - kRight - 80;
    const char* fill = !h.kept ? "#c62828" : h.score <= 1 ? "#1a7f37" : "#4a7fc1";
    absl::StrAppend(
        &svg,
        absl::StrFormat("<circle cx='%.1f' cy='%.1f' r='5' fill='%s' %s><title>round %d: "
                        "%s, fp32 share %.1f%%, error %s, %s</title></circle>"
                        "<text x='%.1f' y='%.1f' text-anchor='%s'>%s</text>",
                        px, py, fill, h.kept ? "" : "fill-opacity='0.55'", h.round,
                        h.round == 0  ? "first conversion"
                        : h.give_back ? "give back"
                                      : "add",
                        100 * h.fp32_share, Number(h.error), h.kept ? "kept" : "not kept",
                        near_right ? px - 7 : px + 7, py - 6, near_right ? "end" : "start",
                        crowded ? "" : absl::StrCat(h.round, h.error == 0 ? " (error 0)" : "")));
  }
  absl::StrAppend(&svg,
                  absl::StrFormat("<text x='%.0f' y='%.0f' text-anchor='middle'>fp32 share of "
                                  "float nodes</text><text transform='translate(14 %.0f) "
                                  "rotate(-90)' text-anchor='middle'>max error (of range)</text>",
                                  (kLeft + kW - kRight) / 2, kH - 8, (kTop + kH - kBottom) / 2));
  absl::StrAppend(&svg, "</svg>");
  return svg;
}

std::string RepairSection(const ConversionReport& r) {
  const Repair& repair = *r.repair;
  std::string out = "<h2>Repair rounds</h2>";
  absl::StrAppend(&out,
                  absl::StrFormat("<p>Error before the repair %s; %d round(s), %d model run(s). "
                                  "Blue: rounds kept, red: not kept (they did not lower the "
                                  "error, or a give-back missed the tolerance), green: meets "
                                  "the tolerance.</p>",
                                  Number(repair.error_before), repair.rounds, repair.model_runs));
  if (repair.only_fp32) {
    absl::StrAppend(&out, absl::StrCat("<p class=bad>Only the fp32 model meets the criterion: no ",
                                       HalfName(r), " model was written.</p>"));
  }
  absl::StrAppend(&out, RoundsPlot(repair, r.end_to_end_tolerance));
  absl::StrAppend(&out,
                  "<table><tr><th>round</th><th>action</th><th>nodes</th><th>fp32 nodes"
                  "</th><th>fp32 share</th><th>error</th><th>score</th><th></th></tr>");
  for (const RepairRound& h : repair.history) {
    absl::StrAppend(&out, "<tr><td>", h.round, "</td><td>",
                    h.round == 0  ? "first conversion"
                    : h.give_back ? "give back"
                                  : "add",
                    "</td><td>", h.nodes_changed, "</td><td>", h.fp32_nodes, "</td><td>",
                    Percent(h.fp32_share), "</td><td>", Number(h.error), "</td><td>",
                    Score(h.score), "</td><td class=", h.kept ? "ok>kept" : "bad>not kept",
                    "</td></tr>");
  }
  absl::StrAppend(&out, "</table>");
  return out;
}

// The steps as the plan ran them: rewrites, and why a step did not run.
std::string StepsSection(const ConversionReport& r) {
  std::string out =
      "<h2>Steps</h2><table><tr><th>step</th><th>rewrites</th><th>rolled back</th>"
      "<th></th></tr>";
  for (const StepReport& s : r.steps) {
    absl::StrAppend(
        &out, "<tr><td>", HtmlEscape(s.name), "</td><td>", s.rewrites, "</td><td>", s.rolled_back,
        "</td><td",
        s.runs ? ">runs" : absl::StrCat(" class=muted>does not run: ", HtmlEscape(s.why_not)),
        "</td></tr>");
  }
  absl::StrAppend(&out, "</table>");
  return out;
}

std::string ByOpSection(const PrecisionCost& c) {
  struct Count {
    int fp32 = 0, all = 0;
  };
  std::map<std::string, Count> ops;
  for (const NodePrecision& n : c.nodes) {
    ops[n.op_type].all++;
    ops[n.op_type].fp32 += n.fp32;
  }
  std::vector<std::pair<std::string, Count>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.fp32 != b.second.fp32 ? a.second.fp32 > b.second.fp32
                                          : a.second.all > b.second.all;
  });
  int widest = 1;
  for (const auto& [op, n] : sorted) widest = std::max(widest, n.all);
  std::string out = absl::StrCat(
      "<h2>fp32 nodes by op</h2><p class=muted>Main graph; orange fp32, blue ", c.half_name,
      ".</p><table><tr><th>op</th><th>fp32</th><th>of</th><th></th></tr>");
  for (const auto& [op, n] : sorted) {
    absl::StrAppend(
        &out, "<tr><td>", HtmlEscape(op), "</td><td>", n.fp32, "</td><td>", n.all,
        "</td><td style='text-align:left'><span class=bar style='width:", 300 * n.fp32 / widest,
        "px'></span><span class=bar16 style='width:", 300 * (n.all - n.fp32) / widest,
        "px'></span></td></tr>");
  }
  absl::StrAppend(&out, "</table>");
  return out;
}

// Each float node of the main graph as a bar at its place in graph order: orange fp32,
// blue fp16 (or bf16); the bar's height grows with the node's multiply-adds (log scale).
std::string ByPositionSection(const PrecisionCost& c) {
  constexpr double kW = 900, kH = 90, kBase = 70;
  const size_t n = c.nodes.size();
  std::string out = absl::StrCat(
      "<h2>fp32 nodes by position in the graph</h2><p class=muted>Graph order, inputs left, "
      "outputs right; one bar per float node, orange fp32, blue ",
      c.half_name, ", taller for more multiply-adds.</p>");
  if (n == 0) return out;
  double most = 1;
  for (const NodePrecision& p : c.nodes) most = std::max(most, p.multiply_adds);
  absl::StrAppend(&out, absl::StrFormat("<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
                                        "height='%.0f' font-size='11' font-family='sans-serif'>",
                                        kW, kH));
  const double step = kW / static_cast<double>(n);
  // fp16 first, fp32 over it: with thousands of nodes bars overlap, and fp32 is the news.
  for (size_t k = 0; k < 2 * n; ++k) {
    const size_t i = k % n;
    const NodePrecision& p = c.nodes[i];
    if (p.fp32 != (k >= n)) continue;
    const double h = 12 + 50 * std::log1p(p.multiply_adds) / std::log1p(most);
    absl::StrAppend(&out, absl::StrFormat("<rect x='%.2f' y='%.1f' width='%.2f' height='%.1f' "
                                          "fill='%s'><title>%s</title></rect>",
                                          i * step, kBase - h, std::max(step, 0.6), h,
                                          p.fp32 ? "#e8833a" : "#4a7fc1", HtmlEscape(p.node)));
  }
  absl::StrAppend(&out, absl::StrFormat("<text x='0' y='%.0f'>first node</text><text x='%.0f' "
                                        "y='%.0f' text-anchor='end'>last node (%d)</text></svg>",
                                        kBase + 16, kW, kBase + 16, static_cast<int>(n)));
  return out;
}

}  // namespace

std::string ReportToHtml(const ConversionReport& r) {
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=en><head><meta charset='utf-8'><title>ovfix convert: ",
      HtmlEscape(r.input), "</title><style>", kStyle, "</style></head><body>");
  absl::StrAppend(&out, "<h1>ovfix convert <code>", HtmlEscape(r.input), "</code> &rarr; <code>",
                  HtmlEscape(r.output), "</code></h1><p>Target <b>", HtmlEscape(r.target), "</b>",
                  r.cost ? absl::StrCat(", precision <b>", HalfName(r), "</b>") : "", ". ");
  if (!r.validated) {
    absl::StrAppend(&out, "Not validated.");
  } else if (r.outputs_match) {
    absl::StrAppend(&out, "<span class=ok>Outputs preserved</span>",
                    r.end_to_end ? absl::StrCat(": max error ", Number(r.end_to_end->max_error),
                                                " of the output range")
                                 : "",
                    ".");
  } else if (r.repair && r.repair->only_fp32) {
    absl::StrAppend(&out,
                    "<span class=bad>Only the fp32 model meets the criterion</span>; "
                    "nothing was written.");
  } else {
    absl::StrAppend(&out,
                    "<span class=bad>Outputs changed beyond the tolerance</span>; "
                    "nothing was written.");
  }
  absl::StrAppend(&out, " ", HtmlEscape(r.calibration),
                  r.validated ? absl::StrCat(" ", r.model_runs, " model run(s).") : "", "</p>");
  if (r.cost) absl::StrAppend(&out, CostSection(*r.cost));
  if (!r.opset_note.empty()) {
    absl::StrAppend(&out, "<p class=muted>", HtmlEscape(r.opset_note), ".</p>");
  }
  if (!r.layer_precisions.empty()) {
    absl::StrAppend(&out,
                    "<h2>TensorRT layer precisions</h2><p class=muted>For builds that are not "
                    "strongly typed: trtexec --precisionConstraints=obey with</p><p><code>",
                    HtmlEscape(r.layer_precisions), "</code></p><p><code>",
                    HtmlEscape(r.layer_output_types), "</code></p>");
  }
  absl::StrAppend(&out, OutputsSection(r));
  if (r.islands_ignored) absl::StrAppend(&out, Fp16OverflowSection(r));
  if (r.repair) absl::StrAppend(&out, RepairSection(r));
  if (r.cost) absl::StrAppend(&out, ByOpSection(*r.cost), ByPositionSection(*r.cost));
  if (!r.steps.empty()) absl::StrAppend(&out, StepsSection(r));
  absl::StrAppend(&out, "</body></html>\n");
  return out;
}

std::string ReportFileText(const ConversionReport& report, absl::string_view path) {
  const bool html =
      absl::EndsWithIgnoreCase(path, ".html") || absl::EndsWithIgnoreCase(path, ".htm");
  return html ? ReportToHtml(report) : ReportToJson(report);
}

}  // namespace ovfix::converter
