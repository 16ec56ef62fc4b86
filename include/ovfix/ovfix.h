// ovfix as a library: convert, run and compare ONNX models from C++ (docs/api.md).
//
// The API is a thin layer over the pipeline behind `ovfix convert` (converter/pipeline.h):
// the same options give the same bytes as the command line. Models and tensors cross it as
// onnx::ModelProto and onnx::TensorProto, so the API's types are ONNX's own and its headers
// hold nothing of ovfix's internals. Errors are absl::Status with a one-line message that
// names the file or the option and the problem (InvalidArgument for bad input or options).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

// The library's version ("0.1.0"), the same as `ovfix --version`.
const char* Version();

// Tensors by name: graph inputs or outputs.
using NamedTensors = std::map<std::string, onnx::TensorProto>;

// What `ovfix convert` takes on its command line, one member per option of the table
// (ConversionOptionList; SetOption sets one by name); an option left unset is the target's.
struct ConversionOptions {
  std::string target = "generic";  // a built-in profile (gpu-fp16, tensorrt...) or a .target file
  std::optional<int64_t> batch;    // --batch N
  std::optional<int64_t> opset;    // --opset N: write at ai.onnx opset N (7-26)
  std::map<std::string, std::vector<int64_t>> input_shapes;  // --input-shape NAME=1x3x224x224
  std::vector<std::string> keep_fp32;                        // --keep-fp32 REGEX
  std::optional<bool> keep_io_types;                         // --keep-io-types
  std::optional<std::string> broadcast;                      // --broadcast rank|full
  std::optional<bool> lower_conv3d_unit_kernel;              // --lower-conv3d-unit-kernel
  // The float type the model computes in: fp32, fp16 (fp32 islands where fp16 cannot hold a
  // value) or bf16, on any target (--precision).
  std::optional<std::string> precision;
  std::optional<std::string> fp16_islands;         // --fp16-islands structural|magnitude
  std::optional<double> fp16_magnitude_threshold;  // --fp16-magnitude-threshold X
  std::optional<int64_t> fold_size_limit;          // --fold-size-limit N
  std::vector<std::string> rule_files;             // --rules FILE
  std::vector<std::string> disable;                // --disable NAME
  // End-to-end tolerance relative to each output's range; unset: 1e-2 for fp16 conversions,
  // 1e-4 otherwise (--tolerance).
  std::optional<double> tolerance;
  // How outputs are judged, as --accuracy takes it: "NAME=CRITERIA" or "CRITERIA" each
  // (docs/validation.md).
  std::vector<std::string> accuracy;
  bool validate = true;  // false: --no-validate
  bool repair = true;    // false: --no-repair
  // Calibration data: ONNX test-data folders (--calibration-data), then sets of input
  // tensors by graph input name (--input NAME=FILE; an input a set lacks is random).
  std::vector<std::string> calibration_data;
  std::vector<NamedTensors> calibration_sets;
  // A report file written with the model (--report): FILE.html a page, else JSON.
  std::string report_path;
  // What each pass did, one line at a time (--verbose); unset: nothing.
  std::function<void(const std::string&)> log;
};

// One conversion option as the option table declares it (rules/conversion_options.h): the
// table the command line's flags, target files, SetOption and the Python module's keywords
// are all made from.
struct OptionInfo {
  std::string name;  // snake_case: as SetOption, target files and Python keywords name it
  std::string flag;  // the command line's: "--keep-io-types", "--no-validate"
  // bool, int, number, choice, text, list (repeatable) or map (NAME=VALUE, repeatable)
  std::string type;
  std::vector<std::string> choices;  // a choice's values
  std::string default_value;         // empty: none, or the target's
  std::string value_name;            // what a value looks like ("N", "NAME=DIMS")
  std::string help;                  // one line, as `ovfix convert --help` shows it
  std::string field;                 // the member of ConversionOptions it sets
};
// The options ConversionOptions carries, in the table's order.
std::vector<OptionInfo> ConversionOptionList();

// Sets option `name` (OptionInfo::name) in `options` from `value` written as on the command
// line: "true"/"false", "8", "fp16", "x=1x3x224x224", "x=input_0.pb" (`input`, the file read
// now); a list or map option adds one value (an `input` named again starts another set).
// InvalidArgument: "NAME: what is wrong", or an unknown name with the closest and the list.
absl::Status SetOption(ConversionOptions& options, std::string_view name, std::string_view value);

// One pass or rule set of the conversion.
struct StepSummary {
  std::string name;
  int rewrites = 0;     // committed
  int rolled_back = 0;  // rewrites validation refused
};

struct ConversionReport {
  std::string target;
  // The end-to-end comparison of the converted model with the original kept the outputs
  // within the tolerance. When false, nothing was written (ConvertFile) or returned
  // (Convert: an error).
  bool outputs_match = true;
  bool validated = false;       // the model was run (no --no-validate, runnable inputs)
  std::string validation_note;  // why not validated, when not
  std::string calibration;      // where the inputs came from, one line
  double end_to_end_error = 0;  // largest output error relative to its range
  double tolerance = 0;
  int rewrites = 0;         // committed, over all steps
  int fp32_nodes_kept = 0;  // fp16 targets: float nodes left in fp32 (islands, repair)
  int repaired_nodes = 0;   // of those, kept in fp32 by the repair
  std::vector<StepSummary> steps;
  bool written = false;  // ConvertFile wrote the output model
  double seconds = 0;
  std::string json;  // the full report, as `--report FILE.json` writes it
};

// Reads a model file (external data read in) / writes one atomically (weights inline).
absl::StatusOr<onnx::ModelProto> LoadModelProto(const std::string& path);
absl::Status SaveModelProto(const onnx::ModelProto& model, const std::string& path);

// `ovfix convert INPUT OUTPUT` with `options`: writes OUTPUT (and the report) only when the
// converted model keeps the outputs; the report says whether it did.
absl::StatusOr<ConversionReport> ConvertFile(const std::string& input, const std::string& output,
                                             const ConversionOptions& options = {});

struct ConvertedModel {
  onnx::ModelProto model;  // the bytes ConvertFile would write, parsed
  ConversionReport report;
};
// Converts a model held in memory. A conversion that changes the outputs beyond the
// tolerance is an error (FailedPrecondition) whose message gives the error measured.
absl::StatusOr<ConvertedModel> Convert(const onnx::ModelProto& model,
                                       const ConversionOptions& options = {});

struct RunOptions {
  std::string backend = "cpu";     // cpu or opencl
  std::string precision = "fp32";  // fp32, fp16-storage or fp16 (as `ovfix run --precision`)
  int threads = 0;                 // 0: one per core
};
// Runs a model on `inputs` (every graph input that is not an initializer; float data is
// converted to the float type each input declares) and returns its outputs by name.
absl::StatusOr<NamedTensors> Run(const onnx::ModelProto& model, const NamedTensors& inputs,
                                 const RunOptions& options = {});

struct OutputComparison {
  std::string name;
  double relative_error = 0;  // largest difference relative to the reference's range
  double max_abs_error = 0;
  bool within_tolerance = true;
};
struct Comparison {
  bool outputs_match = true;  // every output within the tolerance
  double tolerance = 0;
  std::vector<OutputComparison> outputs;  // in the reference's graph order
};
// Runs `reference` and `candidate` on the same inputs and compares their outputs by name
// (relative to each reference output's range). Inputs the map lacks are random (fixed seed).
absl::StatusOr<Comparison> CompareModels(const onnx::ModelProto& reference,
                                         const onnx::ModelProto& candidate,
                                         const NamedTensors& inputs = {}, double tolerance = 1e-4,
                                         const RunOptions& options = {});
// Runs one model on two backends (or precisions) and compares the outputs.
absl::StatusOr<Comparison> CompareBackends(const onnx::ModelProto& model,
                                           const RunOptions& reference, const RunOptions& candidate,
                                           const NamedTensors& inputs = {},
                                           double tolerance = 1e-4);

}  // namespace ovfix
