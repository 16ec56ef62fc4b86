// Pieces of the segmentation-style models that the report tests build with the IR
// (float16_model_report_test, large_model_report_test): seeded weights and the Split of the
// probability maps into one graph output per map.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "onnx/defs/attr_proto_util.h"

namespace ovfix::test_support {

// Uniform in [-scale, scale) from a fixed linear congruential sequence.
inline Tensor LcgWeight(std::vector<int64_t> dims, float scale, uint32_t seed) {
  Tensor t(DataType::kFloat, std::move(dims));
  float* p = t.data<float>();
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    p[i] = (static_cast<float>(state >> 8) * 0x1.0p-24f * 2 - 1) * scale;
  }
  return t;
}

// Splits `prob` [1, maps, size, size] along axis 1 into the float graph outputs mask0,
// mask1, ... of [1, 1, size, size].
inline void AddMaskOutputs(Graph& g, Value* prob, int64_t maps, int64_t size) {
  std::vector<std::string> names;
  for (int i = 0; i < maps; ++i) names.push_back(absl::StrCat("mask", i));
  Value* split = g.AddInitializer(
      "split",
      Tensor::FromVector<int64_t>(DataType::kInt64, {maps}, std::vector<int64_t>(maps, 1)));
  Node* s = g.AddNode("Split", {prob, split}, names, "split");
  s->SetAttribute(onnx::MakeAttribute("axis", int64_t{1}));
  for (Value* out : s->outputs()) {
    out->set_elem_type(DataType::kFloat);
    out->set_shape(std::vector<int64_t>{1, 1, size, size});
    g.AddOutput(out);
  }
}

}  // namespace ovfix::test_support
