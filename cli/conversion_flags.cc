#include "cli/conversion_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "converter/accuracy.h"
#include "ir/status_macros.h"
#include "rules/conversion_options.h"

namespace ovfix::cli {
namespace {

using rules::OptionSpec;

// Where an option's values go: the typed members the commands read, else `values`.
std::vector<std::string>* BoundList(ConversionFlags& f, std::string_view name) {
  if (name == "rules") return &f.rule_files;
  if (name == "disable") return &f.disabled;
  if (name == "keep_fp32") return &f.keep_fp32;
  if (name == "input") return &f.inputs;
  if (name == "calibration_data") return &f.calibration_data;
  if (name == "accuracy") return &f.accuracy;
  return nullptr;
}

bool Repeatable(const OptionSpec& spec) {
  return spec.type == OptionSpec::Type::kList || spec.type == OptionSpec::Type::kMap;
}

// The texts given for `spec` (each occurrence of a list or map option; the last of others).
std::vector<std::string> Given(const ConversionFlags& f, const OptionSpec& spec) {
  if (spec.type == OptionSpec::Type::kBool) {
    auto it = f.switches.find(spec.name);
    if (it == f.switches.end() || !it->second) return {};
    return {FlagName(spec).starts_with("--no-") ? "false" : "true"};
  }
  auto it = f.options.find(spec.name);
  if (it == f.options.end() || it->second->count() == 0) return {};
  if (!Repeatable(spec)) return {f.scalars.find(spec.name)->second};
  const std::vector<std::string>* list = BoundList(const_cast<ConversionFlags&>(f), spec.name);
  if (list == nullptr) list = &f.values.find(spec.name)->second;
  std::vector<std::string> given = *list;
  return given;
}

}  // namespace

bool SplitAssignment(const std::string& text, std::string& name, std::string& value) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return false;
  name = text.substr(0, eq);
  value = text.substr(eq + 1);
  return true;
}

void AddAccuracyFlag(CLI::App* sub, std::vector<std::string>& accuracy) {
  const OptionSpec* spec = rules::FindOption("accuracy");
  sub->add_option(FlagName(*spec), accuracy, std::string(spec->help))
      ->type_name(std::string(spec->value_name));
}

void AddInputFileFlag(CLI::App* sub, std::vector<std::string>& inputs) {
  sub->add_option("--input", inputs, "NAME=FILE.pb: a graph input from a TensorProto file")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void AddExecutorFlags(CLI::App* sub, int& device, int& threads) {
  sub->add_option("--device", device, "OpenCL device index (see 'ovfix devices')");
  sub->add_option("--threads", threads, "CPU worker threads (0: one per core)");
}

void ReadInputFiles(const std::vector<std::string>& inputs, converter::CommandFiles& files) {
  for (const std::string& spec : inputs) {
    const size_t eq = spec.find('=');
    if (eq != std::string::npos) files.Read(spec.substr(eq + 1), "--input");
  }
}

absl::Status ParseAccuracyFlags(const std::vector<std::string>& accuracy,
                                converter::AccuracySpec& spec) {
  for (const std::string& text : accuracy) {
    OVFIX_RETURN_IF_ERROR(converter::AddAccuracyOption(text, spec));
  }
  return absl::OkStatus();
}

void AddConversionFlags(CLI::App* sub, ConversionFlags& f) {
  for (const OptionSpec& spec : rules::ConversionOptionTable()) {
    if (!spec.on_command_line) continue;
    const std::string flag = FlagName(spec), help(spec.help);
    CLI::Option* option = nullptr;
    if (spec.type == OptionSpec::Type::kBool) {
      option = sub->add_flag(flag, f.switches[std::string(spec.name)], help);
    } else if (spec.name == "target") {
      option = f.target_option = sub->add_option(flag, f.target, help);
    } else if (!Repeatable(spec)) {
      option = sub->add_option(flag, f.scalars[std::string(spec.name)], help);
    } else {
      std::vector<std::string>* list = BoundList(f, spec.name);
      if (list == nullptr) list = &f.values[std::string(spec.name)];
      option = sub->add_option(flag, *list, help);
    }
    // The value's form is the table's (the checks say nothing more in --help).
    auto quiet = [](CLI::Validator v) { return v.description(""); };
    if (spec.type == OptionSpec::Type::kEnum) {
      option->check(
          quiet(CLI::IsMember(std::vector<std::string>(spec.choices.begin(), spec.choices.end()))));
    } else if (spec.type == OptionSpec::Type::kInt) {
      option->check(quiet(CLI::PositiveNumber));
    } else if (spec.type == OptionSpec::Type::kDouble) {
      option->check(quiet(CLI::NonNegativeNumber));
    }
    if (!spec.value_name.empty()) option->type_name(std::string(spec.value_name));
    f.options[std::string(spec.name)] = option;
  }
  sub->add_flag("--verbose", f.verbose, "Print what each pass did on stderr");
}

converter::UserOptions GivenOptions(const ConversionFlags& f) {
  converter::UserOptions user;
  user.spelling = converter::UserOptions::Spelling::kFlag;
  for (const OptionSpec& spec : rules::ConversionOptionTable()) {
    if (!spec.on_command_line) continue;
    // The target is always one: as given, the default, or the one explain picked.
    std::vector<std::string> texts = spec.name == "target" ? std::vector{f.target} : Given(f, spec);
    if (!texts.empty()) user.given[std::string(spec.name)] = std::move(texts);
  }
  return user;
}

absl::Status ToPipelineOptions(const ConversionFlags& f, converter::PipelineOptions& p) {
  p.input_path = f.input;
  if (f.verbose) p.log = [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); };
  return converter::TranslateUserOptions(GivenOptions(f), p);
}

std::vector<std::string> FlagFiles(const ConversionFlags& f) {
  std::vector<std::string> files;
  if (absl::StrContains(f.target, '/') || absl::EndsWith(f.target, ".target")) {
    files.push_back(f.target);
  }
  files.insert(files.end(), f.rule_files.begin(), f.rule_files.end());
  files.insert(files.end(), f.calibration_data.begin(), f.calibration_data.end());
  for (const std::string& text : f.inputs) files.push_back(text.substr(text.find('=') + 1));
  return files;
}

}  // namespace ovfix::cli
