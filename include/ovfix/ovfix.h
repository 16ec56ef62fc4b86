// ovfix as a library: convert, run and compare ONNX models from C++ (docs/api.md).
//
// The API is a thin layer over the pipeline behind `ovfix convert` (converter/pipeline.h):
// the same options give the same bytes as the command line. Models and tensors cross it as
// onnx::ModelProto and onnx::TensorProto, so the API's types are ONNX's own and its headers
// hold nothing of ovfix's internals. Errors are absl::Status with a one-line message that
// names the file or the option and the problem, and a code that says which kind it is:
//   NotFound            a file that does not exist (a model, a rule file, calibration data)
//   InvalidArgument     a bad option or argument, a model that does not parse or is invalid,
//                       inputs that do not fit the model
//   FailedPrecondition  the converted model does not meet the accuracy criteria (Convert;
//                       the status carries the report: ConversionReportJson)
//   Unimplemented       an op (or op version) no executor or pass implements
//   Internal            anything else (a file that cannot be written...)
// ErrorKind(status) tells the kinds that share a code apart.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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

// What an error status of the API is about, where its code alone does not say: "option" (a bad
// option or argument: InvalidArgument), "model" (a model that does not parse or is invalid:
// InvalidArgument, or NotFound for a missing file), "accuracy" (Convert's outputs missed the
// criteria: FailedPrecondition, with the report); "" otherwise (inputs that do not fit the
// model, a file that cannot be read...). Carried as the payload kErrorKindPayload.
inline constexpr char kErrorKindPayload[] = "type.ovfix/ErrorKind";
std::string ErrorKind(const absl::Status& status);

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
  std::optional<bool> keep_io_types;                         // --no-keep-io-types: false
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

// One criterion of an output's accuracy criteria (docs/validation.md) and what it measured.
struct CriterionCheck {
  std::string criterion;  // as --accuracy writes it: "max:0.01", "p99:0.01", "top1:0"
  double measured = 0;    // the measure it bounds: an error relative to the range, or a share
  double bound = 0;
  bool meets = true;
};

// One output judged as `ovfix compare` judges it: the same statistics, criteria and verdict.
// Errors are relative to the reference output's range unless said otherwise; float16 and
// other float outputs are measured on their values. An element NaN or infinite where the
// reference holds another value is counted in non_finite, and its error is infinite.
struct OutputComparison {
  std::string name;
  bool computed = true;                // false: the candidate has no such output
  std::string criteria;                // "max:0.1,p99:0.01,mean:0.002"
  std::vector<CriterionCheck> checks;  // one per criterion
  double score = 0;                    // the worst measure over its bound: at most 1 meets them
  bool meets = true;  // every criterion holds, and no NaN or infinity the reference lacks
  bool within_tolerance = true;  // the same as meets (its name before criteria)
  int64_t elements = 0;
  double relative_error = 0;  // the worst element's error (the statistic max)
  double max_abs_error = 0;   // the largest |candidate - reference|, in the output's units
  double mean_error = 0;
  double p99_error = 0, p99_9_error = 0;  // percentiles of the error (nearest rank)
  double share_beyond = 0;                // of the elements whose error exceeds 0.01 of the range
  int64_t non_finite = 0;
  std::string statistics;  // the console's words: "max 0.00042, mean 0.00017, ..."
};

// One pass or rule set of the conversion.
struct StepSummary {
  std::string name;
  int rewrites = 0;     // committed
  int rolled_back = 0;  // rewrites validation refused
};

// A node the fp16 conversion left in fp32 (an fp32 island) and why.
struct IslandSummary {
  std::string node;  // "op_type 'name'" as the report names nodes
  std::string op_type;
  std::string reason;
};

// One evaluation of the repair (round 0: the conversion that failed).
struct RepairRoundSummary {
  int round = 0;
  std::string action;     // "first conversion", "add" or "give back"
  int nodes = 0;          // nodes added or given back
  int fp32_nodes = 0;     // float16 nodes of the first conversion kept in fp32
  double fp32_share = 0;  // of the converted model's float nodes
  double score = 0;       // the worst output's score: <= 1 meets the criteria
  double error = 0;       // the worst output's error
  bool kept = false;      // the round's set became the repair's
};

// A node the repair kept in fp32.
struct RepairedNodeSummary {
  std::string node;
  std::string op_type;
  int round = 0;
  double error_before = 0;  // its output's error in the first conversion
  double error_after = 0;   // in the final model
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
  // The end-to-end comparison per output, in the graph's order (on the input set that scored
  // worst): criteria, each criterion's check, statistics and verdict, as CompareModels gives
  // them. Empty when the model was not validated.
  std::vector<OutputComparison> outputs;
  std::vector<IslandSummary> islands;  // fp16 conversions: the nodes kept in fp32 and why
  // The repair (fp16 conversions whose first result missed the criteria): each round, and the
  // nodes it kept in fp32 (repaired_nodes counts them).
  std::vector<RepairRoundSummary> repair_rounds;
  std::vector<RepairedNodeSummary> repaired;
  // When outputs_match is false: the failure in one line, naming the first failing output and
  // criterion ("output 'y' fails p99:0.01 (measured 0.028)"), and what to try.
  std::string failure;
  std::string suggestion;
  bool written = false;  // a model file was written (ConvertFile; never for Convert)
  double seconds = 0;
  std::string json;  // the full report, as `--report FILE.json` writes it
};

// Reads a model file (external data read in) / writes one atomically (weights inline).
absl::StatusOr<onnx::ModelProto> LoadModelProto(const std::string& path);
absl::Status SaveModelProto(const onnx::ModelProto& model, const std::string& path);

// `ovfix convert INPUT OUTPUT` with `options`: writes OUTPUT (and the report) only when the
// converted model keeps the outputs; the report says whether it did (outputs_match, failure,
// written). A missing input, rule file, calibration folder or output folder is NotFound.
absl::StatusOr<ConversionReport> ConvertFile(const std::string& input, const std::string& output,
                                             const ConversionOptions& options = {});

struct ConvertedModel {
  onnx::ModelProto model;  // the bytes ConvertFile would write, parsed
  ConversionReport report;
};
// Converts a model held in memory. A conversion whose outputs miss the accuracy criteria is an
// error, FailedPrecondition, whose message names the failing output, the criterion, what it
// measured and what to try (ConversionReport::failure and ::suggestion). The status carries
// the JSON report (`--report FILE.json`'s text) as its payload kConversionReportPayload
// (ConversionReportJson reads it); with `report` given, the report itself is written there
// whenever the conversion ran, whether its outputs met the criteria or not.
absl::StatusOr<ConvertedModel> Convert(const onnx::ModelProto& model,
                                       const ConversionOptions& options = {});
absl::StatusOr<ConvertedModel> Convert(const onnx::ModelProto& model,
                                       const ConversionOptions& options, ConversionReport* report);

// The JSON report a failed conversion's status carries (Convert); nullopt for any other status.
inline constexpr char kConversionReportPayload[] = "type.ovfix/ConversionReport";
std::optional<std::string> ConversionReportJson(const absl::Status& status);

struct RunOptions {
  std::string backend = "cpu";     // cpu or opencl
  std::string precision = "fp32";  // fp32, fp16-storage or fp16 (as `ovfix run --precision`)
  int threads = 0;                 // 0: one per core
};
// Runs a model on `inputs` (every graph input that is not an initializer; float data is
// converted to the float type each input declares) and returns its outputs by name.
absl::StatusOr<NamedTensors> Run(const onnx::ModelProto& model, const NamedTensors& inputs,
                                 const RunOptions& options = {});

// A model loaded once and run many times (Run loads it on every call).
//   absl::StatusOr<std::unique_ptr<ovfix::Session>> s = ovfix::Session::Create(model);
//   absl::StatusOr<std::vector<onnx::TensorProto>> y = (*s)->Run({{"x", x}});
// Run takes every graph input that is not an initializer, each of the element type the graph
// declares for it (InvalidArgument naming the input and both types otherwise; a float type
// other than the declared one is converted with `cast`), and returns the outputs in the
// graph's order (output_names). Runs from several threads take turns.
class Session {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Create(const onnx::ModelProto& model,
                                                         const RunOptions& options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<std::string>& input_names() const;   // graph inputs, initializers aside
  const std::vector<std::string>& output_names() const;  // in the graph's order
  // The element type (onnx::TensorProto::DataType) each input declares, as input_names.
  const std::vector<int32_t>& input_types() const;

  absl::StatusOr<std::vector<onnx::TensorProto>> Run(const NamedTensors& inputs, bool cast = false);

 private:
  struct State;
  explicit Session(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

struct Comparison {
  bool outputs_match = true;  // every output meets its criteria
  // The loosest bound the criteria put on the worst element (the tolerance given, when given).
  double tolerance = 0;
  std::vector<OutputComparison> outputs;  // in the reference's graph order
};
// Runs `reference` and `candidate` on the same inputs and judges the candidate's outputs
// against the reference's of the same name, by convert's criteria: `accuracy` as --accuracy
// takes it ("NAME=CRITERIA" or "CRITERIA" each), for the outputs it leaves, `tolerance` as
// --tolerance (max:X), and without either convert's defaults for the precision involved
// (fp16 ones where the candidate holds float16 data or `options` runs in fp16 or
// fp16-storage; bfloat16 ones for a candidate in bfloat16; max:1e-4 otherwise). Inputs the
// map lacks are random (fixed seed).
absl::StatusOr<Comparison> CompareModels(const onnx::ModelProto& reference,
                                         const onnx::ModelProto& candidate,
                                         const NamedTensors& inputs = {},
                                         std::optional<double> tolerance = std::nullopt,
                                         const RunOptions& options = {},
                                         const std::vector<std::string>& accuracy = {});
// Runs one model on two backends (or precisions) and judges the outputs as CompareModels
// does (fp16 defaults where either side runs in fp16 or fp16-storage).
absl::StatusOr<Comparison> CompareBackends(const onnx::ModelProto& model,
                                           const RunOptions& reference, const RunOptions& candidate,
                                           const NamedTensors& inputs = {},
                                           std::optional<double> tolerance = std::nullopt,
                                           const std::vector<std::string>& accuracy = {});

}  // namespace ovfix
