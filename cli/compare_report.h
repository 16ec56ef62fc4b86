// The files `ovfix compare` writes: a JSON report for pipelines (--json) and a self-contained
// HTML page with the table and a plot of the error per layer (--html); both with the verdict
// on each final output that the console prints.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "converter/output_verdict.h"
#include "exec/layer_compare.h"

namespace ovfix::cli {

// What was compared, for the report's header.
struct CompareContext {
  std::string ref_model, test_model;  // the same path when one model runs on two sides
  std::string inputs;                 // "random (seed 0x...)" or the files given
};

// The node's name, or its first output's name for unnamed nodes.
std::string NodeLabel(const exec::NodeComparison& node);

// `verdicts`: the final outputs judged by the accuracy criteria (converter/output_verdict.h),
// as the console prints them.
std::string CompareReportJson(const exec::LayerReport& report,
                              const std::vector<converter::OutputVerdict>& verdicts,
                              const CompareContext& context);
std::string CompareReportHtml(const exec::LayerReport& report,
                              const std::vector<converter::OutputVerdict>& verdicts,
                              const CompareContext& context);

// Both write atomically: a failed write leaves an existing file as it was.
absl::Status WriteCompareJson(const std::string& path, const exec::LayerReport& report,
                              const std::vector<converter::OutputVerdict>& verdicts,
                              const CompareContext& context);
absl::Status WriteCompareHtml(const std::string& path, const exec::LayerReport& report,
                              const std::vector<converter::OutputVerdict>& verdicts,
                              const CompareContext& context);

}  // namespace ovfix::cli
