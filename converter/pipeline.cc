#include "converter/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/bf16_opset.h"
#include "converter/calibration_data.h"
#include "converter/conversion_plan.h"
#include "converter/conversion_time.h"
#include "converter/inline_constant_if.h"
#include "converter/layer_precision_hints.h"
#include "converter/model_run.h"
#include "converter/node_evaluator.h"
#include "converter/opset_conversion.h"
#include "converter/output_verdict.h"
#include "converter/pass_manager.h"
#include "converter/precision_cost.h"
#include "converter/repair.h"
#include "converter/report_html.h"
#include "converter/shape_observation.h"
#include "converter/shape_range.h"
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
using rules::InferShapesAndCheck;
using rules::InferShapesLight;
using rules::LightModelProto;
using rules::MakeNativePass;
using rules::PassContext;
using rules::Rewriter;
using rules::RuleLibrary;
using rules::ShapeFacts;
namespace {

// Weights past which a full run of the model costs enough to be worth saving (their bytes
// are read, converted and streamed once more on each run).
constexpr int64_t kRunCostsWeightBytes = int64_t{64} << 20;
// Weights past which the island certificate and the bf16 tries do not run: each try holds a
// converted copy of the model and runs it whole (a ConvNeXt-T, a BERT-base are tried).
constexpr int64_t kIslandTriesWeightBytes = int64_t{512} << 20;
// An opset conversion rewrites ops into others that compute the same in fp32 (Gelu as Erf and
// products, a Reduce's axes moved): what it changes is rounding, relative to the output range.
constexpr double kOpsetTolerance = 1e-4;

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

bool HasIf(Graph& g) {
  for (Graph* sub : GraphsRecursive(g)) {
    for (const Node* n : sub->nodes()) {
      if (n->op_type() == "If") return true;
    }
  }
  return false;
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
  ScopedTimePart timed(TimePart::kSave);
  std::vector<std::unique_ptr<KeptFile>> kept;
  kept.push_back(std::make_unique<KeptFile>(options.output_path));
  absl::StatusOr<std::string> data = ExternalDataFile(options.output_path, options.save);
  if (data.ok() && WritesExternalData(model, options.save)) {
    kept.push_back(std::make_unique<KeptFile>(*data));
  }
  if (!options.report_path.empty()) kept.push_back(std::make_unique<KeptFile>(options.report_path));
  TakeBackOnInterrupt interrupt_guard(&kept);
  // The file is run as it is written: the model file first, then each weight once the writer
  // has passed it, the run beside the write.
  absl::StatusOr<EndToEndResult> e2e = absl::UnknownError("not measured");
  auto measure = [&](absl::StatusOr<std::unique_ptr<Model>> written) {
    e2e = written.ok() ? validator->CompareEndToEnd(**written) : written.status();
  };
  if (absl::Status s = SaveModelAndRead(model, options.output_path, options.save,
                                        validator != nullptr ? measure : WrittenModelReader());
      !s.ok()) {
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
  if (!e2e.ok()) {
    take_back();
    return NotRunnable(e2e.status());
  }
  report.end_to_end = *std::move(e2e);
  report.outputs_match = report.end_to_end->meets();
  // The rewrites whose error awaited the file's run (a precision change on a large model) get
  // the first file's (a repaired model's file is measured again, in the repair's history).
  for (size_t index : validator->measured_on_file()) {
    if (index < report.rewrites.size() && report.rewrites[index].max_error < 0) {
      report.rewrites[index].max_error = report.end_to_end->max_error;
    }
  }
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

namespace {

// One conversion: the state its phases share. The plan (converter/conversion_plan.h) says
// which steps and phases run, in which order; each phase is one method here.
class Conversion {
 public:
  // `plan`: the conversion's plan (PlanConversion), or null to make it in setup.
  Conversion(Model& model, const PipelineOptions& options, const ConversionPlan* plan)
      : model_(model),
        options_(options),
        plan_(plan),
        progress_(options.progress ? stderr : nullptr) {}

  absl::StatusOr<ConversionReport> Run();

 private:
  using Clock = std::chrono::steady_clock;

  absl::Status Setup();
  absl::Status Calibrate();
  absl::Status CheckOpsetConversion();
  // Sets `ended` when options.before_step ends the conversion before a step.
  absl::Status RunSteps(bool& ended);
  // The default criteria of an output by its number of elements: --tolerance's bound when
  // given, else fp16's (`float16_judged`) or fp32's, bf16's where `precision_changed` and the
  // precision is bf16.
  ReferenceValidator::DefaultCriteria CriteriaFallback(bool float16_judged,
                                                       bool precision_changed) const;
  absl::Status Check();
  absl::Status RepairToCriteria();
  // The island certificate (converter/repair.h): after a conversion that meets the criteria,
  // each fp32 island tried back in fp16 alone; the ones the criteria do not need go.
  absl::Status Certify();
  // --island-precision bf16 (converter/repair.h IslandsToBf16): the islands left in fp32 tried
  // in bfloat16; those the criteria allow compute in it.
  absl::Status IslandsInBf16();
  // The repair's nodes by first output name, with the repair's reason (none without a repair).
  std::map<std::string, std::string> RepairKeeps() const;
  // Why the island tries did not run (`tries_cost_`), after `what`.
  std::string TriesSkipped(std::string_view what) const;
  // Whether the repair phase has islands to try (repair, certificate, bf16 islands): the graph
  // before the precision phase is kept for it.
  bool TriesIslands() const {
    return options_.repair || convert_.certify ||
           convert_.island_precision == ConvertOptions::IslandPrecision::kBf16;
  }
  // The steps from the precision phase on, again, on the graph before it: `keep` in fp32,
  // `release` in fp16 whatever the island policy says (the repair's and certificate's tries),
  // `bf16` islands in bfloat16.
  absl::StatusOr<std::unique_ptr<Model>> Reconvert(const std::map<std::string, std::string>& keep,
                                                   const std::set<std::string>& release,
                                                   const std::set<std::string>& bf16 = {});
  // The graph before the precision phase as the tries start from it: typed by Infer, once.
  absl::StatusOr<const Model*> InferredBeforePrecision();
  // The report file again, for a model written before the certificate changed nothing.
  absl::Status RewriteReport();
  absl::Status Finish();
  absl::Status Write();
  bool RepairPossible() const;
  void ListOverflows(const Model& m);

  // Types for the passes; what onnx cannot infer stays unknown (said with --verbose).
  void Infer(Model& m) const;
  // Logs the time since the last phase ended.
  void PhaseDone(const char* what);

  Model& model_;
  const PipelineOptions& options_;
  const ConversionPlan* plan_;
  std::optional<ConversionPlan> own_plan_;  // when the caller gave none
  StatusLine progress_;
  // Where the time goes (the report's time line); current on this thread while Run runs.
  ConversionClock clock_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point last_ = start_;
  ConversionReport report_;
  ConvertOptions convert_;
  std::optional<PassManager> manager_;
  int casts_before_ = 0;
  size_t types_inferred_at_ = 0;  // no rewrite recorded yet
  std::unique_ptr<ReferenceValidator> validator_;
  ShapeFacts shape_facts_;
  std::vector<BodyName> bodies_not_run_;  // by any calibration set
  CpuNodeEvaluator evaluator_;
  bool precision_changed_ = false;
  // The graph right before the precision phase, for the repair to convert again.
  std::unique_ptr<Model> before_precision_;
  // A copy of it with the types Infer gives it (InferredBeforePrecision): inference sees the
  // same graph on every try, so each try's copy carries these types instead of inferring them.
  std::unique_ptr<Model> inferred_before_;
  // The precision phase's calibrated magnitudes, by value name, for the conversions again
  // (taken before the first: each empties the pass's own).
  std::optional<std::map<std::string, MagnitudeRange>> calibrated_;
  // The model as loaded, when --opset converted it in setup: the conversion is checked against
  // it on the calibration inputs before anything else runs.
  std::unique_ptr<Model> before_opset_;
  // The steps' rewriter, which the validator observes: it lives as long as the validator.
  std::optional<Rewriter> rewriter_;
  // The graph the steps left, when the finish phase ran before a repair that may need it.
  std::unique_ptr<Model> unfinished_;
  // The model as it is now is finished and was written and measured (kept or taken back).
  bool written_current_ = false;
  // A full run of the model costs (its weights past kRunCostsWeightBytes, or activations past
  // the store's memory).
  bool runs_cost_ = false;
  // Trying islands costs too much (weights past kIslandTriesWeightBytes, or activations past
  // the store's memory): the island certificate and the bf16 tries do not run.
  bool tries_cost_ = false;
  // What the islands the written model keeps were settled by: the repair's keeps, and the
  // certificate's give-backs (by first output name; what Reconvert takes).
  std::map<std::string, std::string> settled_keep_;
  std::set<std::string> settled_release_;
};

void Conversion::Infer(Model& m) const {
  if (absl::Status s = InferShapesLight(m); !s.ok()) options_.log(std::string(s.message()));
  // Ranks onnx leaves open (reductions whose axes come from an outer graph...), then
  // inference again from them.
  if (rules::AddRankFacts(m.graph()) > 0) {
    if (absl::Status s = InferShapesLight(m); !s.ok()) options_.log(std::string(s.message()));
  }
}

void Conversion::PhaseDone(const char* what) {
  const auto now = Clock::now();
  options_.log(absl::StrFormat("%s: %.1f ms", what,
                               1e3 * std::chrono::duration<double>(now - last_).count()));
  last_ = now;
}

absl::Status Conversion::Setup() {
  ScopedTimePart timed(TimePart::kSetup);
  report_.input = options_.input_path;
  report_.output = options_.output_path;
  report_.target = options_.convert.target;
  if (plan_ == nullptr) {
    OVFIX_ASSIGN_OR_RETURN(own_plan_, PlanConversion(options_, &model_));
    plan_ = &*own_plan_;
  }
  convert_ = plan_->options;
  report_.fp32_runtime = plan_->target.fp32_runtime;
  report_.fp32_by_request = plan_->fp32_by_request;
  report_.warnings = plan_->warnings;
  for (const std::string& w : report_.warnings) options_.log(absl::StrCat("warning: ", w));
  for (const auto& rule : plan_->library->UserRules()) report_.user_rules.insert(rule->name);
  manager_.emplace(PassManager::Make(*plan_));
  // Shape inference and the passes trust the nodes' structure.
  OVFIX_RETURN_IF_ERROR(CheckNodes(model_));
  casts_before_ = CountCasts(model_);
  Infer(model_);
  OVFIX_RETURN_IF_ERROR(CheckNodesAgainstRanks(model_));
  if (convert_.opset > 0 && convert_.opset != model_.OpsetVersion("")) {
    OVFIX_ASSIGN_OR_RETURN(before_opset_, SerializedCopy(model_));
    absl::StatusOr<OpsetChange> change = ConvertOpset(model_, convert_.opset);
    if (!change.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--opset ", convert_.opset, ": ", change.status().message()));
    }
    report_.opset_note = change->note;
    options_.log(absl::StrCat("opset: ", change->note, ", ", change->nodes_rewritten,
                              " node(s) across opset 17 rewritten"));
    OVFIX_RETURN_IF_ERROR(CheckNodes(model_));
    Infer(model_);
  } else if (convert_.precision == ConvertOptions::Precision::kBf16) {
    OVFIX_ASSIGN_OR_RETURN(const OpsetRaise raise, RaiseOpsetForBfloat16(model_));
    report_.opset_note = raise.note;
    if (!raise.note.empty()) options_.log(absl::StrCat("bf16: ", raise.note));
    if (raise.to != raise.from) Infer(model_);
  }
  PhaseDone("setup and shape inference");
  if (!convert_.validate) report_.validation_note = "--no-validate";
  return absl::OkStatus();
}

// The calibration phase: the reference run on the calibration data, which every rewrite is
// validated against and the precision phase calibrates on.
absl::Status Conversion::Calibrate() {
  ScopedTimePart timed(TimePart::kCalibration);
  absl::StatusOr<CalibrationSets> sets =
      LoadCalibrationSets(model_, options_.calibration_data, options_.input_sets, convert_);
  if (!sets.ok()) return absl::InvalidArgumentError(sets.status().message());
  report_.calibration = sets->description;
  report_.set_labels = sets->labels;
  if (report_.set_labels.empty()) {
    std::set<std::string> shapes;
    for (const exec::TensorMap& set : sets->sets) {
      report_.set_labels.push_back(DynamicInputShapes(model_.graph(), set));
      shapes.insert(report_.set_labels.back());
    }
    if (!report_.set_labels.front().empty()) {
      report_.shapes_note =
          absl::StrCat("validated at ", absl::StrJoin(shapes, "; "),
                       " only: --shape-range NAME=MIN:OPT:MAX validates the shapes it will run at");
    }
  } else if (absl::StrContains(convert_.target, "tensorrt")) {
    report_.trtexec_shapes = TrtexecShapes(convert_);
  }
  const bool random_inputs = absl::StartsWith(sets->description, "no calibration data");
  convert_.fp16_calibrated_on_data = !random_inputs;
  progress_.Set("reference run of the model");
  absl::StatusOr<std::unique_ptr<ReferenceValidator>> v =
      ReferenceValidator::Create(model_, std::move(sets->sets));
  if (!v.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("validation needs a run of the model on the CPU executor, which failed: ",
                     v.status().message(),
                     random_inputs ? " (random inputs have symbolic dims set to 1: fix them with "
                                     "--input-shape NAME=DIMS, or give --calibration-data DIR)"
                                   : "",
                     " (--no-validate converts without validation)"));
  }
  validator_ = *std::move(v);
  validator_->set_islands_ignored(!convert_.islands_honoured);
  // Where the file written is run and measured anyway and a run of the model costs (its
  // weights read, converted and streamed again; or its activations, more than the store keeps
  // in memory, written to the store's file), the precision step is measured by that run.
  runs_cost_ =
      WeightBytes(model_.graph()) > kRunCostsWeightBytes || validator_->store().moved_bytes() > 0;
  if (options_.write_output && runs_cost_) validator_->set_precision_measured_on_file(true);
  tries_cost_ = WeightBytes(model_.graph()) > kIslandTriesWeightBytes ||
                validator_->store().moved_bytes() > 0;
  OVFIX_RETURN_IF_ERROR(CheckAccuracySpec(options_.accuracy, validator_->reference_outputs(0)));
  OVFIX_RETURN_IF_ERROR(CheckOpsetConversion());
  report_.validated = true;
  PhaseDone("reference run");
  report_.observed_shape_facts = ObserveShapes(model_, *validator_, InputsFixed(model_, convert_),
                                               shape_facts_, bodies_not_run_);
  if (report_.observed_shape_facts > 0) Infer(model_);
  return absl::OkStatus();
}

// The model at the --opset the user asked for computes what the model as loaded computes, on
// every calibration set: the opset conversion is held to the fp32 rewrites' tolerance.
absl::Status Conversion::CheckOpsetConversion() {
  if (before_opset_ == nullptr) return absl::OkStatus();
  for (size_t k = 0; k < validator_->sets().size(); ++k) {
    absl::StatusOr<std::vector<Tensor>> original =
        RunAsTyped(*before_opset_, validator_->sets()[k], /*random_seed=*/1);
    validator_->count_model_runs(1);  // a full run, as the time line counts it
    if (!original.ok()) return NotRunnable(original.status());
    const auto& converted = validator_->reference_outputs(k);
    for (size_t i = 0; i < original->size() && i < converted.size(); ++i) {
      const Tensor& a = (*original)[i];
      const Tensor& b = converted[i].second;
      if (a.numel() != b.numel()) {
        return absl::InvalidArgumentError(absl::StrCat("--opset ", convert_.opset, ": output '",
                                                       converted[i].first, "' changes shape"));
      }
      double range = 0, error = 0;
      for (int64_t j = 0; j < a.numel(); ++j) {
        const double x = a.GetAsDouble(j), y = b.GetAsDouble(j);
        range = std::max(range, std::fabs(x));
        if (std::isnan(x) != std::isnan(y)) error = std::numeric_limits<double>::infinity();
        if (!std::isnan(x) && !std::isnan(y)) error = std::max(error, std::fabs(x - y));
      }
      if (error > kOpsetTolerance * std::max(range, 1.0)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "--opset %d: output '%s' changes by %.3g (of range %.3g) at the new opset",
            convert_.opset, converted[i].first, error, range));
      }
    }
  }
  before_opset_.reset();
  return absl::OkStatus();
}

absl::Status Conversion::RunSteps(bool& ended) {
  ScopedTimePart timed(TimePart::kRewrites);
  rewriter_.emplace(model_);
  Rewriter& rewriter = *rewriter_;
  rewriter.set_shape_facts(&shape_facts_);
  rewriter.set_observer(validator_.get());
  // The criteria the written file will be judged by, for the rewrites judged on the outputs
  // (the user's rules): fp16 ones where the target converts to fp16 or ignores islands.
  if (validator_ != nullptr) {
    const bool converts = manager_->precision_pass() != nullptr &&
                          convert_.precision != ConvertOptions::Precision::kFp32;
    validator_->set_accuracy(
        options_.accuracy,
        CriteriaFallback(converts || !convert_.islands_honoured || validator_->float32_reference(),
                         converts));
  }
  std::vector<PlannedStep>& steps = manager_->steps();
  for (size_t i = 0; i < steps.size(); ++i) {
    PlannedStep& step = steps[i];
    if (i == manager_->precision_step() && validator_ != nullptr && TriesIslands()) {
      absl::StatusOr<std::unique_ptr<Model>> copy = SerializedCopy(model_);
      if (copy.ok()) before_precision_ = *std::move(copy);
    }
    if (options_.before_step && options_.before_step(step.name, model_, convert_)) {
      ended = true;
      return absl::OkStatus();
    }
    progress_.Set(step.name, static_cast<int>(i) + 1, static_cast<int>(steps.size()));
    const size_t before = rewriter.records().size();
    const auto step_start = Clock::now();
    PassContext ctx{model_,           rewriter,     convert_,
                    validator_.get(), options_.log, &types_inferred_at_,
                    &evaluator_};
    ctx.outputs_judged = step.outputs_judged;
    OVFIX_ASSIGN_OR_RETURN(int committed, manager_->RunStep(i, ctx));
    StepReport s{step.name};
    s.runs = step.runs;
    s.why_not = plan_->steps[i].why_not;
    for (size_t k = before; k < rewriter.records().size(); ++k) {
      (rewriter.records()[k].rolled_back ? s.rolled_back : s.rewrites)++;
    }
    s.seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
    options_.log(absl::StrFormat("%s: %d rewrite(s), %d rolled back, %.1f ms", s.name, s.rewrites,
                                 s.rolled_back, 1e3 * s.seconds));
    report_.steps.push_back(s);
    if (step.pass.get() == manager_->precision_pass()) {
      report_.islands = manager_->precision_pass()->islands();
      precision_changed_ = precision_changed_ || committed > 0;
    }
  }
  progress_.Set("onnx checker and end-to-end comparison");
  rewriter.DeleteDanglingValues();
  report_.rewrites = rewriter.records();
  PhaseDone("steps");
  return absl::OkStatus();
}

ReferenceValidator::DefaultCriteria Conversion::CriteriaFallback(bool float16_judged,
                                                                 bool precision_changed) const {
  const double tolerance = options_.tolerance;
  const bool bf16 = precision_changed && convert_.precision == ConvertOptions::Precision::kBf16;
  return [tolerance, bf16, float16_judged](int64_t elements) {
    if (tolerance >= 0) return MaxErrorCriteria(tolerance);
    if (bf16) return DefaultBfloat16Criteria(elements);
    return DefaultCriteriaFor(float16_judged, elements);
  };
}

// The check phase: onnx's checker, and the end-to-end comparison of the serialized model.
absl::Status Conversion::Check() {
  ScopedTimePart timed(TimePart::kCheck);
  // The default criteria; the loosest bound they put on the worst element is the reported
  // tolerance.
  // A model that computed in float16 already is judged against its float32 math, as a
  // precision change is, whatever the target does.
  // A backend that ignores islands runs the model in fp16 whatever the model says.
  const bool float16_judged = precision_changed_ || !convert_.islands_honoured ||
                              (validator_ != nullptr && validator_->float32_reference());
  ReferenceValidator::DefaultCriteria fallback =
      CriteriaFallback(float16_judged, precision_changed_);
  report_.end_to_end_tolerance =
      options_.accuracy.default_criteria
          ? MaxBound(*options_.accuracy.default_criteria)
          : std::max(MaxBound(fallback(0)), MaxBound(fallback(kManyElements)));
  if (validator_ != nullptr) {
    validator_->set_accuracy(options_.accuracy, fallback);
    if (validator_->float32_reference()) {
      // Said where the statistics are (console, JSON), so "max error" reads as what it is.
      absl::StrAppend(&report_.calibration, report_.calibration.empty() ? "" : "; ",
                      "the model computes in float16: its outputs are judged against its "
                      "float32 math");
    }
    // What the rewrites computed as they went: an estimate, logged beside the measurement
    // (none where the precision step awaits the file's run: it would cost a run).
    absl::StatusOr<EndToEndResult> estimate =
        !validator_->recompute_pending()
            ? validator_->CompareFinalOutputs()
            : absl::StatusOr<EndToEndResult>(absl::UnavailableError("measured on the file"));
    if (estimate.ok()) {
      options_.log(absl::StrFormat("end-to-end estimate from the rewrites' activations: %.3g",
                                   estimate->max_error));
    }
    // The rewrites are done: their activations are not read again (a later Activation()
    // computes what it asks for), and the runs of the file and of the repair need the room.
    validator_->ForgetActivations();
  }
  // Final types for the saved model, and onnx's checker, on one light proto.
  if (absl::Status s = InferShapesAndCheck(model_); !s.ok()) return CheckerFailure(options_, s);
  PhaseDone("shape inference and onnx checker");
  rules::AddRankFacts(model_.graph());
  rules::ListKnownShapesInValueInfo(model_.graph());
  report_.dynamic_values = DataDependentValues(model_);
  if (validator_ != nullptr && options_.write_output) {
    // The reported error is that of the file: written and measured now, a full run fewer
    // than measuring a serialized copy first. Only a file that fails the criteria is taken
    // back, for the repair to write its own.
    // What the report written with the file says comes first.
    if (!convert_.islands_honoured) {
      report_.islands_ignored = true;
      ListOverflows(model_);
    }
    return absl::OkStatus();
  }
  if (validator_ != nullptr) {
    // The reported error is that of the serialized model, run as `ovfix run` runs a file.
    OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> written, SerializedCopy(model_));
    absl::StatusOr<EndToEndResult> e2e = validator_->CompareEndToEnd(*written);
    if (!e2e.ok()) return NotRunnable(e2e.status());
    report_.end_to_end = *std::move(e2e);
    report_.outputs_match = report_.end_to_end->meets();
    if (!convert_.islands_honoured) {
      report_.islands_ignored = true;
      ListOverflows(*written);
    }
    PhaseDone("end-to-end comparison");
  }
  return absl::OkStatus();
}

void Conversion::ListOverflows(const Model& m) {
  // Its runs are full runs of the model: counted where the time line counts them.
  const int runs_before = clock_.runs();
  absl::Cleanup count_runs = [&] { validator_->count_model_runs(clock_.runs() - runs_before); };
  absl::StatusOr<std::vector<Fp16Overflow>> overflows = ListFp16Overflows(m, validator_->inputs());
  if (overflows.ok()) {
    report_.fp16_overflows = *std::move(overflows);
  } else {
    options_.log(absl::StrCat("values beyond fp16 not listed: ", overflows.status().message()));
  }
  absl::StatusOr<std::optional<NonFiniteOrigin>> origin =
      FirstNonFiniteInFp16(m, validator_->inputs());
  if (origin.ok()) {
    report_.first_non_finite = *std::move(origin);
  } else {
    options_.log(absl::StrCat("first non-finite value not traced: ", origin.status().message()));
  }
}

bool Conversion::RepairPossible() const {
  return options_.repair && precision_changed_ && before_precision_ != nullptr &&
         convert_.islands_honoured;
}

// The repair phase: beyond the tolerance after the precision phase changed the model, the
// steps from that phase on run again on the graph before it, with the nodes responsible
// kept in fp32, until within it (converter/repair.h).
absl::Status Conversion::RepairToCriteria() {
  ScopedTimePart timed(TimePart::kRepair);
  // Keeping nodes in fp32 cannot help where the backend ignores fp32 islands.
  if (report_.outputs_match || !RepairPossible()) return absl::OkStatus();
  rules::Fp16IslandsPass* precision = manager_->precision_pass();
  auto reconvert = [&](const std::map<std::string, std::string>& keep) {
    return Reconvert(keep, {});
  };
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> failed,
                         SerializedCopy(unfinished_ != nullptr ? *unfinished_ : model_));
  unfinished_.reset();
  progress_.Set("repair");
  auto repair_log = [&](const std::string& m) {
    options_.log(m);
    progress_.Set(m.substr(0, m.find(':')));
  };
  absl::StatusOr<RepairResult> repaired =
      RepairToTolerance(*before_precision_, std::move(failed), report_.end_to_end->score,
                        *validator_, /*tolerance=*/1.0, reconvert, repair_log);
  if (!repaired.ok()) return NotRunnable(repaired.status());
  model_ = std::move(*repaired->model);
  // The repaired model is finished and written again.
  written_current_ = false;
  report_.repair = Repair{repaired->kept,       repaired->rounds,
                          repaired->model_runs, report_.end_to_end->max_error,
                          repaired->history,    repaired->only_fp32};
  report_.end_to_end = repaired->end_to_end;
  report_.outputs_match = repaired->within_tolerance;
  report_.islands = precision->islands();
  PhaseDone("repair");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Model>> Conversion::Reconvert(
    const std::map<std::string, std::string>& keep, const std::set<std::string>& release,
    const std::set<std::string>& bf16) {
  ScopedTimePart timed(TimePart::kReconversions);
  // Calibration from the first conversion.
  if (!calibrated_) calibrated_ = manager_->precision_pass()->magnitudes();
  OVFIX_ASSIGN_OR_RETURN(const Model* inferred, InferredBeforePrecision());
  // The passes replace the weights they change: the copy can share them all.
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> copy, SerializedGraphCopy(*inferred));
  CarryValueTypes(inferred->graph(), copy->graph());
  Rewriter again(*copy);
  ConvertOptions with_keep = convert_;
  with_keep.keep_fp32_outputs = keep;
  with_keep.fp16_outputs = release;
  with_keep.bf16_outputs = bf16;
  size_t inferred_at = 0;
  for (size_t k = manager_->precision_step(); k < manager_->steps().size(); ++k) {
    PassContext ctx{*copy,        again,      with_keep, nullptr, [](const std::string&) {},
                    &inferred_at, &evaluator_};
    ctx.magnitudes = &*calibrated_;
    OVFIX_RETURN_IF_ERROR(manager_->RunStep(k, ctx).status());
  }
  if (getenv("OVFIX_DEBUG_RECONVERT")) (void)SaveModel(*copy, getenv("OVFIX_DEBUG_RECONVERT"));
  OVFIX_RETURN_IF_ERROR(InferShapesAndCheck(*copy));
  return copy;
}

absl::StatusOr<const Model*> Conversion::InferredBeforePrecision() {
  if (inferred_before_ == nullptr) {
    OVFIX_ASSIGN_OR_RETURN(inferred_before_, SerializedCopy(*before_precision_));
    Infer(*inferred_before_);
  }
  return inferred_before_.get();
}

absl::Status Conversion::Certify() {
  ScopedTimePart timed(TimePart::kCertificate);
  rules::Fp16IslandsPass* precision = manager_->precision_pass();
  if (!convert_.certify || !report_.outputs_match || !precision_changed_ ||
      before_precision_ == nullptr || !convert_.islands_honoured || validator_ == nullptr ||
      precision == nullptr || convert_.precision == ConvertOptions::Precision::kFp32 ||
      !report_.end_to_end || (report_.repair && report_.repair->only_fp32)) {
    return absl::OkStatus();
  }
  // Random inputs cannot show that an island is not needed: only the user's data certifies
  // (as only it releases the policy's calm guards).
  if (!convert_.fp16_calibrated_on_data) return absl::OkStatus();
  std::vector<IslandInput> islands;
  for (const rules::IslandNode& i : report_.islands) {
    islands.push_back({i.node, i.op_type, i.reason, i.output});
  }
  if (islands.empty()) return absl::OkStatus();
  if (tries_cost_) {
    // Each try is a conversion held in memory and a full run of a large model: not done
    // (the streamed conversion's memory bound holds), and said.
    IslandCertificate skipped;
    skipped.fp32_nodes_before = skipped.fp32_nodes_after = static_cast<int>(islands.size());
    skipped.skipped = TriesSkipped("not run");
    report_.certificate = std::move(skipped);
    return written_current_ ? RewriteReport() : absl::OkStatus();
  }
  if (!calibrated_) calibrated_ = precision->magnitudes();
  // What the conversion that met kept by request: the repair's nodes, with the repair's reason.
  const std::map<std::string, std::string> keep = RepairKeeps();
  OVFIX_ASSIGN_OR_RETURN(const Model* fp32, InferredBeforePrecision());
  progress_.Set("island certificate");
  auto log = [&](const std::string& m) { options_.log(m); };
  absl::StatusOr<CertifyResult> certified = CertifyIslands(
      *fp32, islands, keep, *validator_,
      [&](const std::map<std::string, std::string>& k, const std::set<std::string>& release) {
        return Reconvert(k, release);
      },
      log);
  if (!certified.ok()) return NotRunnable(certified.status());
  IslandCertificate certificate = std::move(certified->certificate);
  certificate.fp32_nodes_before = static_cast<int>(islands.size());
  const bool changed = certified->model != nullptr;
  if (changed) {
    // The model with the units given back, finished and written again.
    model_ = std::move(*certified->model);
    // The shapes the check phase wrote for the model it checked, for this one.
    rules::AddRankFacts(model_.graph());
    rules::ListKnownShapesInValueInfo(model_.graph());
    written_current_ = false;
    report_.end_to_end = std::move(certified->end_to_end);
    report_.outputs_match = report_.end_to_end->meets();
    report_.islands = precision->islands();
    // The give-backs, as the certificate's last conversion made them.
    settled_keep_ = keep;
    for (const CertifiedIsland& i : certificate.islands) {
      if (i.verdict != IslandVerdict::kGivenBack) continue;
      for (const std::string& o : i.outputs) {
        if (settled_keep_.erase(o) == 0) settled_release_.insert(o);
      }
    }
  }
  certificate.fp32_nodes_after = static_cast<int>(report_.islands.size());
  options_.log(CertificateLines(certificate, 0));
  report_.certificate = std::move(certificate);
  PhaseDone("island certificate");
  if (!changed && written_current_) return RewriteReport();
  return absl::OkStatus();
}

std::string Conversion::TriesSkipped(std::string_view what) const {
  return absl::StrFormat(
      "%s: weights beyond %d MB, or activations beyond the store's memory, make each try a full "
      "run of a large model",
      std::string(what), static_cast<int>(kIslandTriesWeightBytes >> 20));
}

std::map<std::string, std::string> Conversion::RepairKeeps() const {
  std::map<std::string, std::string> keep;
  if (report_.repair) {
    for (const RepairedNode& k : report_.repair->kept) {
      keep[k.output] = "repair: kept to meet the criterion";
    }
  }
  return keep;
}

absl::Status Conversion::IslandsInBf16() {
  rules::Fp16IslandsPass* precision = manager_->precision_pass();
  if (convert_.island_precision != ConvertOptions::IslandPrecision::kBf16 ||
      convert_.precision != ConvertOptions::Precision::kFp16 || !report_.outputs_match ||
      !precision_changed_ || before_precision_ == nullptr || !convert_.islands_honoured ||
      validator_ == nullptr || precision == nullptr || !report_.end_to_end ||
      (report_.repair && report_.repair->only_fp32)) {
    return absl::OkStatus();
  }
  std::vector<IslandInput> islands;
  for (const rules::IslandNode& i : report_.islands) {
    if (!i.bf16) islands.push_back({i.node, i.op_type, i.reason, i.output});
  }
  if (islands.empty()) return absl::OkStatus();
  if (tries_cost_) {
    IslandCertificate skipped;
    skipped.tried_as = "bf16";
    skipped.fp32_nodes_before = skipped.fp32_nodes_after = static_cast<int>(islands.size());
    skipped.skipped = TriesSkipped("not tried; the islands stay fp32");
    options_.log(CertificateLines(skipped, 0));
    report_.bf16_islands = std::move(skipped);
    return written_current_ ? RewriteReport() : absl::OkStatus();
  }
  if (!calibrated_) calibrated_ = precision->magnitudes();
  // Without a certificate, the islands were settled by the repair alone.
  if (!report_.certificate || report_.certificate->final_score < 0) {
    settled_keep_ = RepairKeeps();
    settled_release_.clear();
  }
  OVFIX_ASSIGN_OR_RETURN(const Model* fp32, InferredBeforePrecision());
  progress_.Set("islands in bf16");
  auto log = [&](const std::string& m) { options_.log(m); };
  absl::StatusOr<CertifyResult> tried = IslandsToBf16(
      *fp32, islands, settled_keep_, *validator_,
      [&](const std::map<std::string, std::string>& k, const std::set<std::string>& bf16) {
        return Reconvert(k, settled_release_, bf16);
      },
      log);
  if (!tried.ok()) return NotRunnable(tried.status());
  IslandCertificate result = std::move(tried->certificate);
  result.fp32_nodes_before = static_cast<int>(islands.size());
  const bool changed = tried->model != nullptr;
  if (changed) {
    model_ = std::move(*tried->model);
    rules::AddRankFacts(model_.graph());
    rules::ListKnownShapesInValueInfo(model_.graph());
    written_current_ = false;
    report_.end_to_end = std::move(tried->end_to_end);
    report_.outputs_match = report_.end_to_end->meets();
    report_.islands = precision->islands();
  }
  result.fp32_nodes_after =
      static_cast<int>(std::count_if(report_.islands.begin(), report_.islands.end(),
                                     [](const rules::IslandNode& i) { return !i.bf16; }));
  options_.log(CertificateLines(result, 0));
  report_.bf16_islands = std::move(result);
  PhaseDone("islands in bf16");
  if (!changed && written_current_) return RewriteReport();
  return absl::OkStatus();
}

absl::Status Conversion::RewriteReport() {
  if (options_.report_path.empty() || !report_.written) return absl::OkStatus();
  ScopedTimePart timed(TimePart::kSave);
  if (validator_ != nullptr) report_.model_runs = validator_->model_runs();
  const std::string json = ReportFileText(report_, options_.report_path);
  absl::Status s = WriteFileAtomically(options_.report_path, [&](std::ostream& out) {
    out << json;
    return out ? absl::OkStatus() : absl::InternalError("write failed");
  });
  if (!s.ok())
    return absl::InvalidArgumentError(absl::StrCat(options_.report_path, ": ", s.message()));
  return absl::OkStatus();
}

// The finish phase: branches the fixed shapes rule out go, so that no loader infers shapes
// through them; the cost of the precision phase.
absl::Status Conversion::Finish() {
  ScopedTimePart timed(TimePart::kFinish);
  absl::StatusOr<int> inlined = InlineConstantIfs(model_);
  if (!inlined.ok()) return NotRunnable(inlined.status());
  if (*inlined > 0) {
    report_.constant_ifs_inlined = *inlined;
    options_.log(absl::StrCat("inlined ", *inlined, " If node(s) with a constant condition"));
    // What the runs saw of the inlined branches' values (by name; an If output whose other
    // branch never ran had no rank fact before), then the shapes they now show fold (exact:
    // no validation needed).
    // Inferred first: an If whose branches gave different ranks left its output untyped, and
    // only typed values take what the runs saw.
    Infer(model_);
    if (validator_ != nullptr) {
      std::vector<BodyName> ignored;
      ObserveShapes(model_, *validator_, InputsFixed(model_, convert_), shape_facts_, ignored,
                    /*bodies_only=*/true);
    }
    Infer(model_);
    Rewriter after(model_);
    after.set_shape_facts(&shape_facts_);
    size_t inferred_at = 0;
    // The target's explicit broadcast again, for the element-wise nodes whose ranks only the
    // inlining made known (nn.LSTM's `if not is_batched: output.squeeze(1)`); exact rewrites,
    // like the folding after them.
    for (size_t i = 0; i < manager_->steps().size(); ++i) {
      const std::string& name = manager_->steps()[i].name;
      if (name != "explicit_broadcast" && name != "explicit_broadcast_full") continue;
      PassContext ctx{model_, after, convert_, nullptr, options_.log, &inferred_at, &evaluator_};
      OVFIX_RETURN_IF_ERROR(manager_->RunStep(i, ctx).status());
    }
    for (const char* pass : {"constant_folding", "dead_code_elimination"}) {
      PassContext ctx{model_, after, convert_, nullptr, options_.log, &inferred_at, &evaluator_};
      OVFIX_RETURN_IF_ERROR(MakeNativePass(pass)->Run(ctx).status());
    }
    after.DeleteDanglingValues();
    if (absl::Status s = InferShapesAndCheck(model_); !s.ok()) return CheckerFailure(options_, s);
    rules::ListKnownShapesInValueInfo(model_.graph());
  }
  report_.bodies_not_run = DescribeBodiesNotRun(model_, bodies_not_run_);
  if (precision_changed_) {
    report_.cost = MeasurePrecisionCost(model_, casts_before_);
    // Names the unnamed fp32 nodes (written with the model) so that the hints match them.
    const LayerPrecisionHints hints = MakeLayerPrecisionHints(model_);
    report_.layer_precisions = hints.layer_precisions;
    report_.layer_output_types = hints.layer_output_types;
    if (!hints.layer_precisions.empty()) {
      options_.log(
          absl::StrCat("TensorRT without strong typing: trtexec --precisionConstraints=obey ",
                       hints.layer_precisions, " ", hints.layer_output_types));
    }
    for (const std::string& name : hints.unquotable) {
      options_.log(
          absl::StrCat("layer hints leave out fp32 node '", name, "': its name holds ',' or ':'"));
    }
  }
  return absl::OkStatus();
}

// The write phase: the file written and measured, when the model keeps the outputs.
absl::Status Conversion::Write() {
  if (!report_.outputs_match || written_current_) return absl::OkStatus();
  progress_.Set(absl::StrCat("writing and measuring ", options_.output_path));
  OVFIX_RETURN_IF_ERROR(WriteAndMeasure(model_, options_, validator_.get(), report_));
  // Measured on the file even when it was taken back: the repair starts from that score.
  written_current_ = true;
  PhaseDone("write and measure the file");
  return absl::OkStatus();
}

absl::StatusOr<ConversionReport> Conversion::Run() {
  ConversionClock::Active active_clock(clock_);
  clock_.AddBefore(TimePart::kLoad, options_.load_seconds);
  OVFIX_RETURN_IF_ERROR(Setup());
  for (ConversionPhase phase : plan_->phases) {
    switch (phase) {
      case ConversionPhase::kCalibration:
        OVFIX_RETURN_IF_ERROR(Calibrate());
        break;
      case ConversionPhase::kSteps: {
        bool ended = false;
        OVFIX_RETURN_IF_ERROR(RunSteps(ended));
        if (ended) {
          report_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
          report_.time = clock_.Read();
          return report_;
        }
        break;
      }
      case ConversionPhase::kCheck:
        OVFIX_RETURN_IF_ERROR(Check());
        break;
      case ConversionPhase::kRepair:
        OVFIX_RETURN_IF_ERROR(RepairToCriteria());
        OVFIX_RETURN_IF_ERROR(Certify());
        OVFIX_RETURN_IF_ERROR(IslandsInBf16());
        // A model the repair changed after the file was written: finished and written again.
        if (options_.write_output && !written_current_) {
          OVFIX_RETURN_IF_ERROR(Finish());
          OVFIX_RETURN_IF_ERROR(Write());
        }
        break;
      case ConversionPhase::kFinish:
        if (written_current_) break;
        // A repair after the file is written starts from the graph the steps left (the
        // finish phase inlines constant Ifs), as it does from a serialized copy without one.
        if (options_.write_output && validator_ != nullptr && RepairPossible() &&
            HasIf(model_.graph())) {
          OVFIX_ASSIGN_OR_RETURN(unfinished_, SerializedCopy(model_));
        }
        OVFIX_RETURN_IF_ERROR(Finish());
        break;
      case ConversionPhase::kWrite:
        OVFIX_RETURN_IF_ERROR(Write());
        break;
    }
  }
  if (validator_ != nullptr) report_.model_runs = validator_->model_runs();
  report_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  report_.time = clock_.Read();
  // The report written with the model had the time up to its writing: the whole time now (all
  // but this write's). A failure leaves that report, which is true of what it says.
  if (absl::Status s = RewriteReport(); !s.ok()) {
    options_.log(absl::StrCat("report not updated with the time: ", s.message()));
  }
  return report_;
}

}  // namespace

absl::StatusOr<ConversionReport> ConvertModel(Model& model, const PipelineOptions& options) {
  Conversion conversion(model, options, nullptr);
  return conversion.Run();
}

absl::StatusOr<ConversionReport> ConvertModel(Model& model, const PipelineOptions& options,
                                              const ConversionPlan& plan) {
  Conversion conversion(model, options, &plan);
  return conversion.Run();
}

}  // namespace ovfix::converter
