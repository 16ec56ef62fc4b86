// Run, CompareModels and CompareBackends: a session of the executor (exec/) as `ovfix run`
// makes one, and the verdict on final outputs `ovfix compare` gives
// (converter/output_verdict.h).
#include <algorithm>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/model_proto.h"
#include "converter/calibration_data.h"
#include "converter/model_run.h"
#include "converter/output_verdict.h"
#include "converter/validation.h"
#include "ir/data_type.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix {
namespace api {

// A verdict (converter/output_verdict.h) in the API's terms.
OutputComparison FromVerdict(const converter::OutputVerdict& v) {
  OutputComparison o;
  o.name = v.name;
  o.computed = v.computed;
  o.criteria = converter::CriteriaToString(v.criteria);
  for (const converter::CriterionCheck& c : v.checks) {
    o.checks.push_back({c.criterion.ToString(), c.measured, c.criterion.bound, c.meets});
  }
  o.score = v.score;
  o.meets = v.meets;
  o.within_tolerance = v.meets;
  const converter::OutputStatistics& s = v.stats;
  o.elements = s.elements;
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  o.relative_error = v.computed ? s.max : kInfinity;
  o.max_abs_error = v.computed ? s.max_abs : kInfinity;
  o.mean_error = v.computed ? s.mean : kInfinity;
  o.p99_error = v.computed ? s.PercentileValue(99) : kInfinity;
  o.p99_9_error = v.computed ? s.PercentileValue(99.9) : kInfinity;
  for (const converter::ShareBeyond& b : s.beyond) {
    if (b.error == converter::kReportedBeyondError) o.share_beyond = b.share;
  }
  o.non_finite = s.non_finite;
  o.statistics = v.computed ? converter::DescribeStatistics(s) : "not computed";
  return o;
}

}  // namespace api

namespace {

using api::FromVerdict;

absl::StatusOr<std::vector<Tensor>> RunModel(const Model& model, const exec::TensorMap& inputs,
                                             const RunOptions& o) {
  absl::StatusOr<exec::Precision> precision = exec::ParsePrecision(o.precision);
  if (!precision.ok()) return precision.status();
  exec::SessionOptions options;
  options.backend = o.backend;
  options.precision = *precision;
  options.threads = o.threads;
  absl::StatusOr<std::unique_ptr<exec::Session>> session = exec::CreateSession(model, options);
  if (!session.ok()) return session.status();
  return (*session)->Run(converter::MatchInputTypes(model.graph(), inputs));
}

// The given inputs, and random ones (validation's fixed seed) for the graph inputs they lack.
absl::StatusOr<exec::TensorMap> CompleteInputs(const Model& model, const NamedTensorProtos& given) {
  absl::StatusOr<exec::TensorMap> inputs = api::TensorsFromProtos(given);
  if (!inputs.ok()) return inputs.status();
  absl::StatusOr<exec::TensorMap> random =
      converter::MakeReferenceInputs(model, rules::ConvertOptions{});
  if (!random.ok()) return random.status();
  for (auto& [name, tensor] : *random) inputs->try_emplace(name, std::move(tensor));
  return inputs;
}

// How outputs are judged: `accuracy` as --accuracy takes it, `tolerance` as --tolerance.
absl::StatusOr<converter::AccuracySpec> Accuracy(const std::vector<std::string>& accuracy,
                                                 std::optional<double> tolerance) {
  converter::AccuracySpec spec;
  for (const std::string& text : accuracy) {
    OVFIX_RETURN_IF_ERROR(converter::AddAccuracyOption(text, spec));
  }
  if (tolerance) {
    if (!(*tolerance >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tolerance: expected a number >= 0, got ", *tolerance));
    }
    if (!spec.default_criteria) spec.default_criteria = converter::MaxErrorCriteria(*tolerance);
  }
  return spec;
}

// The graph's outputs by name, as the run returned them.
converter::NamedOutputs Named(const Model& model, std::vector<Tensor> outputs) {
  converter::NamedOutputs named;
  const auto& values = model.graph().outputs();
  for (size_t i = 0; i < values.size() && i < outputs.size(); ++i) {
    named.emplace_back(values[i]->name(), std::move(outputs[i]));
  }
  return named;
}

// Judges `candidate`'s outputs against `reference`'s as `ovfix compare` does.
absl::StatusOr<Comparison> CompareOutputs(const Model& reference, std::vector<Tensor> expected,
                                          const Model& candidate, std::vector<Tensor> actual,
                                          converter::JudgedPrecision precision,
                                          const converter::AccuracySpec& spec) {
  const converter::NamedOutputs want = Named(reference, std::move(expected));
  OVFIX_RETURN_IF_ERROR(converter::CheckAccuracySpec(spec, want));
  Comparison c;
  for (const converter::OutputVerdict& v :
       converter::JudgeOutputs(want, Named(candidate, std::move(actual)), precision, spec)) {
    for (const converter::Criterion& criterion : v.criteria) {
      if (criterion.kind == converter::CriterionKind::kMax) {
        c.tolerance = std::max(c.tolerance, criterion.bound);
      }
    }
    c.outputs_match = c.outputs_match && v.meets;
    c.outputs.push_back(FromVerdict(v));
  }
  return c;
}

absl::StatusOr<std::vector<onnx::TensorProto>> RunProto(const onnx::ModelProto& model,
                                                        const NamedTensorProtos& inputs,
                                                        const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<Model>> ir = api::ModelFromMemory(model);
  if (!ir.ok()) return ir.status();
  absl::StatusOr<exec::TensorMap> feeds = api::TensorsFromProtos(inputs);
  if (!feeds.ok()) return feeds.status();
  absl::StatusOr<std::vector<Tensor>> outputs = RunModel(**ir, *feeds, options);
  if (!outputs.ok()) return outputs.status();
  std::vector<onnx::TensorProto> named;
  const auto& values = (*ir)->graph().outputs();
  for (size_t i = 0; i < values.size() && i < outputs->size(); ++i) {
    named.push_back(TensorToProto((*outputs)[i], values[i]->name()));
  }
  return named;
}

// Runs `reference` with `ref_options` and `candidate` with `options` on the same inputs
// (`inputs` completed for the reference) and judges the candidate's outputs. `two_models`:
// the candidate is another model, whose float types count for the defaults.
absl::StatusOr<Comparison> CompareRuns(const Model& reference, const RunOptions& ref_options,
                                       const Model& candidate, const RunOptions& options,
                                       bool two_models, const NamedTensorProtos& inputs,
                                       std::optional<double> tolerance,
                                       const std::vector<std::string>& accuracy) {
  OVFIX_ASSIGN_OR_RETURN(converter::AccuracySpec spec, Accuracy(accuracy, tolerance));
  OVFIX_ASSIGN_OR_RETURN(exec::Precision ref_precision,
                         exec::ParsePrecision(ref_options.precision));
  OVFIX_ASSIGN_OR_RETURN(exec::Precision precision, exec::ParsePrecision(options.precision));
  OVFIX_ASSIGN_OR_RETURN(exec::TensorMap feeds, CompleteInputs(reference, inputs));
  OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> expected, RunModel(reference, feeds, ref_options));
  OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> actual, RunModel(candidate, feeds, options));
  const converter::JudgedPrecision judged =
      converter::JudgedPrecisionOf(two_models ? &candidate : nullptr, {ref_precision, precision});
  return CompareOutputs(reference, std::move(expected), candidate, std::move(actual), judged, spec);
}

absl::StatusOr<Comparison> CompareModelProtos(const onnx::ModelProto& reference,
                                              const onnx::ModelProto& candidate,
                                              const NamedTensorProtos& inputs,
                                              std::optional<double> tolerance,
                                              const RunOptions& options,
                                              const std::vector<std::string>& accuracy) {
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> ref, api::ModelFromMemory(reference));
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> cand, api::ModelFromMemory(candidate));
  return CompareRuns(*ref, options, *cand, options, true, inputs, tolerance, accuracy);
}

absl::StatusOr<Comparison> CompareProtoBackends(const onnx::ModelProto& model,
                                                const RunOptions& reference,
                                                const RunOptions& candidate,
                                                const NamedTensorProtos& inputs,
                                                std::optional<double> tolerance,
                                                const std::vector<std::string>& accuracy) {
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> ir, api::ModelFromMemory(model));
  return CompareRuns(*ir, reference, *ir, candidate, false, inputs, tolerance, accuracy);
}

}  // namespace

// The session's model (which the executor's session reads as long as it runs), its executor
// session and the names and types of its inputs and outputs.
struct ProtoSession::State {
  std::unique_ptr<Model> model;
  std::unique_ptr<exec::Session> session;
  std::vector<std::string> input_names, output_names;
  std::vector<int32_t> input_types;
  std::mutex running;  // one Run at a time: the executor's session is not reentrant
};

ProtoSession::ProtoSession(std::unique_ptr<State> state) : state_(std::move(state)) {}
ProtoSession::~ProtoSession() = default;

absl::StatusOr<std::unique_ptr<ProtoSession>> ProtoSession::Create(const onnx::ModelProto& model,
                                                                   const RunOptions& options) {
  auto state = std::make_unique<State>();
  absl::StatusOr<std::unique_ptr<Model>> ir = api::ModelFromMemory(model);
  if (!ir.ok()) return api::OneLine(ir.status());
  state->model = *std::move(ir);
  absl::StatusOr<exec::Precision> precision = exec::ParsePrecision(options.precision);
  if (!precision.ok()) return api::OneLine(precision.status());
  exec::SessionOptions session_options;
  session_options.backend = options.backend;
  session_options.precision = *precision;
  session_options.threads = options.threads;
  absl::StatusOr<std::unique_ptr<exec::Session>> session =
      exec::CreateSession(*state->model, session_options);
  if (!session.ok()) return api::OneLine(session.status());
  state->session = *std::move(session);
  for (const Value* v : state->model->graph().inputs()) {
    if (v->is_initializer()) continue;
    state->input_names.push_back(v->name());
    state->input_types.push_back(static_cast<int32_t>(v->elem_type()));
  }
  for (const Value* v : state->model->graph().outputs()) state->output_names.push_back(v->name());
  return std::unique_ptr<ProtoSession>(new ProtoSession(std::move(state)));
}

const std::vector<std::string>& ProtoSession::input_names() const { return state_->input_names; }
const std::vector<std::string>& ProtoSession::output_names() const { return state_->output_names; }
const std::vector<int32_t>& ProtoSession::input_types() const { return state_->input_types; }

absl::StatusOr<std::vector<onnx::TensorProto>> ProtoSession::Run(const NamedTensorProtos& inputs,
                                                                 bool cast) {
  absl::StatusOr<exec::TensorMap> feeds = api::TensorsFromProtos(inputs);
  if (!feeds.ok()) return api::OneLine(feeds.status());
  for (size_t i = 0; i < state_->input_names.size(); ++i) {
    const std::string& name = state_->input_names[i];
    auto it = feeds->find(name);
    if (it == feeds->end()) {
      return api::OneLine(
          absl::InvalidArgumentError(absl::StrCat("input '", name, "': not given")));
    }
    const auto declared = static_cast<DataType>(state_->input_types[i]);
    const DataType given = it->second.type();
    if (given == declared) continue;
    if (cast && IsFloatingPoint(given) && IsFloatingPoint(declared)) continue;
    return api::OneLine(absl::InvalidArgumentError(absl::StrCat(
        "input '", name, "': the model declares ", std::string(DataTypeName(declared)), ", got ",
        std::string(DataTypeName(given)), cast ? "" : " (cast=true converts float types)")));
  }
  for (const auto& [name, tensor] : *feeds) {
    if (std::find(state_->input_names.begin(), state_->input_names.end(), name) ==
        state_->input_names.end()) {
      return api::OneLine(absl::InvalidArgumentError(
          absl::StrCat("input '", name, "': the model has no such input")));
    }
  }
  std::lock_guard<std::mutex> lock(state_->running);
  absl::StatusOr<std::vector<Tensor>> outputs =
      state_->session->Run(converter::MatchInputTypes(state_->model->graph(), *feeds));
  if (!outputs.ok()) return api::OneLine(outputs.status());
  std::vector<onnx::TensorProto> protos;
  for (size_t i = 0; i < state_->output_names.size() && i < outputs->size(); ++i) {
    protos.push_back(TensorToProto((*outputs)[i], state_->output_names[i]));
  }
  return protos;
}

// The public calls, their errors made one line (api::OneLine).
absl::StatusOr<std::vector<onnx::TensorProto>> Run(const onnx::ModelProto& model,
                                                   const NamedTensorProtos& inputs,
                                                   const RunOptions& options) {
  return api::OneLine(RunProto(model, inputs, options));
}

absl::StatusOr<Comparison> CompareModels(const onnx::ModelProto& reference,
                                         const onnx::ModelProto& candidate,
                                         const NamedTensorProtos& inputs,
                                         std::optional<double> tolerance, const RunOptions& options,
                                         const std::vector<std::string>& accuracy) {
  return api::OneLine(
      CompareModelProtos(reference, candidate, inputs, tolerance, options, accuracy));
}

absl::StatusOr<Comparison> CompareBackends(const onnx::ModelProto& model,
                                           const RunOptions& reference, const RunOptions& candidate,
                                           const NamedTensorProtos& inputs,
                                           std::optional<double> tolerance,
                                           const std::vector<std::string>& accuracy) {
  return api::OneLine(
      CompareProtoBackends(model, reference, candidate, inputs, tolerance, accuracy));
}

}  // namespace ovfix
