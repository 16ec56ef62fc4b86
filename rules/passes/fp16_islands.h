// fp16_islands: converts a model to float16 except for the islands that fp16_island_rules
// keeps in fp32, with Casts at their borders. Float weights outside islands become float16
// initializers; float values become float16; graph inputs and outputs become float16 too
// unless `keep_io_types` (then Casts sit right after the inputs and before the outputs),
// except outputs computed by islands, which stay fp32 (an fp16 output could not hold them).
// Calibration magnitudes come from the validator's reference activations; with
// --no-validate nothing is run and the islands come from the graph structure alone.
//
// The whole conversion is one rewrite: its error is measured against the fp32 reference and
// reported (a precision change is not held to the fp32 tolerance).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "rules/pass.h"

namespace ovfix::rules {

struct IslandNode {
  std::string node;  // Describe()
  std::string op_type;
  std::string reason;
  std::string output;  // the name of its first output (what keeps and give-backs key it by)
  // It computes in bfloat16 rather than fp32 (ConvertOptions::bf16_outputs).
  bool bf16 = false;
};

class Fp16IslandsPass : public Pass {
 public:
  std::string name() const override { return "fp16_islands"; }
  std::string description() const override {
    return "float16 weights and tensors, with fp32 islands (reductions, norms, softmax, "
           "large magnitudes) behind Casts";
  }
  absl::StatusOr<int> Run(PassContext& ctx) override;
  // The nodes kept out of the conversion's type by the last Run (in fp32, or in bfloat16 where
  // bf16_outputs asks), in graph order, with the reason for each.
  const std::vector<IslandNode>& islands() const { return islands_; }
  // The calibrated magnitudes the last Run looked up, by value name (for reruns without a
  // validator: PassContext::magnitudes).
  const std::map<std::string, MagnitudeRange>& magnitudes() const { return magnitudes_by_name_; }

 private:
  std::vector<IslandNode> islands_;
  std::map<std::string, MagnitudeRange> magnitudes_by_name_;
};

}  // namespace ovfix::rules
