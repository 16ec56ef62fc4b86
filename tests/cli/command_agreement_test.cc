// What one command accepts or says, the others and its own help agree with: a tensor file fed
// by --input NAME=FILE is NAME's in convert as in run, whatever name the file records; a score
// above 1 never prints as "1" beside FAILS and "at most 1 meets them"; a --test-data folder
// without input_K.pb files is named as such; convert --help says what exit 1 writes.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
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
using ::testing::HasSubstr;
using testing::RunOvfix;

int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

Tensor Filled(std::vector<int64_t> dims, const std::vector<float>& values) {
  Tensor t(DataType::kFloat, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

class CommandAgreement : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::TempDir("command_agreement"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // `text` saved as NAME.
  std::string WriteModel(const std::string& name, const std::string& text) const {
    absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
    EXPECT_TRUE(model.ok()) << model.status();
    EXPECT_TRUE(SaveModel(**model, Path(name)).ok());
    return Path(name);
  }

  fs::path dir_;
};

TEST_F(CommandAgreement, InputFileNamedOnTheCommandLineIsThatInputWhateverItRecords) {
  const std::string model = WriteModel("m.onnx", "g (float[4] x) => (float[4] y) { y = Relu(x) }");
  // The file records the name "input"; the command line feeds it to x.
  const std::string data = Path("renamed.pb");
  ASSERT_TRUE(WriteTensorFile(data, Filled({4}, {1, -2, 3, -4}), "input").ok());
  const testing::CommandResult run = RunOvfix(absl::StrCat("run ", model, " --input x=", data));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const testing::CommandResult convert = RunOvfix(
      absl::StrCat("convert ", model, " ", Path("out.onnx"), " --input x=", data, " --quiet"));
  EXPECT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_TRUE(fs::exists(Path("out.onnx")));
}

// The number printed after "score " on the first line of `text` that holds `marker`.
double PrintedScore(const std::string& text, const std::string& marker) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!absl::StrContains(line, marker)) continue;
    const size_t at = line.find("score ");
    if (at == std::string::npos) continue;
    return std::strtod(line.c_str() + at + 6, nullptr);
  }
  ADD_FAILURE() << "no line with '" << marker << "' and a score in:\n" << text;
  return 0;
}

// 201 of 1000 elements cross the threshold where `mask@0.5:0.2` allows 200: a score of 1.005,
// which two significant digits round to "1".
TEST_F(CommandAgreement, AFailingScoreNeverPrintsAsOne) {
  const std::string model =
      WriteModel("m.onnx", "g (float[1000] x) => (float[1000] y) { y = Relu(x) }");
  // run --test-data judges the model's output against output_0.pb.
  fs::create_directories(dir_ / "set");
  std::vector<float> x(1000, 0.75f), expected(1000, 0.75f);
  std::fill(expected.begin(), expected.begin() + 201, 0.25f);
  ASSERT_TRUE(WriteTensorFile(Path("set/input_0.pb"), Filled({1000}, x), "x").ok());
  ASSERT_TRUE(WriteTensorFile(Path("set/output_0.pb"), Filled({1000}, expected), "y").ok());
  const testing::CommandResult run = RunOvfix(
      absl::StrCat("run ", model, " --test-data ", Path("set"), " --accuracy y=mask@0.5:0.2"));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("FAILS"));
  EXPECT_GT(PrintedScore(run.out, "FAILS"), 1) << run.out;

  // convert: fp16 rounds 0.5001 to 0.5, which is no longer above 0.5.
  std::fill(x.begin(), x.begin() + 201, 0.5001f);
  ASSERT_TRUE(WriteTensorFile(Path("x.pb"), Filled({1000}, x), "x").ok());
  const testing::CommandResult convert = RunOvfix(absl::StrCat(
      "convert ", model, " ", Path("out.onnx"), " --target gpu-fp16 --input x=", Path("x.pb"),
      " --accuracy y=mask@0.5:0.2 --no-repair"));
  EXPECT_EQ(convert.exit_code, 1) << convert.out << convert.err;
  EXPECT_THAT(convert.out, HasSubstr("at most 1 meets them"));
  EXPECT_GT(PrintedScore(convert.out, "end-to-end: score"), 1) << convert.out;
  EXPECT_GT(PrintedScore(convert.out, "FAILS"), 1) << convert.out;
}

TEST_F(CommandAgreement, TestDataFolderWithoutInputFilesIsNamed) {
  const std::string model =
      WriteModel("m.onnx", "g (float[4] x, float[4] z) => (float[4] y) { y = Add(x, z) }");
  fs::create_directories(dir_ / "set");
  ASSERT_TRUE(WriteTensorFile(Path("set/output_0.pb"), Filled({4}, {0, 0, 0, 0}), "y").ok());
  const testing::CommandResult r =
      RunOvfix(absl::StrCat("run ", model, " --test-data ", Path("set")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat(Path("set"),
                                            ": no input_K.pb files (expected "
                                            "input_0.pb to input_1.pb, one per graph "
                                            "input in order: x, z)")));
  // A folder that has some of them names the one missing.
  ASSERT_TRUE(WriteTensorFile(Path("set/input_0.pb"), Filled({4}, {0, 0, 0, 0}), "x").ok());
  const testing::CommandResult partial =
      RunOvfix(absl::StrCat("run ", model, " --test-data ", Path("set")));
  EXPECT_EQ(partial.exit_code, 2) << partial.err;
  EXPECT_THAT(partial.err, HasSubstr(absl::StrCat(Path("set"), ": no input_1.pb for input 'z'")));
}

TEST_F(CommandAgreement, ConvertHelpSaysWhatExitOneWrites) {
  const testing::CommandResult help = RunOvfix("convert --help");
  EXPECT_THAT(help.out, ::testing::Not(HasSubstr("nothing is written")));
  EXPECT_THAT(help.out, HasSubstr("1 the converted model changes the outputs beyond the accuracy "
                                  "criteria: the model (and its external data) is not written, "
                                  "the --report file is (it says why)"));
  // What the help says is what the command does.
  const std::string model =
      WriteModel("m.onnx", "g (float[1000] x) => (float[1000] y) { y = Relu(x) }");
  std::vector<float> x(1000, 0.75f);
  std::fill(x.begin(), x.begin() + 201, 0.5001f);
  ASSERT_TRUE(WriteTensorFile(Path("x.pb"), Filled({1000}, x), "x").ok());
  const testing::CommandResult r = RunOvfix(absl::StrCat(
      "convert ", model, " ", Path("out.onnx"), " --target gpu-fp16 --input x=", Path("x.pb"),
      " --accuracy y=mask@0.5:0.2 --no-repair --external-data --report ", Path("report.json")));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(fs::exists(Path("report.json")));
  EXPECT_FALSE(fs::exists(Path("out.onnx")));
  EXPECT_FALSE(fs::exists(Path("out.onnx.data")));
}

}  // namespace
}  // namespace ovfix
