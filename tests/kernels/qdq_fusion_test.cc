// The session-time fusion of QDQ convolutions and MatMuls (exec/qdq_fusion.h): which groups
// it fuses and which it must leave alone; each fused group against the same graph run as written
// (fuse_qdq off) on random inputs and photographs: the same quantized values except where a
// value sits within float rounding of a quantization boundary, and then one step apart; and
// a QDQ net against onnxruntime at its default optimization level (which fuses the same
// groups into QLinearConv and QLinearMatMul), bit for bit.
#include "exec/qdq_fusion.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "onnx/defs/attr_proto_util.h"
#include "tests/support/ort_peer.h"

namespace ovfix::exec {
namespace {

namespace fs = std::filesystem;
using Ints = std::vector<int64_t>;

// A small ONNX graph builder for QDQ models.
class QdqBuilder {
 public:
  explicit QdqBuilder(int64_t channels, int64_t height, int64_t width) : rng_(5) {
    model_.set_ir_version(8);
    auto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    graph_ = model_.mutable_graph();
    graph_->set_name("qdq");
    auto* in = graph_->add_input();
    in->set_name("x");
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t{1}, channels, height, width})
      t->mutable_shape()->add_dim()->set_dim_value(d);
  }

  std::string Floats(const std::vector<int64_t>& dims, const std::vector<float>& v) {
    onnx::TensorProto* t = Initializer(onnx::TensorProto::FLOAT, dims);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
    return t->name();
  }
  std::string Ints(int type, const std::vector<int64_t>& dims, const std::vector<int32_t>& v) {
    onnx::TensorProto* t = Initializer(type, dims);
    std::string bytes;
    if (type == onnx::TensorProto::INT32) {
      bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * 4);
    } else {
      for (int32_t x : v) bytes.push_back(static_cast<char>(static_cast<uint8_t>(x)));
    }
    t->set_raw_data(bytes);
    return t->name();
  }

  std::string Op(const std::string& op, const std::vector<std::string>& inputs,
                 const std::vector<onnx::AttributeProto>& attributes = {}) {
    onnx::NodeProto* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(op + std::to_string(next_));
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output("v" + std::to_string(next_++));
    for (const auto& a : attributes) *n->add_attribute() = a;
    return n->output(0);
  }

  // QuantizeLinear then DequantizeLinear of an activation.
  std::string Qdq(const std::string& x, float scale, int type, int32_t zero) {
    const std::string s = Floats({}, {scale}), z = Ints(type, {}, {zero});
    return Op("DequantizeLinear", {Op("QuantizeLinear", {x, s, z}), s, z});
  }

  struct Conv {
    int64_t in = 3, out = 8, kernel = 3, stride = 1, pad = 1, dilation = 1, group = 1;
    bool per_channel = true, bias = true, relu = true;
    int weight_type = onnx::TensorProto::INT8;
    int32_t weight_zero = 0;
    float weight_steps = 127;  // the largest weight's quantized magnitude
    // x arrives dequantized with this scale (the caller's Qdq).
    float x_scale = 2.0f / 255;
    float y_scale = 0.05f;
    int y_type = onnx::TensorProto::UINT8;
    int32_t y_zero = 0;
    bool bias_scale_off = false;  // a bias scale that is not x_scale * w_scale
  };

  // DQ(w), DQ(b) -> Conv -> [Relu] -> Q -> DQ; returns the last DQ's output.
  std::string QdqConv(const std::string& x_dq, const Conv& c) {
    const int64_t fan_in = c.in / c.group * c.kernel * c.kernel;
    std::uniform_real_distribution<float> uniform(-std::sqrt(3.0f / fan_in),
                                                  std::sqrt(3.0f / fan_in));
    std::vector<float> scales;
    std::vector<int32_t> q(c.out * fan_in);
    const bool u8 = c.weight_type == onnx::TensorProto::UINT8;
    for (int64_t m = 0; m < c.out; ++m) {
      // Per channel: scales that differ by filter (weights past 127 steps saturate).
      scales.push_back(uniform.b() / c.weight_steps *
                       (c.per_channel ? 0.7f + 0.3f * m / c.out : 1.0f));
    }
    for (int64_t i = 0; i < c.out * fan_in; ++i) {
      const float s = scales[c.per_channel ? i / fan_in : 0];
      q[i] = std::clamp(static_cast<int32_t>(std::nearbyint(uniform(rng_) / s)) + c.weight_zero,
                        u8 ? 0 : -128, u8 ? 255 : 127);
    }
    if (!c.per_channel) scales.resize(1);
    const int64_t n = static_cast<int64_t>(scales.size());
    const std::vector<int64_t> scale_dims =
        c.per_channel ? std::vector<int64_t>{n} : std::vector<int64_t>{};
    onnx::AttributeProto axis;
    axis.set_name("axis");
    axis.set_type(onnx::AttributeProto::INT);
    axis.set_i(0);
    const std::string w =
        Op("DequantizeLinear",
           {Ints(c.weight_type, {c.out, c.in / c.group, c.kernel, c.kernel}, q),
            Floats(scale_dims, scales),
            Ints(c.weight_type, scale_dims, std::vector<int32_t>(n, c.weight_zero))},
           {axis});
    std::vector<std::string> inputs = {x_dq, w};
    if (c.bias) {
      std::vector<float> bias_scales;
      std::vector<int32_t> bias;
      std::uniform_real_distribution<float> b(-0.1f, 0.1f);
      for (int64_t m = 0; m < c.out; ++m) {
        const float s = c.x_scale * scales[c.per_channel ? m : 0] * (c.bias_scale_off ? 1.5f : 1);
        bias_scales.push_back(s);
        bias.push_back(static_cast<int32_t>(std::nearbyint(b(rng_) / s)));
      }
      inputs.push_back(Op(
          "DequantizeLinear",
          {Ints(onnx::TensorProto::INT32, {c.out}, bias), Floats({c.out}, bias_scales)}, {axis}));
    }
    auto ints = [](const std::string& name, std::vector<int64_t> v) {
      onnx::AttributeProto a;
      a.set_name(name);
      a.set_type(onnx::AttributeProto::INTS);
      for (int64_t x : v) a.add_ints(x);
      return a;
    };
    onnx::AttributeProto group;
    group.set_name("group");
    group.set_type(onnx::AttributeProto::INT);
    group.set_i(c.group);
    std::string y =
        Op("Conv", inputs,
           {ints("kernel_shape", {c.kernel, c.kernel}), ints("strides", {c.stride, c.stride}),
            ints("dilations", {c.dilation, c.dilation}), ints("pads", {c.pad, c.pad, c.pad, c.pad}),
            group});
    if (c.relu) y = Op("Relu", {y});
    return Qdq(y, c.y_scale, c.y_type, c.y_zero);
  }

  // DQ(b: [k, n] int8, per column) -> MatMul -> [Relu] -> Q -> DQ.
  std::string QdqMatMul(const std::string& a_dq, int64_t k, int64_t n, bool relu, float y_scale,
                        int32_t y_zero, float weight_steps = 127) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> scales;
    for (int64_t j = 0; j < n; ++j) {
      scales.push_back((0.5f + 0.5f * j / n) / weight_steps / std::sqrt(k));
    }
    std::vector<int32_t> q;
    for (int64_t i = 0; i < k * n; ++i) {
      q.push_back(std::clamp(static_cast<int32_t>(std::nearbyint(
                                 uniform(rng_) / std::sqrt(static_cast<float>(k)) / scales[i % n])),
                             -128, 127));
    }
    onnx::AttributeProto axis;
    axis.set_name("axis");
    axis.set_type(onnx::AttributeProto::INT);
    axis.set_i(1);
    const std::string b = Op("DequantizeLinear",
                             {Ints(onnx::TensorProto::INT8, {k, n}, q), Floats({n}, scales),
                              Ints(onnx::TensorProto::INT8, {n}, std::vector<int32_t>(n, 0))},
                             {axis});
    std::string y = Op("MatMul", {a_dq, b});
    if (relu) y = Op("Relu", {y});
    return Qdq(y, y_scale, onnx::TensorProto::UINT8, y_zero);
  }

  onnx::ModelProto Finish(const std::string& output) {
    auto* out = graph_->add_output();
    out->set_name(output);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    return model_;
  }

 private:
  onnx::TensorProto* Initializer(int type, const std::vector<int64_t>& dims) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name("c" + std::to_string(next_++));
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  }

  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  std::mt19937 rng_;
  int next_ = 0;
};

std::unique_ptr<Model> Load(onnx::ModelProto proto) {
  auto model = ModelFromProto(std::move(proto), "", "qdq");
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

Tensor RunModel(const Model& model, const Tensor& x, bool fuse) {
  SessionOptions options;
  options.threads = 2;
  options.fuse_qdq = fuse;
  auto session = CreateSession(model, options);
  EXPECT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

Tensor RandomInput(int64_t c, int64_t h, int64_t w, uint32_t seed) {
  Tensor t(DataType::kFloat, {1, c, h, w});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// A photograph of tests/data/photos ([H, W, 3] uint8) as [1, 3, H, W] in [-1, 1].
Tensor Photo(const std::string& name) {
  absl::StatusOr<Tensor> image =
      ReadTensorFile(std::string(OVFIX_SOURCE_DIR) + "/tests/data/photos/" + name);
  EXPECT_TRUE(image.ok()) << image.status();
  const int64_t h = image->dim(0), w = image->dim(1);
  Tensor t(DataType::kFloat, {1, 3, h, w});
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < h * w; ++i) {
      t.data<float>()[c * h * w + i] = image->data<uint8_t>()[i * 3 + c] / 127.5f - 1.0f;
    }
  }
  return t;
}

int CountOps(const Model& model, const std::string& op) {
  int n = 0;
  for (const Node* node : model.graph().nodes()) n += node->op_type() == op;
  return n;
}

// Compares the dequantized outputs of a fused and an unfused run in quantization steps.
void ExpectWithinOneStep(const Tensor& fused, const Tensor& written, float step,
                         const std::string& what) {
  ASSERT_EQ(fused.dims(), written.dims()) << what;
  int64_t off = 0;
  for (int64_t i = 0; i < fused.numel(); ++i) {
    const float steps = std::abs(fused.data<float>()[i] - written.data<float>()[i]) / step;
    ASSERT_LE(steps, 1.001f) << what << " at " << i;
    off += steps > 0.5f;
  }
  // Boundary cases are rare: under 1 in 200 values.
  EXPECT_LE(off * 200, fused.numel()) << what << ": " << off << " of " << fused.numel();
}

TEST(QdqFusion, FusesEachGroupIntoQLinearConvWithinOneStepOfTheGraphAsWritten) {
  using C = QdqBuilder::Conv;
  std::vector<C> cases(4);
  cases[1].in = 8, cases[1].out = 6, cases[1].stride = 2, cases[1].per_channel = false;
  cases[1].bias = false, cases[1].relu = false, cases[1].y_zero = 100;
  cases[2].in = 4, cases[2].out = 6, cases[2].group = 2, cases[2].dilation = 2, cases[2].pad = 2,
  cases[2].weight_type = onnx::TensorProto::UINT8, cases[2].weight_zero = 120,
  cases[2].per_channel = false, cases[2].y_type = onnx::TensorProto::INT8, cases[2].y_zero = -128;
  cases[3].in = 5, cases[3].out = 7, cases[3].kernel = 1, cases[3].pad = 0,
  cases[3].y_type = onnx::TensorProto::INT8, cases[3].y_zero = 0, cases[3].relu = false;
  for (size_t k = 0; k < cases.size(); ++k) {
    const C& c = cases[k];
    for (const bool photo : {false, true}) {
      const Tensor x = photo ? Photo("coffee_64.pb") : RandomInput(3, 29, 31, 3 + k);
      const int64_t h = x.dim(2), w = x.dim(3);
      QdqBuilder b(3, h, w);
      std::string in = b.Qdq("x", 2.0f / 255, onnx::TensorProto::UINT8, 128);
      if (c.in != 3) {  // a first group makes the case's input channels
        C first;
        first.out = c.in;
        first.y_scale = 0.02f;
        in = b.QdqConv(in, first);
      }
      C here = c;
      here.x_scale = c.in != 3 ? 0.02f : 2.0f / 255;
      auto model = Load(b.Finish(b.QdqConv(in, here)));
      ASSERT_NE(model, nullptr);
      const std::string what = "case " + std::to_string(k) + (photo ? " photo" : " random");
      auto fused = FuseQdqConvsInCopy(*model);
      ASSERT_TRUE(fused.ok()) << fused.status();
      ASSERT_NE(*fused, nullptr) << what;
      EXPECT_EQ(CountOps(**fused, "Conv"), 0) << what;
      EXPECT_EQ(CountOps(**fused, "QLinearConv"), c.in != 3 ? 2 : 1) << what;
      ExpectWithinOneStep(RunModel(*model, x, true), RunModel(*model, x, false), c.y_scale, what);
    }
  }
}

// QLinearConv packs constant weights on a session's first run and keeps them per node: the
// later runs of one session, on other inputs, still match the graph as written (two convs of
// different shapes, the second with uint8 weights and a zero point, so a mix-up would show).
TEST(QdqFusion, KeepsEachNodesPackedWeightsAcrossRuns) {
  using C = QdqBuilder::Conv;
  QdqBuilder b(3, 19, 45);
  const std::string in = b.Qdq("x", 2.0f / 255, onnx::TensorProto::UINT8, 128);
  C first;
  first.out = 4;
  first.y_scale = 0.02f;
  C second;
  second.in = 4, second.out = 6, second.weight_type = onnx::TensorProto::UINT8;
  second.weight_zero = 120, second.per_channel = false, second.x_scale = 0.02f;
  auto model = Load(b.Finish(b.QdqConv(b.QdqConv(in, first), second)));
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.threads = 2;
  options.fuse_qdq = true;
  auto session = CreateSession(*model, options);
  ASSERT_TRUE(session.ok()) << session.status();
  for (uint32_t seed : {7u, 8u, 9u}) {
    const Tensor x = RandomInput(3, 19, 45, seed);
    auto out = (*session)->Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectWithinOneStep((*out)[0], RunModel(*model, x, false), second.y_scale,
                        "run with seed " + std::to_string(seed));
  }
}

TEST(QdqFusion, FusesMatMulGroupsIntoQLinearMatMulWithinOneStepOfTheGraphAsWritten) {
  for (const bool photo : {false, true}) {
    const Tensor x = photo ? Photo("coffee_64.pb") : RandomInput(3, 29, 31, 17);
    QdqBuilder b(3, x.dim(2), x.dim(3));
    std::string y = b.Qdq("x", 2.0f / 255, onnx::TensorProto::UINT8, 128);
    y = b.QdqMatMul(y, x.dim(3), 40, /*relu=*/true, 0.01f, 0);
    y = b.QdqMatMul(y, 40, 24, /*relu=*/false, 0.01f, 128);
    auto model = Load(b.Finish(y));
    ASSERT_NE(model, nullptr);
    auto fused = FuseQdqConvsInCopy(*model);
    ASSERT_TRUE(fused.ok()) << fused.status();
    ASSERT_NE(*fused, nullptr);
    EXPECT_EQ(CountOps(**fused, "MatMul"), 0);
    EXPECT_EQ(CountOps(**fused, "QLinearMatMul"), 2);
    ExpectWithinOneStep(RunModel(*model, x, true), RunModel(*model, x, false), 0.01f,
                        photo ? "photo" : "random");
  }
}

TEST(QdqFusion, LeavesGroupsItCannotRunExactlyAsWritten) {
  using C = QdqBuilder::Conv;
  std::vector<C> cases(2);
  cases[0].y_zero = 10;            // Relu clamps at a value the quantized output can go below
  cases[1].bias_scale_off = true;  // bias not in accumulator units
  for (const C& c : cases) {
    QdqBuilder b(3, 8, 8);
    auto model =
        Load(b.Finish(b.QdqConv(b.Qdq("x", 2.0f / 255, onnx::TensorProto::UINT8, 128), c)));
    ASSERT_NE(model, nullptr);
    auto fused = FuseQdqConvsInCopy(*model);
    ASSERT_TRUE(fused.ok()) << fused.status();
    EXPECT_EQ(*fused, nullptr);
  }
  // A Conv output that is also a graph output stays.
  QdqBuilder b(3, 8, 8);
  C c;
  c.relu = false;
  b.QdqConv(b.Qdq("x", 2.0f / 255, onnx::TensorProto::UINT8, 128), c);
  onnx::ModelProto proto = b.Finish("");  // named below: the Conv's output
  for (const auto& n : proto.graph().node()) {
    if (n.op_type() == "Conv") proto.mutable_graph()->mutable_output(0)->set_name(n.output(0));
  }
  auto model = Load(std::move(proto));
  ASSERT_NE(model, nullptr);
  auto fused = FuseQdqConvsInCopy(*model);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(*fused, nullptr);
}

// Q(MaxPool(DQ(a))) and Q(Concat(DQ(a), b)) with the same scale and zero point as the DQ: the
// integers go through MaxPool and Concat directly (a float branch of the Concat is quantized
// on its own), bit for bit the graph as written; other parameters leave the graph alone.
TEST(QdqFusion, MovesQuantizationBeforeMaxPoolAndConcatBitForBit) {
  for (const bool same_parameters : {true, false}) {
    for (const bool photo : {false, true}) {
      const Tensor x = photo ? Photo("coffee_64.pb") : RandomInput(3, 30, 32, 21);
      QdqBuilder b(3, x.dim(2), x.dim(3));
      const float scale = 2.0f / 255;
      const std::string a = b.Qdq("x", scale, onnx::TensorProto::UINT8, 128);
      const onnx::AttributeProto kernel = onnx::MakeAttribute("kernel_shape", Ints{3, 3});
      const onnx::AttributeProto pads = onnx::MakeAttribute("pads", Ints{1, 1, 1, 1});
      const onnx::AttributeProto strides = onnx::MakeAttribute("strides", Ints{1, 1});
      const onnx::AttributeProto axis = onnx::MakeAttribute("axis", int64_t{1});
      // Padded MaxPool: the padding must not win over the lowest quantized value.
      const std::string pooled =
          b.Qdq(b.Op("MaxPool", {a}, {kernel, strides, pads}),
                same_parameters ? scale : 1.5f * scale, onnx::TensorProto::UINT8, 128);
      // Concat of dequantized values and of a float branch, quantized again.
      const std::string joined =
          b.Qdq(b.Op("Concat", {pooled, b.Op("Sigmoid", {"x"}), a}, {axis}),
                same_parameters ? scale : 0.5f * scale, onnx::TensorProto::UINT8, 128);
      auto model = Load(b.Finish(joined));
      ASSERT_NE(model, nullptr);
      const std::string what =
          std::string(photo ? "photo" : "random") + (same_parameters ? "" : ", other parameters");
      auto moved = FuseQdqConvsInCopy(*model);
      ASSERT_TRUE(moved.ok()) << moved.status();
      if (!same_parameters) {
        EXPECT_EQ(*moved, nullptr) << what;
        continue;
      }
      ASSERT_NE(*moved, nullptr) << what;
      // The MaxPool reads the quantized input; the Concat's inputs are quantized: the
      // QuantizeLinear of the image, the one of the Sigmoid branch, and nothing after them.
      for (const Node* n : (*moved)->graph().nodes()) {
        if (n->op_type() == "MaxPool" || n->op_type() == "Concat") {
          for (const Value* in : n->inputs()) {
            ASSERT_NE(in->producer(), nullptr) << what;
            EXPECT_EQ(in->producer()->op_type(),
                      in == n->input(0) && n->op_type() == "Concat" ? "MaxPool" : "QuantizeLinear")
                << what << ": " << n->Describe();
          }
        }
      }
      EXPECT_EQ(CountOps(**moved, "QuantizeLinear"), 2) << what;
      EXPECT_EQ(CountOps(**moved, "DequantizeLinear"), 1) << what;
      const Tensor fused = RunModel(*model, x, true), written = RunModel(*model, x, false);
      ASSERT_EQ(fused.dims(), written.dims());
      int64_t differing = 0;
      for (int64_t i = 0; i < fused.numel(); ++i) {
        differing += fused.data<float>()[i] != written.data<float>()[i];
      }
      EXPECT_EQ(differing, 0) << what;
    }
  }
}

// A QDQ net (uint8 activations, per-channel int8 weights, MaxPool between) against
// onnxruntime at its default optimization level, which runs the same groups as QLinearConv.
TEST(QdqFusion, NetMatchesOnnxruntimeBitForBit) {
  OVFIX_REQUIRE_ORT(modules);
  for (const std::string input : {"random", "chelsea_96.pb"}) {
    const Tensor x = input == "random" ? RandomInput(3, 96, 96, 9) : Photo(input);
    QdqBuilder b(3, x.dim(2), x.dim(3));
    using C = QdqBuilder::Conv;
    C c1;
    c1.out = 16;
    // Weights within 63 steps: onnxruntime's uint8 x int8 kernels for CPUs without VNNI add
    // pairs of products in saturating int16, which 255 * 127 * 2 overflows (12 output steps
    // off, measured); within 63 steps no pair overflows.
    c1.weight_steps = 63;
    std::string y = b.QdqConv(b.Qdq("x", 2.0f / 255, onnx::TensorProto::UINT8, 128), c1);
    C c2 = c1;
    c2.in = 16, c2.out = 24, c2.x_scale = c1.y_scale, c2.y_scale = 0.04f;
    y = b.QdqConv(y, c2);
    const onnx::AttributeProto kernel = onnx::MakeAttribute("kernel_shape", Ints{2, 2});
    const onnx::AttributeProto strides = onnx::MakeAttribute("strides", Ints{2, 2});
    y = b.Qdq(b.Op("MaxPool", {y}, {kernel, strides}), c2.y_scale, onnx::TensorProto::UINT8, 0);
    C c3 = c2;
    c3.in = 24, c3.out = 32, c3.stride = 2, c3.x_scale = c2.y_scale, c3.y_scale = 0.03f;
    y = b.QdqConv(y, c3);
    C c4 = c3;
    c4.in = 32, c4.out = 4, c4.kernel = 1, c4.pad = 0, c4.stride = 1, c4.relu = false;
    c4.x_scale = c3.y_scale, c4.y_zero = 128, c4.per_channel = false;
    y = b.QdqConv(y, c4);
    // And a QDQ MatMul over the last axis.
    y = b.QdqMatMul(y, (x.dim(3) + 1) / 4, 12, /*relu=*/true, 0.02f, 0, /*weight_steps=*/63);
    onnx::ModelProto proto = b.Finish(y);

    const fs::path dir = fs::temp_directory_path() / ("ovfix_qdq_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    {
      std::ofstream out(dir / "model.onnx", std::ios::binary);
      ASSERT_TRUE(proto.SerializeToOstream(&out));
    }
    ASSERT_TRUE(WriteTensorFile((dir / "input_0.pb").string(), x, "x").ok());
    // Default optimization level: onnxruntime fuses the QDQ groups.
    const std::string command = "NODE_PATH='" + modules + "' node '" OVFIX_SHARED_DIR +
                                std::string("/tools/ort/run.js' '") +
                                (dir / "model.onnx").string() + "' '" + (dir / "ort").string() +
                                "' '" + (dir / "input_0.pb").string() + "' > /dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    absl::StatusOr<Tensor> expected = ReadTensorFile((dir / "ort/output_0.pb").string());
    fs::remove_all(dir);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto model = Load(std::move(proto));
    ASSERT_NE(model, nullptr);
    const Tensor actual = RunModel(*model, x, true);
    ASSERT_EQ(actual.dims(), expected->dims());
    // onnxruntime's integer kernels are exact on CPUs with VNNI, where it and ovfix agree bit
    // for bit. Without VNNI it requantizes its own way: there the outputs are held to within
    // two steps of the last quantization (its scale is 0.02; 173 of 1152 differ, measured).
    const bool exact_peer = __builtin_cpu_supports("avx512vnni");
    int64_t differing = 0;
    float worst = 0;
    for (int64_t i = 0; i < actual.numel(); ++i) {
      differing += actual.data<float>()[i] != expected->data<float>()[i];
      worst = std::max(worst, std::fabs(actual.data<float>()[i] - expected->data<float>()[i]));
    }
    if (exact_peer) {
      EXPECT_EQ(differing, 0) << input << ": of " << actual.numel() << " outputs";
    } else {
      EXPECT_LE(worst, 2 * 0.02f + 1e-6f)
          << input << ": " << differing << " of " << actual.numel() << " outputs differ";
    }
  }
}

}  // namespace
}  // namespace ovfix::exec
