#include "converter/conversion_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "converter/accuracy.h"
#include "ir/status_macros.h"

namespace ovfix::cli {
namespace {

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

}  // namespace

bool SplitAssignment(const std::string& text, std::string& name, std::string& value) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return false;
  name = text.substr(0, eq);
  value = text.substr(eq + 1);
  return true;
}

void AddAccuracyFlag(CLI::App* sub, std::vector<std::string>& accuracy) {
  sub->add_option("--accuracy", accuracy,
                  "How outputs are judged: NAME=CRITERIA for one output, CRITERIA for the "
                  "others (repeatable); CRITERIA is max:B, mean:B, p99:B, p99.9:B, "
                  "beyond@E:S, topK:S, mask@T:S or boxes@IOU:S, joined by ','. Default where "
                  "fp16 is involved: max:0.1,p99:0.01,mean:0.002, or max:0.01 for outputs of "
                  "fewer than 100 elements; max:1e-4 otherwise (docs/validation.md)");
}

absl::Status ParseAccuracyFlags(const std::vector<std::string>& accuracy,
                                converter::AccuracySpec& spec) {
  for (const std::string& text : accuracy) {
    OVFIX_RETURN_IF_ERROR(converter::AddAccuracyOption(text, spec));
  }
  return absl::OkStatus();
}

void AddConversionFlags(CLI::App* sub, ConversionFlags& f) {
  f.target_option = sub->add_option("--target", f.target,
                                    "Target profile: gpu-fp16, tensorrt, openvino-gpu, "
                                    "ncnn-vulkan, generic, or a .target file (default generic)");
  sub->add_option("--rules", f.rule_files, "A rule file to apply too (repeatable)");
  sub->add_option("--disable", f.disabled,
                  "Skip a pass, rule set, rule family or rule (repeatable)");
  f.batch_option = sub->add_option("--batch", f.batch, "Fix the first dim of dynamic inputs to N")
                       ->check(CLI::PositiveNumber);
  sub->add_option("--input-shape", f.input_shapes,
                  "Fix an input's shape: NAME=1x3x224x224 (repeatable)");
  sub->add_option("--keep-fp32", f.keep_fp32,
                  "Keep nodes whose whole name or op type matches REGEX in fp32 (repeatable)");
  f.keep_io_option = sub->add_flag("--keep-io-types", f.keep_io_types,
                                   "Keep fp32 model inputs and outputs (Casts inside)");
  f.broadcast_option = sub->add_option("--broadcast", f.broadcast,
                                       "rank: equal-rank element-wise inputs; full: identical "
                                       "shapes (Expand)")
                           ->check(CLI::IsMember({"rank", "full"}));
  f.lower_option = sub->add_flag("--lower-conv3d-unit-kernel", f.lower_conv3d,
                                 "Rewrite Conv3D with a unit kernel dim as Conv2D");
  sub->add_flag("--no-validate", f.no_validate,
                "Do not run the model: no validation, no fp16 calibration");
  sub->add_option("--input", f.inputs,
                  "Reference input for validation: NAME=FILE.pb (repeatable; naming an input "
                  "again starts another set; default: random inputs from a fixed seed)");
  sub->add_option("--calibration-data", f.calibration_data,
                  "ONNX test-data folder (test_data_set_*/input_K.pb or input_K.pb) to "
                  "validate, calibrate and repair on (repeatable)");
  sub->add_option("--tolerance", f.tolerance,
                  "Judge every output by its worst element relative to its range: the same as "
                  "--accuracy max:X (default: --accuracy's default for fp16 conversions, "
                  "max:1e-4 otherwise)")
      ->check(CLI::NonNegativeNumber);
  AddAccuracyFlag(sub, f.accuracy);
  sub->add_flag("--no-repair", f.no_repair,
                "Report an fp16 conversion beyond the tolerance instead of keeping the nodes "
                "responsible in fp32");
  sub->add_flag("--verbose", f.verbose, "Print what each pass did on stderr");
}

absl::Status ToPipelineOptions(const ConversionFlags& f, converter::PipelineOptions& p) {
  p.input_path = f.input;
  p.rule_files = f.rule_files;
  if (f.verbose) p.log = [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); };
  rules::ConvertOptions& c = p.convert;
  c.target = f.target;
  c.batch = f.batch;
  c.keep_fp32 = f.keep_fp32;
  c.keep_io_types = f.keep_io_types;
  // --broadcast is checked against the choices as it is read; this cannot fail.
  absl::StatusOr<rules::ConvertOptions::Broadcast> broadcast = rules::ParseBroadcast(f.broadcast);
  if (!broadcast.ok()) {
    return absl::InvalidArgumentError("--broadcast: " + std::string(broadcast.status().message()));
  }
  c.broadcast = *broadcast;
  c.lower_conv3d_unit_kernel = f.lower_conv3d;
  c.disabled = f.disabled;
  c.validate = !f.no_validate;
  if (f.batch_option->count() > 0) p.set_by_user.insert("batch");
  if (f.keep_io_option->count() > 0) p.set_by_user.insert("keep_io_types");
  if (f.broadcast_option->count() > 0) p.set_by_user.insert("broadcast");
  if (f.lower_option->count() > 0) p.set_by_user.insert("lower_conv3d_unit_kernel");
  if (absl::Status s = ParseInputShapes(f.input_shapes, c.input_shapes); !s.ok()) return s;
  // --input NAME=FILE, repeatable; naming an input again starts another set.
  for (const std::string& text : f.inputs) {
    std::string name, file;
    if (!SplitAssignment(text, name, file)) {
      return absl::InvalidArgumentError(absl::StrCat("--input ", text, ": expected NAME=FILE.pb"));
    }
    if (p.input_sets.empty() || p.input_sets.back().contains(name)) p.input_sets.emplace_back();
    p.input_sets.back()[name] = file;
  }
  p.calibration_data = f.calibration_data;
  p.tolerance = f.tolerance;
  OVFIX_RETURN_IF_ERROR(ParseAccuracyFlags(f.accuracy, p.accuracy));
  p.repair = !f.no_repair;
  return absl::OkStatus();
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
