// The session graph (converter/session_graph.h) on a QDQ conv net as static quantization
// writes it: constant folding leaves DequantizeLinear of the integer weights and biases, so the
// executor still finds its QDQ groups and runs them as QLinearConv; the optimized copy then
// gives the bits of the graph as written with its groups fused (which are onnxruntime's bits,
// tests/kernels/qdq_fusion_test.cc).
#include <cmath>
#include <map>
#include <string>

#include "bench/model_builder.h"
#include "converter/session_graph.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"

namespace ovfix::converter {
namespace {

using B = bench::ModelBuilder;

std::string QuantizeDequantize(B& b, const std::string& x, float scale, int32_t zero) {
  const std::string s = b.Floats({scale});
  const std::string z = b.Integers(onnx::TensorProto::UINT8, {}, {zero});
  return b.Op("DequantizeLinear", {b.Op("QuantizeLinear", {x, s, z}), s, z});
}

// DQ(x) -> Conv(DQ(int8 w, per channel), DQ(int32 bias)) -> Relu -> Q -> DQ.
std::string QdqConv(B& b, const std::string& x, float x_scale, int64_t in, int64_t out) {
  const int64_t fan_in = in * 9;
  std::vector<float> w_scales, b_scales;
  std::vector<int32_t> w, bias;
  const std::vector<float> values = b.RandomValues(out * fan_in, std::sqrt(3.0f / fan_in));
  for (int64_t m = 0; m < out; ++m) {
    w_scales.push_back(std::sqrt(3.0f / fan_in) / 127 * (0.7f + 0.3f * m / out));
    b_scales.push_back(x_scale * w_scales.back());
    bias.push_back(static_cast<int32_t>(std::nearbyint(0.05f * (m % 3 - 1) / b_scales.back())));
    for (int64_t k = 0; k < fan_in; ++k) {
      w.push_back(static_cast<int32_t>(
          std::clamp(std::nearbyint(values[m * fan_in + k] / w_scales.back()), -127.0f, 127.0f)));
    }
  }
  const std::string w_dq =
      b.Op("DequantizeLinear",
           {b.Integers(onnx::TensorProto::INT8, {out, in, 3, 3}, w), b.Floats(w_scales),
            b.Integers(onnx::TensorProto::INT8, {out}, std::vector<int32_t>(out, 0))},
           {B::Int("axis", 0)});
  const std::string b_dq = b.Op(
      "DequantizeLinear", {b.Integers(onnx::TensorProto::INT32, {out}, bias), b.Floats(b_scales)},
      {B::Int("axis", 0)});
  const std::string y = b.Op("Conv", {x, w_dq, b_dq},
                             {B::Ints("kernel_shape", {3, 3}), B::Ints("pads", {1, 1, 1, 1})});
  return QuantizeDequantize(b, b.Op("Relu", {y}), 0.05f, 0);
}

TEST(SessionGraphQdq, KeepsQdqGroupsAndGivesTheFusedBits) {
  B b(13, 3);
  const std::string image = b.Input("image", {1, 3, 32, 32});
  const std::string x = QuantizeDequantize(b, image, 2.0f / 255, 128);
  const std::string c1 = QdqConv(b, x, 2.0f / 255, 3, 8);
  const std::string pooled = QuantizeDequantize(
      b, b.Op("MaxPool", {c1}, {B::Ints("kernel_shape", {2, 2}), B::Ints("strides", {2, 2})}),
      0.05f, 0);
  const std::string c2 = QdqConv(b, pooled, 0.05f, 8, 8);
  const std::string up =
      b.Op("Resize", {c2, "", b.Floats({1, 1, 2, 2})}, {B::String("mode", "linear")});
  const std::string joined =
      QuantizeDequantize(b, b.Op("Concat", {up, c1}, {B::Int("axis", 1)}), 0.05f, 0);
  b.Output(QdqConv(b, joined, 0.05f, 16, 4));
  absl::StatusOr<std::unique_ptr<Model>> model =
      ModelFromProto(onnx::ModelProto(b.model()), "", "qdq net");
  ASSERT_TRUE(model.ok()) << model.status();

  exec::RandomInputOptions random;
  random.ranges = {-1, 1, 0, 1};
  absl::StatusOr<exec::TensorMap> inputs = exec::RandomInputs((*model)->graph(), random);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  absl::StatusOr<std::unique_ptr<Model>> optimized = OptimizeForRun(**model, *inputs);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  // Every DequantizeLinear of an integer constant is still there.
  auto integer_dequantizations = [](const Model& m) {
    int n = 0;
    for (const Node* node : m.graph().nodes()) {
      n += node->op_type() == "DequantizeLinear" && node->input(0)->is_initializer();
    }
    return n;
  };
  EXPECT_EQ(integer_dequantizations(**optimized), 6);
  EXPECT_EQ(integer_dequantizations(**optimized), integer_dequantizations(**model));

  exec::SessionOptions options;
  options.threads = 2;
  auto as_written = CreateRunSession(**model, *inputs, options, /*as_written=*/true);
  auto session_graph = CreateRunSession(**model, *inputs, options, /*as_written=*/false);
  ASSERT_TRUE(as_written.ok()) << as_written.status();
  ASSERT_TRUE(session_graph.ok()) << session_graph.status();
  ASSERT_NE(session_graph->graph, nullptr);  // the optimized copy, not the fallback
  auto expected = as_written->session->Run(*inputs);
  auto actual = session_graph->session->Run(*inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_TRUE(actual.ok()) << actual.status();
  const Tensor& e = (*expected)[0];
  const Tensor& a = (*actual)[0];
  ASSERT_EQ(a.dims(), e.dims());
  int64_t differing = 0;
  for (int64_t i = 0; i < a.numel(); ++i) differing += a.data<float>()[i] != e.data<float>()[i];
  EXPECT_EQ(differing, 0) << "of " << a.numel();
}

}  // namespace
}  // namespace ovfix::converter
