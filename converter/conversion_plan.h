// The conversion plan: what a conversion will run, decided once, before anything runs, from
// the target, the options and the model.
//
//   options (command line, C++ API, Python: converter/user_options.h)
//      + target file (converter/target.h: its steps and option defaults)
//      + the passes' declarations (rules/passes/registry.h: options read, switches, placement)
//   -> ConversionPlan: the effective options, every step with whether it runs and why not,
//      the phases in the order they run, and the warnings about options that do nothing
//   -> the pipeline executes it (converter/pipeline.h: PassManager instantiates the steps);
//      `convert --plan` and `--verbose` print it, `explain` and the report read it.
//
// Phases, in the order they run:
//   calibration   the reference run on the calibration data (validating)
//   steps         the target's steps, with what the options add: structural, then the
//                 precision phase (fp16_islands and cast_cleanup), then the clean-up
//   check         onnx's checker; without a file to write, the end-to-end comparison
//   finish        If nodes with constant conditions inlined, the cost of the precision
//   write         the file written, and (validating) run and measured against the criteria
//   repair        fp32 for the nodes responsible until within the criteria, the island
//                 certificate, islands in bf16 (validating, with a precision phase); a model
//                 it changes is finished and written again
// A step the target lists but the options switch off (lower_conv3d_unit_kernel without
// --lower-conv3d-unit-kernel, the precision phase with --precision fp32) or the user disables
// stays in the plan, with why it does not run.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/target.h"
#include "ir/model.h"
#include "rules/pass.h"
#include "rules/rule_set.h"

namespace ovfix::converter {

struct PipelineOptions;

enum class ConversionPhase { kCalibration, kSteps, kCheck, kFinish, kWrite, kRepair };
std::string_view PhaseName(ConversionPhase phase);

// The part of the steps phase a step belongs to.
enum class StepPhase { kStructural, kPrecision, kCleanup };

struct PlanStep {
  std::string name;  // a pass, a rule set, family or rule; "user_rules" for --rules
  TargetStep::Kind kind = TargetStep::Kind::kPass;
  StepPhase phase = StepPhase::kStructural;
  // Why it is in the plan: empty when the target lists it, else what added it
  // ("precision fp16", "batch", "rules").
  std::string added_by;
  bool runs = true;
  std::string why_not;  // when it does not run: "switched off: precision fp32", "--disable"
  // The rules of the user's files (--rules): a rewrite whose values change beyond the
  // tolerance is judged by the criteria on the model's outputs (rules::PassContext).
  bool outputs_judged = false;
};

struct ConversionPlan {
  Target target;
  rules::ConvertOptions options;  // the target's, then the user's
  std::set<std::string> set_by_user;
  std::shared_ptr<const rules::RuleLibrary> library;
  std::vector<PlanStep> steps;
  std::vector<ConversionPhase> phases;
  // One line each: options that do nothing in this conversion (a --keep-fp32 pattern that
  // matches no node, a --disable name no step runs, an option whose every reader is off).
  std::vector<std::string> warnings;
  // --precision fp32 on a backend that otherwise picks fp16 itself (converter/target.h).
  bool fp32_by_request = false;

  // Whether a precision phase runs (the model is converted to fp16 or bf16).
  bool ReducesPrecision() const;
  // The first step named `name`, or null.
  const PlanStep* FindStep(std::string_view name) const;
  // The step that runs the rules `selected` (or the pass named `name`), or null: the step
  // whose rule set holds one of them.
  const PlanStep* StepRunning(
      std::string_view name, const std::vector<std::shared_ptr<const rules::Rule>>& selected) const;
};

// The plan for converting `model` (null: none at hand; the warnings that read the model are
// left out) with `options`. Errors: InvalidArgument with one line (an unknown target, rule
// file or --disable name, options refused in combination).
absl::StatusOr<ConversionPlan> PlanConversion(const PipelineOptions& options, const Model* model);
// The same for a target at hand (the session graph's, converter/session_graph.h).
absl::StatusOr<ConversionPlan> PlanConversion(Target target, const PipelineOptions& options,
                                              const Model* model);

// "runs", or "does not run: WHY": what convert --plan, explain and the report say of a step.
std::string StepStatus(const PlanStep& step);

// The plan as `convert --plan` prints it: the target, the options that differ from their
// defaults, the steps with their status, the phases.
std::string PlanText(const ConversionPlan& plan);

// The combinations of options refused, one line each (exit 2): bf16 on a target whose backend
// picks its own float type (islands not honoured), and precision options given for a
// conversion that stays fp32 (--keep-io-types, --fp16-islands, --fp16-magnitude-threshold
// without --precision fp16 or an fp16 target).
absl::Status CheckOptions(const Target& target, const rules::ConvertOptions& options,
                          const std::set<std::string>& set_by_user);

}  // namespace ovfix::converter
