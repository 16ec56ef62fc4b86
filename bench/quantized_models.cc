#include "bench/quantized_models.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "bench/generated_models.h"
#include "bench/model_builder.h"

namespace ovfix::bench {
namespace {

using B = ModelBuilder;
constexpr int kOpset = 13;

// Every attribute, as PyTorch's exporter writes a Conv (and onnxruntime's quantizers keep them).
std::vector<B::Attr> ConvAttributes(int64_t kernel) {
  const int64_t pad = kernel / 2;
  return {B::Ints("dilations", {1, 1}), B::Int("group", 1),
          B::Ints("kernel_shape", {kernel, kernel}), B::Ints("pads", {pad, pad, pad, pad}),
          B::Ints("strides", {1, 1})};
}

// Symmetric int8 quantization of `values` in slices of `slice` values: one scale per slice.
std::vector<int32_t> QuantizeSymmetric(const std::vector<float>& values, int64_t slice,
                                       std::vector<float>& scales) {
  std::vector<int32_t> q(values.size());
  for (size_t begin = 0; begin < values.size(); begin += slice) {
    float largest = 0;
    for (size_t i = begin; i < begin + slice; ++i) largest = std::max(largest, std::abs(values[i]));
    const float scale = largest > 0 ? largest / 127.0f : 1.0f;
    scales.push_back(scale);
    for (size_t i = begin; i < begin + slice; ++i) {
      q[i] = static_cast<int32_t>(std::nearbyint(values[i] / scale));
    }
  }
  return q;
}

// Asymmetric uint8 quantization of `values` (one scale and zero point for all).
std::vector<int32_t> QuantizeAsymmetric(const std::vector<float>& values, float& scale,
                                        int32_t& zero) {
  float low = 0, high = 0;
  for (float v : values) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  scale = high > low ? (high - low) / 255.0f : 1.0f;
  zero = static_cast<int32_t>(std::nearbyint(-low / scale));
  std::vector<int32_t> q;
  for (float v : values) {
    q.push_back(std::clamp(static_cast<int32_t>(std::nearbyint(v / scale)) + zero, 0, 255));
  }
  return q;
}

std::string DynamicConv(B& b, const std::string& x, int64_t in, int64_t out, int64_t kernel,
                        bool relu, bool uint8_weights) {
  const int64_t fan_in = in * kernel * kernel;
  const std::vector<float> values = b.RandomValues(out * fan_in, std::sqrt(3.0f / fan_in));
  std::vector<float> scale;
  std::vector<int32_t> w;
  int32_t zero = 0;
  if (uint8_weights) {
    scale.push_back(0);
    w = QuantizeAsymmetric(values, scale[0], zero);
  } else {
    w = QuantizeSymmetric(values, out * fan_in, scale);
  }
  const int type = uint8_weights ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
  const std::string w_q = b.Integers(type, {out, in, kernel, kernel}, w);
  const std::string w_zero = b.Integers(type, {}, {zero});
  const std::string w_scale = b.Fill({}, scale[0]);
  const std::vector<std::string> quantized = b.OpWithOutputs("DynamicQuantizeLinear", {x}, 3);
  const std::string &x_q = quantized[0], &x_scale = quantized[1], &x_zero = quantized[2];
  const std::string acc = b.Op("ConvInteger", {x_q, w_q, x_zero, w_zero}, ConvAttributes(kernel));
  const std::string real = b.Op("Cast", {acc}, {B::Int("to", onnx::TensorProto::FLOAT)});
  const std::string scales = b.Op("Mul", {x_scale, w_scale});
  std::string y = b.Op("Add", {b.Op("Mul", {real, scales}), b.Weight({out, 1, 1}, 0.05f)});
  return relu ? b.Op("Relu", {y}) : y;
}

// uint8 quantize-dequantize of an activation with a fixed scale and zero point.
std::string QuantizeDequantize(B& b, const std::string& x, float scale, int32_t zero) {
  const std::string s = b.Fill({}, scale);
  const std::string z = b.Integers(onnx::TensorProto::UINT8, {}, {zero});
  return b.Op("DequantizeLinear", {b.Op("QuantizeLinear", {x, s, z}), s, z});
}

// Activations after Relu stay within [0, 8) at these weights' scale; the image is in [-1, 1].
constexpr float kActivationScale = 8.0f / 255;
constexpr float kImageScale = 2.0f / 255;

std::string QdqConv(B& b, const std::string& x, int64_t in, int64_t out, int64_t kernel,
                    bool relu) {
  const int64_t fan_in = in * kernel * kernel;
  // The input arrives dequantized (from a Conv+Relu's QDQ pair), or it is the float image or
  // the float output of MaxPool, Resize or Concat, which gets its QDQ pair here.
  const bool image = x == "image";
  const float x_scale = image ? kImageScale : kActivationScale;
  const std::string x_dq = b.ProducerType(x) == "DequantizeLinear"
                               ? x
                               : QuantizeDequantize(b, x, x_scale, image ? 128 : 0);
  std::vector<float> w_scales;
  const std::vector<int32_t> w =
      QuantizeSymmetric(b.RandomValues(out * fan_in, std::sqrt(3.0f / fan_in)), fan_in, w_scales);
  const std::string w_q = b.Integers(onnx::TensorProto::INT8, {out, in, kernel, kernel}, w);
  const std::string w_scale = b.Floats(w_scales);
  const std::string w_zero =
      b.Integers(onnx::TensorProto::INT8, {out}, std::vector<int32_t>(out, 0));
  const std::string w_dq = b.Op("DequantizeLinear", {w_q, w_scale, w_zero}, {B::Int("axis", 0)});
  std::vector<float> bias_scales;
  std::vector<int32_t> bias_q;
  for (float bias : b.RandomValues(out, 0.05f)) {
    const float s = x_scale * w_scales[bias_scales.size()];
    bias_scales.push_back(s);
    bias_q.push_back(static_cast<int32_t>(std::nearbyint(bias / s)));
  }
  const std::string bias_dq =
      b.Op("DequantizeLinear",
           {b.Integers(onnx::TensorProto::INT32, {out}, bias_q), b.Floats(bias_scales)},
           {B::Int("axis", 0)});
  std::string y = b.Op("Conv", {x_dq, w_dq, bias_dq}, ConvAttributes(kernel));
  if (!relu) return y;
  return QuantizeDequantize(b, b.Op("Relu", {y}), kActivationScale, 0);
}

}  // namespace

onnx::ModelProto DynamicQuantizedUnetModel(int64_t size, bool uint8_weights,
                                           const UnetWidths& widths) {
  B b(kOpset, 21);
  BuildUnet(
      b, size,
      [&](B& b, const std::string& x, int64_t in, int64_t out, int64_t kernel, bool relu) {
        return DynamicConv(b, x, in, out, kernel, relu, uint8_weights);
      },
      widths);
  return b.model();
}

onnx::ModelProto QdqUnetModel(int64_t size, const UnetWidths& widths) {
  B b(kOpset, 22);
  BuildUnet(b, size, QdqConv, widths);
  return b.model();
}

}  // namespace ovfix::bench
