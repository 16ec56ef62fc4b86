// dead_code_elimination: removes nodes whose outputs nothing reads and that are not graph
// outputs, and the initializers nothing reads any more. Graph inputs always stay.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

class DeadCodeEliminationPass : public Pass {
 public:
  std::string name() const override { return "dead_code_elimination"; }
  std::string description() const override {
    return "remove nodes and initializers that nothing reads";
  }
  absl::StatusOr<int> Run(PassContext& ctx) override;
};

}  // namespace ovfix::rules
