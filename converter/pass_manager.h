// The pass manager: what a conversion runs, decided in one place from the target's list of
// steps and the options (rules/conversion_options.h).
//
// A conversion is a sequence of phases:
//   calibration   the reference run on the calibration data (validate)
//   structural    the target's steps up to the precision phase, with what the options add
//                 (fix_input_shapes for --batch/--input-shape, lower_conv3d_unit_kernel,
//                 explicit_broadcast_full for --broadcast full, the --rules files last)
//   precision     fp16_islands and cast_cleanup when precision is fp16 (the target's list,
//                 or, for a target that does not list them, inserted after the structural
//                 steps and before dead_code_elimination)
//   cleanup       the steps after the precision phase (dead_code_elimination)
//   validation    onnx's checker and the end-to-end comparison (validate)
//   repair        fp32 for the nodes responsible, until within the tolerance (validate,
//                 repair, a precision phase that changed the model)
//   finish        If nodes with constant conditions inlined, the cost of the precision
//   write         the model and report written and measured (write_output)
// A step the target lists but the options switch off (lower_conv3d_unit_kernel without
// --lower-conv3d-unit-kernel, the precision phase with --precision fp32) stays in the plan,
// reported with no rewrites, and does not run.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/target.h"
#include "rules/pass.h"
#include "rules/passes/fp16_islands.h"
#include "rules/rule_set.h"

namespace ovfix::converter {

// The phases of a conversion, in the order they run.
enum class ConversionPhase { kCalibration, kSteps, kCheck, kRepair, kFinish, kWrite };

// The steps' part of the kSteps phase.
enum class StepPhase { kStructural, kPrecision, kCleanup };

struct PlannedStep {
  std::string name;
  std::unique_ptr<rules::Pass> pass;
  StepPhase phase = StepPhase::kStructural;
  bool runs = true;  // false: listed, switched off by the options
  // The rules of the user's files (--rules): a rewrite whose values change beyond the
  // tolerance is judged by the criteria on the model's outputs (rules::PassContext).
  bool outputs_judged = false;
};

class PassManager {
 public:
  // The steps for `target` with `options` (the target's options applied; `set_by_user` names
  // those the caller gave, which may be refused in combination: CheckOptions). Errors are
  // InvalidArgument with one line.
  static absl::StatusOr<PassManager> Plan(const Target& target,
                                          const rules::ConvertOptions& options,
                                          const std::set<std::string>& set_by_user, bool user_rules,
                                          const rules::RuleLibrary& library);

  std::vector<PlannedStep>& steps() { return steps_; }
  const std::vector<PlannedStep>& steps() const { return steps_; }
  // The first step of the precision phase, or steps().size() when it has none that runs.
  size_t precision_step() const { return precision_step_; }
  // The precision phase's fp16 conversion (what it kept in fp32 and why, the magnitudes it
  // calibrated on), or null when no precision phase runs.
  rules::Fp16IslandsPass* precision_pass() const { return precision_pass_; }

  // The phases that run, in order: calibration only when validating, repair only when
  // validating with repair on and a precision phase (it still does nothing when the outputs
  // match), write only when the caller writes a file.
  std::vector<ConversionPhase> Phases(bool validate, bool repair, bool write_output) const;

  // Runs step `k` on `ctx` and returns the rewrites it committed: 0, without running it,
  // for a step the options switch off. Errors name the step.
  absl::StatusOr<int> RunStep(size_t k, rules::PassContext& ctx);

 private:
  std::vector<PlannedStep> steps_;
  size_t precision_step_ = 0;
  rules::Fp16IslandsPass* precision_pass_ = nullptr;
};

// The combinations of options refused, one line each (exit 2): bf16 on a target whose backend
// picks its own float type (islands not honoured), and
// precision options given for a conversion that stays fp32 (--keep-io-types,
// --fp16-islands, --fp16-magnitude-threshold without --precision fp16 or an fp16 target).
absl::Status CheckOptions(const Target& target, const rules::ConvertOptions& options,
                          const std::set<std::string>& set_by_user);

}  // namespace ovfix::converter
