// The CLI as users and build pipelines see it: exit codes, one-line errors, JSON.
#include <filesystem>

#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/bad_input_fixtures.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

using testing::RunOvfix;

TEST(Cli, VersionAndHelp) {
  auto v = RunOvfix("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("ovfix "), std::string::npos);
  auto h = RunOvfix("help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("inspect"), std::string::npos);
  EXPECT_NE(h.out.find("convert"), std::string::npos);
  auto bad = RunOvfix("no-such-command");
  EXPECT_EQ(bad.exit_code, 2);
}

// What `ovfix inspect --json` prints for a file of ../shared; empty when the file is not there.
std::string InspectJson(const std::string& model) {
  if (!std::filesystem::exists(model)) return "";
  auto r = RunOvfix("inspect " + model + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty()) << r.err;
  return r.out;
}

TEST(Cli, InspectShowsOpsetsIoOpsAndDynamicDims) {
  const std::string model = testing::SharedDir() + "/models/mobilenet_v3_small/model.onnx";
  const std::string json = InspectJson(model);
  if (json.empty()) GTEST_SKIP();
  for (const char* part : {"\"opset_import\":{\"ai.onnx\":", "\"Conv\":", "\"initializer_bytes\":",
                           // mobilenet_v3_small has a dynamic batch: it shows as a named symbol.
                           "\"dynamic_dims\":[\""}) {
    EXPECT_NE(json.find(part), std::string::npos) << part << " in " << json;
  }
  auto table = RunOvfix("inspect " + model);
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("Conv"), std::string::npos);
}

TEST(Cli, InspectWalksSubgraphs) {
  const std::string json =
      InspectJson(testing::SharedDir() + "/onnx-node-tests/test_if/model.onnx");
  if (json.empty()) GTEST_SKIP();
  EXPECT_NE(json.find("\"subgraphs\":2"), std::string::npos) << json;
}

TEST(Cli, BadModelsExitTwoWithOneLine) {
  const auto dir = testing::TempDir("cli_bad");
  for (const auto& c : testing::WriteBadModels(dir)) {
    SCOPED_TRACE(c.name);
    const std::string path = (dir / c.name).string();
    for (const std::string& command :
         {"inspect " + path, "convert " + path + " " + (dir / "o.onnx").string()}) {
      auto r = RunOvfix(command);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
      // Exactly one line.
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_FALSE(std::filesystem::exists(dir / "o.onnx"));
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Cli, ConvertRefusesToOverwriteItsInputAndWritesAtomically) {
  const auto dir = testing::TempDir("cli_convert");
  const auto model = dir / "m.onnx";
  testing::WriteBytes(model, testing::TinyModel().SerializeAsString());
  const auto before = testing::Slurp(model);
  auto r = RunOvfix("convert " + model.string() + " " + model.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--in-place"), std::string::npos) << r.err;
  EXPECT_EQ(testing::Slurp(model), before);
  // Through another spelling of the same path too.
  r = RunOvfix("convert " + model.string() + " " + (dir / "." / "m.onnx").string());
  EXPECT_EQ(r.exit_code, 2);
  r = RunOvfix("convert " + model.string() + " " + model.string() + " --in-place");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Output and external data; no temporary files left behind.
  r = RunOvfix("convert " + model.string() + " " + (dir / "out.onnx").string() +
               " --external-data");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "out.onnx.data"));
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  // A folder that cannot be written: error, exit 2, nothing half-written.
  r = RunOvfix("convert " + model.string() + " /proc/no/such/dir/out.onnx");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
