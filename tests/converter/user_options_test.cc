// One translation from what a user asked for to the pipeline (converter/user_options.h): the
// entries the pipeline reads itself, and the command line (cli/conversion_flags.cc) and the C++
// API (api/convert.cc, which Python goes through) giving the same pipeline options for the
// same options, option by option, all together and with none given (the defaults).
#include "converter/user_options.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"
#include "cli/conversion_flags.h"
#include "gtest/gtest.h"
#include "ovfix/onnx.h"
#include "ovfix/ovfix.h"
#include "rules/conversion_options.h"

namespace ovfix::converter {
namespace {

using rules::OptionSpec;
using Spelling = UserOptions::Spelling;

UserOptions Given(std::map<std::string, std::vector<std::string>, std::less<>> given,
                  Spelling spelling = Spelling::kName) {
  UserOptions user;
  user.given = std::move(given);
  user.spelling = spelling;
  return user;
}

TEST(TranslateUserOptions, TheEntriesWithoutSetters) {
  PipelineOptions p;
  ASSERT_TRUE(TranslateUserOptions(Given({{"rules", {"a.rules", "b.rules"}},
                                          {"input", {"x=x0.pb", "y=y0.pb", "x=x1.pb"}},
                                          {"calibration_data", {"data"}},
                                          {"tolerance", {"0.25"}},
                                          {"accuracy", {"max:0.1", "y=p99:0.01"}},
                                          {"repair", {"false"}}}),
                                   p)
                  .ok());
  EXPECT_EQ(p.rule_files, (std::vector<std::string>{"a.rules", "b.rules"}));
  // Naming an input again starts another set.
  ASSERT_EQ(p.input_sets.size(), 2u);
  EXPECT_EQ(p.input_sets[0], (InputFiles{{"x", "x0.pb"}, {"y", "y0.pb"}}));
  EXPECT_EQ(p.input_sets[1], (InputFiles{{"x", "x1.pb"}}));
  EXPECT_TRUE(p.convert.input_files.empty());  // the --input sets are input_sets alone
  EXPECT_EQ(p.calibration_data, std::vector<std::string>{"data"});
  EXPECT_EQ(p.tolerance, 0.25);
  ASSERT_TRUE(p.accuracy.default_criteria.has_value());
  EXPECT_EQ(CriteriaToString(*p.accuracy.default_criteria), "max:0.1");
  ASSERT_TRUE(p.accuracy.per_output.contains("y"));
  EXPECT_EQ(CriteriaToString(p.accuracy.per_output.at("y")), "p99:0.01");
  EXPECT_FALSE(p.repair);
  EXPECT_EQ(p.set_by_user, (std::set<std::string>{"rules", "input", "calibration_data", "tolerance",
                                                  "accuracy", "repair"}));
}

TEST(TranslateUserOptions, NothingGivenIsTheDefaults) {
  PipelineOptions p;
  ASSERT_TRUE(TranslateUserOptions(UserOptions{}, p).ok());
  const PipelineOptions defaults;
  EXPECT_EQ(p.convert.target, rules::FindOption("target")->default_text);
  EXPECT_EQ(p.tolerance, defaults.tolerance);
  EXPECT_TRUE(p.repair);
  EXPECT_TRUE(p.set_by_user.empty());
}

// Every entry the pipeline reads itself has its translation: a sample of each translates
// (a new entry without a setter and without a line in user_options.cc is an Internal error).
TEST(TranslateUserOptions, EveryEntryWithoutSetterIsTranslated) {
  const std::map<std::string, std::string> samples = {
      {"rules", "a.rules"}, {"input", "x=x.pb"},     {"calibration_data", "data"},
      {"tolerance", "0.1"}, {"accuracy", "max:0.1"}, {"repair", "false"}};
  for (const OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.set != nullptr) continue;
    SCOPED_TRACE(spec.name);
    auto sample = samples.find(std::string(spec.name));
    ASSERT_NE(sample, samples.end()) << "add a sample (and a test) for the new entry";
    PipelineOptions p;
    EXPECT_TRUE(TranslateUserOptions(Given({{sample->first, {sample->second}}}), p).ok());
    EXPECT_TRUE(p.set_by_user.contains(sample->first));
  }
}

TEST(TranslateUserOptions, ErrorsNameTheOptionAsTheCallerSpellsIt) {
  auto message = [](const std::string& name, const std::string& text, Spelling spelling) {
    PipelineOptions p;
    absl::Status s = TranslateUserOptions(Given({{name, {text}}}, spelling), p);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return std::string(s.message());
  };
  EXPECT_EQ(message("tolerance", "x", Spelling::kFlag), "--tolerance x: not a number");
  EXPECT_EQ(message("tolerance", "-1", Spelling::kName), "tolerance: must be >= 0");
  EXPECT_EQ(message("input", "x.pb", Spelling::kFlag), "--input x.pb: expected NAME=FILE.pb");
  EXPECT_EQ(message("batch", "0", Spelling::kFlag),
            "--batch 0: expected a positive integer, got '0'");
  EXPECT_EQ(message("batch", "0", Spelling::kName), "batch: expected a positive integer, got '0'");
  EXPECT_EQ(message("repair", "maybe", Spelling::kFlag),
            "--no-repair: expected true or false, got 'maybe'");
  EXPECT_EQ(message("accuracy", "max:x", Spelling::kName).rfind("--accuracy max:x: ", 0), 0u);

  PipelineOptions p;
  EXPECT_EQ(TranslateUserOptions(Given({{"no_such_option", {"1"}}}), p).code(),
            absl::StatusCode::kInternal);
}

// What a conversion will do, as text: every option the passes read (the table's readable
// entries and the lists and maps without a reader) and every one the pipeline reads itself.
// The paths, the log and the output settings are each caller's own and left out.
std::string Describe(const PipelineOptions& p) {
  std::vector<std::string> lines;
  for (const OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.get != nullptr)
      lines.push_back(absl::StrCat(std::string(spec.name), " = ", spec.get(p.convert)));
  }
  const rules::ConvertOptions& c = p.convert;
  for (const auto& [name, dims] : c.input_shapes) {
    lines.push_back(absl::StrCat("input_shape ", name, " = ", absl::StrJoin(dims, "x")));
  }
  for (const auto& [name, r] : c.shape_ranges) {
    lines.push_back(absl::StrCat("shape_range ", name, " = ", absl::StrJoin(r.min, "x"), ":",
                                 absl::StrJoin(r.opt, "x"), ":", absl::StrJoin(r.max, "x")));
  }
  lines.push_back(absl::StrCat("keep_fp32 = ", absl::StrJoin(c.keep_fp32, ",")));
  lines.push_back(absl::StrCat("disable = ", absl::StrJoin(c.disabled, ",")));
  lines.push_back(
      absl::StrCat("input_files = ", absl::StrJoin(c.input_files, ",", absl::PairFormatter("="))));
  lines.push_back(absl::StrCat("set_by_user = ", absl::StrJoin(p.set_by_user, ",")));
  lines.push_back(absl::StrCat("rules = ", absl::StrJoin(p.rule_files, ",")));
  lines.push_back(absl::StrCat("calibration_data = ", absl::StrJoin(p.calibration_data, ",")));
  for (const InputFiles& set : p.input_sets) {
    lines.push_back(
        absl::StrCat("input set = ", absl::StrJoin(set, ",", absl::PairFormatter("="))));
  }
  lines.push_back(absl::StrFormat("tolerance = %.17g", p.tolerance));
  if (p.accuracy.default_criteria) {
    lines.push_back(absl::StrCat("accuracy = ", CriteriaToString(*p.accuracy.default_criteria)));
  }
  for (const auto& [name, criteria] : p.accuracy.per_output) {
    lines.push_back(absl::StrCat("accuracy ", name, " = ", CriteriaToString(criteria)));
  }
  lines.push_back(absl::StrCat("repair = ", p.repair));
  return absl::StrJoin(lines, "\n");
}

// `ovfix convert MODEL OUT ARGS` as the command line reads it.
absl::StatusOr<PipelineOptions> FromCommandLine(const std::vector<std::string>& args) {
  CLI::App app;
  cli::ConversionFlags flags;
  CLI::App* sub = app.add_subcommand("convert");
  sub->add_option("input", flags.input);
  cli::AddConversionFlags(sub, flags);
  std::vector<std::string> reversed = {"model.onnx", "convert"};
  reversed.insert(reversed.begin(), args.rbegin(), args.rend());
  try {
    app.parse(reversed);  // CLI11 takes the arguments last first
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  PipelineOptions p;
  if (absl::Status s = cli::ToPipelineOptions(flags, p); !s.ok()) return s;
  return p;
}

// The same through the C++ API: SetOption by name, then the conversion's translation.
absl::StatusOr<PipelineOptions> FromApi(
    const std::vector<std::pair<std::string, std::string>>& options) {
  ConversionOptions o;
  for (const auto& [name, value] : options) {
    if (absl::Status s = SetOptionStatus(o, name, value); !s.ok()) return s;
  }
  return api::PipelineOptionsOf(o);
}

// One value for each entry both the command line and the API take, not the default; the
// flags that say it follow from the table. `input` is left out: the API reads its tensors
// into memory (python/tests/ compares the bytes both write with it).
const std::map<std::string, std::vector<std::string>>& Samples() {
  static const auto* samples = new std::map<std::string, std::vector<std::string>>{
      {"target", {"tensorrt"}},
      {"precision", {"fp16"}},
      {"batch", {"2"}},
      {"opset", {"18"}},
      {"input_shape", {"x=1x3x8x8", "y=2x4"}},
      {"shape_range", {"x=1x3x8x8:1x3x16x16:1x3x32x32"}},
      {"keep_fp32", {"Softmax", "ReduceSum"}},
      {"keep_io_types", {"false"}},
      {"fp16_islands", {"magnitude"}},
      {"fp16_magnitude_threshold", {"1024.5"}},
      {"broadcast", {"full"}},
      {"lower_conv3d_unit_kernel", {"true"}},
      {"fold_size_limit", {"64"}},
      {"mask_bound", {"1024"}},
      {"rules", {"a.rules", "b.rules"}},
      {"disable", {"constant_folding"}},
      {"validate", {"false"}},
      {"calibration_data", {"data_a", "data_b"}},
      {"tolerance", {"0.003"}},
      {"accuracy", {"max:0.05", "y=p99:0.01,mean:0.002"}},
      {"repair", {"false"}},
      {"certify", {"off"}},
      {"island_precision", {"bf16"}},
  };
  return *samples;
}

std::vector<std::string> Flags(const OptionSpec& spec, const std::vector<std::string>& texts) {
  std::vector<std::string> args;
  for (const std::string& text : texts) {
    args.push_back(rules::FlagName(spec));
    if (spec.type != OptionSpec::Type::kBool) args.push_back(text);
  }
  return args;
}

// The entries both take: on the command line and a member of ConversionOptions.
std::vector<const OptionSpec*> SharedEntries() {
  std::vector<const OptionSpec*> entries;
  for (const OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.on_command_line && !spec.api_field.empty() && spec.name != "input") {
      entries.push_back(&spec);
    }
  }
  return entries;
}

TEST(CommandLineAndApi, EveryEntryHasASample) {
  for (const OptionSpec* spec : SharedEntries()) {
    EXPECT_TRUE(Samples().contains(std::string(spec->name)))
        << spec->name << ": add a value to Samples() so the two are compared on it";
  }
}

TEST(CommandLineAndApi, SameDefaults) {
  absl::StatusOr<PipelineOptions> cli = FromCommandLine({});
  absl::StatusOr<PipelineOptions> api = FromApi({});
  ASSERT_TRUE(cli.ok()) << cli.status();
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ(Describe(*cli), Describe(*api));
  EXPECT_EQ(cli->convert.target, "generic");
}

TEST(CommandLineAndApi, SameOptionsOptionByOption) {
  for (const OptionSpec* spec : SharedEntries()) {
    auto sample = Samples().find(std::string(spec->name));
    if (sample == Samples().end()) continue;  // EveryEntryHasASample says so
    SCOPED_TRACE(spec->name);
    std::vector<std::pair<std::string, std::string>> api_options;
    for (const std::string& text : sample->second) api_options.emplace_back(spec->name, text);
    absl::StatusOr<PipelineOptions> cli = FromCommandLine(Flags(*spec, sample->second));
    absl::StatusOr<PipelineOptions> api = FromApi(api_options);
    ASSERT_TRUE(cli.ok()) << cli.status();
    ASSERT_TRUE(api.ok()) << api.status();
    EXPECT_EQ(Describe(*cli), Describe(*api));
    EXPECT_TRUE(cli->set_by_user.contains(std::string(spec->name)));
  }
}

TEST(CommandLineAndApi, SameOptionsAllTogether) {
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> api_options;
  for (const OptionSpec* spec : SharedEntries()) {
    auto sample = Samples().find(std::string(spec->name));
    if (sample == Samples().end()) continue;
    for (const std::string& arg : Flags(*spec, sample->second)) args.push_back(arg);
    for (const std::string& text : sample->second) api_options.emplace_back(spec->name, text);
  }
  absl::StatusOr<PipelineOptions> cli = FromCommandLine(args);
  absl::StatusOr<PipelineOptions> api = FromApi(api_options);
  ASSERT_TRUE(cli.ok()) << cli.status();
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ(Describe(*cli), Describe(*api));
}

// The API's typed members (not through SetOption) give what their texts give.
TEST(CommandLineAndApi, TypedMembersAsTheirFlags) {
  ConversionOptions o;
  o.tolerance = 1.0 / 3;  // read back exactly from its text
  o.repair = false;
  o.batch = 4;
  o.keep_io_types = false;
  o.accuracy = {"max:0.5"};
  absl::StatusOr<PipelineOptions> api = api::PipelineOptionsOf(o);
  absl::StatusOr<PipelineOptions> cli =
      FromCommandLine({"--tolerance", absl::StrFormat("%.17g", 1.0 / 3), "--no-repair", "--batch",
                       "4", "--no-keep-io-types", "--accuracy", "max:0.5"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ(api->tolerance, 1.0 / 3);
  EXPECT_EQ(Describe(*cli), Describe(*api));

  o.tolerance = -1;
  EXPECT_EQ(api::PipelineOptionsOf(o).status().message(), "tolerance: must be >= 0");
}

}  // namespace
}  // namespace ovfix::converter
