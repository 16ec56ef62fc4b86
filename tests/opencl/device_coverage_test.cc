// Small models of the classes that run whole on the GPU or not at all, built here in ONNX
// text with seeded random weights: a Swin-style shifted-window attention block, a detector
// head with TopK, NonMaxSuppression and RoiAlign, a segmentation net with Resize, a conv net
// quantized the way onnxruntime's dynamic quantizer writes it (DynamicQuantizeLinear,
// ConvInteger / MatMulInteger, Cast, scale products), and a two-layer LSTM as PyTorch exports
// it. Each must run with every node on the OpenCL device (no CPU fallback, nothing computed on
// the host) and match the CPU executor to 1e-4 of each output's range in fp32.
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/opencl/op_context.h"
#include "exec/opencl/opencl_runtime.h"
#include "exec/opencl/opencl_session.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"

namespace ovfix::exec {
namespace {

using Dims = std::vector<int64_t>;

// Writes `name = Constant<value = TYPE[dims] {...}>()` lines with seeded values.
class Weights {
 public:
  explicit Weights(uint32_t seed) : rng_(seed) {}

  std::string Float(const std::string& name, const Dims& dims, double low, double high) {
    std::uniform_real_distribution<double> dist(low, high);
    std::vector<std::string> values;
    for (int64_t i = 0; i < Count(dims); ++i) values.push_back(absl::StrCat(dist(rng_)));
    return Line(name, "float", dims, values);
  }
  std::string Bytes(const std::string& name, const Dims& dims, int low, int high) {
    std::uniform_int_distribution<int> dist(low, high);
    std::vector<std::string> values;
    for (int64_t i = 0; i < Count(dims); ++i) values.push_back(absl::StrCat(dist(rng_)));
    return Line(name, "uint8", dims, values);
  }
  static std::string Ints(const std::string& name, const Dims& dims,
                          const std::vector<int64_t>& values) {
    std::vector<std::string> text;
    for (int64_t v : values) text.push_back(absl::StrCat(v));
    return Line(name, "int64", dims, text);
  }

 private:
  static int64_t Count(const Dims& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  static std::string Line(const std::string& name, const std::string& type, const Dims& dims,
                          const std::vector<std::string>& values) {
    const std::string shape = dims.empty() ? "" : absl::StrCat("[", absl::StrJoin(dims, ","), "]");
    return absl::StrCat(name, " = Constant<value = ", type, shape, " {",
                        absl::StrJoin(values, ", "), "}>()\n");
  }
  std::mt19937 rng_;
};

struct ModelCase {
  std::string name;
  std::string text;
  Dims input_dims;  // one float input "x", uniform in [-1, 1]
};

// Swin: layer norm, cyclic shift (Slice + Concat, as torch.roll exports), window partition,
// attention with the relative position bias gathered from its table and the shift mask,
// window reverse, shift back, residual. 8x8 tokens of 16 channels, windows of 4, 2 heads.
ModelCase SwinWindowAttention() {
  Weights w(1);
  std::string body;
  body += w.Float("gamma", {16}, 0.5, 1.5) + w.Float("beta", {16}, -0.1, 0.1);
  body += w.Float("wqkv", {16, 48}, -0.3, 0.3) + w.Float("bqkv", {48}, -0.1, 0.1);
  body += w.Float("wproj", {16, 16}, -0.3, 0.3) + w.Float("bproj", {16}, -0.1, 0.1);
  body += w.Float("table", {49, 2}, -0.5, 0.5);
  // Relative position index of a 4x4 window, as Swin computes it.
  std::vector<int64_t> index;
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      const int dy = i / 4 - j / 4 + 3, dx = i % 4 - j % 4 + 3;
      index.push_back(dy * 7 + dx);
    }
  }
  body += Weights::Ints("index", {256}, index);
  // The shift mask: tokens of a window that came from different regions do not attend.
  std::vector<std::string> mask;
  const auto region = [](int p) { return p < 4 ? 0 : (p < 6 ? 1 : 2); };
  for (int win = 0; win < 4; ++win) {
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) {
        const int wy = win / 2 * 4, wx = win % 2 * 4;
        const int ri = region(wy + i / 4) * 3 + region(wx + i % 4);
        const int rj = region(wy + j / 4) * 3 + region(wx + j % 4);
        mask.push_back(ri == rj ? "0.0" : "-100.0");
      }
    }
  }
  body += absl::StrCat("mask = Constant<value = float[4,1,16,16] {", absl::StrJoin(mask, ", "),
                       "}>()\n");
  body += R"(
    eps = Constant<value = float {0.00001}>()
    scale = Constant<value = float {0.35355339}>()
    mean = ReduceMean<axes = [-1]>(x)
    centered = Sub(x, mean)
    squared = Mul(centered, centered)
    variance = ReduceMean<axes = [-1]>(squared)
    padded = Add(variance, eps)
    deviation = Sqrt(padded)
    normed = Div(centered, deviation)
    scaled = Mul(normed, gamma)
    ln = Add(scaled, beta)
    image_shape = Constant<value = int64[4] {1, 8, 8, 16}>()
    image = Reshape(ln, image_shape)
    two = Constant<value = int64[1] {2}>()
    eight = Constant<value = int64[1] {8}>()
    zero = Constant<value = int64[1] {0}>()
    six = Constant<value = int64[1] {6}>()
    axis1 = Constant<value = int64[1] {1}>()
    axis2 = Constant<value = int64[1] {2}>()
    h_tail = Slice(image, two, eight, axis1)
    h_head = Slice(image, zero, two, axis1)
    rolled_h = Concat<axis = 1>(h_tail, h_head)
    w_tail = Slice(rolled_h, two, eight, axis2)
    w_head = Slice(rolled_h, zero, two, axis2)
    rolled = Concat<axis = 2>(w_tail, w_head)
    grid_shape = Constant<value = int64[6] {1, 2, 4, 2, 4, 16}>()
    grid = Reshape(rolled, grid_shape)
    windows_t = Transpose<perm = [0, 1, 3, 2, 4, 5]>(grid)
    windows_shape = Constant<value = int64[3] {4, 16, 16}>()
    windows = Reshape(windows_t, windows_shape)
    qkv_product = MatMul(windows, wqkv)
    qkv = Add(qkv_product, bqkv)
    heads_shape = Constant<value = int64[5] {4, 16, 3, 2, 8}>()
    qkv_heads = Reshape(qkv, heads_shape)
    qkv_t = Transpose<perm = [2, 0, 3, 1, 4]>(qkv_heads)
    i0 = Constant<value = int64 {0}>()
    i1 = Constant<value = int64 {1}>()
    i2 = Constant<value = int64 {2}>()
    q = Gather<axis = 0>(qkv_t, i0)
    k = Gather<axis = 0>(qkv_t, i1)
    v = Gather<axis = 0>(qkv_t, i2)
    q_scaled = Mul(q, scale)
    k_t = Transpose<perm = [0, 1, 3, 2]>(k)
    scores = MatMul(q_scaled, k_t)
    bias_rows = Gather<axis = 0>(table, index)
    bias_shape = Constant<value = int64[3] {16, 16, 2}>()
    bias_grid = Reshape(bias_rows, bias_shape)
    bias_t = Transpose<perm = [2, 0, 1]>(bias_grid)
    bias_axes = Constant<value = int64[1] {0}>()
    bias = Unsqueeze(bias_t, bias_axes)
    biased = Add(scores, bias)
    masked = Add(biased, mask)
    attention = Softmax<axis = -1>(masked)
    context = MatMul(attention, v)
    context_t = Transpose<perm = [0, 2, 1, 3]>(context)
    merged = Reshape(context_t, windows_shape)
    projected_product = MatMul(merged, wproj)
    projected = Add(projected_product, bproj)
    back_shape = Constant<value = int64[6] {1, 2, 2, 4, 4, 16}>()
    back_grid = Reshape(projected, back_shape)
    back_t = Transpose<perm = [0, 1, 3, 2, 4, 5]>(back_grid)
    back_image = Reshape(back_t, image_shape)
    h_tail2 = Slice(back_image, six, eight, axis1)
    h_head2 = Slice(back_image, zero, six, axis1)
    unrolled_h = Concat<axis = 1>(h_tail2, h_head2)
    w_tail2 = Slice(unrolled_h, six, eight, axis2)
    w_head2 = Slice(unrolled_h, zero, six, axis2)
    unrolled = Concat<axis = 2>(w_tail2, w_head2)
    tokens_shape = Constant<value = int64[3] {1, 64, 16}>()
    tokens = Reshape(unrolled, tokens_shape)
    y = Add(x, tokens)
  )";
  return {"swin_window_attention",
          absl::StrCat("<ir_version: 8, opset_import: [\"\" : 13]>\n",
                       "swin (float[1,64,16] x) => (float[1,64,16] y) {\n", body, "}\n"),
          {1, 64, 16}};
}

// A one-level detector head: a conv backbone, box deltas on anchors and class scores per
// cell, the top 10 scores, NonMaxSuppression over the boxes, and RoiAlign of the kept boxes
// on the feature map.
ModelCase Detector() {
  Weights w(2);
  std::string body;
  body += w.Float("w1", {8, 3, 3, 3}, -0.4, 0.4) + w.Float("b1", {8}, -0.1, 0.1);
  body += w.Float("w2", {4, 8, 1, 1}, -0.3, 0.3) + w.Float("w3", {2, 8, 1, 1}, -0.8, 0.8);
  // Anchors: a 4-pixel box per cell of the 8x8 map, as (y1, x1, y2, x2) in input pixels.
  std::vector<std::string> anchors;
  for (int cell = 0; cell < 64; ++cell) {
    const int y = cell / 8 * 2, x = cell % 8 * 2;
    for (int v : {y, x, y + 4, x + 4}) anchors.push_back(absl::StrCat(v, ".0"));
  }
  body += absl::StrCat("anchors = Constant<value = float[1,64,4] {", absl::StrJoin(anchors, ", "),
                       "}>()\n");
  body += R"(
    conv1 = Conv<pads = [1, 1, 1, 1], strides = [2, 2]>(x, w1, b1)
    features = Relu(conv1)
    deltas_map = Conv(features, w2)
    deltas_shape = Constant<value = int64[3] {1, 4, 64}>()
    deltas_rows = Reshape(deltas_map, deltas_shape)
    deltas = Transpose<perm = [0, 2, 1]>(deltas_rows)
    delta_scale = Constant<value = float {0.5}>()
    scaled_deltas = Mul(deltas, delta_scale)
    boxes = Add(anchors, scaled_deltas)
    logits_map = Conv(features, w3)
    scores_shape = Constant<value = int64[3] {1, 2, 64}>()
    logits = Reshape(logits_map, scores_shape)
    scores = Sigmoid(logits)
    flat_shape = Constant<value = int64[2] {1, 128}>()
    flat_scores = Reshape(scores, flat_shape)
    k = Constant<value = int64[1] {10}>()
    top_scores, top_indices = TopK<axis = -1>(flat_scores, k)
    max_boxes = Constant<value = int64[1] {6}>()
    iou = Constant<value = float[1] {0.4}>()
    threshold = Constant<value = float[1] {0.3}>()
    selected = NonMaxSuppression(boxes, scores, max_boxes, iou, threshold)
    column0 = Constant<value = int64 {0}>()
    column2 = Constant<value = int64 {2}>()
    batch_index = Gather<axis = 1>(selected, column0)
    box_index = Gather<axis = 1>(selected, column2)
    kept = Gather<axis = 1>(boxes, box_index)
    rois_shape = Constant<value = int64[2] {-1, 4}>()
    kept_yx = Reshape(kept, rois_shape)
    # RoiAlign wants (x1, y1, x2, y2): the columns reordered by a Gather.
    xy_order = Constant<value = int64[4] {1, 0, 3, 2}>()
    rois = Gather<axis = 1>(kept_yx, xy_order)
    pooled = RoiAlign<output_height = 2, output_width = 2, sampling_ratio = 2,
                      spatial_scale = 0.5>(features, rois, batch_index)
  )";
  return {"detector",
          absl::StrCat("<ir_version: 8, opset_import: [\"\" : 13]>\n",
                       "detector (float[1,3,16,16] x) => (float top_scores, int64 top_indices, "
                       "int64 selected, float pooled) {\n",
                       body, "}\n"),
          {1, 3, 16, 16}};
}

// An encoder-decoder segmentation net: two strided stages, a linear half_pixel upsampling
// by scales, a skip Concat, and the logits brought to the input size by sizes (linear with
// align_corners, and nearest asymmetric floor on a second head).
ModelCase Segmentation() {
  Weights w(3);
  std::string body;
  body += w.Float("w1", {8, 3, 3, 3}, -0.4, 0.4) + w.Float("b1", {8}, -0.1, 0.1);
  body += w.Float("w2", {8, 8, 3, 3}, -0.2, 0.2) + w.Float("b2", {8}, -0.1, 0.1);
  body += w.Float("w3", {4, 16, 1, 1}, -0.3, 0.3) + w.Float("b3", {4}, -0.1, 0.1);
  body += R"(
    conv1 = Conv<pads = [1, 1, 1, 1]>(x, w1, b1)
    relu1 = Relu(conv1)
    pool1 = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(relu1)
    conv2 = Conv<pads = [1, 1, 1, 1], strides = [2, 2]>(pool1, w2, b2)
    relu2 = Relu(conv2)
    up_scales = Constant<value = float[4] {1.0, 1.0, 2.0, 2.0}>()
    up = Resize<mode = "linear", coordinate_transformation_mode = "half_pixel">(relu2, , up_scales)
    skip = Concat<axis = 1>(up, pool1)
    logits = Conv(skip, w3, b3)
    out_size = Constant<value = int64[4] {1, 4, 16, 16}>()
    y = Resize<mode = "linear", coordinate_transformation_mode = "align_corners">(logits, , , out_size)
    nearest_scales = Constant<value = float[4] {1.0, 1.0, 2.0, 2.0}>()
    y_nearest = Resize<mode = "nearest", coordinate_transformation_mode = "asymmetric",
                       nearest_mode = "floor">(logits, , nearest_scales)
  )";
  return {"segmentation",
          absl::StrCat("<ir_version: 8, opset_import: [\"\" : 13]>\n",
                       "segmentation (float[1,3,16,16] x) => (float y, float y_nearest) {\n", body,
                       "}\n"),
          {1, 3, 16, 16}};
}

// A conv net as onnxruntime's quantize_dynamic writes it: each Conv becomes
// DynamicQuantizeLinear -> ConvInteger (uint8 weights with their zero point) -> Cast to
// float -> Mul by (input scale * weight scale) -> Add bias; the classifier MatMul the same
// with MatMulInteger.
ModelCase QuantizedConvNet() {
  Weights w(4);
  std::string body;
  body += w.Bytes("w1", {8, 3, 3, 3}, 0, 255) + w.Float("b1", {1, 8, 1, 1}, -0.1, 0.1);
  body += w.Bytes("w2", {4, 8, 3, 3}, 0, 255) + w.Float("b2", {1, 4, 1, 1}, -0.1, 0.1);
  body += w.Bytes("w3", {64, 10}, 0, 255) + w.Float("b3", {10}, -0.1, 0.1);
  body += R"(
    w1_zero = Constant<value = uint8 {128}>()
    w1_scale = Constant<value = float {0.0031}>()
    w2_zero = Constant<value = uint8 {127}>()
    w2_scale = Constant<value = float {0.0024}>()
    w3_zero = Constant<value = uint8 {129}>()
    w3_scale = Constant<value = float {0.0017}>()
    x_q, x_scale, x_zero = DynamicQuantizeLinear(x)
    conv1_int = ConvInteger<pads = [1, 1, 1, 1]>(x_q, w1, x_zero, w1_zero)
    conv1_float = Cast<to = 1>(conv1_int)
    conv1_scale = Mul(x_scale, w1_scale)
    conv1_scaled = Mul(conv1_float, conv1_scale)
    conv1 = Add(conv1_scaled, b1)
    relu1 = Relu(conv1)
    r1_q, r1_scale, r1_zero = DynamicQuantizeLinear(relu1)
    conv2_int = ConvInteger<pads = [1, 1, 1, 1], strides = [2, 2]>(r1_q, w2, r1_zero, w2_zero)
    conv2_float = Cast<to = 1>(conv2_int)
    conv2_scale = Mul(r1_scale, w2_scale)
    conv2_scaled = Mul(conv2_float, conv2_scale)
    conv2 = Add(conv2_scaled, b2)
    relu2 = Relu(conv2)
    flat_shape = Constant<value = int64[2] {1, 64}>()
    flat = Reshape(relu2, flat_shape)
    f_q, f_scale, f_zero = DynamicQuantizeLinear(flat)
    fc_int = MatMulInteger(f_q, w3, f_zero, w3_zero)
    fc_float = Cast<to = 1>(fc_int)
    fc_scale = Mul(f_scale, w3_scale)
    fc_scaled = Mul(fc_float, fc_scale)
    y = Add(fc_scaled, b3)
  )";
  return {"quantized_conv_net",
          absl::StrCat("<ir_version: 8, opset_import: [\"\" : 13]>\n",
                       "quantized (float[1,3,8,8] x) => (float y) {\n", body, "}\n"),
          {1, 3, 8, 8}};
}

// Two LSTM layers as torch.onnx exports nn.LSTM(bidirectional) then nn.LSTM: zero initial
// states as inputs, the bidirectional output's directions merged by Transpose + Reshape, the
// direction axis squeezed, the last step gathered into a Gemm classifier.
ModelCase TwoLayerLstm() {
  Weights w(5);
  std::string body;
  body += w.Float("w1", {2, 24, 8}, -0.4, 0.4) + w.Float("r1", {2, 24, 6}, -0.4, 0.4) +
          w.Float("b1", {2, 48}, -0.2, 0.2);
  body += w.Float("w2", {1, 16, 12}, -0.4, 0.4) + w.Float("r2", {1, 16, 4}, -0.4, 0.4) +
          w.Float("b2", {1, 32}, -0.2, 0.2);
  body += w.Float("wc", {3, 4}, -0.5, 0.5) + w.Float("bc", {3}, -0.1, 0.1);
  body += R"(
    h1 = Constant<value = float[2,2,6] {0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}>()
    h2 = Constant<value = float[1,2,4] {0,0,0,0,0,0,0,0}>()
    y1, y1_h, y1_c = LSTM<hidden_size = 6, direction = "bidirectional">(x, w1, r1, b1, , h1, h1)
    y1_t = Transpose<perm = [0, 2, 1, 3]>(y1)
    merged_shape = Constant<value = int64[3] {5, 2, 12}>()
    merged = Reshape(y1_t, merged_shape)
    y2, y2_h, y2_c = LSTM<hidden_size = 4>(merged, w2, r2, b2, , h2, h2)
    direction_axis = Constant<value = int64[1] {1}>()
    y2_s = Squeeze(y2, direction_axis)
    last = Constant<value = int64 {4}>()
    final = Gather<axis = 0>(y2_s, last)
    y = Gemm<transB = 1>(final, wc, bc)
  )";
  return {
      "two_layer_lstm",
      absl::StrCat("<ir_version: 8, opset_import: [\"\" : 13]>\n",
                   "lstm (float[5,2,8] x) => (float y, float y1_h, float y2_c) {\n", body, "}\n"),
      {5, 2, 8}};
}

bool HaveOpencl() {
  static const bool have = [] {
    auto devices = opencl::ListDevices();
    return devices.ok() && !devices->empty();
  }();
  return have;
}

class DeviceCoverage : public ::testing::TestWithParam<ModelCase (*)()> {};

TEST_P(DeviceCoverage, EveryNodeRunsOnTheDeviceAndMatchesTheCpu) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  const ModelCase c = GetParam()();
  auto model = ParseModelText(c.text);
  ASSERT_TRUE(model.ok()) << c.name << ": " << model.status();
  // Which ops have no OpenCL kernel at all (the message of a failure below names them).
  std::vector<std::string> missing;
  for (const Node* node : (*model)->graph().nodes()) {
    if (node->op_type() != "Constant" && opencl::FindOp(node->op_type(), 13) == nullptr) {
      missing.push_back(node->op_type());
    }
  }
  SCOPED_TRACE(missing.empty() ? "every op has an OpenCL kernel"
                               : absl::StrCat("no OpenCL kernel: ", absl::StrJoin(missing, ", ")));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor x(DataType::kFloat, c.input_dims);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  SessionOptions cpu_options;
  cpu_options.threads = 1;
  SessionOptions cl_options;
  cl_options.backend = "opencl";
  auto cpu = CreateSession(**model, cpu_options);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto cl = CreateSession(**model, cl_options);
  ASSERT_TRUE(cl.ok()) << cl.status();
  auto expected = (*cpu)->Run({{"x", x}});
  ASSERT_TRUE(expected.ok()) << expected.status();
  // OVFIX_WRITE_COVERAGE_MODELS=DIR writes the model with its input and the CPU's outputs as
  // DIR/NAME/model.onnx and test_data_set_0/ (scripts/gpu_check.sh runs them on a GPU).
  if (const char* dir = std::getenv("OVFIX_WRITE_COVERAGE_MODELS"); dir != nullptr) {
    const std::string folder = absl::StrCat(dir, "/", c.name);
    std::filesystem::create_directories(folder + "/test_data_set_0");
    ASSERT_TRUE(SaveModel(**model, folder + "/model.onnx").ok());
    ASSERT_TRUE(WriteTensorFile(folder + "/test_data_set_0/input_0.pb", x, "x").ok());
    const Graph& g = (*model)->graph();
    for (size_t i = 0; i < expected->size(); ++i) {
      ASSERT_TRUE(WriteTensorFile(absl::StrCat(folder, "/test_data_set_0/output_", i, ".pb"),
                                  (*expected)[i], g.outputs()[i]->name())
                      .ok());
    }
  }
  auto actual = (*cl)->Run({{"x", x}});
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(actual->size(), expected->size());
  for (size_t i = 0; i < actual->size(); ++i) {
    ASSERT_EQ((*actual)[i].dims(), (*expected)[i].dims()) << "output " << i;
    EXPECT_LE(RelativeError((*actual)[i], (*expected)[i]), 1e-4) << "output " << i;
  }
  const auto placement = opencl::DevicePlacementOf(**cl);
  ASSERT_TRUE(placement.has_value());
  EXPECT_TRUE(placement->cpu.empty()) << placement->Summary();
  EXPECT_EQ(placement->host, 0) << placement->host << " of " << placement->nodes
                                << " nodes computed on the host";
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceCoverage,
                         ::testing::Values(&SwinWindowAttention, &Detector, &Segmentation,
                                           &QuantizedConvNet, &TwoLayerLstm),
                         [](const auto& info) {
                           return std::string((info.index == 0   ? "SwinWindowAttention"
                                               : info.index == 1 ? "Detector"
                                               : info.index == 2 ? "Segmentation"
                                               : info.index == 3 ? "QuantizedConvNet"
                                                                 : "TwoLayerLstm"));
                         });

}  // namespace
}  // namespace ovfix::exec
