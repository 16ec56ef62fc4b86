// `ovfix rules check`: op group and op version errors as FILE:LINE:COL, exit 2; a good file OK.
// `ovfix rules list` shows the op groups and builders.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"

namespace ovfix::testing {
namespace {

std::string WriteRules(const std::string& name, const std::string& text) {
  const auto path =
      std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(RulesCheck, ReportsGroupAndVersionErrorsWithPositions) {
  const std::string path = WriteRules("bad.rules", R"(# Op(x, a) -> Op(x, a)
rule unknown_group
  for     Op in arithmetics
  match   (x, a) => (y) { y = Op(x, a) }
  replace (x, a) => (y) { y = Op(x, a) }

# Squeeze(x, a) -> Squeeze(x, a)
rule not_a_version
  ops     Squeeze 12..
  match   (x, a) => (y) { y = Squeeze(x, a) }
  replace (x, a) => (y) { y = Squeeze(x, a) }

# Add(x, a) -> Add(x, a)
rule empty_range
  for     Op in Add 14..7
  match   (x, a) => (y) { y = Op(x, a) }
  replace (x, a) => (y) { y = Op(x, a) }
)");
  const CommandResult r = RunOvfix("rules check " + path);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(path + ":3:17: unknown op group 'arithmetics' (groups: arithmetic,"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(path + ":9:19: Squeeze has no version 12 (its versions are 1, 11, 13, 21, "
                              "23, 24, 25)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(path + ":15:21: version range 14..7 is empty"), std::string::npos) << r.err;
  // One error a line, each naming its place.
  EXPECT_EQ(r.err.find("\\n"), std::string::npos) << r.err;
  for (absl::string_view line : absl::StrSplit(r.err, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, path + ":")) << line;
  }
  std::filesystem::remove(path);
}

TEST(RulesCheck, ReportsEveryUnknownOpAndDomainInOneRun) {
  const std::string path = WriteRules("misspelt.rules", R"(# HardSwish(x) -> x * HardSigmoid(x)
rule misspelt_pattern
  match   (x) => (y) { y = HardSwsh(x) }
  replace (x) => (y) { s = HardSigmoid(x)  y = Mul(x, s) }

# Erf(x) -> Erf(x)
rule misspelt_replacement
  match   (x) => (y) { y = Erf(x) }
  replace (x) => (y) { y = Erff(x) }

# Relu(x) -> Relu(x)
rule misspelt_domain
  match   (x) => (y) { y = Relu(x) }
  replace (x) => (y) { y = ai.onx.Relu(x) }
)");
  const CommandResult r = RunOvfix("rules check " + path);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(path + ":3:28: unknown op 'HardSwsh' in the match (did you mean "
                              "'HardSwish'?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(path + ":9:28: unknown op 'Erff' in the replacement (did you mean 'Erf'?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("unknown domain 'ai.onx' of Relu in the replacement (did you mean "
                       "'ai.onnx'?)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 3) << r.err;
  std::filesystem::remove(path);
}

TEST(RulesCheck, TheExampleRuleFilesAreGood) {
  for (const char* example :
       {"examples/rules/hardswish.rules", "examples/rules/scalar_operands.rules"}) {
    const CommandResult r =
        RunOvfix(std::string("rules check ") + OVFIX_SOURCE_DIR + "/" + example);
    EXPECT_EQ(r.exit_code, 0) << example << ": " << r.err;
    EXPECT_NE(r.out.find("rules OK"), std::string::npos) << r.out;
  }
}

TEST(RulesList, ShowsOpGroupsAndBuilders) {
  const CommandResult r = RunOvfix("rules list");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  variadic       element-wise ops of any number of inputs"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Max (8), Min (8), Sum (8), Mean (8)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unsqueeze(data, axes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Unsqueeze, axes an input from version 13"), std::string::npos) << r.out;
}

TEST(RulesList, ShowsPassesWithTheirOptions) {
  const CommandResult r = RunOvfix("rules list");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Passes (native;"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  fp16_islands "), std::string::npos) << r.out;
  // The options each pass declares (rules/passes/registry.h), and what reads each option.
  EXPECT_NE(r.out.find("options: precision (--precision fp32|fp16|bf16), keep_fp32 (--keep-fp32 "
                       "REGEX)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("options: batch (--batch N)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  batch                      fix_input_shapes; reference inputs\n"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace ovfix::testing
