// The conversion options, each declared once: its name (as target files spell it; the
// command line's flag is derived from it), type, default, one-line help, which steps read it,
// and where it may be set. The command line registers its flags from this table
// (cli/conversion_flags.cc), target files and rule conditions (`option("name")`) read and set
// options through it, and tests check that the C++ API's ConversionOptions has a field for
// every entry (tests/rules/conversion_options_test.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "rules/pass.h"

namespace ovfix::rules {

struct OptionSpec {
  enum class Type { kBool, kInt, kDouble, kEnum, kString, kList, kMap };
  std::string_view name = {};  // snake_case
  Type type = Type::kString;
  std::vector<std::string_view> choices = {};  // kEnum
  std::string_view default_text = {};          // the default as text; empty: none (or the target's)
  std::string_view value_name = {};            // what a value looks like on the command line ("N")
  std::string_view help = {};                  // one line, as `ovfix convert --help` shows it
  // What reads it besides the passes, which declare their options themselves
  // (rules/passes/registry.h; OptionReaders lists both): phases, rule conditions.
  std::string_view read_by = {};
  // Where it may be set: target files (`option NAME VALUE`), the command line (FlagName),
  // the C++ API (the field of ovfix::ConversionOptions named here; empty: none).
  bool in_target_files = false;
  bool on_command_line = true;
  std::string_view api_field = {};
  // Another spelling of the option named here (`fp16 true` is `precision fp16`): setting
  // either on the command line keeps the target's value of both.
  std::string_view same_as = {};
  // Sets the option in ConvertOptions from one value (list and map options append); null
  // for the options the pipeline itself reads (PipelineOptions: rule files, calibration,
  // tolerance, repair), which the command line and the API hand over typed.
  absl::Status (*set)(std::string_view text, ConvertOptions& options) = nullptr;
  // The option's value as text for rule conditions (`option("broadcast")`); null: not
  // readable there.
  std::string (*get)(const ConvertOptions& options) = nullptr;
};

// Every option, in the order `--help` lists them.
const std::vector<OptionSpec>& ConversionOptionTable();

// The entry named `name`, or null.
const OptionSpec* FindOption(std::string_view name);

// The command-line flag: "--" and the name with '-' for '_'; "--no-NAME" for a bool whose
// default is true (the flag turns it off).
std::string FlagName(const OptionSpec& spec);

// Sets option `name` from `text`: NotFound for an unknown name (the message lists the
// options), InvalidArgument saying what is wrong with the value (without the option's name).
absl::Status SetOption(std::string_view name, std::string_view text, ConvertOptions& options);

// The value of option `name` as text (rule conditions): NotFound when no entry of that name
// is readable.
absl::StatusOr<std::string> GetOption(std::string_view name, const ConvertOptions& options);

}  // namespace ovfix::rules
