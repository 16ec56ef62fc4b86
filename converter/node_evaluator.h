// The evaluator that passes get from the pipeline: runs a node alone on the CPU executor
// (constant folding).
#pragma once

#include <vector>

#include "rules/pass.h"

namespace ovfix::converter {

class CpuNodeEvaluator : public rules::NodeEvaluator {
 public:
  absl::StatusOr<std::vector<Tensor>> Evaluate(const Model& model, const Node& node) override;
};

}  // namespace ovfix::converter
