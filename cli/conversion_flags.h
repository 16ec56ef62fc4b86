// The options that shape a conversion, shared by `convert` and `explain` so that explain sees
// what convert sees: target, rules, shapes (--batch, --input-shape), calibration inputs
// (--calibration-data, --input), fp16 choices, validation. Each command adds its own output
// options around them.
#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "converter/pipeline.h"

namespace ovfix::cli {

struct ConversionFlags {
  std::string input;
  std::string target = "generic";
  std::vector<std::string> rule_files, disabled, input_shapes, keep_fp32, inputs;
  int64_t batch = -1;
  bool keep_io_types = false;
  std::string broadcast = "rank";
  bool lower_conv3d = false;
  bool no_validate = false;
  std::vector<std::string> calibration_data;
  double tolerance = -1;
  std::vector<std::string> accuracy;  // --accuracy, as given
  bool no_repair = false;
  bool verbose = false;
  // Options whose presence on the command line overrides the target's.
  CLI::Option* target_option = nullptr;
  CLI::Option* batch_option = nullptr;
  CLI::Option* keep_io_option = nullptr;
  CLI::Option* broadcast_option = nullptr;
  CLI::Option* lower_option = nullptr;
};

// `--accuracy NAME=CRITERIA|CRITERIA` (repeatable), as convert, run and compare take it, and
// what the values say (errors: one line starting "--accuracy TEXT: ").
void AddAccuracyFlag(CLI::App* sub, std::vector<std::string>& accuracy);
absl::Status ParseAccuracyFlags(const std::vector<std::string>& accuracy,
                                converter::AccuracySpec& spec);

// Registers the options on `sub` (not the model argument).
void AddConversionFlags(CLI::App* sub, ConversionFlags& flags);

// The pipeline options the flags ask for (target, rules, shapes, calibration, fp16,
// validation); InvalidArgument with a one-line message for a malformed option.
absl::Status ToPipelineOptions(const ConversionFlags& flags, converter::PipelineOptions& p);

// The files the flags name, for messages (converter/bad_input.h): target file, rule files,
// calibration folders, --input files.
std::vector<std::string> FlagFiles(const ConversionFlags& flags);

// "NAME=VALUE" split at the first '=' (file paths may contain one, input names hardly).
bool SplitAssignment(const std::string& text, std::string& name, std::string& value);

}  // namespace ovfix::cli
