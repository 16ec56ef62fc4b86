// The option table (rules/conversion_options.h) is the one declaration of the conversion
// options: the command line's flags, the C++ API's ConversionOptions and the built-in target
// files are checked against it here, so that none of them drifts (the plan made from it is
// tested in tests/converter/conversion_plan_test.cc).
#include "rules/conversion_options.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "converter/target.h"
#include "gtest/gtest.h"
#include "rules/helpers.h"
#include "rules/passes/registry.h"
#include "rules/rule_set.h"
#include "tests/cli/cli_util.h"

namespace ovfix::rules {
namespace {

namespace fs = std::filesystem;
using Precision = ConvertOptions::Precision;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The flags a `--help` text lists: the first column of its option lines
// ("  -q,--quiet", "  --external-data,--no-external-data{false}").
std::set<std::string> HelpFlags(const std::string& help) {
  std::set<std::string> flags;
  const std::regex flag("--[a-z0-9][a-z0-9-]*");
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (line.size() < 3 || line.substr(0, 3) != "  -") continue;
    const std::string names(line.substr(2, line.find(' ', 2) - 2));
    for (auto it = std::sregex_iterator(names.begin(), names.end(), flag);
         it != std::sregex_iterator(); ++it) {
      flags.insert(it->str());
    }
  }
  return flags;
}

TEST(OptionTable, NamesAreUniqueSnakeCaseWithHelp) {
  std::set<std::string_view> names;
  for (const OptionSpec& spec : ConversionOptionTable()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_TRUE(std::regex_match(std::string(spec.name), std::regex("[a-z][a-z0-9_]*")))
        << spec.name;
    EXPECT_FALSE(spec.help.empty()) << spec.name;
    // Read by something: a pass that declares it, or a phase (rules/passes/registry.h).
    EXPECT_FALSE(OptionReaders(spec.name).empty()) << spec.name;
    if (spec.type == OptionSpec::Type::kEnum) EXPECT_GE(spec.choices.size(), 2u) << spec.name;
    if (spec.in_target_files) EXPECT_NE(spec.set, nullptr) << spec.name;
    if (!spec.same_as.empty()) EXPECT_NE(FindOption(spec.same_as), nullptr) << spec.name;
  }
  EXPECT_EQ(FlagName(*FindOption("keep_io_types")), "--no-keep-io-types");  // on by default
  EXPECT_EQ(FlagName(*FindOption("validate")), "--no-validate");            // on by default
  EXPECT_EQ(FlagName(*FindOption("input_shape")), "--input-shape");
}

// Every option a user sets on the command line is an entry, and every entry meant for the
// command line is a flag of both commands that convert (convert, explain).
TEST(OptionTable, CommandLineFlagsAreTheTable) {
  std::set<std::string> table;
  for (const OptionSpec& spec : ConversionOptionTable()) {
    if (spec.on_command_line) table.insert(FlagName(spec));
  }
  // The flags of each command that are not conversion options (output, report, display).
  const std::map<std::string, std::set<std::string>> own = {
      {"convert",
       {"--help", "--verbose", "--report", "--quiet", "--in-place", "--external-data",
        "--no-external-data", "--external-data-name", "--plan"}},
      {"explain", {"--help", "--verbose", "--node", "--summary", "--all"}}};
  for (const auto& [command, extra] : own) {
    testing::CommandResult r = testing::RunOvfix(command + " --help");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::set<std::string> flags = HelpFlags(r.out);
    for (const std::string& flag : table) {
      EXPECT_TRUE(flags.contains(flag)) << command << " lacks " << flag;
    }
    for (const std::string& flag : flags) {
      EXPECT_TRUE(table.contains(flag) || extra.contains(flag))
          << command << " has " << flag << ", which the option table lacks";
    }
  }
}

// The fields of the C++ API's ConversionOptions, read from its header.
std::set<std::string> ApiFields() {
  const std::string header = Slurp(fs::path(OVFIX_SOURCE_DIR) / "include/ovfix/ovfix.h");
  const size_t begin = header.find("struct ConversionOptions {");
  const size_t end = header.find("\n};", begin);
  std::set<std::string> fields;
  const std::regex field("^  [A-Za-z0-9_:<>, ]+[ &*>]([a-z_0-9]+)( = [^;]*)?;");
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(header).substr(begin, end - begin), '\n')) {
    std::smatch m;
    const std::string text(line);
    if (std::regex_search(text, m, field)) fields.insert(m[1]);
  }
  return fields;
}

TEST(OptionTable, ApiFieldsAreTheTable) {
  const std::set<std::string> fields = ApiFields();
  ASSERT_GT(fields.size(), 10u) << "the header's ConversionOptions was not found";
  EXPECT_TRUE(fields.contains("batch") && fields.contains("input_shapes"));  // the parser reads
  std::set<std::string> named = {"report_path", "log"};  // output, not conversion options
  for (const OptionSpec& spec : ConversionOptionTable()) {
    if (!spec.on_command_line) continue;  // target files' only (fp16, islands_honoured)
    EXPECT_FALSE(spec.api_field.empty()) << spec.name << " has no field in the C++ API";
    EXPECT_TRUE(fields.contains(std::string(spec.api_field)))
        << "ovfix::ConversionOptions lacks " << spec.api_field << " (option " << spec.name << ")";
    named.insert(std::string(spec.api_field));
  }
  for (const std::string& f : fields) {
    EXPECT_TRUE(named.contains(f))
        << "ovfix::ConversionOptions::" << f << " is not an entry of the option table";
  }
}

// Each `option NAME VALUE` of the built-in target files names an entry target files may set,
// and the files parse.
TEST(OptionTable, TargetFilesSetTableEntries) {
  int options = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(OVFIX_SOURCE_DIR) / "rules/targets")) {
    if (entry.path().extension() != ".target") continue;
    const std::string text = Slurp(entry.path());
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      std::vector<std::string> words =
          absl::StrSplit(line.substr(0, line.find('#')), ' ', absl::SkipWhitespace());
      if (words.empty() || words[0] != "option") continue;
      ++options;
      ASSERT_EQ(words.size(), 3u) << entry.path() << ": " << line;
      const OptionSpec* spec = FindOption(words[1]);
      ASSERT_NE(spec, nullptr) << entry.path() << ": " << line;
      EXPECT_TRUE(spec->in_target_files) << entry.path() << ": " << line;
    }
    EXPECT_TRUE(converter::ParseTarget(entry.path().string(), text).ok()) << entry.path();
  }
  EXPECT_GT(options, 0);
}

TEST(OptionTable, TargetFilesRefuseOptionsOfTheCommandLine) {
  absl::StatusOr<converter::Target> t =
      converter::ParseTarget("x.target", "pass fix_input_shapes\noption input_shape x=1x3\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("x.target:2:1: option input_shape: 'input_shape' is not "
                                      "set by target files (--input-shape on the command line)"),
            std::string::npos)
      << t.status();
  t = converter::ParseTarget("x.target", "option precision fp8\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("unknown precision 'fp8'"), std::string::npos);
}

// `fp16 true` and `precision fp16` are one option: the command line's --precision wins over
// a target's `fp16 true`.
TEST(OptionTable, Fp16IsPrecisionsOlderSpelling) {
  ConvertOptions o;
  ASSERT_TRUE(SetOption("fp16", "true", o).ok());
  EXPECT_EQ(o.precision, Precision::kFp16);
  absl::StatusOr<converter::Target> gpu = converter::LoadTarget("gpu-fp16");
  ASSERT_TRUE(gpu.ok());
  ConvertOptions user;
  ASSERT_TRUE(SetOption("precision", "fp32", user).ok());
  ASSERT_TRUE(converter::ApplyTargetOptions(*gpu, {"precision"}, user).ok());
  EXPECT_EQ(user.precision, Precision::kFp32);
  EXPECT_FALSE(user.fp16);
}

// Rule conditions read options through the table; a rule naming an option the table lacks
// is refused when its file is read.
TEST(OptionTable, RuleConditionsReadTheTable) {
  ConvertOptions o;
  ASSERT_TRUE(SetOption("precision", "fp16", o).ok());
  EXPECT_EQ(*GetOption("precision", o), "fp16");
  EXPECT_EQ(*GetOption("fp16", o), "true");
  EXPECT_EQ(*GetOption("broadcast", o), "rank");
  EXPECT_TRUE(CheckLiteralArgument("option", 0, "precision").ok());
  absl::Status bad = CheckLiteralArgument("option", 0, "precison");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("unknown option 'precison'"), std::string::npos) << bad;
}

}  // namespace
}  // namespace ovfix::rules
