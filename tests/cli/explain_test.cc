// `ovfix explain` sees what `convert` sees: the same shape options and calibration inputs,
// the graph as the target's steps leave it at the rule's step; it explains passes too
// (fp16_islands: why each fp32 node is fp32), filters nodes and ends with one summary line.
#include <algorithm>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/bad_input_fixtures.h"
#include "tests/ir/malformed_nodes.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class Explain : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir("explain");
    // A bias of lower rank (explicit_broadcast matches) and a sum over the image (a
    // reduction fp16_islands keeps in fp32); the batch is dynamic.
    testing::WriteBytes(Path("m.onnx"), testing::ParseModelProto(R"(
      <ir_version: 8, opset_import: ["" : 17]>
      g (float[N,3,4,4] x) => (float[N,3,4,4] y, float[N,3] s) {
        b = Constant <value = float[3,1,1] {1, 2, 3}> ()
        a = Add(x, b)
        y = Relu(a)
        axes = Constant <value = int64[2] {2, 3}> ()
        s = ReduceSum <keepdims = 0> (a, axes)
      })")
                                            .SerializeAsString());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(Explain, RuleAtItsStepWithConvertsOptions) {
  auto r = RunOvfix("explain explicit_broadcast " + Path("m.onnx") + " --batch 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": matches ("), std::string::npos) << r.out;
  // The last line is the summary: where the rule was looked at, and on what inputs.
  const std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  EXPECT_TRUE(absl::StartsWith(last, "explicit_broadcast: 1 of ")) << last;
  EXPECT_NE(last.find(" candidate nodes match; "), std::string::npos) << last;
  // The step as the plan has it, with whether it runs (converter/conversion_plan.h).
  EXPECT_NE(last.find("(target gpu-fp16, step explicit_broadcast: runs; "), std::string::npos)
      << last;
  EXPECT_NE(last.find("no calibration data"), std::string::npos) << last;

  auto summary = RunOvfix("explain explicit_broadcast " + Path("m.onnx") + " --summary");
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_EQ(Lines(summary.out), 1) << summary.out;

  auto filtered = RunOvfix("explain explicit_broadcast " + Path("m.onnx") + " --node nothing_here");
  ASSERT_EQ(filtered.exit_code, 0) << filtered.err;
  EXPECT_EQ(filtered.out.find(": matches ("), std::string::npos) << filtered.out;
  EXPECT_NE(filtered.out.find("0 of 0 candidate nodes match"), std::string::npos) << filtered.out;
  EXPECT_NE(filtered.out.find("left out by --node"), std::string::npos) << filtered.out;
}

TEST_F(Explain, Fp16IslandsSaysWhyEachFp32NodeIsFp32) {
  auto r = RunOvfix("explain fp16_islands " + Path("m.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ReduceSum"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": fp32: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fp16_islands: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node(s) kept in fp32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(target gpu-fp16, step fp16_islands: runs;"), std::string::npos) << r.out;
}

// The case where explain once said a rank was unknown while convert applied the rule with
// the reference run's shapes: both now see the same facts, with and without --batch.
TEST_F(Explain, AgreesWithConvertOnDdffSqueeze) {
  const std::string dir = testing::SharedDir() + "/models/ddff_squeeze";
  if (!fs::exists(dir + "/model.onnx")) GTEST_SKIP() << "no " << dir;
  for (const std::string batch : {"", " --batch 1"}) {
    const std::string options = " --target openvino-gpu --calibration-data " + dir + batch;
    auto convert = RunOvfix("convert " + dir + "/model.onnx " + Path("out.onnx") + options);
    ASSERT_EQ(convert.exit_code, 0) << convert.err;
    auto explain = RunOvfix("explain squeeze_explicit_axes " + dir + "/model.onnx" + options);
    ASSERT_EQ(explain.exit_code, 0) << explain.err;
    const bool applied = convert.out.find("squeeze_explicit_axes 1") != std::string::npos;
    EXPECT_EQ(applied, !batch.empty()) << convert.out;
    EXPECT_NE(explain.out.find(applied ? "squeeze_explicit_axes: 1 of 2 candidate nodes match"
                                       : "squeeze_explicit_axes: 0 of 2 candidate nodes match"),
              std::string::npos)
        << batch << "\n"
        << explain.out;
  }
}

TEST_F(Explain, UnknownNameSaysWhatItMeant) {
  auto r = RunOvfix("explain fp16_island " + Path("m.onnx"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'fp16_islands'?"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ovfix
