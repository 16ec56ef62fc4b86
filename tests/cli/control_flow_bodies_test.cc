// Recurrent cells inside control flow on the command line (issue 37; silero VAD v5's LSTM sits
// in the branches of an If): `ovfix compare` names the node inside the branch taken or the
// Loop body where a divergence starts, with the iteration, rather than the If or Loop around
// it; `--keep-fp32` naming a node inside a body is no "matches no node" warning.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/test_util.h"
#include "tests/support/recurrent_body_models.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

// The model of `text` saved in `dir`, with a test_data_set_0 beside it (x a slow sine, and c =
// `branch` where the model has it); returns the model's path.
std::string SaveWithTestData(const std::string& text, const fs::path& dir, bool branch) {
  std::unique_ptr<Model> m = test_support::ParseNamed(text);
  EXPECT_NE(m, nullptr);
  if (m == nullptr) return "";
  const std::string path = (dir / "model.onnx").string();
  EXPECT_TRUE(SaveModel(*m, path).ok());
  fs::create_directories(dir / "test_data_set_0");
  int k = 0;
  for (const Value* v : m->graph().inputs()) {
    if (v->is_initializer()) continue;
    const Tensor t =
        v->name() == "x" ? test_support::SequenceInput() : test_support::ConditionInput(branch);
    EXPECT_TRUE(
        WriteTensorFile((dir / "test_data_set_0" / absl::StrCat("input_", k++, ".pb")).string(), t,
                        v->name())
            .ok());
  }
  return path;
}

std::string SummaryLine(const std::string& out) {
  std::string s = out;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  const size_t newline = s.rfind('\n');
  return newline == std::string::npos ? s : s.substr(newline + 1);
}

// A recurrent weight fp16 cannot hold (7e4) turns the LSTM's outputs to NaN in fp16 storage:
// compare goes into the branch the data took and names the LSTM there, not the If.
TEST(CompareBodies, NamesTheNodeInsideTheBranchTaken) {
  const fs::path dir = testing::TempDir("compare_if_body");
  const std::string model =
      SaveWithTestData(test_support::LstmGruInIfText(/*large_recurrent=*/true), dir, true);
  const std::string json = (dir / "report.json").string();
  auto r = RunOvfix(
      absl::StrCat("compare ", model, " --ref cpu:fp32 --test cpu:fp16-storage", " --json ", json));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string summary = SummaryLine(r.out);
  EXPECT_EQ(
      summary.rfind("first divergence: #0 If 'If_0' → then_branch: LSTM 'LSTM_3' (output ", 0), 0u)
      << r.out;
  const std::string text = testing::Slurp(json);
  EXPECT_NE(text.find("\"first_divergence_inside\":[{\"holder\":\"If 'If_0'\","
                      "\"body\":\"then_branch\",\"node\":{"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"name\":\"LSTM_3\""), std::string::npos) << text;
}

// In a Loop body the iteration is named too.
TEST(CompareBodies, NamesTheNodeAndIterationInsideALoopBody) {
  const fs::path dir = testing::TempDir("compare_loop_body");
  const std::string model =
      SaveWithTestData(test_support::LstmInLoopText(/*large_recurrent=*/true), dir, true);
  auto r = RunOvfix(absl::StrCat("compare ", model, " --ref cpu:fp32 --test cpu:fp16-storage"));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(
      SummaryLine(r.out).rfind(
          "first divergence: #0 Loop 'Loop_0' → body: LSTM 'LSTM_1' (iteration 0) (output ", 0),
      0u)
      << r.out;
}

// --keep-fp32 by op type or by path reaches the LSTM inside the If: no warning that it matches
// nothing, and the summary counts it as the fp32 cost does.
TEST(KeepFp32Bodies, PatternsForNodesInsideBodiesMatch) {
  const fs::path dir = testing::TempDir("keep_fp32_body");
  const std::string model = SaveWithTestData(test_support::LstmGruInIfText(false), dir, true);
  for (const std::string pattern : {"LSTM", "If_0/then/LSTM_3"}) {
    auto r =
        RunOvfix(absl::StrCat("convert ", model, " ", (dir / "out.onnx").string(),
                              " --target gpu-fp16 --calibration-data ",
                              (dir / "test_data_set_0").string(), " --keep-fp32 '", pattern, "'"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.err.find("matches no node"), std::string::npos) << pattern << "\n" << r.err;
    EXPECT_NE(r.out.find("fp32 islands: 1 node(s) (LSTM 1)"), std::string::npos) << pattern << "\n"
                                                                                 << r.out;
    EXPECT_NE(r.out.find("fp32 cost: 1 of "), std::string::npos) << pattern << "\n" << r.out;
  }
}

}  // namespace
}  // namespace ovfix
