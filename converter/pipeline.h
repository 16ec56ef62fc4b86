// The conversion pipeline behind `ovfix convert`: load the target, run its passes and rule
// sets (plus --rules files, minus --disable) with every rewrite validated against a
// reference run, compare the final model end to end, check it with onnx's checker, and
// report. Saving is the caller's (it writes only when the report says all is well).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/accuracy.h"
#include "converter/calibration_data.h"
#include "converter/report.h"
#include "ir/model.h"
#include "ir/model_io.h"
#include "rules/pass.h"

namespace ovfix::converter {

struct ConversionPlan;  // converter/conversion_plan.h

struct PipelineOptions {
  rules::ConvertOptions convert;
  // Option names (as in target files) given on the command line: they win over the
  // target's options.
  std::set<std::string> set_by_user;
  std::vector<std::string> rule_files;  // --rules, in order
  std::string input_path, output_path;  // for the report
  // End-to-end tolerance (relative to each output's range); < 0 picks 1e-4, or 1e-2 when
  // the conversion changed precision (fp16).
  double tolerance = -1;
  // --accuracy: criteria per output and a default for the rest (converter/accuracy.h).
  // Without a default: `max:tolerance` when --tolerance is given, else the default for
  // conversions that change precision (DefaultPrecisionCriteria), else max:1e-4.
  AccuracySpec accuracy;
  // Calibration data: ONNX test-data folders (--calibration-data) and --input sets (input
  // name -> file; convert.input_files is one more). None: random inputs.
  std::vector<std::string> calibration_data;
  std::vector<InputFiles> input_sets;
  // Beyond the tolerance after an fp16 conversion: keep the nodes responsible in fp32 and
  // convert again until within it.
  bool repair = true;
  // Save the converted model to output_path when it keeps the outputs, and report the
  // end-to-end error measured on the file written.
  bool write_output = false;
  SaveOptions save;
  // The JSON report (ReportToJson), written with the model: a model is kept only once its
  // report is written too, and a report only with its model (both or neither).
  std::string report_path;
  // Seconds the caller spent reading the model (and checking its files) before ConvertModel:
  // the report's time counts them as "load".
  double load_seconds = 0;
  bool progress = false;  // a status line on stderr (when it is a terminal; StatusLine)
  // Called before each step with the model as that step sees it (reference-run shape facts
  // included) and the options the passes get; returning true ends the conversion there, with
  // nothing written (`explain` looks at what a rule sees at its step).
  std::function<bool(const std::string& step, Model& model, const rules::ConvertOptions& options)>
      before_step;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// Converts `model` in place. Errors: InvalidArgument for bad input or options (exit 2);
// Internal when the result fails onnx's checker and the model read (options.input_path)
// does not, which is a bug in ovfix.
// `report.outputs_match` is false when the end-to-end comparison found changed outputs.
absl::StatusOr<ConversionReport> ConvertModel(Model& model, const PipelineOptions& options);
// The same, executing `plan`, made by PlanConversion from the same options and model (the
// command line prints its warnings, or the plan itself, before converting).
absl::StatusOr<ConversionReport> ConvertModel(Model& model, const PipelineOptions& options,
                                              const ConversionPlan& plan);

// onnx's checker::check_model plus strict shape inference with type checks (what
// onnx.checker.check_model(full_check=True) does), on a proto whose large weights are typed
// inputs (rules/light_proto.h): the weights themselves are bytes ovfix wrote.
absl::Status CheckModel(const Model& model);

}  // namespace ovfix::converter
