// The options that shape a conversion, shared by `convert` and `explain` so that explain sees
// what convert sees: target, rules, shapes (--batch, --input-shape), calibration inputs
// (--calibration-data, --input), fp16 choices, validation. Each command adds its own output
// options around them.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "cli/command_files.h"
#include "converter/pipeline.h"
#include "converter/user_options.h"
#include "rules/conversion_options.h"

namespace ovfix::cli {

// The flags are those of the option table (rules/conversion_options.h), registered from it.
struct ConversionFlags {
  std::string input;
  // The options the commands read themselves, bound to their table entries by name; the
  // target's default is the table's (the C++ API's and Python's are tested against it).
  std::string target = std::string(rules::FindOption("target")->default_text);
  std::vector<std::string> rule_files, disabled, keep_fp32, inputs, calibration_data;
  std::vector<std::string> accuracy;  // --accuracy, as given
  bool verbose = false;
  // Every other entry of the table as given: the texts of a list's or map's occurrences, the
  // last text of other options, and whether a bool's flag was given.
  std::map<std::string, std::vector<std::string>, std::less<>> values;
  std::map<std::string, std::string, std::less<>> scalars;
  std::map<std::string, bool, std::less<>> switches;
  // Each table entry's flag by option name (count() > 0: given, so it wins over the target).
  std::map<std::string, CLI::Option*, std::less<>> options;
  CLI::Option* target_option = nullptr;
};

// `--accuracy NAME=CRITERIA|CRITERIA` (repeatable), as convert, run and compare take it, and
// what the values say (errors: one line starting "--accuracy TEXT: ").
void AddAccuracyFlag(CLI::App* sub, std::vector<std::string>& accuracy);
// `--input NAME=FILE.pb` (repeatable), as run and compare take it, and the files those flags
// name, read by the command (named "--input" in messages).
void AddInputFileFlag(CLI::App* sub, std::vector<std::string>& inputs);
void ReadInputFiles(const std::vector<std::string>& inputs, converter::CommandFiles& files);
// `--device N` (an OpenCL device index) and `--threads N` (CPU worker threads), as run and
// compare take them.
void AddExecutorFlags(CLI::App* sub, int& device, int& threads);

absl::Status ParseAccuracyFlags(const std::vector<std::string>& accuracy,
                                converter::AccuracySpec& spec);

// Registers the table's command-line options on `sub` (not the model argument), plus
// --verbose.
void AddConversionFlags(CLI::App* sub, ConversionFlags& flags);

// The table's options the flags give, as texts: what converter::TranslateUserOptions reads
// (the C++ API hands it the same from ConversionOptions, api/convert.cc).
converter::UserOptions GivenOptions(const ConversionFlags& flags);

// The pipeline options the flags ask for (target, rules, shapes, calibration, fp16,
// validation), through TranslateUserOptions, plus the model and --verbose's log;
// InvalidArgument with a one-line message for a malformed option.
absl::Status ToPipelineOptions(const ConversionFlags& flags, converter::PipelineOptions& p);

// The files the flags name, for messages (cli/bad_input.h): target file, rule files,
// calibration folders, --input files.
std::vector<std::string> FlagFiles(const ConversionFlags& flags);

// "NAME=VALUE" split at the first '=' (file paths may contain one, input names hardly).
bool SplitAssignment(const std::string& text, std::string& name, std::string& value);

}  // namespace ovfix::cli
