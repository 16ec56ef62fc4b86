// Running single nodes of a model on constant inputs with the CPU executor (constant
// folding), and small graph helpers the native passes share.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "ir/model.h"
#include "rules/rewriter.h"

namespace ovfix::rules {

// Runs `node` alone; every input it reads must be an initializer. The outputs come in the
// node's output order (empty tensors for omitted outputs).
absl::StatusOr<std::vector<Tensor>> EvaluateNode(const Model& model, const Node& node);

// Makes graph output `from` read `to` under its own name, while the other readers of
// `from` keep reading it (Rewriter::ReplaceAllUsesWith moves every reader).
void RedirectGraphOutput(Rewriter& rewriter, Value* from, Value* to);

// ONNX's element-wise ops with multidirectional (numpy) broadcasting of their inputs.
bool IsBroadcastingElementwise(const Node& node);

}  // namespace ovfix::rules
