// A UNet-style net after onnxruntime's dynamic quantization, built in C++ with seeded random
// weights: the pattern quantize_dynamic emits for every Conv (DynamicQuantizeLinear of the
// activation, ConvInteger with uint8 activation and int8 or uint8 weight with zero points,
// Cast to float, Mul by activation_scale * weight_scale, Add bias), with MaxPool down, bilinear
// Resize up and Concat skips. Used by the quantized kernel tests and bench/quantized_bench.cc.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::test_models {

struct QuantizedUnetOptions {
  int64_t size = 64;     // input is [1, 3, size, size]
  int64_t channels = 8;  // at the first level, doubled at each level down
  int levels = 3;
  bool uint8_weights = false;  // int8 symmetric (onnxruntime's default) or uint8 asymmetric
  uint32_t seed = 1;
};

class QuantizedUnetBuilder {
 public:
  explicit QuantizedUnetBuilder(const QuantizedUnetOptions& o) : o_(o), rng_(o.seed) {}

  onnx::ModelProto Build() {
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("ovfix-tests");
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    graph_ = model.mutable_graph();
    graph_->set_name("quantized_unet");
    AddValueInfo(graph_->add_input(), "x", onnx::TensorProto::FLOAT, {1, 3, o_.size, o_.size});

    std::string x = "x";
    int64_t c = 3;
    std::vector<std::pair<std::string, int64_t>> skips;
    for (int level = 0; level < o_.levels; ++level) {
      const int64_t out = o_.channels << level;
      x = QuantizedConv(QuantizedConv(x, c, out, 3), out, out, 3);
      skips.push_back({x, out});
      c = out;
      x = Node("MaxPool", {x}, {Ints("kernel_shape", {2, 2}), Ints("strides", {2, 2})});
    }
    x = QuantizedConv(x, c, c, 3);
    const std::string scales =
        Constant(onnx::TensorProto::FLOAT, {4}, std::vector<float>{1, 1, 2, 2});
    for (auto it = skips.rbegin(); it != skips.rend(); ++it) {
      onnx::AttributeProto mode;
      mode.set_name("mode");
      mode.set_type(onnx::AttributeProto::STRING);
      mode.set_s("linear");
      const std::string up = Node("Resize", {x, "", scales}, {mode});
      onnx::AttributeProto axis;
      axis.set_name("axis");
      axis.set_type(onnx::AttributeProto::INT);
      axis.set_i(1);
      x = QuantizedConv(Node("Concat", {up, it->first}, {axis}), c + it->second, it->second, 3);
      c = it->second;
    }
    x = QuantizedConv(x, c, 1, 1, /*relu=*/false);
    AddValueInfo(graph_->add_output(), x, onnx::TensorProto::FLOAT, {1, 1, o_.size, o_.size});
    return model;
  }

  // A seeded input image, values about N(0, 1).
  std::vector<float> Input() {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(3 * o_.size * o_.size);
    for (float& f : v) f = normal(rng_);
    return v;
  }

 private:
  static void AddValueInfo(onnx::ValueInfoProto* info, const std::string& name, int type,
                           const std::vector<int64_t>& dims) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  }
  static onnx::AttributeProto Ints(const std::string& name, const std::vector<int64_t>& v) {
    return exec::math_testing::IntsAttr(name, v);
  }
  std::string Fresh(const std::string& base) { return base + std::to_string(++counter_); }

  std::string Node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::vector<onnx::AttributeProto>& attributes, int outputs = 1,
                   std::vector<std::string>* names = nullptr) {
    onnx::NodeProto* node = graph_->add_node();
    node->set_op_type(op);
    node->set_name(Fresh(op + "_"));
    for (const std::string& i : inputs) node->add_input(i);
    std::string first;
    for (int i = 0; i < outputs; ++i) {
      const std::string out = Fresh(op + "_out");
      node->add_output(out);
      if (names != nullptr) names->push_back(out);
      if (i == 0) first = out;
    }
    for (const auto& a : attributes) *node->add_attribute() = a;
    return first;
  }

  template <typename T>
  std::string Constant(int type, const std::vector<int64_t>& dims, const std::vector<T>& values) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(Fresh("const"));
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
    return t->name();
  }

  // Conv(x, W, B) as onnxruntime's dynamic quantizer writes it, W He-initialized at random.
  std::string QuantizedConv(const std::string& x, int64_t in, int64_t out, int64_t k,
                            bool relu = true) {
    const int64_t fan_in = in * k * k;
    std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
    std::vector<float> w(out * fan_in), bias(out);
    for (float& f : w) f = normal(rng_);
    for (float& f : bias) f = 0.1f * normal(rng_);
    const std::vector<int64_t> w_dims = {out, in, k, k};
    std::string w_q, w_zero;
    float w_scale;
    if (o_.uint8_weights) {
      const float low = std::min(0.0f, *std::min_element(w.begin(), w.end()));
      const float high = std::max(0.0f, *std::max_element(w.begin(), w.end()));
      w_scale = (high - low) / 255.0f;
      const float zero = std::nearbyint(-low / w_scale);
      std::vector<uint8_t> q(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        q[i] =
            static_cast<uint8_t>(std::clamp(std::nearbyint(w[i] / w_scale) + zero, 0.0f, 255.0f));
      }
      w_q = Constant(onnx::TensorProto::UINT8, w_dims, q);
      w_zero =
          Constant(onnx::TensorProto::UINT8, {}, std::vector<uint8_t>{static_cast<uint8_t>(zero)});
    } else {
      float high = 0;
      for (float f : w) high = std::max(high, std::fabs(f));
      w_scale = high / 127.0f;
      std::vector<int8_t> q(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(w[i] / w_scale), -127.0f, 127.0f));
      }
      w_q = Constant(onnx::TensorProto::INT8, w_dims, q);
      w_zero = Constant(onnx::TensorProto::INT8, {}, std::vector<int8_t>{0});
    }
    std::vector<std::string> q;
    Node("DynamicQuantizeLinear", {x}, {}, 3, &q);
    const std::string scale = Node(
        "Mul", {q[1], Constant(onnx::TensorProto::FLOAT, {}, std::vector<float>{w_scale})}, {});
    const int64_t pad = k / 2;
    const std::string acc =
        Node("ConvInteger", {q[0], w_q, q[2], w_zero}, {Ints("pads", {pad, pad, pad, pad})});
    onnx::AttributeProto to;
    to.set_name("to");
    to.set_type(onnx::AttributeProto::INT);
    to.set_i(onnx::TensorProto::FLOAT);
    const std::string real = Node("Mul", {Node("Cast", {acc}, {to}), scale}, {});
    const std::string biased =
        Node("Add", {real, Constant(onnx::TensorProto::FLOAT, {1, out, 1, 1}, bias)}, {});
    return relu ? Node("Relu", {biased}, {}) : biased;
  }

  QuantizedUnetOptions o_;
  std::mt19937 rng_;
  onnx::GraphProto* graph_ = nullptr;
  int counter_ = 0;
};

}  // namespace ovfix::test_models
