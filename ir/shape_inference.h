// Shape inference through onnx's InferShapes (with data propagation): the inferred element
// types and shapes are stored on the Values; symbolic dims stay symbols.
#pragma once

#include "absl/status/status.h"
#include "ir/model.h"

namespace ovfix {

struct ShapeInferenceOptions {
  bool strict = false;  // fail on inference errors instead of leaving those values unknown
  bool data_propagation = true;
};

// Updates the type of every value of the model's graphs that onnx can infer.
absl::Status InferShapes(Model& model, const ShapeInferenceOptions& options = {});

}  // namespace ovfix
