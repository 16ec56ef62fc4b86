// The interface shared by declarative rule sets and native passes: a Pass rewrites a model
// through the Rewriter, one validated transaction per rewrite.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/model.h"
#include "rules/rewriter.h"

namespace ovfix::rules {

// Options of a conversion that passes read (set by the CLI and by target files).
struct ConvertOptions {
  std::string target = "generic";
  // Static shapes.
  int64_t batch = -1;                                   // --batch N
  std::map<std::string, std::vector<int64_t>> input_shapes;  // --input-shape NAME=1x3x224x224
  // fp16.
  bool fp16 = false;
  std::vector<std::string> keep_fp32;                   // --keep-fp32 REGEX (names or op types)
  bool keep_io_types = false;
  double fp16_magnitude_threshold = 8192;
  // Broadcast: "rank" (equal ranks) or "full" (identical shapes).
  std::string broadcast = "rank";
  bool lower_conv3d_unit_kernel = false;
  int64_t fold_size_limit = 1 << 20;                    // elements of a folded constant
  std::vector<std::string> disabled;                    // --disable RULE
  // Validation.
  bool validate = true;
  std::map<std::string, std::string> input_files;       // --input NAME=FILE.pb
};

// Checks a rewrite inside its open transaction: runs the matched subgraph as it was and as
// it is now on the activations of a reference run, and returns the max error relative to the
// range of the outputs it replaced.
class Validator {
 public:
  virtual ~Validator() = default;
  virtual absl::StatusOr<double> Measure(Rewriter& rewriter) = 0;
  // The tolerance for rewrites that do not change precision (rel. to range).
  double tolerance = 1e-5;
};

struct PassContext {
  Model& model;
  Rewriter& rewriter;
  const ConvertOptions& options;
  Validator* validator = nullptr;  // null with --no-validate
  std::function<void(const std::string&)> log = [](const std::string&) {};
  // How many rewrites the rewriter had recorded when value types were last inferred (kept
  // by the pipeline across passes, so InferTypes can skip an inference nothing changed).
  size_t* types_inferred_at = nullptr;
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

// Ends the rewrite that `ctx.rewriter` has open: validates it (when a validator is set and
// `validate` is true), commits it when the error is within tolerance, rolls it back
// otherwise. Returns true when committed.
bool FinishRewrite(PassContext& ctx, bool validate = true);

// Infers value types and shapes (InferShapesLight) unless no rewrite was recorded since the
// last inference.
absl::Status InferTypes(PassContext& ctx);

}  // namespace ovfix::rules
