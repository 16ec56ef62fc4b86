// One accuracy story: `convert`, `run --test-data` and `compare` judge final outputs by the
// same criteria (converter/output_verdict.h), with the same defaults for the precision involved,
// and print the same statistics. A file convert calls preserved passes `run --test-data`
// against the original's test data (output_K.pb, computed by another runtime) with defaults.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

std::string ModelDir(const std::string& name) { return testing::SharedDir() + "/models/" + name; }
bool HaveModel(const std::string& name) { return fs::exists(ModelDir(name) + "/model.onnx"); }

// The statistics each output's line carries, by output name: convert prints
// "  NAME: STATISTICS; score ..." under its end-to-end line, run and compare
// "output 'NAME': STATISTICS; score ...".
std::map<std::string, std::string> Statistics(const std::string& out, bool convert) {
  std::map<std::string, std::string> stats;
  bool in_end_to_end = false;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    std::string name;
    absl::string_view rest;
    if (convert) {
      if (absl::StartsWith(line, "end-to-end")) {
        in_end_to_end = true;
        continue;
      }
      if (!in_end_to_end || !absl::StartsWith(line, "  ")) {
        in_end_to_end = false;
        continue;
      }
      line.remove_prefix(2);
      const size_t colon = line.find(": ");
      if (colon == absl::string_view::npos) continue;
      name = std::string(line.substr(0, colon));
      rest = line.substr(colon + 2);
    } else {
      if (!absl::StartsWith(line, "output '")) continue;
      const size_t close = line.find("': ");
      if (close == absl::string_view::npos) continue;
      name = std::string(line.substr(8, close - 8));
      rest = line.substr(close + 3);
    }
    const size_t score = rest.find("; score ");
    if (score != absl::string_view::npos) stats[name] = std::string(rest.substr(0, score));
  }
  return stats;
}

class ConvertedPassesRun : public ::testing::TestWithParam<const char*> {};

TEST_P(ConvertedPassesRun, WithDefaultsAndTheSameStatistics) {
  const std::string name = GetParam();
  if (!HaveModel(name)) GTEST_SKIP() << "no ../shared/models";
  const auto dir = testing::TempDir("accuracy_story_" + name);
  const std::string converted = (dir / "converted.onnx").string();
  auto c = RunOvfix("convert " + ModelDir(name) + "/model.onnx " + converted +
                    " --target gpu-fp16 --calibration-data " + ModelDir(name));
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  ASSERT_NE(c.out.find("outputs preserved"), std::string::npos) << c.out;
  const std::map<std::string, std::string> convert_stats = Statistics(c.out, true);
  ASSERT_FALSE(convert_stats.empty()) << c.out;

  auto r = RunOvfix("run " + converted + " --test-data " + ModelDir(name) + "/test_data_set_0");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAILS"), std::string::npos) << r.out;
  EXPECT_EQ(Statistics(r.out, false), convert_stats) << c.out << "\n" << r.out;

  // compare ORIGINAL CONVERTED gives the same verdict on the same statistics.
  auto pair = RunOvfix("compare " + ModelDir(name) + "/model.onnx " + converted + " --test-data " +
                       ModelDir(name) + "/test_data_set_0");
  EXPECT_EQ(pair.exit_code, 0) << pair.out << pair.err;
  EXPECT_EQ(Statistics(pair.out, false), convert_stats) << c.out << "\n" << pair.out;
  EXPECT_TRUE(absl::EndsWith(pair.out, "final outputs meet the accuracy criteria\n")) << pair.out;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Models, ConvertedPassesRun,
                         ::testing::Values("resnet18", "gfpgan_modconv", "silero_vad"));

// resnet18 in fp32 against its test data with one logit moved by 5% of the logits' range:
// the fp32 default (max:1e-4 of the range) fails, a criterion on the 99th percentile holds
// (one element of 1000), and the element-wise --rtol/--atol keep their meaning.
TEST(AccuracyStory, RunFailsACriterionAndExitsOne) {
  if (!HaveModel("resnet18")) GTEST_SKIP() << "no ../shared/models";
  const auto dir = testing::TempDir("accuracy_story_fail");
  const std::string set = ModelDir("resnet18") + "/test_data_set_0";
  absl::StatusOr<Tensor> expected = ReadTensorFile(set + "/output_0.pb");
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::vector<float> values;
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < expected->numel(); ++i) {
    values.push_back(static_cast<float>(expected->GetAsDouble(i)));
    lo = i == 0 ? values[i] : std::min(lo, values[i]);
    hi = i == 0 ? values[i] : std::max(hi, values[i]);
  }
  ASSERT_EQ(values.size(), 1000u);
  values[500] += 0.05f * (hi - lo);
  fs::create_directories(dir / "data");
  fs::copy_file(set + "/input_0.pb", dir / "data" / "input_0.pb");
  ASSERT_TRUE(WriteTensorFile((dir / "data" / "output_0.pb").string(),
                              Tensor::FromVector<float>(DataType::kFloat, expected->dims(), values),
                              "logits")
                  .ok());
  const std::string run =
      "run " + ModelDir("resnet18") + "/model.onnx --test-data " + (dir / "data").string();

  auto fails = RunOvfix(run);
  EXPECT_EQ(fails.exit_code, 1) << fails.out << fails.err;
  EXPECT_NE(fails.out.find("output 'logits': max 0.05,"), std::string::npos) << fails.out;
  EXPECT_NE(fails.out.find("(max:0.0001) FAILS"), std::string::npos) << fails.out;

  auto tail = RunOvfix(run + " --accuracy p99:0.001,mean:0.001");
  EXPECT_EQ(tail.exit_code, 0) << tail.out << tail.err;
  EXPECT_NE(tail.out.find("(p99:0.001,mean:0.001) - meets the criteria"), std::string::npos)
      << tail.out;

  auto elementwise = RunOvfix(run + " --rtol 1e-3");
  EXPECT_EQ(elementwise.exit_code, 1) << elementwise.out << elementwise.err;
  EXPECT_NE(elementwise.out.find("MISMATCH: 1 of 1000 elements differ"), std::string::npos)
      << elementwise.out;
  fs::remove_all(dir);
}

TEST(AccuracyStory, RunAccuracyErrorsAreOneLineExitTwo) {
  if (!HaveModel("resnet18")) GTEST_SKIP() << "no ../shared/models";
  const std::string run = "run " + ModelDir("resnet18") + "/model.onnx --test-data " +
                          ModelDir("resnet18") + "/test_data_set_0";
  for (const char* bad :
       {"p99:x", "top0:0.1", "mask@0.5:2", "=max:1", "nope=max:0.1", "logits=boxes@0.5:0.1"}) {
    auto r = RunOvfix(run + " --accuracy '" + bad + "'");
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.out << r.err;
    EXPECT_TRUE(absl::StartsWith(r.err, std::string("ovfix run: --accuracy ") + bad)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // compare takes --accuracy as run does, and checks it before it writes any report.
  const auto dir = testing::TempDir("accuracy_story_compare");
  const std::string json = (dir / "r.json").string();
  auto compare =
      RunOvfix("compare " + ModelDir("resnet18") + "/model.onnx " + ModelDir("resnet18") +
               "/model.onnx --accuracy nope=max:1 --json " + json);
  EXPECT_EQ(compare.exit_code, 2) << compare.out << compare.err;
  EXPECT_TRUE(absl::StartsWith(compare.err,
                               "ovfix compare: --accuracy nope=max:1: the model "
                               "has no output 'nope'"))
      << compare.err;
  EXPECT_FALSE(fs::exists(json));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
