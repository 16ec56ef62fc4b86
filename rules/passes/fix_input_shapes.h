// fix_input_shapes: `--batch N` sets the first dim of every graph input whose first dim is
// not a number; `--input-shape NAME=1x3x224x224` sets every dim of one input. Shape
// inference then carries the numbers through the graph, which lets constant_folding turn
// shape arithmetic (Shape -> Gather -> Concat) into constants.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

class FixInputShapesPass : public Pass {
 public:
  std::string name() const override { return "fix_input_shapes"; }
  std::string description() const override {
    return "fix dynamic dims of graph inputs (--batch, --input-shape) and re-infer shapes";
  }
  absl::StatusOr<int> Run(PassContext& ctx) override;
};

}  // namespace ovfix::rules
