#include "converter/session_graph.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "converter/conversion_plan.h"
#include "converter/model_run.h"
#include "converter/node_evaluator.h"
#include "converter/pass_manager.h"
#include "converter/pipeline.h"
#include "converter/session_attention_layouts.h"
#include "converter/session_elementwise_fusion.h"
#include "converter/session_nhwc.h"
#include "ir/model_io.h"
#include "ir/node_check.h"
#include "ir/status_macros.h"
#include "rules/embedded_files.h"
#include "rules/light_proto.h"
#include "rules/pass.h"
#include "rules/passes/registry.h"
#include "rules/rule_set.h"

namespace ovfix::converter {
namespace {

constexpr char kSessionTarget[] = "sessions/session-graph.target";

// Passes of the session graph only (they make nodes of the executor's internal domain).
std::unique_ptr<rules::Pass> MakeSessionPass(std::string_view step) {
  if (step == kFuseElementwiseChains) {
    return std::make_unique<rules::FunctionPass>(
        std::string(step), "element-wise chains as one ovfix.fused.Elementwise node",
        FuseElementwiseChains);
  }
  if (step == kReadAttentionLayouts) {
    return std::make_unique<rules::FunctionPass>(
        std::string(step),
        "the Transposes, Gathers and q scales around ovfix.fused.Attention read in place",
        ReadAttentionLayouts);
  }
  if (step == kKeepChannelsLast) {
    return std::make_unique<rules::FunctionPass>(
        std::string(step), "convolution chains kept channels-last between their ends",
        KeepChannelsLast);
  }
  return nullptr;
}

// A session that rounds every float tensor to fp16 (fp16-storage) shows where a value of the
// graph as written leaves fp16's range: attention's scores, an element-wise chain's
// intermediates, a residual sum before its LayerNorm and a convolution's output before its
// residual Add stay tensors there, so that they are rounded (and overflow) as written.
bool KeepsValuesForFp16Rounding(const std::string& step) {
  return step == "session_attention_fusion" || step == kReadAttentionLayouts ||
         step == "session_residual_fusion" || step == kFuseElementwiseChains ||
         step == kKeepChannelsLast;
}

// The session graph's plan, made once: the built-in target's steps (what the plan adds for
// options does not arise: fix_input_shapes is listed, the precision stays fp32); with
// `rounds_float32`, the steps KeepsValuesForFp16Rounding names are off.
absl::StatusOr<ConversionPlan> MakeSessionPlan(bool rounds_float32) {
  OVFIX_ASSIGN_OR_RETURN(
      Target target,
      ParseTarget(kSessionTarget, rules::FindEmbeddedFile(kSessionTarget)->contents,
                  {kFuseElementwiseChains, kReadAttentionLayouts, kKeepChannelsLast}));
  PipelineOptions options;
  OVFIX_ASSIGN_OR_RETURN(ConversionPlan plan,
                         PlanConversion(std::move(target), options, /*model=*/nullptr));
  for (PlanStep& s : plan.steps) {
    if (rounds_float32 && KeepsValuesForFp16Rounding(s.name)) {
      s.runs = false;
      s.why_not = "the session rounds float32 values to fp16: they stay tensors";
    }
  }
  return plan;
}

const absl::StatusOr<ConversionPlan>& SessionPlan(bool rounds_float32) {
  static const auto* plans =
      new absl::StatusOr<ConversionPlan>[2] { MakeSessionPlan(false), MakeSessionPlan(true) };
  return plans[rounds_float32 ? 1 : 0];
}

}  // namespace

std::vector<std::string> SessionGraphSteps() {
  std::vector<std::string> steps;
  const absl::StatusOr<ConversionPlan>& plan = SessionPlan(false);
  if (plan.ok()) {
    for (const PlanStep& s : plan->steps) steps.push_back(s.name);
  }
  return steps;
}

namespace {

// The session graph; without the steps KeepsValuesForFp16Rounding names when the session
// rounds float32 values.
absl::StatusOr<std::unique_ptr<Model>> Optimize(const Model& model, const exec::TensorMap& feeds,
                                                int* rewrites, bool rounds_float32) {
  const absl::StatusOr<ConversionPlan>& plan = SessionPlan(rounds_float32);
  if (!plan.ok()) return plan.status();
  // Weights of 1 MiB and more stay shared with the model: the copy costs its graph only.
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> copy, CopyModel(model, size_t{1} << 20));
  if (copy->OpsetVersion(kFusedDomain) < 0) copy->SetOpsetVersion(kFusedDomain, 1);
  rules::ConvertOptions options = plan->options;
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
  PassManager manager = PassManager::Make(*plan, MakeSessionPass);
  rules::Rewriter rewriter(*copy);
  CpuNodeEvaluator evaluator;
  size_t types_inferred_at = 0;
  int total = 0;
  for (size_t k = 0; k < manager.steps().size(); ++k) {
    rules::PassContext ctx{*copy,
                           rewriter,
                           options,
                           /*validator=*/nullptr,
                           [](const std::string&) {},
                           &types_inferred_at,
                           &evaluator};
    OVFIX_ASSIGN_OR_RETURN(int committed, manager.RunStep(k, ctx));
    total += committed;
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
