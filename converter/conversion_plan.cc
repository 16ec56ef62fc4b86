#include "converter/conversion_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/pipeline.h"
#include "ir/status_macros.h"
#include "re2/re2.h"
#include "rules/closest_name.h"
#include "rules/conversion_options.h"
#include "rules/passes/island_marks.h"
#include "rules/passes/registry.h"

namespace ovfix::converter {

using rules::ConvertOptions;
using rules::NativePassInfo;
using RuleList = std::vector<std::shared_ptr<const rules::Rule>>;

namespace {

using Precision = ConvertOptions::Precision;
using Where = rules::PassPlacement::Where;

constexpr std::string_view kPrecisionPass = "fp16_islands";
constexpr std::string_view kUserRules = "user_rules";

// A step of the target's list, or one the options add (what added it in `added_by`).
struct Listed {
  TargetStep step;
  std::string added_by;
};

size_t Find(const std::vector<Listed>& steps, std::string_view name) {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].step.name == name) return i;
  }
  return steps.size();
}

size_t FindLast(const std::vector<Listed>& steps, std::string_view name) {
  for (size_t i = steps.size(); i > 0; --i) {
    if (steps[i - 1].step.name == name) return i - 1;
  }
  return steps.size();
}

bool Lists(const std::vector<Listed>& steps, std::string_view name) {
  for (const Listed& s : steps) {
    if (s.step.kind == TargetStep::Kind::kPass && s.step.name == name) return true;
  }
  return false;
}

// "precision fp16, broadcast full": the options a pass declares whose values are not the
// defaults (what asked for it).
std::string NonDefaultOptions(const NativePassInfo& pass, const ConvertOptions& o) {
  static const ConvertOptions defaults;
  std::vector<std::string> parts;
  for (const rules::PassOption& d : pass.options) {
    absl::StatusOr<std::string> value = rules::GetOption(d.option, o);
    absl::StatusOr<std::string> initial = rules::GetOption(d.option, defaults);
    if (!value.ok()) {
      // A list or map option (input_shape): asked for when it holds anything.
      if (d.option == "input_shape" && !o.input_shapes.empty()) parts.emplace_back(d.option);
      continue;
    }
    if (initial.ok() && *value == *initial) continue;
    parts.push_back(absl::StrCat(std::string(d.option), " ", *value));
  }
  return parts.empty() ? "options" : absl::StrJoin(parts, ", ");
}

// Why a pass that only does what an option asks is off: its switching options' values.
std::string SwitchedOff(const NativePassInfo& pass, const ConvertOptions& o) {
  std::vector<std::string> parts;
  for (const rules::PassOption& d : pass.options) {
    if (!d.switches) continue;
    absl::StatusOr<std::string> value = rules::GetOption(d.option, o);
    parts.push_back(absl::StrCat(std::string(d.option), " ", value.ok() ? *value : "?"));
  }
  return absl::StrCat("switched off: ", absl::StrJoin(parts, ", "));
}

// The target's steps, with the passes the options ask for that the list lacks (in the order
// of the registry, each where its declaration places it; fp16_islands brings cast_cleanup),
// and the --rules files' step before the precision phase (they are written against the float
// model) or at the end.
std::vector<Listed> ListSteps(const Target& target, const ConvertOptions& o, bool user_rules) {
  std::vector<Listed> steps;
  for (const TargetStep& s : target.steps) steps.push_back({s, ""});
  auto insert = [&](size_t at, Listed s) {
    steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(std::min(at, steps.size())),
                 std::move(s));
  };
  for (const NativePassInfo& pass : rules::NativePasses()) {
    if (pass.added == nullptr || !pass.added(o) || Lists(steps, pass.name)) continue;
    const rules::PassPlacement& p = pass.placement;
    size_t at = 0;
    switch (p.where) {
      case Where::kFirst:
        at = 0;
        break;
      case Where::kBefore:
        at = Find(steps, p.step);
        break;
      case Where::kAfter:
        at = Find(steps, p.step) + 1;
        break;
      case Where::kBeforeLast:
        at = FindLast(steps, p.step);
        break;
    }
    const std::string why = NonDefaultOptions(pass, o);
    if (!pass.followed_by.empty()) {
      insert(at, {{TargetStep::Kind::kRules, std::string(pass.followed_by), 0}, why});
    }
    insert(at, {{TargetStep::Kind::kPass, pass.name, 0}, why});
  }
  if (user_rules) {
    insert(Find(steps, kPrecisionPass), {{TargetStep::Kind::kRules, "--rules", 0}, "rules"});
  }
  return steps;
}

bool Disabled(const ConvertOptions& o, std::string_view name) {
  return std::find(o.disabled.begin(), o.disabled.end(), name) != o.disabled.end();
}

// A --disable name must name something, or a typo would silently disable nothing.
absl::Status CheckDisabled(const ConvertOptions& o, const rules::RuleLibrary& library) {
  for (const std::string& d : o.disabled) {
    if (rules::FindNativePass(d) != nullptr || !library.Select(d).empty()) continue;
    std::vector<std::string> names;
    for (const NativePassInfo& p : rules::NativePasses()) names.push_back(p.name);
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

// --island-precision bf16: refused where the backend has no bfloat16 kernels (naming the
// targets that have them), said to do nothing where nothing is measured or nothing is fp16.
absl::Status CheckIslandPrecision(const std::string& target, const ConvertOptions& o,
                                  std::vector<std::string>& warnings) {
  if (o.island_precision != ConvertOptions::IslandPrecision::kBf16) return absl::OkStatus();
  if (!o.bf16_kernels) {
    std::vector<std::string> with;
    for (const Target& t : BuiltinTargets()) {
      ConvertOptions options;
      if (ApplyTargetOptions(t, {}, options).ok() && options.bf16_kernels) with.push_back(t.name);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--island-precision bf16: target '", target,
        "' has no bfloat16 kernels (targets with them: ", absl::StrJoin(with, ", "), ")"));
  }
  if (!o.validate) {
    warnings.push_back(
        "--island-precision bf16 has no effect with --no-validate: islands are put in bf16 only "
        "where a measurement shows the criteria hold; they stay fp32");
  } else if (o.precision != Precision::kFp16) {
    warnings.push_back(absl::StrCat("--island-precision bf16 has no effect: the conversion is ",
                                    std::string(rules::PrecisionName(o.precision)),
                                    ", not fp16 (--precision fp16)"));
  }
  return absl::OkStatus();
}

bool Intersects(const RuleList& a, const RuleList& b) {
  for (const auto& r : a) {
    if (std::find(b.begin(), b.end(), r) != b.end()) return true;
  }
  return false;
}

// The rules a rule step runs.
RuleList StepRules(const PlanStep& s, const rules::RuleLibrary& library) {
  if (s.kind != TargetStep::Kind::kRules) return {};
  return s.name == kUserRules ? library.UserRules() : library.Select(s.name);
}

// One line for each --disable that disables nothing: no step of the plan runs it (a pass, or
// a rule set holding the rules it names), or every step that does is off for another reason.
void WarnDisabledNothing(const ConversionPlan& plan, const std::vector<std::string>& off_because,
                         std::vector<std::string>& warnings) {
  for (const std::string& d : plan.options.disabled) {
    const RuleList selected = plan.library->Select(d);
    std::vector<size_t> runs_it;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const PlanStep& s = plan.steps[i];
      if (s.name == d || Intersects(selected, StepRules(s, *plan.library))) runs_it.push_back(i);
    }
    if (runs_it.empty()) {
      warnings.push_back(absl::StrCat("--disable ", d, " disables nothing: target ",
                                      plan.options.target, " does not run it"));
      continue;
    }
    std::vector<std::string> reasons;
    for (size_t i : runs_it) {
      if (off_because[i].empty()) break;
      reasons.push_back(off_because[i]);
    }
    if (reasons.size() == runs_it.size()) {
      warnings.push_back(absl::StrCat("--disable ", d, " disables nothing: it does not run (",
                                      reasons.front(), ")"));
    }
  }
}

// One line for each option given that only passes read, none of which runs here.
void WarnNoEffect(const ConversionPlan& plan, std::vector<std::string>& warnings) {
  for (const rules::OptionSpec& spec : rules::ConversionOptionTable()) {
    if (!plan.set_by_user.contains(std::string(spec.name)) || !spec.read_by.empty()) continue;
    const std::vector<std::string> readers = rules::PassesReading(spec.name);
    if (readers.empty()) continue;
    std::vector<std::string> off;
    bool read = false;
    for (const std::string& r : readers) {
      const PlanStep* s = plan.FindStep(r);
      if (s != nullptr && s->runs) read = true;
      if (s != nullptr && !s->runs) off.push_back(absl::StrCat(r, ": ", s->why_not));
    }
    if (read) continue;
    warnings.push_back(absl::StrCat(
        rules::FlagName(spec), " has no effect: ", absl::StrJoin(readers, ", "),
        readers.size() == 1 ? " does" : " do", " not run in this conversion",
        off.empty() ? absl::StrCat(" (target ", plan.options.target, " does not list it)")
                    : absl::StrCat(" (", absl::StrJoin(off, "; "), ")")));
  }
}

// --keep-fp32 patterns that match no node of the model (where the precision phase runs).
void WarnKeepFp32(const ConversionPlan& plan, const Model& model,
                  std::vector<std::string>& warnings) {
  if (!plan.ReducesPrecision()) return;  // WarnNoEffect says it
  for (const std::string& pattern : plan.options.keep_fp32) {
    RE2 re(pattern, RE2::Quiet);
    if (!re.ok()) continue;  // the fp16 pass says why
    if (!rules::KeepFp32MatchesAny(model.graph(), re)) {
      warnings.push_back(absl::StrCat("--keep-fp32 '", pattern,
                                      "' matches no node name or op type of the model (the "
                                      "whole name must match)"));
    }
  }
}

std::vector<ConversionPhase> MakePhases(const ConversionPlan& plan, const PipelineOptions& p) {
  const ConvertOptions& o = plan.options;
  const bool validate = o.validate;
  const bool tries_islands =
      p.repair || o.certify || o.island_precision == ConvertOptions::IslandPrecision::kBf16;
  const bool repair = validate && tries_islands && plan.ReducesPrecision();
  std::vector<ConversionPhase> phases;
  if (validate) phases.push_back(ConversionPhase::kCalibration);
  phases.push_back(ConversionPhase::kSteps);
  phases.push_back(ConversionPhase::kCheck);
  if (validate && p.write_output) {
    // The file is the measurement: finished and written, then repaired from its score.
    phases.push_back(ConversionPhase::kFinish);
    phases.push_back(ConversionPhase::kWrite);
    if (repair) phases.push_back(ConversionPhase::kRepair);
    return phases;
  }
  if (repair) phases.push_back(ConversionPhase::kRepair);
  phases.push_back(ConversionPhase::kFinish);
  if (p.write_output) phases.push_back(ConversionPhase::kWrite);
  return phases;
}

// The values of the list and map options, which rule conditions do not read (GetOption).
std::string ListedValues(std::string_view name, const ConvertOptions& o) {
  if (name == "keep_fp32") return absl::StrJoin(o.keep_fp32, " ");
  if (name == "disable") return absl::StrJoin(o.disabled, " ");
  if (name == "input_shape") {
    return absl::StrJoin(o.input_shapes, " ", [](std::string* out, const auto& entry) {
      absl::StrAppend(out, entry.first, "=", absl::StrJoin(entry.second, "x"));
    });
  }
  return "";
}

}  // namespace

std::string_view PhaseName(ConversionPhase phase) {
  switch (phase) {
    case ConversionPhase::kCalibration:
      return "calibration";
    case ConversionPhase::kSteps:
      return "steps";
    case ConversionPhase::kCheck:
      return "check";
    case ConversionPhase::kFinish:
      return "finish";
    case ConversionPhase::kWrite:
      return "write";
    case ConversionPhase::kRepair:
      return "repair";
  }
  return "?";
}

bool ConversionPlan::ReducesPrecision() const {
  for (const PlanStep& s : steps) {
    if (s.name == kPrecisionPass && s.runs) return true;
  }
  return false;
}

const PlanStep* ConversionPlan::FindStep(std::string_view name) const {
  for (const PlanStep& s : steps) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const PlanStep* ConversionPlan::StepRunning(std::string_view name, const RuleList& selected) const {
  for (const PlanStep& s : steps) {
    if (s.name == name || Intersects(selected, StepRules(s, *library))) return &s;
  }
  return nullptr;
}

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

absl::StatusOr<ConversionPlan> PlanConversion(const PipelineOptions& p, const Model* model) {
  OVFIX_ASSIGN_OR_RETURN(Target target, LoadTarget(p.convert.target));
  return PlanConversion(std::move(target), p, model);
}

absl::StatusOr<ConversionPlan> PlanConversion(Target target, const PipelineOptions& p,
                                              const Model* model) {
  ConversionPlan plan;
  plan.target = std::move(target);
  plan.options = p.convert;
  plan.set_by_user = p.set_by_user;
  ConvertOptions& o = plan.options;
  OVFIX_RETURN_IF_ERROR(ApplyTargetOptions(plan.target, p.set_by_user, o));
  plan.fp32_by_request = Fp32ByRequest(plan.target, p.set_by_user, o);
  OVFIX_RETURN_IF_ERROR(CheckIslandPrecision(plan.target.name, o, plan.warnings));
  absl::StatusOr<rules::RuleLibrary> library = rules::RuleLibrary::Load(p.rule_files);
  if (!library.ok()) return absl::InvalidArgumentError(library.status().message());
  plan.library = std::make_shared<const rules::RuleLibrary>(*std::move(library));
  OVFIX_RETURN_IF_ERROR(CheckOptions(plan.target, o, p.set_by_user));
  OVFIX_RETURN_IF_ERROR(CheckDisabled(o, *plan.library));

  const NativePassInfo* precision = rules::FindNativePass(kPrecisionPass);
  // Why each step would not run were it not disabled (empty: it would run).
  std::vector<std::string> off_because;
  StepPhase phase = StepPhase::kStructural;
  for (const Listed& listed : ListSteps(plan.target, o, !p.rule_files.empty())) {
    const TargetStep& t = listed.step;
    PlanStep s;
    s.name = t.name == "--rules" ? std::string(kUserRules) : t.name;
    s.kind = t.kind;
    s.added_by = listed.added_by;
    s.outputs_judged = t.name == "--rules";
    if (t.kind == TargetStep::Kind::kRules && StepRules(s, *plan.library).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(plan.target.path, ":", t.line,
                                                     ": no rule set, rule family or rule named '",
                                                     t.name, "'"));
    }
    // The precision phase: fp16_islands and the cast_cleanup right after it. A disabled step
    // is no phase's start or end.
    const bool disabled = Disabled(o, t.name);
    if (!disabled) {
      if (t.name == kPrecisionPass) {
        phase = StepPhase::kPrecision;
      } else if (phase == StepPhase::kPrecision && t.name != precision->followed_by) {
        phase = StepPhase::kCleanup;
      }
    }
    s.phase = phase;
    // What switches a step off: its own declaration, or, in the precision phase, the
    // precision pass's.
    const NativePassInfo* info =
        phase == StepPhase::kPrecision && !disabled ? precision : rules::FindNativePass(t.name);
    std::string off;
    if (info != nullptr && info->enabled != nullptr && !info->enabled(o)) {
      off = SwitchedOff(*info, o);
    }
    off_because.push_back(off);
    s.runs = off.empty() && !disabled;
    if (disabled) {
      s.why_not = absl::StrCat("disabled (--disable ", t.name, ")");
    } else {
      s.why_not = off;
    }
    plan.steps.push_back(std::move(s));
  }
  plan.phases = MakePhases(plan, p);
  WarnDisabledNothing(plan, off_because, plan.warnings);
  WarnNoEffect(plan, plan.warnings);
  if (model != nullptr) WarnKeepFp32(plan, *model, plan.warnings);
  return plan;
}

std::string StepStatus(const PlanStep& step) {
  return step.runs ? "runs" : absl::StrCat("does not run: ", step.why_not);
}

std::string PlanText(const ConversionPlan& plan) {
  std::string text = absl::StrCat("plan: target ", plan.target.name, " (", plan.target.path, ")\n");
  static const ConvertOptions defaults;
  std::vector<std::string> options;
  for (const rules::OptionSpec& spec : rules::ConversionOptionTable()) {
    if (spec.name == "target" || spec.name == "fp16") continue;
    const bool given = plan.set_by_user.contains(std::string(spec.name));
    absl::StatusOr<std::string> value = rules::GetOption(spec.name, plan.options);
    absl::StatusOr<std::string> initial = rules::GetOption(spec.name, defaults);
    if (value.ok() && initial.ok() && *value == *initial && !given) continue;
    if (!value.ok() && !given) continue;
    const std::string shown = value.ok() ? *value : ListedValues(spec.name, plan.options);
    options.push_back(absl::StrCat(std::string(spec.name), shown.empty() ? "" : " ", shown,
                                   given ? " (given)" : " (target)"));
  }
  absl::StrAppend(&text, "options: ", options.empty() ? "defaults" : absl::StrJoin(options, ", "),
                  "\nsteps:\n");
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    const char* phase = s.phase == StepPhase::kPrecision ? "precision"
                        : s.phase == StepPhase::kCleanup ? "cleanup"
                                                         : "structural";
    absl::StrAppend(
        &text,
        absl::StrFormat("  %2d %-28s %-10s %s%s\n", i + 1, s.name, phase, StepStatus(s),
                        s.added_by.empty() ? "" : absl::StrCat(" (added: ", s.added_by, ")")));
  }
  std::vector<std::string> phases;
  for (ConversionPhase ph : plan.phases) phases.emplace_back(PhaseName(ph));
  absl::StrAppend(&text, "phases: ", absl::StrJoin(phases, ", "), "\n");
  for (const std::string& w : plan.warnings) absl::StrAppend(&text, "warning: ", w, "\n");
  return text;
}

}  // namespace ovfix::converter
