// The files `ovfix compare` writes: a JSON report for pipelines (--json) and a self-contained
// HTML page with the table and a plot of the error per layer (--html).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "exec/layer_compare.h"

namespace ovfix::cli {

// What was compared, for the report's header.
struct CompareContext {
  std::string ref_model, test_model;  // the same path when one model runs on two sides
  std::string inputs;                 // "random (seed 0x...)" or the files given
};

// The node's name, or its first output's name for unnamed nodes.
std::string NodeLabel(const exec::NodeComparison& node);

std::string CompareReportJson(const exec::LayerReport& report, const CompareContext& context);
std::string CompareReportHtml(const exec::LayerReport& report, const CompareContext& context);

// Both write atomically: a failed write leaves an existing file as it was.
absl::Status WriteCompareJson(const std::string& path, const exec::LayerReport& report,
                              const CompareContext& context);
absl::Status WriteCompareHtml(const std::string& path, const exec::LayerReport& report,
                              const CompareContext& context);

}  // namespace ovfix::cli
