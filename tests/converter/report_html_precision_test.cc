// The HTML report (--report r.html) names the 16-bit float type of the conversion (bf16 where
// the model computes in bfloat16) and, for targets whose backend ignores fp32 islands, lists
// the values still beyond fp16's range with why no rewrite fits.
#include <string>

#include "converter/report.h"
#include "converter/report_html.h"
#include "gtest/gtest.h"

namespace ovfix::converter {
namespace {

ConversionReport Converted(const std::string& half_name) {
  ConversionReport r;
  r.input = "in.onnx";
  r.output = "out.onnx";
  r.target = "tensorrt";
  r.validated = true;
  PrecisionCost cost;
  cost.float_nodes = 10;
  cost.fp32_nodes = 2;
  cost.half_name = half_name;
  r.cost = cost;
  return r;
}

TEST(ReportHtmlPrecision, SaysBf16WhereTheModelComputesInBfloat16) {
  const std::string html = ReportToHtml(Converted("bf16"));
  EXPECT_NE(html.find("precision <b>bf16</b>"), std::string::npos);
  EXPECT_NE(html.find("blue bf16"), std::string::npos);
  EXPECT_EQ(html.find("blue fp16"), std::string::npos);
  EXPECT_NE(ReportToHtml(Converted("fp16")).find("precision <b>fp16</b>"), std::string::npos);
}

TEST(ReportHtmlPrecision, ListsTheFp16OverflowsOfATargetThatIgnoresIslands) {
  ConversionReport r = Converted("fp16");
  r.target = "openvino-gpu";
  r.islands_ignored = true;
  EXPECT_NE(ReportToHtml(r).find("None: every value calibration saw"), std::string::npos);
  r.fp16_overflows.push_back({"energy", "ReduceSum", 4.8e7, "a graph output <no scale>"});
  const std::string html = ReportToHtml(r);
  EXPECT_NE(html.find("Values beyond fp16's range"), std::string::npos);
  EXPECT_NE(html.find("<code>energy</code>"), std::string::npos);
  EXPECT_NE(html.find("ReduceSum"), std::string::npos);
  EXPECT_NE(html.find("a graph output &lt;no scale&gt;"), std::string::npos);  // escaped
  // A target that honours islands has no such section.
  r.islands_ignored = false;
  EXPECT_EQ(ReportToHtml(r).find("Values beyond fp16's range"), std::string::npos);
}

}  // namespace
}  // namespace ovfix::converter
