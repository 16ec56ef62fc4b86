// The interface shared by declarative rule sets and native passes: a Pass rewrites a model
// through the Rewriter, one validated transaction per rewrite.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/float16.h"
#include "ir/model.h"
#include "rules/rewriter.h"

namespace ovfix::rules {

// Options of a conversion that passes read (set by the CLI and by target files).
struct ConvertOptions {
  std::string target = "generic";
  // Static shapes.
  int64_t batch = -1;  // --batch N
  int64_t opset = -1;  // --opset N: the default-domain opset written (-1: the model's own)
  std::map<std::string, std::vector<int64_t>> input_shapes;  // --input-shape NAME=1x3x224x224
  // --shape-range NAME=MIN:OPT:MAX (TensorRT's optimization profile): the conversion is
  // calibrated and validated at each of the three shapes (converter/shape_range.h).
  struct ShapeRange {
    std::vector<int64_t> min, opt, max;
  };
  std::map<std::string, ShapeRange> shape_ranges;
  // The float type the converted model computes in, with fp32 islands where that type cannot
  // hold a value: kFp32 leaves precision alone. `fp16` is true exactly when precision is
  // kFp16 (target files may say either `option fp16 true` or `option precision fp16`).
  enum class Precision { kFp32, kFp16, kBf16 };
  Precision precision = Precision::kFp32;
  bool fp16 = false;
  // Whether the backend runs the model's fp32 islands (Casts to float) as written. False for
  // backends that pick their own float type for every tensor (OpenVINO GPU, ncnn on Vulkan
  // with fp16 storage): there only values that stay within fp16's range are safe.
  bool islands_honoured = true;
  std::vector<std::string> keep_fp32;  // --keep-fp32 REGEX (names or op types)
  // Nodes to keep in fp32, by the name of their first output, with the reason (repair).
  std::map<std::string, std::string> keep_fp32_outputs;
  // Nodes the island policy must leave in fp16/bf16, by the name of their first output (the
  // island certificate gives islands back by it; never a node the spec keeps in fp32).
  std::set<std::string> fp16_outputs;
  // --island-precision fp32|bf16: what the islands of an fp16 conversion compute in. bf16 (float's
  // range, fp16's speed on bf16 hardware) tries every island the repair and certificate left in
  // fp32 in bfloat16 and keeps it there where the criteria hold (converter/repair.h); only on
  // targets whose backend has bfloat16 kernels (`bf16_kernels`).
  enum class IslandPrecision { kFp32, kBf16 };
  IslandPrecision island_precision = IslandPrecision::kFp32;
  // Target files: the backend computes in bfloat16 (TensorRT on Ampere and later, bf16 engines).
  bool bf16_kernels = false;
  // Islands that compute in bfloat16 instead of fp32, by the name of their first output (the
  // pipeline's choice under island_precision bf16; a node whose op has no bfloat16 in the spec,
  // or that computes a graph output, stays fp32).
  std::set<std::string> bf16_outputs;
  // The written file's inputs and outputs keep the original's element types (Casts inside);
  // false gives float16/bfloat16 inputs and outputs where the graph computes them so.
  bool keep_io_types = true;
  double fp16_magnitude_threshold = 8192;
  // Which islands: kStructural (the graph's precision-sensitive patterns, spec limits and
  // calibration) or kMagnitude (only what the spec needs, constants above fp16's max, and
  // nodes whose outputs calibration saw above the threshold: ModelOpt AutoCast's policy,
  // kept to compare with).
  enum class Fp16Islands { kStructural, kMagnitude };
  Fp16Islands fp16_islands = Fp16Islands::kStructural;
  // Set by the pipeline when calibration runs on the user's data (not random inputs): the
  // structural islands that guard against a risk such data can rule out (overflow in a
  // reduction, a norm, a softmax, or the growth feeding them) go to fp16 where every value
  // calibration saw there stays 128x below fp16's limit. Repair still holds the tolerance.
  bool fp16_calibrated_on_data = false;
  // Broadcast: kRank (element-wise inputs of equal ranks) or kFull (identical shapes).
  enum class Broadcast { kRank, kFull };
  Broadcast broadcast = Broadcast::kRank;
  bool lower_conv3d_unit_kernel = false;
  int64_t fold_size_limit = 1 << 20;  // elements of a folded constant
  std::vector<std::string> disabled;  // --disable RULE
  // Validation.
  bool validate = true;
  // --certify on|off: after a conversion that meets the criteria, try each fp32 island back
  // in fp16 alone and keep it only where the criteria need it (converter/repair.h).
  bool certify = true;
  std::map<std::string, std::string> input_files;  // --input NAME=FILE.pb
  // The options a pass declares and reads itself, which no field here holds: their values as
  // given (checked by the table's entry), by the table's name. A pass reads them with
  // DeclaredNumber; an option left out has its entry's default.
  std::map<std::string, std::string, std::less<>> by_name;
};

// The number option `name` (an entry stored by name) holds in `options`: its value, else its
// entry's default; 0 for a name the table lacks.
double DeclaredNumber(const ConvertOptions& options, std::string_view name);

// The options' names as the command line and target files spell them ("rank", "full";
// "structural", "magnitude"), and back: InvalidArgument naming the choices.
std::string_view BroadcastName(ConvertOptions::Broadcast broadcast);
absl::StatusOr<ConvertOptions::Broadcast> ParseBroadcast(std::string_view text);
std::string_view PrecisionName(ConvertOptions::Precision precision);  // "fp32", "fp16", "bf16"
absl::StatusOr<ConvertOptions::Precision> ParsePrecision(std::string_view text);
std::string_view Fp16IslandsName(ConvertOptions::Fp16Islands islands);
absl::StatusOr<ConvertOptions::Fp16Islands> ParseFp16Islands(std::string_view text);
std::string_view IslandPrecisionName(ConvertOptions::IslandPrecision precision);  // "fp32", "bf16"
absl::StatusOr<ConvertOptions::IslandPrecision> ParseIslandPrecision(std::string_view text);

// What the outputs of a model with a rewrite open measured against the original's criteria.
struct OutputsJudgement {
  bool meets = false;
  // The worst output in words: "output 'y': score 0.03 of max:0.01".
  std::string worst;
};

// Checks a rewrite inside its open transaction: runs the matched subgraph as it was and as
// it is now on the activations of a reference run, and returns the max error relative to the
// range of the outputs it replaced. It observes the rewriter (set_observer) to follow the
// graph through commits and rollbacks. The conversion pipeline provides it (converter/).
class Validator : public RewriteObserver {
 public:
  virtual absl::StatusOr<double> Measure(Rewriter& rewriter) = 0;
  // Whether the rewrite last measured turns float values into float16 (or back): such a
  // rewrite is measured and reported, not held to the fp32 tolerance.
  virtual bool last_changes_precision() const = 0;
  // The activation of a value of the current graph on the reference inputs (calibration).
  virtual absl::StatusOr<Tensor> Activation(const Value* v) = 0;
  // The magnitudes of a float activation when the reference run measured them as it went
  // (cheaper than scanning the activation again) and no rewrite has replaced it since.
  virtual std::optional<MagnitudeRange> CapturedMagnitudes(const Value* v) const = 0;
  // The model's outputs with the open rewrite, on the first calibration set, judged end to end
  // by the conversion's accuracy criteria: for a rewrite written to approximate (a user's rule
  // that bounds a mask constant, or swaps an activation for a cheaper one), whose values
  // differ beyond the tolerance where it made them but whose outputs may not.
  virtual absl::StatusOr<OutputsJudgement> JudgeOutputs(Rewriter& rewriter) = 0;
  // The tolerance for rewrites that do not change precision (rel. to range).
  double tolerance = 1e-5;
};

// Computes a node's outputs from constant inputs (constant folding). Passes know nothing of
// execution: the pipeline provides one backed by an executor.
class NodeEvaluator {
 public:
  virtual ~NodeEvaluator() = default;
  // Every input `node` reads must be an initializer. The outputs come in the node's output
  // order (empty tensors for omitted outputs).
  virtual absl::StatusOr<std::vector<Tensor>> Evaluate(const Model& model, const Node& node) = 0;
};

struct PassContext {
  Model& model;
  Rewriter& rewriter;
  const ConvertOptions& options;
  Validator* validator = nullptr;  // null with --no-validate; observes `rewriter`
  std::function<void(const std::string&)> log = [](const std::string&) {};
  // How many rewrites the rewriter had recorded when value types were last inferred (kept
  // by the pipeline across passes, so InferTypes can skip an inference nothing changed).
  size_t* types_inferred_at = nullptr;
  NodeEvaluator* evaluator = nullptr;  // null: nothing is evaluated (no constant folding)
  // Without a validator: calibrated |x| by value name from an earlier run of the same graph
  // (the repair's reconversions), or null.
  const std::map<std::string, MagnitudeRange>* magnitudes = nullptr;
  // A rewrite whose values differ beyond the validator's tolerance is judged by the
  // conversion's criteria on the model's outputs (JudgeOutputs) instead of being rolled back:
  // the rules of the user's files, which may approximate on purpose.
  bool outputs_judged = false;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // snake_case; also the name used by --disable and in target files.
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // Applies the pass; returns how many rewrites it committed.
  virtual absl::StatusOr<int> Run(PassContext& ctx) = 0;
};

// A pass that is one function (every native pass but fp16_islands, which keeps what it
// found for the pipeline to read).
class FunctionPass : public Pass {
 public:
  using Function = absl::StatusOr<int> (*)(PassContext& ctx);
  FunctionPass(std::string name, std::string description, Function run)
      : name_(std::move(name)), description_(std::move(description)), run_(run) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  absl::StatusOr<int> Run(PassContext& ctx) override { return run_(ctx); }

 private:
  std::string name_;
  std::string description_;
  Function run_;
};

// Ends the rewrite that `ctx.rewriter` has open: validates it (when a validator is set and
// `validate` is true), commits it when the error is within tolerance (or, with
// `ctx.outputs_judged`, when the model's outputs meet the criteria), rolls it back
// otherwise. Returns true when committed.
bool FinishRewrite(PassContext& ctx, bool validate = true);

// Infers value types and shapes (InferShapesLight) unless no rewrite was recorded since the
// last inference.
absl::Status InferTypes(PassContext& ctx);

}  // namespace ovfix::rules
