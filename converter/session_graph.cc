#include "converter/session_graph.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "converter/model_run.h"
#include "converter/node_evaluator.h"
#include "converter/session_elementwise_fusion.h"
#include "ir/model_io.h"
#include "ir/node_check.h"
#include "ir/status_macros.h"
#include "rules/light_proto.h"
#include "rules/pass.h"
#include "rules/passes/registry.h"
#include "rules/rule_set.h"

namespace ovfix::converter {
namespace {

// Native passes run by name; rule sets are the built-in files of that stem.
bool IsNativePass(const std::string& step) { return rules::MakeNativePass(step) != nullptr; }

// Passes of the session graph only (they make nodes of the executor's internal domain).
std::unique_ptr<rules::Pass> MakeSessionPass(const std::string& step) {
  if (step == kFuseElementwiseChains) {
    return std::make_unique<rules::FunctionPass>(
        step, "element-wise chains as one ovfix.fused.Elementwise node", FuseElementwiseChains);
  }
  return nullptr;
}

}  // namespace

const std::vector<std::string>& SessionGraphSteps() {
  // Shapes first (what folds needs them), then the fusions, which look for the patterns as
  // written (before pow_small_exponent turns their Pow(d, 2) into Mul(d, d)); attention after
  // session_fusion has read its K^T in place; then what is left of Pow and Transpose, the
  // element-wise chains that remain, and the dead nodes last.
  static const std::vector<std::string> steps = {
      "fix_input_shapes",     "identity_elimination",     "constant_folding",   "session_fusion",
      "session_rms_fusion",   "session_attention_fusion", "pow_small_exponent", "transpose_pairs",
      kFuseElementwiseChains, "dead_code_elimination"};
  return steps;
}

namespace {

// A session that rounds every float tensor to fp16 (fp16-storage) shows where a value of the
// graph as written leaves fp16's range: attention's scores and an element-wise chain's
// intermediates stay tensors there, so that they are rounded (and overflow) as written.
bool KeepsValuesForFp16Rounding(const std::string& step) {
  return step == "session_attention_fusion" || step == kFuseElementwiseChains;
}

// The session graph; without the steps KeepsValuesForFp16Rounding names when the session
// rounds float32 values.
absl::StatusOr<std::unique_ptr<Model>> Optimize(const Model& model, const exec::TensorMap& feeds,
                                                int* rewrites, bool rounds_float32) {
  // Weights of 1 MiB and more stay shared with the model: the copy costs its graph only.
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> copy, CopyModel(model, size_t{1} << 20));
  if (copy->OpsetVersion(kFusedDomain) < 0) copy->SetOpsetVersion(kFusedDomain, 1);
  rules::ConvertOptions options;
  for (const Value* v : copy->graph().inputs()) {
    if (v->is_initializer() || !v->is_tensor()) continue;
    auto it = feeds.find(v->name());
    if (it != feeds.end()) options.input_shapes[v->name()] = it->second.dims();
  }
  // onnx's shape inference trusts what the node checks refuse (it divides by strides): a
  // model that fails them runs as written, where the session names the node.
  OVFIX_RETURN_IF_ERROR(CheckNodes(*copy));
  OVFIX_RETURN_IF_ERROR(CheckNodesAgainstRanks(*copy));
  OVFIX_RETURN_IF_ERROR(rules::InferShapesLight(*copy));
  static const absl::StatusOr<rules::RuleLibrary>* library =
      new absl::StatusOr<rules::RuleLibrary>(rules::RuleLibrary::Load());
  if (!library->ok()) return library->status();
  rules::Rewriter rewriter(*copy);
  CpuNodeEvaluator evaluator;
  size_t types_inferred_at = 0;
  int total = 0;
  for (const std::string& step : SessionGraphSteps()) {
    if (rounds_float32 && KeepsValuesForFp16Rounding(step)) continue;
    std::unique_ptr<rules::Pass> pass = MakeSessionPass(step);
    if (pass == nullptr) {
      pass = IsNativePass(step) ? rules::MakeNativePass(step)
                                : rules::MakeRuleSetPass(step, (*library)->Select(step));
    }
    rules::PassContext ctx{*copy,
                           rewriter,
                           options,
                           /*validator=*/nullptr,
                           [](const std::string&) {},
                           &types_inferred_at,
                           &evaluator};
    absl::StatusOr<int> committed = pass->Run(ctx);
    if (!committed.ok()) {
      return absl::Status(committed.status().code(),
                          absl::StrCat(step, ": ", committed.status().message()));
    }
    total += *committed;
  }
  rewriter.DeleteDanglingValues();
  if (rewrites != nullptr) *rewrites = total;
  return copy;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> OptimizeForRun(const Model& model,
                                                      const exec::TensorMap& feeds, int* rewrites) {
  return Optimize(model, feeds, rewrites, /*rounds_float32=*/false);
}

absl::StatusOr<RunSession> CreateRunSession(const Model& model, const exec::TensorMap& feeds,
                                            const exec::SessionOptions& options, bool as_written,
                                            std::string* note) {
  RunSession run;
  if (!as_written && !options.capture && options.backend == "cpu") {
    absl::StatusOr<std::unique_ptr<Model>> optimized =
        Optimize(model, MatchInputTypes(model.graph(), feeds), nullptr,
                 options.precision != exec::Precision::kFp32);
    if (optimized.ok()) {
      absl::StatusOr<std::unique_ptr<exec::Session>> session =
          exec::CreateSession(**optimized, options);
      if (session.ok()) {
        run.graph = *std::move(optimized);
        run.session = *std::move(session);
        return run;
      }
      optimized = session.status();
    }
    if (note != nullptr) {
      *note = absl::StrCat("running the graph as written (its optimization failed: ",
                           optimized.status().message(), ")");
    }
  }
  OVFIX_ASSIGN_OR_RETURN(run.session, exec::CreateSession(model, options));
  return run;
}

}  // namespace ovfix::converter
