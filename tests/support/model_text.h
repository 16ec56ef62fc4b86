// Small helpers the executor and pass tests share: a model from ONNX text (a parse error fails
// the test that asked), with its shapes inferred where a pass needs them, and a float tensor
// from its dims and values.
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "ir/model.h"
#include "ir/shape_inference.h"
#include "ir/tensor.h"
#include "ir/text_form.h"

namespace ovfix::test_support {

inline std::unique_ptr<Model> Parse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

// Parse, then shape inference on the model (a failure of either fails the test that asked).
inline std::unique_ptr<Model> ParseAndInferShapes(std::string_view text) {
  std::unique_ptr<Model> model = Parse(text);
  if (model != nullptr) {
    EXPECT_TRUE(InferShapes(*model).ok());
  }
  return model;
}

inline Tensor Floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  return Tensor::FromVector(DataType::kFloat, std::move(dims), v);
}

}  // namespace ovfix::test_support
