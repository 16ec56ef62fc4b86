// The pass manager: runs the steps of a conversion plan (converter/conversion_plan.h), each an
// instance of its pass or rule set, made when the manager is.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/conversion_plan.h"
#include "rules/pass.h"
#include "rules/passes/fp16_islands.h"

namespace ovfix::converter {

struct PlannedStep {
  std::string name;
  std::unique_ptr<rules::Pass> pass;
  StepPhase phase = StepPhase::kStructural;
  bool runs = true;  // false: in the plan, not run (switched off or disabled)
  bool outputs_judged = false;
};

// Makes a native pass by name (null: none of that name).
using PassFactory = std::function<std::unique_ptr<rules::Pass>(std::string_view name)>;

class PassManager {
 public:
  // The plan's steps, instantiated: passes by `factory` (the registry's by default), rule
  // sets from the plan's library.
  static PassManager Make(const ConversionPlan& plan, const PassFactory& factory = {});

  std::vector<PlannedStep>& steps() { return steps_; }
  const std::vector<PlannedStep>& steps() const { return steps_; }
  // The first step of the precision phase, or steps().size() when it has none that runs.
  size_t precision_step() const { return precision_step_; }
  // The precision phase's fp16 conversion (what it kept in fp32 and why, the magnitudes it
  // calibrated on), or null when no precision phase runs.
  rules::Fp16IslandsPass* precision_pass() const { return precision_pass_; }

  // Runs step `k` on `ctx` and returns the rewrites it committed: 0, without running it,
  // for a step the plan does not run. Errors name the step.
  absl::StatusOr<int> RunStep(size_t k, rules::PassContext& ctx);

 private:
  std::vector<PlannedStep> steps_;
  size_t precision_step_ = 0;
  rules::Fp16IslandsPass* precision_pass_ = nullptr;
};

}  // namespace ovfix::converter
