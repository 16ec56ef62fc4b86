// The graph a run executes. Backends rewrite a model when they load it (onnxruntime folds
// shape arithmetic on static shapes, fuses LayerNorm, GELU and the like), so `ovfix run`,
// `compare` and the end-to-end check of a validation run an optimized copy by default: input
// shapes fixed to the feeds', shape chains and other constants folded, decomposed LayerNorm /
// RMSNorm / GELU and softmax attention fused into one node each (attention reading the
// Transposes and Gathers that split and merge its heads in place), Pow by small constants turned
// into products and square roots, Transpose pairs cancelled or merged, element-wise chains run
// as one pass (converter/session_elementwise_fusion.h). Every rewrite is exact or better than the
// graph as written (rules/builtin/session_fusion.rules says how); the model itself is never
// changed, and `--graph-as-written` runs it exactly as written.
//
// The rewrites are the rule engine's and the native passes' (this is converter/, where rules
// meet executors), planned and run as a conversion's steps are; the fused nodes are of the
// executor's internal domain `ovfix.fused`, which only this copy ever holds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/model.h"

namespace ovfix::converter {

// The internal domain of fused nodes (exec/cpu/fused_ops.cc).
inline constexpr char kFusedDomain[] = "ovfix.fused";

// The rule sets and passes applied, in order (their names as `ovfix rules list` shows them):
// the steps of the built-in target rules/sessions/session-graph.target, run by the pass
// manager as a conversion's are.
std::vector<std::string> SessionGraphSteps();

// A copy of `model` optimized for running on inputs of the shapes in `feeds` (inputs not in
// `feeds` keep their declared shapes). `rewrites`, when given, gets how many rewrites were made.
absl::StatusOr<std::unique_ptr<Model>> OptimizeForRun(const Model& model,
                                                      const exec::TensorMap& feeds,
                                                      int* rewrites = nullptr);

// A session and the graph it runs (the session reads the graph's nodes: keep them together).
struct RunSession {
  std::unique_ptr<Model> graph;  // the optimized copy; null when the model runs as written
  std::unique_ptr<exec::Session> session;
};

// A session for `model` on `feeds`: on the optimized copy unless `as_written`, or when the
// options capture intermediate values (those are the values of the graph as written), or the
// backend is not the CPU. In the fp16 precisions attention, element-wise chains and residual
// Adds before a LayerNorm stay unfused (their intermediate values are rounded to fp16 as
// written). When the optimization fails the
// model runs as written, and `note` (when given) says why.
absl::StatusOr<RunSession> CreateRunSession(const Model& model, const exec::TensorMap& feeds,
                                            const exec::SessionOptions& options, bool as_written,
                                            std::string* note = nullptr);

}  // namespace ovfix::converter
