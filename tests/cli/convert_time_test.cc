// Where a conversion's time went (issue 41 point 4): `convert --verbose` prints one time line
// whose parts add up to the total and whose run count is the report's model runs, and the JSON
// report has the same breakdown under "time". Timings themselves are never asserted: only how
// the figures relate.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

struct TimeLine {
  double total = -1;
  int runs = -1;
  std::vector<std::pair<std::string, double>> parts;
};

// "time: 0.08 s = model runs 0.02 s (4 runs) + load 0.03 s + ... + other 0.01 s".
TimeLine ParseTimeLine(const std::string& out) {
  TimeLine t;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (!absl::StartsWith(line, "time: ")) continue;
    const std::string text(line);
    std::smatch m;
    if (!std::regex_match(text, m, std::regex(R"(time: ([0-9.]+) s = (.*))"))) return t;
    t.total = std::stod(m[1]);
    const std::string parts = m[2];
    for (absl::string_view part : absl::StrSplit(parts, " + ")) {
      const std::string p(part);
      std::smatch pm;
      if (!std::regex_match(p, pm, std::regex(R"(([a-z ]+) ([0-9.]+) s( \((\d+) runs?\))?)"))) {
        ADD_FAILURE() << "part '" << p << "' of: " << text;
        continue;
      }
      t.parts.emplace_back(pm[1], std::stod(pm[2]));
      if (pm[4].matched) t.runs = std::stoi(pm[4]);
    }
  }
  return t;
}

// "(N model runs)" on the end-to-end line of the summary.
int EndToEndRuns(const std::string& out) {
  std::smatch m;
  static const std::regex runs(R"(end-to-end:[^\n]*\((\d+) model runs?\))");
  return std::regex_search(out, m, runs) ? std::stoi(m[1]) : -1;
}

// The number after "key": following `after` in a JSON text (NaN when absent).
double JsonNumber(const std::string& json, const std::string& after, const std::string& key) {
  size_t at = json.find(after);
  if (at == std::string::npos) return std::nan("");
  at = json.find("\"" + key + "\":", at);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// The values of the "parts_s" object of the report's "time".
std::vector<double> JsonParts(const std::string& json) {
  std::vector<double> values;
  const size_t begin = json.find("\"parts_s\":", json.find("\"time\":"));
  if (begin == std::string::npos) return values;
  const size_t end = json.find('}', begin);
  const std::string object = json.substr(begin, end - begin);
  static const std::regex number(R"(":([-0-9.e+]+))");
  for (std::sregex_iterator it(object.begin(), object.end(), number), last; it != last; ++it) {
    values.push_back(std::stod((*it)[1]));
  }
  return values;
}

void ExpectSumsToTotal(const TimeLine& t) {
  ASSERT_GE(t.total, 0);
  double sum = 0;
  for (const auto& [name, seconds] : t.parts) sum += seconds;
  // Each printed figure is rounded to 10 ms: the sum may be off by half of that per figure.
  EXPECT_NEAR(sum, t.total, 0.005 * (t.parts.size() + 1)) << "parts of the time line";
  ASSERT_FALSE(t.parts.empty());
  EXPECT_EQ(t.parts.front().first, "model runs");
  EXPECT_EQ(t.parts.back().first, "other");
}

class ConvertTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir("convert_time");
    model_dir_ = testing::SharedDir() + "/models/gfpgan_modconv";
    if (!fs::exists(model_dir_ + "/model.onnx")) GTEST_SKIP() << "no " << model_dir_;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Convert(const std::string& flags, const std::string& report) {
    testing::CommandResult r =
        RunOvfix("convert " + model_dir_ + "/model.onnx " + (dir_ / "out.onnx").string() + " " +
                     flags + " --report " + report,
                 300);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return r.out;
  }

  fs::path dir_;
  std::string model_dir_;
};

TEST_F(ConvertTimeTest, VerboseLineCountsTheReportsRunsAndAddsUp) {
  const std::string report = (dir_ / "report.json").string();
  // Calibrated on the model's data: the reference run, the file's run and the certificate's.
  const std::string out =
      Convert("--target gpu-fp16 --verbose --calibration-data " + model_dir_, report);
  const TimeLine t = ParseTimeLine(out);
  ASSERT_GE(t.total, 0) << "no time line in:\n" << out;
  ExpectSumsToTotal(t);
  const int runs = EndToEndRuns(out);
  EXPECT_GT(runs, 1) << out;
  EXPECT_EQ(t.runs, runs) << out;

  const std::string json = testing::Slurp(report);
  ASSERT_NE(json.find("\"time\":"), std::string::npos) << json;
  EXPECT_EQ(JsonNumber(json, "\"validation\":", "model_runs"), runs);
  EXPECT_EQ(JsonNumber(json, "\"time\":", "model_runs"), runs);
  const double total = JsonNumber(json, "\"time\":", "total_s");
  const std::vector<double> parts = JsonParts(json);
  ASSERT_EQ(parts.size(), 14u) << json.substr(json.find("\"time\":"));
  double sum = 0;
  for (double p : parts) {
    EXPECT_GE(p, 0);
    sum += p;
  }
  // The JSON's figures have 9 significant digits.
  EXPECT_NEAR(sum, total, 1e-6 * (1 + total));
  // The report is rewritten once the conversion is done: its total is the console's.
  EXPECT_NEAR(total, t.total, 0.0051);
}

TEST_F(ConvertTimeTest, WithoutValidationNoRunsAndWithoutVerboseOnlyTheTotal) {
  const std::string report = (dir_ / "report.json").string();
  const TimeLine t = ParseTimeLine(Convert("--target gpu-fp16 --verbose --no-validate", report));
  ExpectSumsToTotal(t);
  EXPECT_EQ(t.runs, 0);
  EXPECT_EQ(JsonNumber(testing::Slurp(report), "\"time\":", "model_runs"), 0);

  const std::string quiet = Convert("--target gpu-fp16 --no-validate", report);
  EXPECT_TRUE(std::regex_search(quiet, std::regex(R"(\ntime: [0-9.]+ s\n)"))) << quiet;
}

// The runs the end-to-end line does not make itself (the fp16 overflow traces of a target that
// ignores fp32 islands, the --opset check) are model runs of both counts alike.
TEST(ConvertTimeRuns, EveryFullRunCountedOnBothLines) {
  const std::string dir = testing::SharedDir() + "/models/hand_softmax";
  if (!fs::exists(dir + "/model.onnx")) GTEST_SKIP() << "no " << dir;
  const fs::path out = testing::TempDir("convert_time_runs") / "out.onnx";
  for (const std::string flags : {"--target openvino-gpu", "--target gpu-fp16 --opset 18"}) {
    SCOPED_TRACE(flags);
    const testing::CommandResult r =
        RunOvfix("convert " + dir + "/model.onnx " + out.string() + " " + flags +
                     " --verbose --calibration-data " + dir,
                 300);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const TimeLine t = ParseTimeLine(r.out);
    ExpectSumsToTotal(t);
    EXPECT_GT(t.runs, 0) << r.out;
    EXPECT_EQ(t.runs, EndToEndRuns(r.out)) << r.out;
  }
  fs::remove_all(out.parent_path());
}

}  // namespace
}  // namespace ovfix
