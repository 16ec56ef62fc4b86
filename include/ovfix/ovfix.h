// ovfix as a library: convert, run and compare ONNX models from C++ (docs/api.md).
//
// This header is the light surface: it needs no ONNX, protobuf or absl header and compiles in
// a fraction of a second (bench/header_compile.sh), and a program that uses only it links one
// library, the shared libovfix.so (CMake: ovfix::ovfix). Models cross it as the bytes of a
// serialized onnx.ModelProto (OnnxModel), tensors as an element type with ONNX's numbering, a
// shape and little-endian bytes (OnnxTensor), errors as an Error in a Result. A program that
// holds onnx::ModelProto already includes "ovfix/onnx.h", which adds overloads over ONNX's
// protos and absl::Status and links the static library (ovfix::ovfix_static).
//
// The calls are a thin layer over the pipeline behind `ovfix convert` (converter/pipeline.h):
// the same options give the same bytes as the command line. Each error has a one-line message
// that names the file or the option and the problem, and a code that says which kind it is:
//   NotFound            a file that does not exist (a model, a rule file, calibration data)
//   InvalidArgument     a bad option or argument, a model that does not parse or is invalid,
//                       inputs that do not fit the model
//   FailedPrecondition  the converted model does not meet the accuracy criteria (Convert; the
//                       error carries the report: Error::report)
//   Unimplemented       an op (or op version) no executor or pass implements
//   Internal            anything else (a file that cannot be written...)
// Error::kind tells the kinds that share a code apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ovfix {

// The library's version ("0.1.0"), the same as `ovfix --version`.
const char* Version();

// ---- options and reports (shared with ovfix/onnx.h) ----

// An element type, numbered as onnx.TensorProto.DataType numbers them.
enum class ElementType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
};
// ONNX's name of the type ("float", "float16", "int64"; also of ONNX's types the enum does not
// name, "float8e4m3fn"); "unknown" beyond ONNX's numbering.
const char* ElementTypeName(ElementType type);
// Bytes per element; 0 for strings, packed sub-byte types (int4) and numbers beyond ONNX's.
size_t ElementSize(ElementType type);

// A tensor as ONNX holds one: element type, shape, the elements' bytes in little-endian order,
// row-major, and a name (a graph input's or output's). Strings are not held.
class OnnxTensor {
 public:
  OnnxTensor() = default;
  // The elements given, converted to the tensor's type: FromFloat16s rounds each to half,
  // FromBfloat16s to bfloat16. The number of values should be the shape's element count; a
  // tensor whose bytes do not fit its shape is refused by the call it is given to.
  static OnnxTensor FromFloats(std::vector<int64_t> shape, const std::vector<float>& values,
                               std::string name = "");
  static OnnxTensor FromFloat16s(std::vector<int64_t> shape, const std::vector<float>& values,
                                 std::string name = "");
  static OnnxTensor FromBfloat16s(std::vector<int64_t> shape, const std::vector<float>& values,
                                  std::string name = "");
  static OnnxTensor FromDoubles(std::vector<int64_t> shape, const std::vector<double>& values,
                                std::string name = "");
  static OnnxTensor FromInt64s(std::vector<int64_t> shape, const std::vector<int64_t>& values,
                               std::string name = "");
  static OnnxTensor FromInt32s(std::vector<int64_t> shape, const std::vector<int32_t>& values,
                               std::string name = "");
  // A tensor over a copy of `size` raw bytes (little-endian elements of `type`).
  static OnnxTensor FromBytes(ElementType type, std::vector<int64_t> shape, const void* data,
                              size_t size, std::string name = "");

  ElementType type() const { return type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::string& bytes() const { return bytes_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  int64_t element_count() const;  // the product of the shape (1 for a scalar)

  // The elements converted to float / double / int64 (any numeric or bool type: float16 and
  // bfloat16 widened, floats to integers rounded toward zero); empty for strings or bytes
  // that do not fit the shape.
  std::vector<float> ToFloats() const;
  std::vector<double> ToDoubles() const;
  std::vector<int64_t> ToInt64s() const;

 private:
  ElementType type_ = ElementType::kUndefined;
  std::vector<int64_t> shape_;
  std::string bytes_;
  std::string name_;
};

// Tensors by name: graph inputs, calibration sets.
using NamedTensors = std::map<std::string, OnnxTensor>;

// Receives what each pass did, one line at a time (ConversionOptions::log).
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void Write(const std::string& line) = 0;
};

// The three shapes of an input that --shape-range names, as a TensorRT optimization profile.
struct ShapeRange {
  std::vector<int64_t> min, opt, max;
};

// What `ovfix convert` takes on its command line, one member per option of the table
// (ConversionOptionList; SetOption sets one by name); an option left unset is the target's.
struct ConversionOptions {
  std::string target = "generic";  // a built-in profile (gpu-fp16, tensorrt...) or a .target file
  std::optional<int64_t> batch;    // --batch N
  std::optional<int64_t> opset;    // --opset N: write at ai.onnx opset N (7-26)
  std::map<std::string, std::vector<int64_t>> input_shapes;  // --input-shape NAME=1x3x224x224
  // --shape-range NAME=MIN:OPT:MAX (a TensorRT profile): calibrated and validated at each of
  // the three shapes, the calibration data brought to each (docs/validation.md).
  std::map<std::string, ShapeRange> shape_ranges;
  std::vector<std::string> keep_fp32;            // --keep-fp32 REGEX
  std::optional<bool> keep_io_types;             // --no-keep-io-types: false
  std::optional<std::string> broadcast;          // --broadcast rank|full
  std::optional<bool> lower_conv3d_unit_kernel;  // --lower-conv3d-unit-kernel
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
  // --certify on|off: try each fp32 island back in fp16 after a conversion that meets the
  // criteria, keeping only those needed (unset: on).
  std::optional<std::string> certify;
  // --island-precision fp32|bf16: the islands of an fp16 conversion in bfloat16 where the
  // criteria hold, on targets with bfloat16 kernels (unset: the target's, fp32).
  std::optional<std::string> island_precision;
  // Calibration data: ONNX test-data folders (--calibration-data), then sets of input
  // tensors by graph input name (--input NAME=FILE; an input a set lacks is random).
  std::vector<std::string> calibration_data;
  std::vector<NamedTensors> calibration_sets;
  // The options a pass declares and reads itself (mask_bound...), by name, as their flags
  // take them; set with SetOption. ConversionOptionList names them (field "by_name").
  std::map<std::string, std::string> by_name;
  // A report file written with the model (--report): FILE.html a page, else JSON.
  std::string report_path;
  // What each pass did, one line at a time (--verbose); null: nothing. Not owned.
  LogSink* log = nullptr;
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
  // As the conversion's plan says (`ovfix convert --plan`): whether it ran, and why not
  // ("switched off: precision fp32", "disabled (--disable NAME)").
  bool runs = true;
  std::string why_not;
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
  // Options that did nothing in this conversion, one line each (what `ovfix convert` prints
  // as warnings: a --keep-fp32 pattern that matches no node, a disable of what does not run).
  std::vector<std::string> warnings;
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

struct RunOptions {
  std::string backend = "cpu";     // cpu or opencl
  std::string precision = "fp32";  // fp32, fp16-storage or fp16 (as `ovfix run --precision`)
  int threads = 0;                 // 0: one per core
};

struct Comparison {
  bool outputs_match = true;  // every output meets its criteria
  // The loosest bound the criteria put on the worst element (the tolerance given, when given).
  double tolerance = 0;
  std::vector<OutputComparison> outputs;  // in the reference's graph order
};

// ---- errors ----

// The kind of failure, numbered as absl::StatusCode numbers it (codes not named here may
// appear as their number).
enum class ErrorCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kNotFound = 5,
  kFailedPrecondition = 9,
  kUnimplemented = 12,
  kInternal = 13,
};
// absl's name of the code: "NotFound", "InvalidArgument"...
const char* ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kOk;
  // What it is about where the code alone does not say: "option" (a bad option or argument:
  // InvalidArgument), "model" (a model that does not parse or is invalid: InvalidArgument, or
  // NotFound for a missing file), "accuracy" (Convert's outputs missed the criteria:
  // FailedPrecondition, with the report); "" otherwise.
  std::string kind;
  std::string message;  // one line
  // An accuracy failure's report: the per-output statistics and verdicts, failure, suggestion.
  std::optional<ConversionReport> report;

  bool ok() const { return code == ErrorCode::kOk; }
};

namespace internal {
// Reading the value of a Result that holds an error: prints the error and aborts.
[[noreturn]] void AbortOnError(const Error& error);
}  // namespace internal

// A value or the Error that kept it from being made.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(Error error) : error_(std::move(error)) {
    if (error_.ok()) error_ = {ErrorCode::kInternal, "", "a Result made from no error", {}};
  }
  bool ok() const { return value_.has_value(); }
  const Error& error() const { return error_; }

  T& value() & { return Checked(), *value_; }
  const T& value() const& { return Checked(), *value_; }
  T&& value() && { return Checked(), std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Checked() const {
    if (!value_) internal::AbortOnError(error_);
  }
  std::optional<T> value_;
  Error error_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}
  bool ok() const { return error_.ok(); }
  const Error& error() const { return error_; }

 private:
  Error error_;
};

// ---- models, tensors ----

// An ONNX model as the bytes of a serialized onnx.ModelProto (weights inline).
class OnnxModel {
 public:
  OnnxModel() = default;
  // Reads a model file (external data read in). NotFound for a missing file.
  static Result<OnnxModel> Load(const std::string& path);
  // The bytes are checked when the model is used (InvalidArgument, kind "model").
  static OnnxModel FromBytes(std::string bytes);

  const std::string& bytes() const { return bytes_; }
  // Writes the bytes as they are, atomically (Convert's are those `ovfix convert` writes).
  // NotFound for a missing folder.
  Result<void> Save(const std::string& path) const;

 private:
  std::string bytes_;
};

// Reads an ONNX TensorProto file (test data's input_0.pb; its name becomes the tensor's) /
// writes one.
Result<OnnxTensor> LoadTensor(const std::string& path);
Result<void> SaveTensor(const OnnxTensor& tensor, const std::string& path);

// ---- calls ----

// The options ConversionOptions carries, in the table's order.
std::vector<OptionInfo> ConversionOptionList();

// Sets option `name` (OptionInfo::name) in `options` from `value` written as on the command
// line: "true"/"false", "8", "fp16", "x=1x3x224x224", "x=input_0.pb" (`input`, the file read
// now); a list or map option adds one value (an `input` named again starts another set).
// InvalidArgument: "NAME: what is wrong", or an unknown name with the closest and the list.
Result<void> SetOption(ConversionOptions& options, const std::string& name,
                       const std::string& value);

// `ovfix convert INPUT OUTPUT` with `options`: writes OUTPUT (and the report) only when the
// converted model keeps the outputs; the report says whether it did (outputs_match, failure,
// written). A missing input, rule file, calibration folder or output folder is NotFound.
Result<ConversionReport> ConvertFile(const std::string& input, const std::string& output,
                                     const ConversionOptions& options = {});

struct ConvertedModel {
  OnnxModel model;  // the bytes ConvertFile would write
  ConversionReport report;
};
// Converts a model held in memory. A conversion whose outputs miss the accuracy criteria is an
// error, FailedPrecondition of kind "accuracy", whose message names the failing output, the
// criterion, what it measured and what to try, and whose `report` holds the per-output
// statistics (ConversionReport::outputs, failure, suggestion).
Result<ConvertedModel> Convert(const OnnxModel& model, const ConversionOptions& options = {});

// Runs a model on `inputs` (every graph input that is not an initializer; float data is
// converted to the float type each input declares) and returns its outputs in the graph's
// order, each named (FindTensor finds one by name).
Result<std::vector<OnnxTensor>> Run(const OnnxModel& model, const NamedTensors& inputs,
                                    const RunOptions& options = {});
// The tensor named `name` in `tensors`; null when none is.
const OnnxTensor* FindTensor(const std::vector<OnnxTensor>& tensors, const std::string& name);

class ProtoSession;  // ovfix/onnx.h

// A model loaded once and run many times (Run loads it on every call). Run takes every graph
// input that is not an initializer, each of the element type the graph declares for it
// (InvalidArgument naming the input and both types otherwise; a float type other than the
// declared one is converted with `cast`), and returns the outputs in the graph's order
// (output_names), each named. Runs from several threads take turns. Move-only.
class Session {
 public:
  static Result<Session> Create(const OnnxModel& model, const RunOptions& options = {});
  Session(Session&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}
  Session& operator=(Session&& other) noexcept;
  ~Session();

  const std::vector<std::string>& input_names() const;   // graph inputs, initializers aside
  const std::vector<std::string>& output_names() const;  // in the graph's order
  std::vector<ElementType> input_types() const;          // as input_names

  Result<std::vector<OnnxTensor>> Run(const NamedTensors& inputs, bool cast = false);

 private:
  explicit Session(ProtoSession* impl) : impl_(impl) {}
  ProtoSession* impl_ = nullptr;
};

// Runs `reference` and `candidate` on the same inputs and judges the candidate's outputs
// against the reference's of the same name, by convert's criteria: `accuracy` as --accuracy
// takes it ("NAME=CRITERIA" or "CRITERIA" each), for the outputs it leaves, `tolerance` as
// --tolerance (max:X), and without either convert's defaults for the precision involved
// (fp16 ones where the candidate holds float16 data or `options` runs in fp16 or
// fp16-storage; bfloat16 ones for a candidate in bfloat16; max:1e-4 otherwise). Inputs the
// map lacks are random (fixed seed).
Result<Comparison> CompareModels(const OnnxModel& reference, const OnnxModel& candidate,
                                 const NamedTensors& inputs = {},
                                 std::optional<double> tolerance = std::nullopt,
                                 const RunOptions& options = {},
                                 const std::vector<std::string>& accuracy = {});
// Runs one model on two backends (or precisions) and judges the outputs as CompareModels
// does (fp16 defaults where either side runs in fp16 or fp16-storage).
Result<Comparison> CompareBackends(const OnnxModel& model, const RunOptions& reference,
                                   const RunOptions& candidate, const NamedTensors& inputs = {},
                                   std::optional<double> tolerance = std::nullopt,
                                   const std::vector<std::string>& accuracy = {});

}  // namespace ovfix
