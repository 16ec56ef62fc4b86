#include "converter/pass_manager.h"

#include "absl/strings/str_cat.h"
#include "rules/passes/registry.h"
#include "rules/rule_set.h"

namespace ovfix::converter {

PassManager PassManager::Make(const ConversionPlan& plan, const PassFactory& factory) {
  PassManager manager;
  for (const PlanStep& s : plan.steps) {
    std::unique_ptr<rules::Pass> pass;
    if (s.kind == TargetStep::Kind::kPass) {
      if (s.name == "fp16_islands") {
        auto fp16 = std::make_unique<rules::Fp16IslandsPass>();
        if (s.runs && manager.precision_pass_ == nullptr) {
          manager.precision_pass_ = fp16.get();
          manager.precision_step_ = manager.steps_.size();
        }
        pass = std::move(fp16);
      } else {
        if (factory) pass = factory(s.name);
        if (pass == nullptr) pass = rules::MakeNativePass(s.name);
      }
    } else {
      pass = rules::MakeRuleSetPass(s.name, s.name == "user_rules" ? plan.library->UserRules()
                                                                   : plan.library->Select(s.name));
    }
    manager.steps_.push_back({s.name, std::move(pass), s.phase, s.runs, s.outputs_judged});
  }
  if (manager.precision_pass_ == nullptr) manager.precision_step_ = manager.steps_.size();
  return manager;
}

absl::StatusOr<int> PassManager::RunStep(size_t k, rules::PassContext& ctx) {
  PlannedStep& step = steps_[k];
  if (!step.runs) return 0;
  absl::StatusOr<int> committed = step.pass->Run(ctx);
  if (!committed.ok()) {
    return absl::Status(committed.status().code(),
                        absl::StrCat(step.name, ": ", committed.status().message()));
  }
  return committed;
}

}  // namespace ovfix::converter
