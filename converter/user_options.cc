#include "converter/user_options.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "converter/accuracy.h"
#include "ir/status_macros.h"
#include "rules/conversion_options.h"

namespace ovfix::converter {
namespace {

using rules::OptionSpec;
using Spelling = UserOptions::Spelling;

// The option as an error names it: "--tolerance x" (a bool's flag alone) or "tolerance".
std::string Where(const OptionSpec& spec, const std::string& text, Spelling spelling) {
  if (spelling == Spelling::kName) return std::string(spec.name);
  if (spec.type == OptionSpec::Type::kBool) return rules::FlagName(spec);
  return absl::StrCat(rules::FlagName(spec), " ", text);
}

absl::Status Invalid(const OptionSpec& spec, const std::string& text, Spelling spelling,
                     const absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(Where(spec, text, spelling), ": ", message));
}

// The words the table's bools take (rules/conversion_options.cc).
absl::StatusOr<bool> ParseBool(const std::string& text) {
  if (text == "true" || text == "on" || text == "1") return true;
  if (text == "false" || text == "off" || text == "0") return false;
  return absl::InvalidArgumentError(absl::StrCat("expected true or false, got '", text, "'"));
}

// An entry the pipeline reads itself (no setter: its value is not a pass's option), from its
// texts into `p`.
absl::Status SetPipelineEntry(const OptionSpec& spec, const std::vector<std::string>& texts,
                              Spelling spelling, PipelineOptions& p) {
  const std::string_view name = spec.name;
  if (name == "rules") {
    p.rule_files.insert(p.rule_files.end(), texts.begin(), texts.end());
  } else if (name == "calibration_data") {
    p.calibration_data.insert(p.calibration_data.end(), texts.begin(), texts.end());
  } else if (name == "input") {
    // NAME=FILE, repeatable: naming an input again starts another set, so that one flag per
    // input and set gives several sets without a folder.
    for (const std::string& text : texts) {
      const size_t eq = text.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
        return Invalid(spec, text, spelling, "expected NAME=FILE.pb");
      }
      const std::string input = text.substr(0, eq);
      if (p.input_sets.empty() || p.input_sets.back().contains(input)) p.input_sets.emplace_back();
      p.input_sets.back()[input] = text.substr(eq + 1);
    }
  } else if (name == "tolerance") {
    for (const std::string& text : texts) {
      double tolerance = 0;
      if (!absl::SimpleAtod(text, &tolerance)) return Invalid(spec, text, spelling, "not a number");
      if (!(tolerance >= 0)) return Invalid(spec, text, spelling, "must be >= 0");
      p.tolerance = tolerance;
    }
  } else if (name == "accuracy") {
    for (const std::string& text : texts) {
      OVFIX_RETURN_IF_ERROR(AddAccuracyOption(text, p.accuracy));
    }
  } else if (name == "repair") {
    for (const std::string& text : texts) {
      absl::StatusOr<bool> repair = ParseBool(text);
      if (!repair.ok()) return Invalid(spec, text, spelling, repair.status().message());
      p.repair = *repair;
    }
  } else {
    // A new entry without a setter needs its line here: the pipeline would not see it.
    return absl::InternalError(absl::StrCat("option '", std::string(name),
                                            "' has no setter and no translation (converter/"
                                            "user_options.cc)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status TranslateUserOptions(const UserOptions& user, PipelineOptions& p) {
  for (const auto& [name, texts] : user.given) {
    if (rules::FindOption(name) == nullptr) {
      return absl::InternalError(absl::StrCat("no conversion option is named '", name, "'"));
    }
  }
  for (const OptionSpec& spec : rules::ConversionOptionTable()) {
    auto it = user.given.find(spec.name);
    if (it == user.given.end() || it->second.empty()) continue;
    const std::vector<std::string>& texts = it->second;
    if (spec.set == nullptr) {
      OVFIX_RETURN_IF_ERROR(SetPipelineEntry(spec, texts, user.spelling, p));
    } else {
      for (const std::string& text : texts) {
        if (absl::Status s = spec.set(text, p.convert); !s.ok()) {
          return Invalid(spec, text, user.spelling, s.message());
        }
      }
    }
    p.set_by_user.insert(std::string(spec.name));
  }
  return absl::OkStatus();
}

}  // namespace ovfix::converter
