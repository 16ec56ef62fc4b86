// The conversion report as one self-contained HTML page (`ovfix convert --report r.html`):
// what it cost to keep the outputs (fp32 share of nodes and multiply-adds, fp32 weights,
// Casts), each output's statistics, the repair's rounds as a plot of error against fp32
// share, and the fp32 nodes by op and by position in the graph. No scripts, no external
// files: the plots are inline SVG.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "converter/report.h"

namespace ovfix::converter {

std::string ReportToHtml(const ConversionReport& report);

// What a report file named `path` holds: FILE.html (or .htm) the page, anything else the JSON.
std::string ReportFileText(const ConversionReport& report, absl::string_view path);

}  // namespace ovfix::converter
