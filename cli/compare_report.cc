#include "cli/compare_report.h"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "converter/html_escape.h"
#include "converter/json_writer.h"
#include "ir/atomic_file.h"

namespace ovfix::cli {
namespace {

using exec::LayerReport;
using exec::NodeComparison;
using exec::NodeState;
using exec::ValueComparison;
using exec::WeightIssue;

std::string_view StateName(NodeState state) {
  static constexpr std::string_view kNames[] = {"within", "diverged", "not_compared"};
  return kNames[static_cast<size_t>(state)];
}

void WriteValue(JsonWriter& json, const ValueComparison& v) {
  json.Object(
      {Field("name", v.name), Field("ref_type", v.ref_type), Field("test_type", v.test_type),
       Field("within", v.within), OptionalField(!v.problem.empty(), "problem", v.problem),
       Field("max_abs_error", v.max_abs_error), Field("range", v.range),
       Field("rel_error", v.rel_error), Field("cosine", v.cosine),
       Field("ref_non_finite", v.ref_non_finite), Field("test_non_finite", v.test_non_finite)});
}

void WriteNode(JsonWriter& json, const NodeComparison& n, bool first) {
  json.BeginObject().Fields(
      {Field("index", n.index), Field("name", n.name), Field("op_type", n.op_type),
       Field("description", n.description), Field("state", StateName(n.state)),
       Field("first_divergence", first), Field("inputs_diverged", n.inputs_diverged),
       Field("diverged_inputs", n.diverged_inputs), Field("max_abs_error", n.max_abs_error),
       Field("rel_error", n.rel_error), Field("cosine", n.cosine),
       Field("ref_non_finite", n.ref_non_finite), Field("test_non_finite", n.test_non_finite)});
  json.Array("outputs", n.outputs, WriteValue);
  json.EndObject();
}

void WriteWeight(JsonWriter& json, const WeightIssue& w) {
  json.Object({Field("name", w.name), Field("source", w.source), Field("elements", w.elements),
               Field("overflow", w.overflow), Field("underflow", w.underflow),
               Field("example", w.example), Field("example_fp16", w.example_fp16),
               Field("problem", w.problem)});
}

std::string Number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.3g", v);
}

// Where the relative error of each compared node sits on a log scale. Zero errors sit on the
// floor, infinite ones (a value non-finite on one side, or a range of 0) on the ceiling.
std::string ErrorPlot(const LayerReport& report) {
  constexpr double kWidth = 960, kHeight = 320, kLeft = 64, kRight = 16, kTop = 24, kBottom = 40;
  std::vector<const NodeComparison*> points;
  for (const NodeComparison& n : report.nodes) {
    if (n.state != NodeState::kNotCompared) points.push_back(&n);
  }
  double low = std::floor(std::log10(std::max(report.tolerance.rtol, 1e-12))) - 1;
  double high = 1;
  for (const NodeComparison* n : points) {
    if (n->rel_error > 0 && std::isfinite(n->rel_error)) {
      low = std::min(low, std::floor(std::log10(n->rel_error)));
      high = std::max(high, std::ceil(std::log10(n->rel_error)));
    }
  }
  low = std::max(low, -12.0);
  high = std::min(std::max(high, low + 1), 6.0);
  // Infinite errors (inf or NaN on one side only) get a band of their own above the decades.
  const bool any_infinite = std::any_of(points.begin(), points.end(),
                                        [](const auto* n) { return !std::isfinite(n->rel_error); });
  const double decades_top = high;
  if (any_infinite) high += 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double count = std::max<double>(1, report.nodes.empty() ? 1 : report.nodes.size() - 1);
  auto x_of = [&](int index) { return kLeft + plot_w * index / count; };
  auto y_of = [&](double rel) {
    if (!std::isfinite(rel)) return kTop;
    const double e = std::clamp(rel > 0 ? std::log10(rel) : low, low, decades_top);
    return kTop + plot_h * (high - e) / (high - low);
  };
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
      "viewBox=\"0 0 %g %g\" role=\"img\" aria-label=\"error per layer\">\n",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"#fafafa\" "
                        "stroke=\"#999\"/>\n",
                        kLeft, kTop, plot_w, plot_h);
  const int step = high - low > 8 ? 2 : 1;
  for (int e = static_cast<int>(low); e <= static_cast<int>(decades_top); e += step) {
    const double y = y_of(std::pow(10.0, e));
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>"
                          "<text x=\"%g\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">1e%d"
                          "</text>\n",
                          kLeft, y, kLeft + plot_w, y, kLeft - 6, y + 4, e);
  }
  if (any_infinite) {
    absl::StrAppendFormat(&svg,
                          "<text x=\"%g\" y=\"%g\" font-size=\"11\" text-anchor=\"end\">inf"
                          "</text>\n",
                          kLeft - 6, kTop + 4);
  }
  const double tolerance_y = y_of(report.tolerance.rtol);
  absl::StrAppendFormat(&svg,
                        "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#d62728\" "
                        "stroke-dasharray=\"6 4\"/><text x=\"%g\" y=\"%.1f\" font-size=\"11\" "
                        "fill=\"#d62728\" text-anchor=\"end\">rtol %s</text>\n",
                        kLeft, tolerance_y, kLeft + plot_w, tolerance_y, kLeft + plot_w - 4,
                        tolerance_y - 4, Number(report.tolerance.rtol));
  if (!points.empty()) {
    svg += "<polyline fill=\"none\" stroke=\"#9fb6d1\" stroke-width=\"1\" points=\"";
    for (const NodeComparison* n : points) {
      absl::StrAppendFormat(&svg, "%.1f,%.1f ", x_of(n->index), y_of(n->rel_error));
    }
    svg += "\"/>\n";
  }
  const NodeComparison* first =
      report.first_divergence >= 0 ? &report.nodes[report.first_divergence] : nullptr;
  if (first != nullptr) {
    const double x = x_of(first->index);
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#d62728\"/>"
                          "<text x=\"%.1f\" y=\"%g\" font-size=\"12\" fill=\"#d62728\" "
                          "text-anchor=\"%s\">first divergence: %s</text>\n",
                          x, kTop, x, kTop + plot_h, x + (x > kWidth / 2 ? -4 : 4), kTop - 8,
                          x > kWidth / 2 ? "end" : "start",
                          converter::HtmlEscape(NodeLabel(*first)));
  }
  for (const NodeComparison* n : points) {
    const bool is_first = n == first;
    const char* color = is_first                           ? "#d62728"
                        : n->state == NodeState::kDiverged ? "#e69138"
                                                           : "#4a7ab5";
    absl::StrAppendFormat(&svg,
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"><title>#%d %s "
                          "(%s): rel error %s</title></circle>\n",
                          x_of(n->index), y_of(n->rel_error), is_first ? 6 : 3, color, n->index,
                          converter::HtmlEscape(NodeLabel(*n)), converter::HtmlEscape(n->op_type),
                          Number(n->rel_error));
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%g\" y=\"%g\" font-size=\"12\" text-anchor=\"middle\">node "
                        "(topological order)</text>\n<text x=\"14\" y=\"%g\" font-size=\"12\" "
                        "text-anchor=\"middle\" transform=\"rotate(-90 14 %g)\">max abs error / "
                        "reference range</text>\n</svg>\n",
                        kLeft + plot_w / 2, kHeight - 8, kTop + plot_h / 2, kTop + plot_h / 2);
  return svg;
}

std::string StatusText(const LayerReport& report, const NodeComparison& n) {
  if (report.first_divergence >= 0 && &report.nodes[report.first_divergence] == &n) {
    return "FIRST DIVERGENCE";
  }
  switch (n.state) {
    case NodeState::kWithin:
      return "within";
    case NodeState::kNotCompared:
      return "not compared";
    case NodeState::kDiverged:
      break;
  }
  if (!n.inputs_diverged) return "diverged";
  return absl::StrCat("diverged (input ", n.diverged_inputs.empty() ? "?" : n.diverged_inputs[0],
                      ")");
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  return WriteFileAtomically(path, [&](std::ostream& out) {
    out << text;
    return absl::OkStatus();
  });
}

}  // namespace

std::string NodeLabel(const NodeComparison& node) {
  return node.name.empty() ? node.description : node.name;
}

std::string CompareReportJson(const LayerReport& report,
                              const std::vector<converter::OutputVerdict>& verdicts,
                              const CompareContext& context) {
  JsonWriter json;
  json.BeginObject().Fields({Field("ref", report.ref_label), Field("test", report.test_label),
                             Field("ref_model", context.ref_model),
                             Field("test_model", context.test_model),
                             Field("inputs", context.inputs)});
  json.Key("tolerance")
      .Object({Field("rtol", report.tolerance.rtol), Field("atol", report.tolerance.atol)});
  json.Fields({Field("result", report.all_within() ? "within" : "diverged"),
               Field("compared_values", report.compared_values),
               Field("diverged_values", report.diverged_values),
               Field("outputs_meet_criteria",
                     std::all_of(verdicts.begin(), verdicts.end(),
                                 [](const converter::OutputVerdict& v) { return v.meets; }))});
  json.Array("final_outputs", verdicts, converter::WriteVerdict);
  if (report.first_divergence >= 0) {
    json.Key("first_divergence");
    WriteNode(json, report.nodes[report.first_divergence], true);
    // Where it starts inside the bodies of an If, Loop or Scan, outermost first.
    json.Key("first_divergence_inside").BeginArray();
    for (const exec::BodyDivergence& step : report.inside) {
      json.BeginObject().Fields({Field("holder", step.holder), Field("body", step.attribute),
                                 OptionalField(step.iteration >= 0, "iteration", step.iteration)});
      json.Key("node");
      WriteNode(json, step.node, true);
      json.EndObject();
    }
    json.EndArray();
  }
  json.Array("graph_inputs", report.graph_inputs, WriteValue);
  json.Key("nodes").BeginArray();
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    WriteNode(json, report.nodes[i], static_cast<int>(i) == report.first_divergence);
  }
  json.EndArray();
  json.Array("weights", report.weights, WriteWeight);
  json.Fields({Field("notes", report.notes)});
  json.EndObject();
  return json.str() + "\n";
}

std::string CompareReportHtml(const LayerReport& report,
                              const std::vector<converter::OutputVerdict>& verdicts,
                              const CompareContext& context) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>ovfix compare</title>\n<style>\n"
      "body{font-family:sans-serif;margin:24px;color:#222}\n"
      "table{border-collapse:collapse;font-size:13px}\n"
      "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\n"
      "td.l,th.l{text-align:left}\n"
      "tr.first{background:#f8c9c9;font-weight:bold}\n"
      "tr.diverged{background:#fde9d2}\n"
      "tr.nc{color:#999}\n"
      ".summary{font-size:16px;margin:12px 0}\n"
      "</style></head><body>\n<h1>ovfix compare</h1>\n";
  absl::StrAppend(&html, "<p>reference <b>", converter::HtmlEscape(report.ref_label),
                  "</b>: ", converter::HtmlEscape(context.ref_model), "<br>test <b>",
                  converter::HtmlEscape(report.test_label),
                  "</b>: ", converter::HtmlEscape(context.test_model),
                  "<br>inputs: ", converter::HtmlEscape(context.inputs),
                  "<br>tolerance: |test - ref| &le; atol + rtol &times; max|ref|, rtol ",
                  Number(report.tolerance.rtol), ", atol ", Number(report.tolerance.atol),
                  "</p>\n<p class=\"summary\">");
  if (report.first_divergence >= 0) {
    const NodeComparison& top = report.nodes[report.first_divergence];
    const NodeComparison& n = *exec::FirstDivergingNode(report);
    absl::StrAppend(&html, "First divergence: <b>",
                    converter::HtmlEscape(exec::FirstDivergenceText(report)), "</b> (#", top.index,
                    ")");
    if (!n.outputs.empty()) {
      for (const ValueComparison& v : n.outputs) {
        if (!v.within) {
          absl::StrAppend(&html, ": output '", converter::HtmlEscape(v.name),
                          "': ", converter::HtmlEscape(v.problem));
          break;
        }
      }
    }
  } else if (!report.all_within()) {
    html += "Values differ but no node starts the divergence (see the graph inputs below).";
  } else {
    absl::StrAppend(&html, "All ", report.compared_values, " compared values within tolerance.");
  }
  absl::StrAppend(&html, " ", report.diverged_values, " of ", report.compared_values,
                  " values out of tolerance.</p>\n");
  const bool outputs_meet = std::all_of(verdicts.begin(), verdicts.end(),
                                        [](const converter::OutputVerdict& v) { return v.meets; });
  absl::StrAppend(&html, "<h2>Final outputs</h2>\n<p class=\"summary\">",
                  outputs_meet ? "The final outputs meet the accuracy criteria."
                               : "The final outputs FAIL the accuracy criteria.",
                  "</p>\n<p>Errors relative to each output's range in the reference; score = "
                  "the worst of the output's criteria over its bound (at most 1 meets them).</p>\n",
                  converter::VerdictTableHtml(verdicts), "<h2>Error per layer</h2>\n",
                  ErrorPlot(report));
  html +=
      "<h2>Nodes</h2>\n<table><tr><th>#</th><th class=\"l\">node</th><th class=\"l\">op</th>"
      "<th>max abs error</th><th>rel error</th><th>cosine</th><th>non-finite ref/test</th>"
      "<th class=\"l\">status</th></tr>\n";
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    const NodeComparison& n = report.nodes[i];
    const bool first = static_cast<int>(i) == report.first_divergence;
    const char* row_class = first                                ? "first"
                            : n.state == NodeState::kDiverged    ? "diverged"
                            : n.state == NodeState::kNotCompared ? "nc"
                                                                 : "";
    const bool compared = n.state != NodeState::kNotCompared;
    absl::StrAppend(
        &html, "<tr class=\"", row_class, "\"", first ? " id=\"first\"" : "", "><td>", n.index,
        "</td><td class=\"l\">", converter::HtmlEscape(NodeLabel(n)), "</td><td class=\"l\">",
        converter::HtmlEscape(n.op_type), "</td><td>", compared ? Number(n.max_abs_error) : "",
        "</td><td>", compared ? Number(n.rel_error) : "", "</td><td>",
        compared ? absl::StrFormat("%.6f", n.cosine) : "", "</td><td>",
        compared ? absl::StrCat(n.ref_non_finite, "/", n.test_non_finite) : "",
        "</td><td class=\"l\">", converter::HtmlEscape(StatusText(report, n)), "</td></tr>\n");
  }
  html += "</table>\n";
  bool inputs_differ = false;
  for (const ValueComparison& v : report.graph_inputs) inputs_differ |= !v.within;
  if (inputs_differ) {
    html += "<h2>Graph inputs that differ</h2>\n<ul>\n";
    for (const ValueComparison& v : report.graph_inputs) {
      if (!v.within)
        absl::StrAppend(&html, "<li>", converter::HtmlEscape(v.name), ": ",
                        converter::HtmlEscape(v.problem), "</li>\n");
    }
    html += "</ul>\n";
  }
  html += "<h2>Weights and constants the test precision cannot hold</h2>\n";
  if (report.weights.empty()) {
    html += "<p>none</p>\n";
  } else {
    html +=
        "<table><tr><th class=\"l\">name</th><th class=\"l\">source</th><th>elements</th>"
        "<th class=\"l\">problem</th></tr>\n";
    for (const WeightIssue& w : report.weights) {
      absl::StrAppend(&html, "<tr><td class=\"l\">", converter::HtmlEscape(w.name),
                      "</td><td class=\"l\">", converter::HtmlEscape(w.source), "</td><td>",
                      w.elements, "</td><td class=\"l\">", converter::HtmlEscape(w.problem),
                      "</td></tr>\n");
    }
    html += "</table>\n";
  }
  if (!report.notes.empty()) {
    html += "<h2>Notes</h2>\n<ul>\n";
    for (const std::string& note : report.notes) {
      absl::StrAppend(&html, "<li>", converter::HtmlEscape(note), "</li>\n");
    }
    html += "</ul>\n";
  }
  html += "</body></html>\n";
  return html;
}

absl::Status WriteCompareJson(const std::string& path, const LayerReport& report,
                              const std::vector<converter::OutputVerdict>& verdicts,
                              const CompareContext& context) {
  return WriteText(path, CompareReportJson(report, verdicts, context));
}

absl::Status WriteCompareHtml(const std::string& path, const LayerReport& report,
                              const std::vector<converter::OutputVerdict>& verdicts,
                              const CompareContext& context) {
  return WriteText(path, CompareReportHtml(report, verdicts, context));
}

}  // namespace ovfix::cli
