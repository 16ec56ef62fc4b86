// A target is its file alone: every rules/targets/*.target of the source tree is a built-in
// target (converter::BuiltinTargets), and every place that names the targets to a user lists
// it without being told: `convert --help` and `explain --help`, `rules list` (text and JSON),
// the unknown-target error, the C++ API's option list (and so Python's docstring, checked in
// python/tests/), and `explain` runs at it. Nothing here names a target but generic, the
// default.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "converter/target.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/text_form.h"
#include "ovfix/ovfix.h"
#include "rules/conversion_options.h"
#include "rules/embedded_files.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/test_util.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

// The targets as files in the source tree: what a contributor adds.
std::vector<std::string> TargetFiles() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(OVFIX_SOURCE_DIR) / "rules/targets")) {
    if (entry.path().extension() == ".target") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Targets, EveryFileIsABuiltinTargetThatParses) {
  const std::vector<std::string> files = TargetFiles();
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(rules::BuiltinTargetNames(), files);
  std::vector<std::string> parsed;
  for (const Target& t : BuiltinTargets()) {
    parsed.push_back(t.name);
    EXPECT_FALSE(t.description.empty()) << t.name << ": a built-in target says what it is for";
    EXPECT_FALSE(t.steps.empty()) << t.name;
    absl::StatusOr<Target> loaded = LoadTarget(t.name);
    EXPECT_TRUE(loaded.ok()) << t.name << ": " << loaded.status();
  }
  // BuiltinTargets leaves out a file that does not parse: none may.
  EXPECT_EQ(parsed, files);
}

TEST(Targets, TheDefaultIsBuiltinAndTheSameForTheCommandLineApiAndPasses) {
  const rules::OptionSpec* target = rules::FindOption("target");
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->default_text, "generic");
  const std::vector<std::string> files = TargetFiles();
  EXPECT_TRUE(std::find(files.begin(), files.end(), std::string(target->default_text)) !=
              files.end());
  // The command line's default is the table's by construction (cli/conversion_flags.h); the
  // public header's and the passes' are literals, held to it here.
  EXPECT_EQ(ConversionOptions{}.target, target->default_text);
  EXPECT_EQ(rules::ConvertOptions{}.target, target->default_text);
  const std::vector<OptionInfo> list = ConversionOptionList();
  auto info = std::find_if(list.begin(), list.end(),
                           [](const OptionInfo& o) { return o.name == "target"; });
  ASSERT_NE(info, list.end());
  EXPECT_EQ(info->default_value, target->default_text);
}

// The lines of --help that describe --target (CLI11 may wrap the text).
std::string TargetHelp(const std::string& help) {
  const size_t at = help.find("--target");
  if (at == std::string::npos) return "";
  const size_t end = help.find("\n  -", at);
  return help.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

TEST(Targets, HelpOfConvertAndExplainListsEveryOne) {
  for (const std::string command : {"convert", "explain"}) {
    SCOPED_TRACE(command);
    testing::CommandResult r = RunOvfix(command + " --help");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string help = TargetHelp(r.out);
    ASSERT_FALSE(help.empty()) << r.out;
    for (const std::string& name : TargetFiles())
      EXPECT_TRUE(absl::StrContains(help, name)) << name;
  }
}

TEST(Targets, RulesListAndTheUnknownTargetErrorListEveryOne) {
  testing::CommandResult text = RunOvfix("rules list");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const size_t section = text.out.find("\nTargets (--target NAME):\n");
  ASSERT_NE(section, std::string::npos) << text.out;
  const std::string targets =
      text.out.substr(section, text.out.find("\n\n", section + 1) - section);
  testing::CommandResult json = RunOvfix("rules list --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  testing::CommandResult unknown = RunOvfix("convert in.onnx out.onnx --target no-such-target");
  EXPECT_EQ(unknown.exit_code, 2);
  for (const std::string& name : TargetFiles()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(absl::StrContains(targets, absl::StrCat("\n  ", name, " "))) << targets;
    EXPECT_TRUE(absl::StrContains(json.out, absl::StrCat("{\"name\":\"", name, "\"")) ||
                absl::StrContains(json.out, absl::StrCat("{\"name\": \"", name, "\"")))
        << name;
    EXPECT_TRUE(absl::StrContains(LoadTarget("no-such-target").status().message(), name));
  }
}

TEST(Targets, ApiOptionListNamesEveryOne) {
  const std::vector<OptionInfo> list = ConversionOptionList();
  auto info = std::find_if(list.begin(), list.end(),
                           [](const OptionInfo& o) { return o.name == "target"; });
  ASSERT_NE(info, list.end());
  for (const std::string& name : TargetFiles()) {
    EXPECT_TRUE(absl::StrContains(info->help, name)) << name << " not in: " << info->help;
  }
}

TEST(Targets, ExplainRunsAtEveryOne) {
  const fs::path dir = testing::TempDir("targets_explain");
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,3] x) => (float[1,3] y) {
      b = Constant <value = float[3] {1, 2, 3}> ()
      y = Add(x, b)
    })");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string path = (dir / "m.onnx").string();
  ASSERT_TRUE(SaveModel(**model, path).ok());
  for (const std::string& name : TargetFiles()) {
    SCOPED_TRACE(name);
    testing::CommandResult r =
        RunOvfix(absl::StrCat("explain constant_folding ", path, " --summary --target ", name));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("target ", name))) << r.out;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix::converter
