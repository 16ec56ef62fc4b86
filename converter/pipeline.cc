#include "converter/pipeline.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/calibration_data.h"
#include "converter/inline_constant_if.h"
#include "converter/model_run.h"
#include "converter/node_evaluator.h"
#include "converter/output_verdict.h"
#include "converter/precision_cost.h"
#include "converter/repair.h"
#include "converter/report_html.h"
#include "converter/shape_observation.h"
#include "converter/status_line.h"
#include "converter/take_back_on_interrupt.h"
#include "converter/target.h"
#include "converter/validation.h"
#include "ir/atomic_file.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/node_check.h"
#include "ir/status_macros.h"
#include "rules/closest_name.h"
#include "rules/light_proto.h"
#include "rules/passes/fp16_islands.h"
#include "rules/passes/registry.h"
#include "rules/rule_set.h"
#include "rules/shape_facts.h"

namespace ovfix::converter {

using rules::CheckLightProto;
using rules::ConvertOptions;
using rules::Fp16IslandsPass;
using rules::InferShapesAndCheck;
using rules::InferShapesLight;
using rules::LightModelProto;
using rules::MakeNativePass;
using rules::MakeRuleSetPass;
using rules::Pass;
using rules::PassContext;
using rules::Rewriter;
using rules::Rule;
using rules::RuleLibrary;
using rules::ShapeFacts;
namespace {

struct Step {
  std::string name;
  std::unique_ptr<Pass> pass;
};

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

// The target's steps, with what the options ask for and the target does not list: fixing
// input shapes first, conv3d lowering and full broadcasts, user rules before the fp16
// conversion (they are written against the float model) or at the end.
std::vector<TargetStep> PlanSteps(const Target& target, const ConvertOptions& o, bool user_rules) {
  std::vector<TargetStep> steps = target.steps;
  auto insert = [&](size_t at, TargetStep s) {
    steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(std::min(at, steps.size())), s);
  };
  if ((o.batch > 0 || !o.input_shapes.empty()) && !HasPass(steps, "fix_input_shapes")) {
    insert(0, {TargetStep::Kind::kPass, "fix_input_shapes", 0});
  }
  if (o.lower_conv3d_unit_kernel && !HasPass(steps, "lower_conv3d_unit_kernel")) {
    insert(Find(steps, "fix_input_shapes") + 1,
           {TargetStep::Kind::kPass, "lower_conv3d_unit_kernel", 0});
  }
  if (o.broadcast == ConvertOptions::Broadcast::kFull &&
      !HasPass(steps, "explicit_broadcast_full")) {
    insert(Find(steps, "fp16_islands"), {TargetStep::Kind::kPass, "explicit_broadcast_full", 0});
  }
  if (user_rules) insert(Find(steps, "fp16_islands"), {TargetStep::Kind::kRules, "--rules", 0});
  return steps;
}

absl::StatusOr<std::vector<Step>> MakeSteps(const Target& target, const PipelineOptions& options,
                                            const RuleLibrary& library) {
  const ConvertOptions& o = options.convert;
  // A --disable name must name something, or a typo would silently disable nothing.
  for (const std::string& d : o.disabled) {
    if (MakeNativePass(d) == nullptr && library.Select(d).empty()) {
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
  }
  std::vector<Step> steps;
  for (const TargetStep& s : PlanSteps(target, o, !options.rule_files.empty())) {
    if (std::find(o.disabled.begin(), o.disabled.end(), s.name) != o.disabled.end()) continue;
    if (s.kind == TargetStep::Kind::kPass) {
      steps.push_back({s.name, MakeNativePass(s.name)});
      continue;
    }
    std::vector<std::shared_ptr<const Rule>> rules =
        s.name == "--rules" ? library.UserRules() : library.Select(s.name);
    if (rules.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          target.path, ":", s.line, ": no rule set, rule family or rule named '", s.name, "'"));
    }
    const std::string name = s.name == "--rules" ? "user_rules" : s.name;
    steps.push_back({name, MakeRuleSetPass(name, std::move(rules))});
  }
  return steps;
}

// Whether every input's dims are known once the options apply: then the reference run's
// dims are those of every run, and observed dims are facts (not only ranks).
bool InputsFixed(const Model& model, const ConvertOptions& o) {
  for (const Value* v : model.graph().inputs()) {
    if (v->is_initializer() || o.input_shapes.contains(v->name())) continue;
    std::optional<std::vector<Dim>> dims = v->shape();
    if (!dims) return false;
    for (size_t i = 0; i < dims->size(); ++i) {
      if (!(*dims)[i].known() && !(i == 0 && o.batch > 0)) return false;
    }
  }
  return true;
}

// Values whose shapes stay unknown because they depend on data, in every graph: named in the
// report so a user knows what stayed dynamic and why, instead of a failure.
std::vector<std::string> DataDependentValues(Model& model) {
  std::vector<std::string> out;
  for (Graph* g : GraphsRecursive(model.graph())) {
    for (Node* n : g->nodes()) {
      if (!DataShaped(*n) || n->op_type() == "If") continue;
      for (Value* v : n->outputs()) {
        if (v != nullptr && !v->static_shape()) {
          out.push_back(absl::StrCat(v->name(), " (", n->op_type(), ")"));
        }
      }
    }
  }
  return out;
}

// The converted model fails onnx's full check. That is a bug in ovfix unless the model read
// fails it too: a model can pass the plain checker and `run` and still contradict what strict
// shape inference derives (a declared type, a value_info).
absl::Status CheckerFailure(const PipelineOptions& options, const absl::Status& converted) {
  if (!options.input_path.empty()) {
    absl::StatusOr<std::unique_ptr<Model>> input = LoadModel(options.input_path);
    if (input.ok()) {
      if (absl::Status s = CheckModel(**input); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the model fails onnx's checker with full shape inference: ", s.message()));
      }
    }
  }
  if (!options.rule_files.empty() && !options.convert.validate) {
    // Unvalidated rules of the user's can change what the model computes, types included.
    return absl::InvalidArgumentError(absl::StrCat(
        "the converted model fails onnx's checker with full shape inference after the rules of ",
        absl::StrJoin(options.rule_files, ", "),
        " ran without validation (check them with `ovfix explain`): ", converted.message()));
  }
  return absl::InternalError(absl::StrCat(
      "the converted model fails onnx's checker with full shape inference (a bug in ovfix, "
      "please report it with the model): ",
      converted.message()));
}

// The bound `criteria` put on the worst element, or -1 when they put none.
double MaxBound(const Criteria& criteria) {
  double bound = -1;
  for (const Criterion& c : criteria) {
    if (c.kind == CriterionKind::kMax) bound = bound < 0 ? c.bound : std::min(bound, c.bound);
  }
  return bound;
}

absl::Status NotRunnable(const absl::Status& s) {
  return absl::InternalError(absl::StrCat(
      "the converted model does not run on the CPU executor (a bug in ovfix): ", s.message()));
}

// Saves the model and measures the file written: the end-to-end result reported is that of
// its bytes. A file that does not keep the outputs is removed again, and the files it
// replaced come back (with --in-place, the input model and its data).
absl::Status WriteAndMeasure(Model& model, const PipelineOptions& options,
                             ReferenceValidator* validator, ConversionReport& report) {
  std::vector<std::unique_ptr<KeptFile>> kept;
  kept.push_back(std::make_unique<KeptFile>(options.output_path));
  absl::StatusOr<std::string> data = ExternalDataFile(options.output_path, options.save);
  if (data.ok() && WritesExternalData(model, options.save)) {
    kept.push_back(std::make_unique<KeptFile>(*data));
  }
  if (!options.report_path.empty()) kept.push_back(std::make_unique<KeptFile>(options.report_path));
  TakeBackOnInterrupt interrupt_guard(&kept);
  if (absl::Status s = SaveModel(model, options.output_path, options.save); !s.ok()) {
    return absl::InvalidArgumentError(s.message());
  }
  report.written = true;
  auto take_back = [&] {
    for (const auto& k : kept) k->Restore();
    report.written = false;
  };
  // The report goes with the model: a model whose report cannot be written is taken back.
  auto write_report = [&]() -> absl::Status {
    if (options.report_path.empty()) return absl::OkStatus();
    if (validator != nullptr) report.model_runs = validator->model_runs();
    const std::string json = ReportFileText(report, options.report_path);
    absl::Status s = WriteFileAtomically(options.report_path, [&](std::ostream& out) {
      out << json;
      return out ? absl::OkStatus() : absl::InternalError("write failed");
    });
    if (s.ok()) return s;
    take_back();
    return absl::InvalidArgumentError(absl::StrCat(options.report_path, ": ", s.message(), " (",
                                                   options.output_path, " was not kept)"));
  };
  if (validator == nullptr) return write_report();
  absl::StatusOr<std::unique_ptr<Model>> written = LoadModel(options.output_path);
  absl::StatusOr<EndToEndResult> e2e =
      written.ok() ? validator->CompareEndToEnd(**written) : written.status();
  if (!e2e.ok()) {
    take_back();
    return NotRunnable(e2e.status());
  }
  report.end_to_end = *std::move(e2e);
  report.outputs_match = report.end_to_end->meets();
  if (!report.outputs_match) {
    take_back();
    return absl::OkStatus();
  }
  return write_report();
}

}  // namespace

absl::Status CheckModel(const Model& model) {
  onnx::ModelProto proto = LightModelProto(model);
  return CheckLightProto(proto);
}

absl::StatusOr<ConversionReport> ConvertModel(Model& model, const PipelineOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  ConversionReport report;
  report.input = options.input_path;
  report.output = options.output_path;
  report.target = options.convert.target;

  StatusLine progress(options.progress ? stderr : nullptr);
  OVFIX_ASSIGN_OR_RETURN(Target target, LoadTarget(options.convert.target));
  ConvertOptions convert = options.convert;
  OVFIX_RETURN_IF_ERROR(ApplyTargetOptions(target, options.set_by_user, convert));
  absl::StatusOr<RuleLibrary> library = RuleLibrary::Load(options.rule_files);
  if (!library.ok()) return absl::InvalidArgumentError(library.status().message());
  OVFIX_ASSIGN_OR_RETURN(std::vector<Step> steps, MakeSteps(target, options, *library));

  auto phase = [&, last = Clock::now()](const char* what) mutable {
    const auto now = Clock::now();
    options.log(absl::StrFormat("%s: %.1f ms", what,
                                1e3 * std::chrono::duration<double>(now - last).count()));
    last = now;
  };
  // Shape inference and the passes trust the nodes' structure.
  OVFIX_RETURN_IF_ERROR(CheckNodes(model));
  const int casts_before = CountCasts(model);
  // Types for the passes; what onnx cannot infer stays unknown (said with --verbose).
  auto infer = [&](Model& m) {
    if (absl::Status s = InferShapesLight(m); !s.ok()) options.log(std::string(s.message()));
    // Ranks onnx leaves open (reductions whose axes come from an outer graph...), then
    // inference again from them.
    if (rules::AddRankFacts(m.graph()) > 0) {
      if (absl::Status s = InferShapesLight(m); !s.ok()) options.log(std::string(s.message()));
    }
  };
  infer(model);
  OVFIX_RETURN_IF_ERROR(CheckNodesAgainstRanks(model));
  size_t types_inferred_at = 0;  // no rewrite recorded yet
  phase("setup and shape inference");
  std::unique_ptr<ReferenceValidator> validator;
  ShapeFacts shape_facts;
  std::vector<BodyName> bodies_not_run;  // by any calibration set
  bool random_inputs = false;
  if (convert.validate) {
    absl::StatusOr<CalibrationSets> sets =
        LoadCalibrationSets(model, options.calibration_data, options.input_sets, convert);
    if (!sets.ok()) return absl::InvalidArgumentError(sets.status().message());
    report.calibration = sets->description;
    random_inputs = absl::StartsWith(sets->description, "no calibration data");
    convert.fp16_calibrated_on_data = !random_inputs;
    progress.Set("reference run of the model");
    absl::StatusOr<std::unique_ptr<ReferenceValidator>> v =
        ReferenceValidator::Create(model, std::move(sets->sets));
    if (!v.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("validation needs a run of the model on the CPU executor, which failed: ",
                       v.status().message(),
                       random_inputs ? " (random inputs have symbolic dims set to 1: fix them with "
                                       "--input-shape NAME=DIMS, or give --calibration-data DIR)"
                                     : "",
                       " (--no-validate converts without validation)"));
    }
    validator = *std::move(v);
    validator->set_islands_ignored(!convert.islands_honoured);
    OVFIX_RETURN_IF_ERROR(CheckAccuracySpec(options.accuracy, validator->reference_outputs(0)));
    report.validated = true;
    phase("reference run");
    report.observed_shape_facts =
        ObserveShapes(model, *validator, InputsFixed(model, convert), shape_facts, bodies_not_run);
    if (report.observed_shape_facts > 0) infer(model);
  }
  if (!convert.validate) {
    report.validation_note = "--no-validate";
  }

  Rewriter rewriter(model);
  rewriter.set_shape_facts(&shape_facts);
  rewriter.set_observer(validator.get());
  CpuNodeEvaluator evaluator;
  bool precision_changed = false;
  // The graph right before the fp16 conversion, for the repair to convert again.
  std::unique_ptr<Model> before_fp16;
  size_t fp16_step = steps.size();
  for (size_t i = 0; i < steps.size(); ++i) {
    Step& step = steps[i];
    if (validator != nullptr && options.repair && before_fp16 == nullptr &&
        dynamic_cast<Fp16IslandsPass*>(step.pass.get()) != nullptr) {
      absl::StatusOr<std::unique_ptr<Model>> copy = SerializedCopy(model);
      if (copy.ok()) {
        before_fp16 = *std::move(copy);
        fp16_step = i;
      }
    }
    if (options.before_step && options.before_step(step.name, model, convert)) {
      report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      return report;
    }
    progress.Set(step.name, static_cast<int>(i) + 1, static_cast<int>(steps.size()));
    const size_t before = rewriter.records().size();
    const auto step_start = Clock::now();
    PassContext ctx{model,       rewriter,           convert,   validator.get(),
                    options.log, &types_inferred_at, &evaluator};
    absl::StatusOr<int> committed = step.pass->Run(ctx);
    if (!committed.ok()) {
      return absl::Status(committed.status().code(),
                          absl::StrCat(step.name, ": ", committed.status().message()));
    }
    StepReport s{step.name};
    for (size_t k = before; k < rewriter.records().size(); ++k) {
      (rewriter.records()[k].rolled_back ? s.rolled_back : s.rewrites)++;
    }
    s.seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
    options.log(absl::StrFormat("%s: %d rewrite(s), %d rolled back, %.1f ms", s.name, s.rewrites,
                                s.rolled_back, 1e3 * s.seconds));
    report.steps.push_back(s);
    if (auto* fp16 = dynamic_cast<Fp16IslandsPass*>(step.pass.get()); fp16 != nullptr) {
      report.islands = fp16->islands();
      precision_changed = precision_changed || *committed > 0;
    }
  }
  progress.Set("onnx checker and end-to-end comparison");
  rewriter.DeleteDanglingValues();
  report.rewrites = rewriter.records();
  phase("steps");

  // The default criteria; the loosest bound they put on the worst element is the reported
  // tolerance.
  ReferenceValidator::DefaultCriteria fallback = [&](int64_t elements) {
    // A backend that ignores islands runs the model in fp16 whatever the model says.
    return options.tolerance >= 0
               ? MaxErrorCriteria(options.tolerance)
               : DefaultCriteriaFor(precision_changed || !convert.islands_honoured, elements);
  };
  report.end_to_end_tolerance =
      options.accuracy.default_criteria
          ? MaxBound(*options.accuracy.default_criteria)
          : std::max(MaxBound(fallback(0)), MaxBound(fallback(kManyElements)));
  if (validator != nullptr) {
    validator->set_accuracy(options.accuracy, fallback);
    // What the rewrites computed as they went: an estimate, logged beside the measurement.
    absl::StatusOr<EndToEndResult> estimate = validator->CompareFinalOutputs();
    if (estimate.ok()) {
      options.log(absl::StrFormat("end-to-end estimate from the rewrites' activations: %.3g",
                                  estimate->max_error));
    }
  }
  // Final types for the saved model, and onnx's checker, on one light proto.
  if (absl::Status s = InferShapesAndCheck(model); !s.ok()) return CheckerFailure(options, s);
  phase("shape inference and onnx checker");
  rules::AddRankFacts(model.graph());
  rules::ListKnownShapesInValueInfo(model.graph());
  report.dynamic_values = DataDependentValues(model);
  if (validator != nullptr) {
    // The reported error is that of the serialized model, run as `ovfix run` runs a file.
    OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> written, SerializedCopy(model));
    absl::StatusOr<EndToEndResult> e2e = validator->CompareEndToEnd(*written);
    if (!e2e.ok()) return NotRunnable(e2e.status());
    report.end_to_end = *std::move(e2e);
    report.outputs_match = report.end_to_end->meets();
    if (!convert.islands_honoured) {
      report.islands_ignored = true;
      absl::StatusOr<std::vector<Fp16Overflow>> overflows =
          ListFp16Overflows(*written, validator->inputs());
      if (overflows.ok()) {
        report.fp16_overflows = *std::move(overflows);
      } else {
        options.log(absl::StrCat("values beyond fp16 not listed: ", overflows.status().message()));
      }
    }
    phase("end-to-end comparison");
  }
  // Keeping nodes in fp32 cannot help where the backend ignores fp32 islands.
  if (!report.outputs_match && precision_changed && before_fp16 != nullptr &&
      convert.islands_honoured) {
    auto* fp16 = dynamic_cast<Fp16IslandsPass*>(steps[fp16_step].pass.get());
    const std::map<std::string, MagnitudeRange> calibrated = fp16->magnitudes();
    // The steps from the fp16 conversion on, again, on a copy of the graph before it, with
    // the repair's nodes kept in fp32; calibration from the first conversion.
    auto reconvert = [&](const std::map<std::string, std::string>& keep)
        -> absl::StatusOr<std::unique_ptr<Model>> {
      OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> copy, SerializedCopy(*before_fp16));
      infer(*copy);
      Rewriter again(*copy);
      ConvertOptions with_keep = convert;
      with_keep.keep_fp32_outputs = keep;
      size_t inferred_at = 0;
      for (size_t k = fp16_step; k < steps.size(); ++k) {
        PassContext ctx{*copy,        again,     with_keep, nullptr, [](const std::string&) {},
                        &inferred_at, &evaluator};
        ctx.magnitudes = &calibrated;
        OVFIX_RETURN_IF_ERROR(steps[k].pass->Run(ctx).status());
      }
      OVFIX_RETURN_IF_ERROR(InferShapesAndCheck(*copy));
      return copy;
    };
    OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> failed, SerializedCopy(model));
    progress.Set("repair");
    auto repair_log = [&](const std::string& m) {
      options.log(m);
      progress.Set(m.substr(0, m.find(':')));
    };
    absl::StatusOr<RepairResult> repaired =
        RepairToTolerance(*before_fp16, std::move(failed), report.end_to_end->score, *validator,
                          /*tolerance=*/1.0, reconvert, repair_log);
    if (!repaired.ok()) return NotRunnable(repaired.status());
    model = std::move(*repaired->model);
    report.repair = Repair{repaired->kept,       repaired->rounds,
                           repaired->model_runs, report.end_to_end->max_error,
                           repaired->history,    repaired->only_fp32};
    report.end_to_end = repaired->end_to_end;
    report.outputs_match = repaired->within_tolerance;
    report.islands = fp16->islands();
    phase("repair");
  }
  // Branches the fixed shapes rule out go, so that no loader infers shapes through them.
  absl::StatusOr<int> inlined = InlineConstantIfs(model);
  if (!inlined.ok()) return NotRunnable(inlined.status());
  if (*inlined > 0) {
    report.constant_ifs_inlined = *inlined;
    options.log(absl::StrCat("inlined ", *inlined, " If node(s) with a constant condition"));
    // What the runs saw of the inlined branches' values (by name; an If output whose other
    // branch never ran had no rank fact before), then the shapes they now show fold (exact:
    // no validation needed).
    if (validator != nullptr) {
      std::vector<BodyName> ignored;
      ObserveShapes(model, *validator, InputsFixed(model, convert), shape_facts, ignored,
                    /*bodies_only=*/true);
    }
    infer(model);
    Rewriter after(model);
    size_t inferred_at = 0;
    for (const char* pass : {"constant_folding", "dead_code_elimination"}) {
      PassContext ctx{model, after, convert, nullptr, options.log, &inferred_at, &evaluator};
      OVFIX_RETURN_IF_ERROR(MakeNativePass(pass)->Run(ctx).status());
    }
    after.DeleteDanglingValues();
    if (absl::Status s = InferShapesAndCheck(model); !s.ok()) return CheckerFailure(options, s);
    rules::ListKnownShapesInValueInfo(model.graph());
  }
  report.bodies_not_run = DescribeBodiesNotRun(model, bodies_not_run);
  if (precision_changed) report.cost = MeasurePrecisionCost(model, casts_before);
  if (options.write_output && report.outputs_match) {
    progress.Set(absl::StrCat("writing and measuring ", options.output_path));
    OVFIX_RETURN_IF_ERROR(WriteAndMeasure(model, options, validator.get(), report));
    phase("write and measure the file");
  }
  if (validator != nullptr) report.model_runs = validator->model_runs();
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace ovfix::converter
