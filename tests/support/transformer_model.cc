#include "tests/support/transformer_model.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/model.h"
#include "ir/model_io.h"
#include "onnx/defs/attr_proto_util.h"

namespace ovfix::testing {
namespace {

// Uniform in [-scale, scale), a function of (seed, i) only, so any piece can be made alone.
float HashedValue(uint64_t seed, uint64_t i, float scale) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (static_cast<float>(z >> 40) * 0x1.0p-24f * 2.0f - 1.0f) * scale;
}

Tensor HashedWeight(uint64_t seed, std::vector<int64_t> dims, float scale) {
  const size_t bytes = static_cast<size_t>(Tensor::NumElements(dims)) * sizeof(float);
  auto produce = [seed, scale](size_t offset, size_t length, std::byte* out) {
    float* f = reinterpret_cast<float*>(out);
    const size_t first = offset / sizeof(float);
    for (size_t k = 0; k < length / sizeof(float); ++k) f[k] = HashedValue(seed, first + k, scale);
  };
  return Tensor(DataType::kFloat, std::move(dims), Buffer::Lazy(bytes, produce));
}

}  // namespace

int64_t TransformerWeightBytes(const TransformerSpec& spec) {
  return spec.blocks * (2 * spec.width * spec.width + 2 * spec.width) *
         static_cast<int64_t>(sizeof(float));
}

absl::Status WriteTransformerModel(const std::string& path, const TransformerSpec& spec) {
  Model model;
  model.extras().set_ir_version(8);
  model.SetOpsetVersion("", 17);
  Graph& g = model.graph();
  g.set_name("transformer");
  Value* x = g.CreateValue("x");
  x->set_elem_type(DataType::kFloat);
  x->set_shape(std::vector<int64_t>{1, spec.tokens, spec.width});
  g.AddInput(x);
  const int64_t d = spec.width;
  const float weight_scale = 1.0f / std::sqrt(static_cast<float>(d));
  Tensor eps = Tensor::FromVector<float>(DataType::kFloat, {}, std::vector<float>{1e-5f});
  Value* epsilon = g.AddInitializer("epsilon", eps);
  for (int b = 0; b < spec.blocks; ++b) {
    const std::string p = absl::StrCat("block", b, "/");
    const uint64_t seed = static_cast<uint64_t>(b) * 4;
    auto node = [&](const char* op, std::vector<Value*> in, const std::string& out) {
      return g.AddNode(op, in, {p + out}, p + out)->output(0);
    };
    auto mean = [&](Value* in, const std::string& out) {
      Node* n = g.AddNode("ReduceMean", {in}, {p + out}, p + out);
      n->SetAttribute(onnx::MakeAttribute("axes", std::vector<int64_t>{-1}));
      return n->output(0);
    };
    Value* mu = mean(x, "mean");
    Value* centered = node("Sub", {x, mu}, "centered");
    Value* square = node("Mul", {centered, centered}, "square");
    Value* var = mean(square, "variance");
    Value* std_dev = node("Sqrt", {node("Add", {var, epsilon}, "variance_eps")}, "std");
    Value* normed = node("Div", {centered, std_dev}, "normed");
    Value* gamma = g.AddInitializer(p + "gamma", HashedWeight(seed, {d}, 1.0f));
    Value* beta = g.AddInitializer(p + "beta", HashedWeight(seed + 1, {d}, 0.1f));
    Value* h = node("Add", {node("Mul", {normed, gamma}, "scaled"), beta}, "norm");
    Value* w1 = g.AddInitializer(p + "w1", HashedWeight(seed + 2, {d, d}, weight_scale));
    Value* w2 = g.AddInitializer(p + "w2", HashedWeight(seed + 3, {d, d}, weight_scale));
    Node* softmax = g.AddNode("Softmax", {node("MatMul", {h, w1}, "scores")}, {p + "attention"},
                              p + "attention");
    softmax->SetAttribute(onnx::MakeAttribute("axis", int64_t{-1}));
    Value* mixed = node("MatMul", {softmax->output(0), w2}, "mixed");
    x = node("Add", {x, mixed}, "residual");
  }
  x->set_elem_type(DataType::kFloat);
  x->set_shape(std::vector<int64_t>{1, spec.tokens, spec.width});
  g.AddOutput(x);
  SaveOptions options;
  options.external_data = ExternalDataMode::kAlways;
  return SaveModel(model, path, options);
}

}  // namespace ovfix::testing
