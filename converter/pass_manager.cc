#include "converter/pass_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "rules/closest_name.h"
#include "rules/conversion_options.h"
#include "rules/passes/registry.h"

namespace ovfix::converter {

using rules::ConvertOptions;
using rules::Rule;
namespace {

using Precision = ConvertOptions::Precision;

constexpr std::string_view kPrecisionPass = "fp16_islands";
constexpr std::string_view kPrecisionCleanup = "cast_cleanup";
constexpr std::string_view kSafeSoftmaxPass = "fp16_safe_softmax";
constexpr std::string_view kSafeMaskPass = "fp16_safe_mask";

bool HasPass(const std::vector<TargetStep>& steps, std::string_view name) {
  for (const TargetStep& s : steps) {
    if (s.kind == TargetStep::Kind::kPass && s.name == name) return true;
  }
  return false;
}

// Index of the first step named `name`, or steps.size().
size_t Find(const std::vector<TargetStep>& steps, std::string_view name) {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].name == name) return i;
  }
  return steps.size();
}

// Index of the last step named `name`, or steps.size().
size_t FindLast(const std::vector<TargetStep>& steps, std::string_view name) {
  for (size_t i = steps.size(); i > 0; --i) {
    if (steps[i - 1].name == name) return i - 1;
  }
  return steps.size();
}

// The target's steps, with what the options ask for and the target does not list: fixing
// input shapes first, conv3d lowering and full broadcasts, the precision phase after the
// structural steps (before the last dead_code_elimination), user rules before the precision
// phase (they are written against the float model) or at the end.
std::vector<TargetStep> PlanSteps(const Target& target, const ConvertOptions& o, bool user_rules) {
  std::vector<TargetStep> steps = target.steps;
  auto insert = [&](size_t at, TargetStep s) {
    steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(std::min(at, steps.size())), s);
  };
  if (o.precision != Precision::kFp32 && !HasPass(steps, kPrecisionPass)) {
    const size_t at = FindLast(steps, "dead_code_elimination");
    insert(at, {TargetStep::Kind::kRules, std::string(kPrecisionCleanup), 0});
    insert(at, {TargetStep::Kind::kPass, std::string(kPrecisionPass), 0});
  }
  // A softmax written out by hand overflows fp16 in its Exp; with the row's largest logit
  // subtracted first it does not, and the island policy can leave it in fp16.
  if (o.precision == Precision::kFp16 && !HasPass(steps, kSafeSoftmaxPass)) {
    insert(Find(steps, kPrecisionPass),
           {TargetStep::Kind::kPass, std::string(kSafeSoftmaxPass), 0});
  }
  // An attention mask built from float32's extremes is -inf in fp16 (and 0 * -inf is NaN);
  // bounded first, it stays finite and the Softmax reading it can be the only fp32 island.
  if (o.precision == Precision::kFp16 && !HasPass(steps, kSafeMaskPass)) {
    insert(Find(steps, kSafeSoftmaxPass), {TargetStep::Kind::kPass, std::string(kSafeMaskPass), 0});
  }
  if ((o.batch > 0 || !o.input_shapes.empty()) && !HasPass(steps, "fix_input_shapes")) {
    insert(0, {TargetStep::Kind::kPass, "fix_input_shapes", 0});
  }
  if (o.lower_conv3d_unit_kernel && !HasPass(steps, "lower_conv3d_unit_kernel")) {
    insert(Find(steps, "fix_input_shapes") + 1,
           {TargetStep::Kind::kPass, "lower_conv3d_unit_kernel", 0});
  }
  if (o.broadcast == ConvertOptions::Broadcast::kFull &&
      !HasPass(steps, "explicit_broadcast_full")) {
    insert(Find(steps, kPrecisionPass), {TargetStep::Kind::kPass, "explicit_broadcast_full", 0});
  }
  if (user_rules) insert(Find(steps, kPrecisionPass), {TargetStep::Kind::kRules, "--rules", 0});
  return steps;
}

// Whether the options let a listed step run (the passes that only do what an option asks).
bool OptionsRun(std::string_view name, const ConvertOptions& o) {
  if (name == "lower_conv3d_unit_kernel") return o.lower_conv3d_unit_kernel;
  if (name == "explicit_broadcast_full") return o.broadcast == ConvertOptions::Broadcast::kFull;
  if (name == kPrecisionPass) return o.precision != Precision::kFp32;
  return true;
}

// A --disable name must name something, or a typo would silently disable nothing.
absl::Status CheckDisabled(const ConvertOptions& o, const rules::RuleLibrary& library) {
  for (const std::string& d : o.disabled) {
    if (rules::MakeNativePass(d) != nullptr || !library.Select(d).empty()) continue;
    std::vector<std::string> names;
    for (const rules::NativePassInfo& p : rules::NativePasses()) names.push_back(p.name);
    for (const rules::RuleFile& file : library.files()) {
      names.push_back(file.set);
      for (const auto& r : file.rules) names.push_back(r->name);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--disable ", d, ": no pass, rule set, rule family or rule of that name",
                     rules::DidYouMean(d, names)));
  }
  return absl::OkStatus();
}

// The one place that says which reduced precisions a target can take: a backend that picks
// its own float type for every tensor (islands not honoured: OpenVINO GPU, ncnn on Vulkan)
// runs fp16, so a bf16 model would not run there as written.
absl::Status CheckPrecisionSupported(const Target& target, const ConvertOptions& o) {
  if (o.precision == Precision::kBf16 && !o.islands_honoured) {
    return absl::InvalidArgumentError(
        absl::StrCat("precision bf16: target ", target.name,
                     " runs every tensor in the float type its backend picks (fp16), not bf16"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckOptions(const Target& target, const ConvertOptions& options,
                          const std::set<std::string>& set_by_user) {
  if (absl::Status s = CheckPrecisionSupported(target, options); !s.ok()) return s;
  if (options.precision != Precision::kFp32) return absl::OkStatus();
  // Options that only shape a reduced-precision conversion, given for one that stays fp32.
  for (std::string_view name : {"keep_io_types", "fp16_islands", "fp16_magnitude_threshold"}) {
    if (!set_by_user.contains(std::string(name))) continue;
    if (name == "keep_io_types" && options.keep_io_types) continue;
    const rules::OptionSpec* spec = rules::FindOption(name);
    return absl::InvalidArgumentError(
        absl::StrCat(rules::FlagName(*spec), " applies to reduced precision only: target ",
                     target.name, " converts in fp32 (add --precision fp16)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PassManager> PassManager::Plan(const Target& target, const ConvertOptions& options,
                                              const std::set<std::string>& set_by_user,
                                              bool user_rules, const rules::RuleLibrary& library) {
  if (absl::Status s = CheckOptions(target, options, set_by_user); !s.ok()) return s;
  if (absl::Status s = CheckDisabled(options, library); !s.ok()) return s;
  PassManager manager;
  StepPhase phase = StepPhase::kStructural;
  for (const TargetStep& s : PlanSteps(target, options, user_rules)) {
    if (std::find(options.disabled.begin(), options.disabled.end(), s.name) !=
        options.disabled.end()) {
      continue;
    }
    // The precision phase: fp16_islands and the cast_cleanup right after it.
    if (s.name == kPrecisionPass) {
      phase = StepPhase::kPrecision;
    } else if (phase == StepPhase::kPrecision && s.name != kPrecisionCleanup) {
      phase = StepPhase::kCleanup;
    }
    const bool runs = OptionsRun(phase == StepPhase::kPrecision ? kPrecisionPass : s.name, options);
    if (s.kind == TargetStep::Kind::kPass) {
      std::unique_ptr<rules::Pass> pass;
      if (s.name == kPrecisionPass) {
        auto fp16 = std::make_unique<rules::Fp16IslandsPass>();
        if (runs && manager.precision_pass_ == nullptr) {
          manager.precision_pass_ = fp16.get();
          manager.precision_step_ = manager.steps_.size();
        }
        pass = std::move(fp16);
      } else {
        pass = rules::MakeNativePass(s.name);
      }
      manager.steps_.push_back({s.name, std::move(pass), phase, runs});
      continue;
    }
    std::vector<std::shared_ptr<const Rule>> rules =
        s.name == "--rules" ? library.UserRules() : library.Select(s.name);
    if (rules.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          target.path, ":", s.line, ": no rule set, rule family or rule named '", s.name, "'"));
    }
    const std::string name = s.name == "--rules" ? "user_rules" : s.name;
    manager.steps_.push_back(
        {name, rules::MakeRuleSetPass(name, std::move(rules)), phase, runs, s.name == "--rules"});
  }
  if (manager.precision_pass_ == nullptr) manager.precision_step_ = manager.steps_.size();
  return manager;
}

std::vector<ConversionPhase> PassManager::Phases(bool validate, bool repair,
                                                 bool write_output) const {
  std::vector<ConversionPhase> phases;
  if (validate) phases.push_back(ConversionPhase::kCalibration);
  phases.push_back(ConversionPhase::kSteps);
  phases.push_back(ConversionPhase::kCheck);
  if (validate && repair && precision_pass_ != nullptr) phases.push_back(ConversionPhase::kRepair);
  phases.push_back(ConversionPhase::kFinish);
  if (write_output) phases.push_back(ConversionPhase::kWrite);
  return phases;
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
