// The verdict on final outputs in the files `run --json` and `compare --json/--html` write
// (issue 38 point 5, issue 42 point 4): the statistics, criteria, each criterion's measure and
// meets/fails that the console prints, NaN counted and never an error of 0. The references are
// worked out here from the raw tensors: the reference's products in float, the float16
// candidate's output as `run --output-dir` writes it.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

// The text of "key":... (a number, or the quoted string without its quotes) at the first
// `key` after `after` in a JSON text: a minimal reader for tests; "" when absent.
std::string JsonValue(const std::string& json, const std::string& after, const std::string& key) {
  size_t at = json.find(after);
  if (at == std::string::npos) return "";
  at = json.find("\"" + key + "\":", at);
  if (at == std::string::npos) return "";
  at += key.size() + 3;
  if (json[at] == '"') return json.substr(at + 1, json.find('"', at + 1) - at - 1);
  return json.substr(at, json.find_first_of(",}]", at) - at);
}

double JsonNumber(const std::string& json, const std::string& after, const std::string& key) {
  const std::string text = JsonValue(json, after, key);
  return text.empty() ? std::nan("") : std::strtod(text.c_str(), nullptr);
}

// The line `output 'NAME': ...` of a console output.
std::string OutputLine(const std::string& out, const std::string& name) {
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (absl::StartsWith(line, "output '" + name + "': ")) return std::string(line);
  }
  return "";
}

void Save(const std::string& text, const std::string& path) {
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(SaveModel(**model, path).ok());
}

constexpr char kProduct[] = R"(
  g (float[2,4] x) => (float[2,4] y) <float[4] c = {1.37, -0.71, 2.93, 0.113}> {
    y = Mul(x, c)
  })";
// The same product in float16: the input and the weights rounded, the product rounded.
constexpr char kProductFloat16[] = R"(
  g (float[2,4] x) => (float16[2,4] y) <float[4] c = {1.37, -0.71, 2.93, 0.113}> {
    xh = Cast <to = 10> (x)
    ch = Cast <to = 10> (c)
    y = Mul(xh, ch)
  })";

TEST(VerdictReport, CompareFilesCarryEachOutputsVerdict) {
  const fs::path dir = testing::TempDir("verdict_compare");
  const std::string a = (dir / "a.onnx").string(), b = (dir / "b.onnx").string();
  ASSERT_NO_FATAL_FAILURE(Save(kProduct, a));
  ASSERT_NO_FATAL_FAILURE(Save(kProductFloat16, b));
  const std::vector<float> x = {0.1234f, -0.5678f, 0.9012f,  0.3456f,
                                -0.789f, 0.2468f,  -0.1357f, 0.8642f};
  const std::vector<float> c = {1.37f, -0.71f, 2.93f, 0.113f};
  const std::string input = (dir / "x.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, Tensor::FromVector(DataType::kFloat, {2, 4}, x), "x").ok());
  auto run = RunOvfix(
      absl::StrCat("run ", b, " --input x=", input, " --output-dir ", (dir / "out").string()));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  absl::StatusOr<Tensor> candidate = ReadTensorFile((dir / "out" / "output_0.pb").string());
  ASSERT_TRUE(candidate.ok()) << candidate.status();
  ASSERT_EQ(candidate->type(), DataType::kFloat16);
  double largest = 0, sum = 0, lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < 8; ++i) {
    const double reference = x[i] * c[i % 4];  // float's product, as the executor's
    largest = std::max(largest, std::abs(candidate->GetAsDouble(i) - reference));
    sum += std::abs(candidate->GetAsDouble(i) - reference);
    lo = std::min(lo, reference);
    hi = std::max(hi, reference);
  }
  const double relative = largest / (hi - lo);
  ASSERT_GT(largest, 0);
  ASSERT_LT(relative, 0.01);  // meets the fp16 default for 8 elements, max:0.01

  const std::string json = (dir / "r.json").string(), html = (dir / "r.html").string();
  auto r = RunOvfix(absl::StrCat("compare ", a, " ", b, " --input x=", input, " --json ", json,
                                 " --html ", html));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string report = testing::Slurp(json);
  const std::string y = "\"final_outputs\":[{\"name\":\"y\"";
  ASSERT_NE(report.find(y), std::string::npos) << report;
  EXPECT_EQ(JsonValue(report, "", "outputs_meet_criteria"), "true") << report;
  EXPECT_EQ(JsonValue(report, y, "criteria"), "max:0.01") << report;
  EXPECT_EQ(JsonValue(report, y, "meets"), "true") << report;
  EXPECT_NEAR(JsonNumber(report, y, "max_abs_error"), largest, 1e-6 * largest) << report;
  EXPECT_NEAR(JsonNumber(report, y, "max"), relative, 1e-5 * relative) << report;
  EXPECT_NEAR(JsonNumber(report, y, "mean"), sum / 8 / (hi - lo), 1e-5 * relative) << report;
  EXPECT_EQ(JsonValue(report, y, "non_finite"), "0") << report;
  const std::string check = "\"checks\":[{\"criterion\":\"max:0.01\"";
  ASSERT_NE(report.find(check), std::string::npos) << report;
  EXPECT_NEAR(JsonNumber(report, check, "measured"), relative, 1e-5 * relative) << report;
  EXPECT_EQ(JsonValue(report, check, "bound"), "0.01") << report;
  // The statistics are the console's line, word for word.
  const std::string line = OutputLine(r.out, "y");
  ASSERT_FALSE(line.empty()) << r.out;
  EXPECT_EQ(line, absl::StrCat("output 'y': ", JsonValue(report, y, "statistics"), "; score ",
                               absl::StrFormat("%.2g", JsonNumber(report, y, "score")),
                               " (max:0.01) - meets the criteria"))
      << line << "\n"
      << report;
  // The page: a table of the final outputs with the same line and verdict.
  const std::string page = testing::Slurp(html);
  EXPECT_NE(page.find("<h2>Final outputs</h2>"), std::string::npos) << page;
  const std::string statistics =
      absl::StrReplaceAll(JsonValue(report, y, "statistics"), {{">", "&gt;"}});
  EXPECT_NE(page.find(statistics), std::string::npos) << page;
  EXPECT_NE(page.find("<td class=\"l\">max:0.01</td>"), std::string::npos) << page;
  EXPECT_NE(page.find(">meets<"), std::string::npos) << page;
  fs::remove_all(dir);
}

constexpr char kRoot[] = "g (float[2,3] x) => (float[2,3] y) { y = Sqrt(x) }";
constexpr char kRootOfMagnitude[] =
    "g (float[2,3] x) => (float[2,3] y) { a = Abs(x)\n y = Sqrt(a) }";

// Every output NaN where the reference is finite: the files count them and give an infinite
// error (null with "inf" beside it), never 0.
TEST(VerdictReport, NonFiniteOutputsAreCountedInTheFiles) {
  const fs::path dir = testing::TempDir("verdict_nan");
  const std::string nan_model = (dir / "nan.onnx").string(), good = (dir / "good.onnx").string();
  ASSERT_NO_FATAL_FAILURE(Save(kRoot, nan_model));
  ASSERT_NO_FATAL_FAILURE(Save(kRootOfMagnitude, good));
  const std::vector<float> x = {-1, -4, -9, -0.25f, -2, -3};
  std::vector<float> roots;
  for (float v : x) roots.push_back(std::sqrt(-v));
  fs::create_directories(dir / "data");
  ASSERT_TRUE(WriteTensorFile((dir / "data" / "input_0.pb").string(),
                              Tensor::FromVector(DataType::kFloat, {2, 3}, x), "x")
                  .ok());
  ASSERT_TRUE(WriteTensorFile((dir / "data" / "output_0.pb").string(),
                              Tensor::FromVector(DataType::kFloat, {2, 3}, roots), "y")
                  .ok());

  auto run = RunOvfix(
      absl::StrCat("run ", nan_model, " --test-data ", (dir / "data").string(), " --json"));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_EQ(run.out.find("\"max_abs_error\":0"), std::string::npos) << run.out;
  const std::string verdict = "\"verdict\":{\"name\":\"y\"";
  ASSERT_NE(run.out.find(verdict), std::string::npos) << run.out;
  EXPECT_EQ(JsonValue(run.out, verdict, "non_finite"), "6") << run.out;
  EXPECT_EQ(JsonValue(run.out, verdict, "max_abs_error"), "null") << run.out;
  EXPECT_EQ(JsonValue(run.out, verdict, "max_abs_error_non_finite"), "inf") << run.out;
  EXPECT_EQ(JsonValue(run.out, verdict, "meets"), "false") << run.out;

  const std::string json = (dir / "r.json").string();
  auto compare = RunOvfix(absl::StrCat("compare ", good, " ", nan_model, " --input x=",
                                       (dir / "data" / "input_0.pb").string(), " --json ", json));
  EXPECT_EQ(compare.exit_code, 1) << compare.out << compare.err;
  const std::string report = testing::Slurp(json);
  const std::string y = "\"final_outputs\":[{\"name\":\"y\"";
  ASSERT_NE(report.find(y), std::string::npos) << report;
  EXPECT_EQ(JsonValue(report, y, "non_finite"), "6") << report;
  EXPECT_EQ(JsonValue(report, y, "max_abs_error_non_finite"), "inf") << report;
  EXPECT_EQ(JsonValue(report, y, "meets"), "false") << report;
  EXPECT_EQ(JsonValue(report, "", "outputs_meet_criteria"), "false") << report;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
