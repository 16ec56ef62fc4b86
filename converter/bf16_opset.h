// The opset a bfloat16 conversion runs at. Many ONNX ops accept bfloat16 only from a later
// opset than the one a model was exported with (Add, MatMul, Relu, Softmax... from 13,
// BatchNormalization from 14, LeakyRelu and Where from 16, Conv and pooling from 22). Before
// the conversion the model's default-domain opset is raised (converter/opset_conversion.h) to
// the opset up to 26 at which the fewest of its float nodes lack bfloat16 (the lowest such
// opset); where the conversion fails, or no later opset helps, the opset stays and those ops
// stay fp32 (bf16_island_rules: "no bfloat16 in the ONNX spec").
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "ir/model.h"

namespace ovfix::converter {

struct OpsetRaise {
  int64_t from = -1, to = -1;  // to == from: not raised
  int lacking_before = 0;      // float nodes whose op has no bfloat16 at `from`
  int lacking_after = 0;       // ... at `to` (those stay fp32)
  std::string note;            // one line for the report and the console; empty: nothing to say
};

// Raises `model`'s opset for bfloat16 where that helps (in place: the model is rebuilt from the
// converted proto). Fails only when the converted proto cannot be read back.
absl::StatusOr<OpsetRaise> RaiseOpsetForBfloat16(Model& model);

// The float nodes of `model` (every graph) whose op has no bfloat16 at `opset`.
int NodesLackingBfloat16(const Model& model, int64_t opset);

}  // namespace ovfix::converter
