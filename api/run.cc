// Run, CompareModels and CompareBackends: a session of the executor (exec/) as `ovfix run`
// makes one, and the relative error `ovfix compare` and validation measure.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "api/model_proto.h"
#include "converter/calibration_data.h"
#include "converter/model_run.h"
#include "converter/validation.h"
#include "exec/compare.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix {
namespace {

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
absl::StatusOr<exec::TensorMap> CompleteInputs(const Model& model, const NamedTensors& given) {
  absl::StatusOr<exec::TensorMap> inputs = api::TensorsFromProtos(given);
  if (!inputs.ok()) return inputs.status();
  absl::StatusOr<exec::TensorMap> random =
      converter::MakeReferenceInputs(model, rules::ConvertOptions{});
  if (!random.ok()) return random.status();
  for (auto& [name, tensor] : *random) inputs->try_emplace(name, std::move(tensor));
  return inputs;
}

Comparison CompareOutputs(const Model& reference, const std::vector<Tensor>& expected,
                          const Model& candidate, const std::vector<Tensor>& actual,
                          double tolerance) {
  Comparison c;
  c.tolerance = tolerance;
  const auto& ref_outputs = reference.graph().outputs();
  const auto& cand_outputs = candidate.graph().outputs();
  for (size_t i = 0; i < ref_outputs.size(); ++i) {
    OutputComparison o;
    o.name = ref_outputs[i]->name();
    auto it = std::find_if(cand_outputs.begin(), cand_outputs.end(),
                           [&](const Value* v) { return v->name() == o.name; });
    if (it == cand_outputs.end() || i >= expected.size()) {
      o.relative_error = std::numeric_limits<double>::infinity();
      o.max_abs_error = o.relative_error;
    } else {
      const Tensor& a = actual[it - cand_outputs.begin()];
      const bool half = a.type() == DataType::kFloat16 || expected[i].type() == DataType::kFloat16;
      o.relative_error = exec::RelativeError(a, expected[i], half ? exec::kFloat16Resolution : 0);
      o.max_abs_error = exec::CompareTensors(a, expected[i]).max_abs_error;
    }
    o.within_tolerance = o.relative_error <= tolerance;
    c.outputs_match = c.outputs_match && o.within_tolerance;
    c.outputs.push_back(std::move(o));
  }
  return c;
}

absl::StatusOr<NamedTensors> RunProto(const onnx::ModelProto& model, const NamedTensors& inputs,
                                      const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<Model>> ir = api::ModelFromMemory(model);
  if (!ir.ok()) return ir.status();
  absl::StatusOr<exec::TensorMap> feeds = api::TensorsFromProtos(inputs);
  if (!feeds.ok()) return feeds.status();
  absl::StatusOr<std::vector<Tensor>> outputs = RunModel(**ir, *feeds, options);
  if (!outputs.ok()) return outputs.status();
  NamedTensors named;
  const auto& values = (*ir)->graph().outputs();
  for (size_t i = 0; i < values.size() && i < outputs->size(); ++i) {
    named[values[i]->name()] = TensorToProto((*outputs)[i], values[i]->name());
  }
  return named;
}

// Runs `reference` with `ref_options` and `candidate` with `options` on the same inputs
// (`inputs` completed for the reference) and compares their outputs.
absl::StatusOr<Comparison> CompareRuns(const Model& reference, const RunOptions& ref_options,
                                       const Model& candidate, const RunOptions& options,
                                       const NamedTensors& inputs, double tolerance) {
  OVFIX_ASSIGN_OR_RETURN(exec::TensorMap feeds, CompleteInputs(reference, inputs));
  OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> expected, RunModel(reference, feeds, ref_options));
  OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> actual, RunModel(candidate, feeds, options));
  return CompareOutputs(reference, expected, candidate, actual, tolerance);
}

absl::StatusOr<Comparison> CompareModelProtos(const onnx::ModelProto& reference,
                                              const onnx::ModelProto& candidate,
                                              const NamedTensors& inputs, double tolerance,
                                              const RunOptions& options) {
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> ref, api::ModelFromMemory(reference));
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> cand, api::ModelFromMemory(candidate));
  return CompareRuns(*ref, options, *cand, options, inputs, tolerance);
}

absl::StatusOr<Comparison> CompareProtoBackends(const onnx::ModelProto& model,
                                                const RunOptions& reference,
                                                const RunOptions& candidate,
                                                const NamedTensors& inputs, double tolerance) {
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> ir, api::ModelFromMemory(model));
  return CompareRuns(*ir, reference, *ir, candidate, inputs, tolerance);
}

}  // namespace

// The public calls, their errors made one line (api::OneLine).
absl::StatusOr<NamedTensors> Run(const onnx::ModelProto& model, const NamedTensors& inputs,
                                 const RunOptions& options) {
  return api::OneLine(RunProto(model, inputs, options));
}

absl::StatusOr<Comparison> CompareModels(const onnx::ModelProto& reference,
                                         const onnx::ModelProto& candidate,
                                         const NamedTensors& inputs, double tolerance,
                                         const RunOptions& options) {
  return api::OneLine(CompareModelProtos(reference, candidate, inputs, tolerance, options));
}

absl::StatusOr<Comparison> CompareBackends(const onnx::ModelProto& model,
                                           const RunOptions& reference, const RunOptions& candidate,
                                           const NamedTensors& inputs, double tolerance) {
  return api::OneLine(CompareProtoBackends(model, reference, candidate, inputs, tolerance));
}

}  // namespace ovfix
