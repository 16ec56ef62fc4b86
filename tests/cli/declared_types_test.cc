// Models whose declared types are not whole (an empty `type {}`, a tensor type without an
// element type, a sequence or optional without one, an unknown element type, a negative dim):
// onnx 1.12's shape inference dereferences such types and crashed `convert` and `explain` on
// the first of them (fuzz/regressions/load_model/shape_input_empty_type.onnx). Every command
// refuses each of them with exit code 2 and one line naming the model and the value.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunOvfix;

std::vector<std::string> Regressions() {
  std::vector<std::string> files;
  for (const auto& e :
       fs::directory_iterator(fs::path(OVFIX_SOURCE_DIR) / "fuzz/regressions/load_model")) {
    if (e.path().extension() == ".onnx") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(DeclaredTypes, EveryCommandRefusesAMalformedTypeWithOneLine) {
  const std::vector<std::string> files = Regressions();
  ASSERT_GE(files.size(), 7u);
  const fs::path out =
      fs::temp_directory_path() / ("ovfix_declared_types_" + std::to_string(::getpid()) + ".onnx");
  for (const std::string& model : files) {
    for (const std::string& args :
         {"inspect " + model, "run " + model, "convert " + model + " " + out.string(),
          "convert " + model + " " + out.string() + " --target gpu-fp16 --no-validate",
          "compare " + model + " " + model, "explain fp16_islands " + model,
          "explain squeeze_axes " + model + " --target openvino-gpu"}) {
      SCOPED_TRACE(args);
      const testing::CommandResult r = RunOvfix(args, /*timeout_seconds=*/120);
      EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_THAT(r.err, HasSubstr(model));
      EXPECT_THAT(r.err, HasSubstr("input 'x'"));
      EXPECT_FALSE(fs::exists(out));
    }
  }
}

}  // namespace
}  // namespace ovfix
