// What `convert` prints when it is done, in the spirit of onnxsim's table: node and op
// counts that changed (before -> after), Casts added, weights and file size, the share of
// float nodes left in fp32, rewrites, repair and time, then the accuracy line. Lists are cut
// to their first few entries; the JSON report (--report) has them whole.
#pragma once

#include <string>

#include "cli/model_stats.h"
#include "converter/report.h"

namespace ovfix::cli {

struct ConvertSummaryFacts {
  converter::ModelStats before, after;
  converter::FloatNodeCounts precision;  // of the converted model
  bool fp16 = false;                     // the target converts to fp16
  bool verbose = false;  // the time line says where the time went (converter::TimeLine)
};

std::string ConvertSummary(const converter::ConversionReport& report,
                           const ConvertSummaryFacts& facts);

// Rewrites rolled back for a reason the user can act on (a replacement op the CPU executor
// has no kernel for, so the rewrite could not be validated): one line per rule, the first few.
std::string ActionableRollbacks(const converter::ConversionReport& report);

// "a, b, c … and N more (--report)": the first `shown` of `items`.
std::string FirstFew(const std::vector<std::string>& items, size_t shown);

}  // namespace ovfix::cli
