#include "converter/target.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ir/status_macros.h"
#include "rules/conversion_options.h"
#include "rules/embedded_files.h"
#include "rules/passes/registry.h"

namespace ovfix::converter {

using rules::ConvertOptions;
using rules::EmbeddedFile;
using rules::FindEmbeddedFile;
using rules::NativePasses;
using rules::NativePassInfo;
namespace {

// Debian's abseil has its own string_view: text is handled as absl::string_view here.
using Text = absl::string_view;

Text ToText(std::string_view s) { return Text(s.data(), s.size()); }

// Sets one option from the table (rules/conversion_options.h); the error says what is wrong
// with the name or the value.
absl::Status SetOption(const std::string& key, const std::string& v, ConvertOptions& o) {
  const rules::OptionSpec* spec = rules::FindOption(key);
  if (spec != nullptr && !spec->in_target_files) {
    return absl::InvalidArgumentError(absl::StrCat("'", key, "' is not set by target files (",
                                                   rules::FlagName(*spec),
                                                   " on the command line)"));
  }
  return rules::SetOption(key, v, o);
}

std::string Stem(std::string_view path) {
  return std::filesystem::path(std::string(path)).stem().string();
}

}  // namespace

absl::StatusOr<Target> ParseTarget(std::string_view path, std::string_view text,
                                   const std::vector<std::string>& more_passes) {
  Target t;
  t.path = std::string(path);
  t.name = Stem(path);
  std::vector<std::string> errors;
  int line_number = 0;
  for (Text raw : absl::StrSplit(ToText(text), '\n')) {
    ++line_number;
    Text line = raw.substr(0, raw.find('#'));
    const size_t indent = line.find_first_not_of(" \t");
    if (indent == Text::npos) continue;
    line = absl::StripAsciiWhitespace(line);
    std::vector<std::string> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const std::string where = absl::StrCat(t.path, ":", line_number, ":", indent + 1, ": ");
    const std::string& keyword = words[0];
    if (keyword == "description" || keyword == "fp32_runtime") {
      (keyword == "description" ? t.description : t.fp32_runtime) =
          std::string(absl::StripAsciiWhitespace(line.substr(keyword.size())));
    } else if (keyword == "pass" || keyword == "rules") {
      if (words.size() != 2) {
        errors.push_back(absl::StrCat(where, "'", keyword, "' takes one name"));
        continue;
      }
      const bool pass = keyword == "pass";
      if (pass && rules::FindNativePass(words[1]) == nullptr &&
          std::find(more_passes.begin(), more_passes.end(), words[1]) == more_passes.end()) {
        std::vector<std::string> names;
        for (const NativePassInfo& p : NativePasses()) names.push_back(p.name);
        errors.push_back(absl::StrCat(where, "unknown pass '", words[1],
                                      "' (the passes: ", absl::StrJoin(names, ", "), ")"));
        continue;
      }
      t.steps.push_back(
          {pass ? TargetStep::Kind::kPass : TargetStep::Kind::kRules, words[1], line_number});
    } else if (keyword == "option") {
      if (words.size() != 3) {
        errors.push_back(absl::StrCat(where, "'option' takes a name and a value"));
        continue;
      }
      ConvertOptions scratch;
      if (absl::Status s = SetOption(words[1], words[2], scratch); !s.ok()) {
        errors.push_back(absl::StrCat(where, "option ", words[1], ": ", s.message()));
        continue;
      }
      t.options.emplace_back(words[1], words[2]);
    } else {
      errors.push_back(
          absl::StrCat(where, "unknown keyword '", keyword,
                       "' (expected description, fp32_runtime, pass, rules or option)"));
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  return t;
}

absl::StatusOr<Target> LoadTarget(std::string_view name) {
  const bool is_file = name.find('/') != std::string_view::npos ||
                       (name.size() > 7 && name.substr(name.size() - 7) == ".target");
  if (!is_file) {
    const std::string path = absl::StrCat("targets/", std::string(name), ".target");
    if (const EmbeddedFile* f = FindEmbeddedFile(path); f != nullptr) {
      return ParseTarget(path, f->contents);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown target '", std::string(name), "' (the targets: ",
        absl::StrJoin(rules::BuiltinTargetNames(), ", "), "; or give a .target file)"));
  }
  std::ifstream in{std::string(name)};
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(name), ": cannot read the target file"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseTarget(name, text.str());
}

std::vector<Target> BuiltinTargets() {
  std::vector<Target> targets;
  for (const std::string& name : rules::BuiltinTargetNames()) {
    const std::string path = absl::StrCat("targets/", name, ".target");
    absl::StatusOr<Target> t = ParseTarget(path, FindEmbeddedFile(path)->contents);
    // One that does not parse is left out (tests/converter/targets_test.cc fails on it).
    if (t.ok()) targets.push_back(*std::move(t));
  }
  return targets;
}

absl::Status ApplyTargetOptions(const Target& target, const std::set<std::string>& set_by_user,
                                ConvertOptions& options) {
  for (const auto& [key, value] : target.options) {
    const rules::OptionSpec* spec = rules::FindOption(key);
    if (set_by_user.contains(key) ||
        (spec != nullptr && set_by_user.contains(std::string(spec->same_as)))) {
      continue;
    }
    if (absl::Status s = SetOption(key, value, options); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(target.path, ": option ", key, ": ", s.message()));
    }
  }
  if (Fp32ByRequest(target, set_by_user, options)) options.islands_honoured = true;
  return absl::OkStatus();
}

bool Fp32ByRequest(const Target& target, const std::set<std::string>& set_by_user,
                   const ConvertOptions& options) {
  ConvertOptions target_only;  // the target's own values (checked when the file was read)
  for (const auto& [key, value] : target.options) SetOption(key, value, target_only).IgnoreError();
  return !target_only.islands_honoured && options.precision == ConvertOptions::Precision::kFp32 &&
         (set_by_user.contains("precision") || set_by_user.contains("fp16"));
}

}  // namespace ovfix::converter
