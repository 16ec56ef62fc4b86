// `ovfix convert IN OUT [--target NAME] ...`: load, run the target's rewrite pipeline with
// validated rewrites, and save. The command owns what every output needs: refusing to
// overwrite the input, writing only when the conversion kept the outputs (exit 1 when it
// did not), atomic writes, external data, the JSON report.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "converter/accuracy.h"
#include "converter/command.h"
#include "converter/command_files.h"
#include "converter/pipeline.h"
#include "converter/save_progress.h"
#include "ir/atomic_file.h"
#include "ir/model_io.h"

namespace ovfix::cli {
namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  bool external_data = false;  // with external_option: --external-data or --no-external-data
  std::string external_location;
  bool in_place = false;
  std::string target = "generic";
  std::vector<std::string> rule_files, disabled, input_shapes, keep_fp32, inputs;
  int64_t batch = -1;
  bool keep_io_types = false;
  std::string broadcast = "rank";
  bool lower_conv3d = false;
  bool no_validate = false;
  std::string report;
  std::vector<std::string> calibration_data;
  double tolerance = -1;
  std::vector<std::string> accuracy;
  bool no_repair = false;
  bool verbose = false;
  // Options whose presence on the command line overrides the target's.
  CLI::Option* batch_option = nullptr;
  CLI::Option* keep_io_option = nullptr;
  CLI::Option* broadcast_option = nullptr;
  CLI::Option* lower_option = nullptr;
  CLI::Option* external_option = nullptr;
};

int Fail(const std::string& message) { return BadInput("convert", message); }

// The files a conversion reads or writes: its errors name one of them, the model when they
// name none (converter/bad_input.h).
std::vector<std::string> Files(const ConvertOptions& o) {
  std::vector<std::string> files = {o.input, o.output, o.report};
  if (absl::StrContains(o.target, '/') || absl::EndsWith(o.target, ".target")) {
    files.push_back(o.target);
  }
  files.insert(files.end(), o.rule_files.begin(), o.rule_files.end());
  files.insert(files.end(), o.calibration_data.begin(), o.calibration_data.end());
  for (const std::string& text : o.inputs) files.push_back(text.substr(text.find('=') + 1));
  return files;
}

// "NAME=VALUE" split at the first '=' (file paths may contain one, input names hardly).
bool SplitAssignment(const std::string& text, std::string& name, std::string& value) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return false;
  name = text.substr(0, eq);
  value = text.substr(eq + 1);
  return true;
}

absl::Status ParseInputShapes(const std::vector<std::string>& given,
                              std::map<std::string, std::vector<int64_t>>& out) {
  for (const std::string& text : given) {
    std::string name, dims;
    if (!SplitAssignment(text, name, dims)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input-shape ", text, ": expected NAME=DIMS, e.g. x=1x3x224x224"));
    }
    std::vector<int64_t> shape;
    for (absl::string_view d : absl::StrSplit(dims, absl::ByAnyChar("x,"))) {
      int64_t n;
      if (!absl::SimpleAtoi(d, &n) || n < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--input-shape ", text, ": '", std::string(d), "' is not a dim (use 1x3x224x224)"));
      }
      shape.push_back(n);
    }
    out[name] = shape;
  }
  return absl::OkStatus();
}

// Every file the conversion reads and writes: nothing is written when an output would
// replace an input or another output (the input model and its data only with --in-place).
absl::Status CheckFiles(const ConvertOptions& o, const Model& model, const SaveOptions& save) {
  namespace fs = std::filesystem;
  if (!o.in_place && SameFile(o.input, o.output)) {
    return absl::InvalidArgumentError(
        o.output + ": output is the input model; pass --in-place to overwrite it");
  }
  converter::CommandFiles files;
  files.ReadModel(o.input, model, "the input model");
  for (const std::string& f : o.rule_files) files.Read(f, "--rules");
  if (fs::exists(o.target)) files.Read(o.target, "--target");
  for (const std::string& text : o.inputs) {
    std::string name, file;
    if (SplitAssignment(text, name, file)) files.Read(file, "--input " + name);
  }
  for (const std::string& dir : o.calibration_data) files.ReadTestData(dir, "--calibration-data");
  const std::string model_what = "the output model";
  if (o.in_place) {
    files.WriteInPlace(o.output, model_what, {o.input});
  } else {
    files.Write(o.output, model_what);
  }
  if (save.external_data != ExternalDataMode::kNever) {
    absl::StatusOr<std::string> data = ExternalDataFile(o.output, save);
    if (!data.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(o.output, ": ", data.status().message()));
    }
    const std::string what =
        o.external_location.empty() ? "the external data file" : "--external-data-name";
    if (o.in_place) {
      files.WriteInPlace(*data, what, model.external_data_files());
    } else {
      files.Write(*data, what);
    }
  }
  if (!o.report.empty()) files.Write(o.report, "--report");
  return files.Check();
}

int RunConvert(const ConvertOptions& o) {
  namespace fs = std::filesystem;
  if (fs::is_directory(o.output)) return Fail(o.output + ": is a folder, not a file name");
  if (o.external_option->count() > 0 && !o.external_data && !o.external_location.empty()) {
    return Fail("--external-data-name names a data file that --no-external-data refuses");
  }

  converter::PipelineOptions p;
  p.input_path = o.input;
  p.output_path = o.output;
  p.rule_files = o.rule_files;
  p.progress = true;
  if (o.verbose) p.log = [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); };
  rules::ConvertOptions& c = p.convert;
  c.target = o.target;
  c.batch = o.batch;
  c.keep_fp32 = o.keep_fp32;
  c.keep_io_types = o.keep_io_types;
  // --broadcast is checked against the choices as it is read; this cannot fail.
  absl::StatusOr<rules::ConvertOptions::Broadcast> broadcast = rules::ParseBroadcast(o.broadcast);
  if (!broadcast.ok()) return Fail("--broadcast: " + std::string(broadcast.status().message()));
  c.broadcast = *broadcast;
  c.lower_conv3d_unit_kernel = o.lower_conv3d;
  c.disabled = o.disabled;
  c.validate = !o.no_validate;
  if (o.batch_option->count() > 0) p.set_by_user.insert("batch");
  if (o.keep_io_option->count() > 0) p.set_by_user.insert("keep_io_types");
  if (o.broadcast_option->count() > 0) p.set_by_user.insert("broadcast");
  if (o.lower_option->count() > 0) p.set_by_user.insert("lower_conv3d_unit_kernel");
  if (absl::Status s = ParseInputShapes(o.input_shapes, c.input_shapes); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  // --input NAME=FILE, repeatable; naming an input again starts another set.
  for (const std::string& text : o.inputs) {
    std::string name, file;
    if (!SplitAssignment(text, name, file)) {
      return Fail(absl::StrCat("--input ", text, ": expected NAME=FILE.pb"));
    }
    if (p.input_sets.empty() || p.input_sets.back().contains(name)) p.input_sets.emplace_back();
    p.input_sets.back()[name] = file;
  }
  p.calibration_data = o.calibration_data;
  p.tolerance = o.tolerance;
  for (const std::string& text : o.accuracy) {
    if (absl::Status s = converter::AddAccuracyOption(text, p.accuracy); !s.ok()) {
      return Fail(std::string(s.message()));
    }
  }
  p.repair = !o.no_repair;
  p.write_output = true;
  if (o.external_option->count() > 0) {
    p.save.external_data = o.external_data ? ExternalDataMode::kAlways : ExternalDataMode::kNever;
  } else if (!o.external_location.empty()) {
    p.save.external_data = ExternalDataMode::kAlways;
  }
  p.save.external_location = o.external_location;
  SaveProgress progress(stderr, "writing " + o.output);
  p.save.progress = [&progress](uint64_t done, uint64_t total) { progress.Update(done, total); };

  auto model = LoadModel(o.input);
  if (!model.ok()) return BadInput("convert", model.status().message(), Files(o));
  if (absl::Status s = CheckFiles(o, **model, p.save); !s.ok()) {
    return BadInput("convert", s.message(), Files(o));
  }
  absl::StatusOr<converter::ConversionReport> report = converter::ConvertModel(**model, p);
  if (!report.ok()) return BadInput("convert", report.status().message(), Files(o));
  std::printf("%s", converter::SummaryTable(*report).c_str());
  if (!o.report.empty()) {
    const std::string json = converter::ReportToJson(*report);
    absl::Status s = WriteFileAtomically(o.report, [&](std::ostream& out) {
      out << json;
      return out ? absl::OkStatus() : absl::InternalError("write failed");
    });
    if (!s.ok()) return Fail(absl::StrCat(o.report, ": ", s.message()));
  }
  if (!report->outputs_match) {
    std::fprintf(stderr,
                 "ovfix convert: the converted model's outputs do not meet the accuracy criteria "
                 "(see above); %s was not written\n",
                 o.output.c_str());
    return kExitMismatch;
  }
  std::printf("wrote %s (target %s)\n", o.output.c_str(), o.target.c_str());
  return kExitOk;
}

}  // namespace

Command AddConvertCommand(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  auto* sub = app.add_subcommand("convert", "Rewrite a model for a target and save it");
  sub->add_option("input", o->input, "The .onnx model to read")->required();
  sub->add_option("output", o->output, "Where to write the result")->required();
  sub->add_option("--target", o->target,
                  "Target profile: gpu-fp16, tensorrt, openvino-gpu, ncnn-vulkan, generic, "
                  "or a .target file (default generic)");
  sub->add_option("--rules", o->rule_files, "A rule file to apply too (repeatable)");
  sub->add_option("--disable", o->disabled,
                  "Skip a pass, rule set, rule family or rule (repeatable)");
  o->batch_option = sub->add_option("--batch", o->batch, "Fix the first dim of dynamic inputs to N")
                        ->check(CLI::PositiveNumber);
  sub->add_option("--input-shape", o->input_shapes,
                  "Fix an input's shape: NAME=1x3x224x224 (repeatable)");
  sub->add_option("--keep-fp32", o->keep_fp32,
                  "Keep nodes whose whole name or op type matches REGEX in fp32 (repeatable)");
  o->keep_io_option = sub->add_flag("--keep-io-types", o->keep_io_types,
                                    "Keep fp32 model inputs and outputs (Casts inside)");
  o->broadcast_option = sub->add_option("--broadcast", o->broadcast,
                                        "rank: equal-rank element-wise inputs; full: identical "
                                        "shapes (Expand)")
                            ->check(CLI::IsMember({"rank", "full"}));
  o->lower_option = sub->add_flag("--lower-conv3d-unit-kernel", o->lower_conv3d,
                                  "Rewrite Conv3D with a unit kernel dim as Conv2D");
  sub->add_flag("--no-validate", o->no_validate,
                "Do not run the model: no validation, no fp16 calibration");
  sub->add_option("--report", o->report, "Write a JSON report of every rewrite and fp32 island");
  sub->add_option("--input", o->inputs,
                  "Reference input for validation: NAME=FILE.pb (repeatable; naming an input "
                  "again starts another set; default: random inputs from a fixed seed)");
  sub->add_option("--calibration-data", o->calibration_data,
                  "ONNX test-data folder (test_data_set_*/input_K.pb or input_K.pb) to "
                  "validate, calibrate and repair on (repeatable)");
  sub->add_option("--tolerance", o->tolerance,
                  "Judge every output by its worst element relative to its range: the same as "
                  "--accuracy max:X (default: --accuracy's default for fp16 conversions, "
                  "max:1e-4 otherwise)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--accuracy", o->accuracy,
                  "How outputs are judged: NAME=CRITERIA for one output, CRITERIA for the "
                  "others (repeatable); CRITERIA is max:B, mean:B, p99:B, p99.9:B, "
                  "beyond@E:S, topK:S, mask@T:S or boxes@IOU:S, joined by ','. Default for "
                  "fp16: max:0.1,p99:0.01,mean:0.002, or max:0.01 for outputs of fewer than 100 "
                  "elements (docs/validation.md)");
  sub->add_flag("--no-repair", o->no_repair,
                "Report an fp16 conversion beyond the tolerance instead of keeping the nodes "
                "responsible in fp32");
  sub->add_flag("--verbose", o->verbose, "Print what each pass did on stderr");
  o->external_option = sub->add_flag(
      "--external-data,!--no-external-data", o->external_data,
      "Write weights to a data file beside the model, or (--no-external-data) all inline. "
      "Default: as the input model has them, and a data file over 2 GB");
  sub->add_option("--external-data-name", o->external_location,
                  "File name of the external data, in the output's folder (default: "
                  "OUTPUT_NAME.data); implies --external-data");
  sub->add_flag("--in-place", o->in_place, "Allow the output to overwrite the input");
  return {sub, [o] { return RunConvert(*o); }, [o] { return Files(*o); }};
}

}  // namespace ovfix::cli
