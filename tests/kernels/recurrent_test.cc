// Tests of the recurrent kernels (exec/cpu/recurrent.cc): RNN, GRU and LSTM on one or two
// steps with hidden_size 1, computed by hand here, and on random data the symmetries that tie
// directions, sequence lengths and layouts together (reverse = forward on the time-reversed
// input, bidirectional = both stacked, a short sequence = the same run cut at its length,
// layout 1 = layout 0 transposed).
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/status_macros.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::HasSubstr;

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

void ExpectSame(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ExpectNear(actual, expected.dims(), Values(expected), 1e-5, what);
}

// Input positions shared by the three ops.
enum { kX, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kP };

// Runs one node through the kernel table. An undefined Tensor is an omitted input; `outputs`
// says which node outputs exist (false: "" in the model), and the result holds an undefined
// Tensor for each omitted one.
absl::StatusOr<std::vector<Tensor>> RunRecurrent(
    const std::string& op, const std::vector<Tensor>& inputs,
    const std::vector<onnx::AttributeProto>& attributes,
    const std::vector<bool>& outputs = {true, true, true}, int opset = 14) {
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(inputs[i].defined() ? graph.CreateValue("in" + std::to_string(i)) : nullptr);
  }
  std::vector<std::string> output_names;
  for (size_t i = 0; i < outputs.size(); ++i) {
    output_names.push_back(outputs[i] ? "out" + std::to_string(i) : "");
  }
  Node* node = graph.AddNode(op, values, output_names, "rnn");
  for (const auto& a : attributes) node->SetAttribute(a);
  const KernelDef* kernel = FindKernel("", op, opset);
  if (kernel == nullptr) return absl::NotFoundError(op + " has no kernel");
  KernelContext ctx = KernelContext::For(*node, opset);
  ctx.pool = &MathPool();
  for (const Tensor& t : inputs) ctx.inputs.push_back(t.defined() ? &t : nullptr);
  ctx.outputs.resize(outputs.size());
  OVFIX_RETURN_IF_ERROR(kernel->fn(ctx));
  return ctx.outputs;
}

// ---- tensor surgery for the symmetry tests (float tensors) ----

// Elements [begin, end) along `axis`.
Tensor SliceAxis(const Tensor& t, size_t axis, int64_t begin, int64_t end) {
  Dims dims = t.dims();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t size = dims[axis];
  dims[axis] = end - begin;
  Tensor out(DataType::kFloat, dims);
  float* dst = out.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    const float* src = t.data<float>() + (o * size + begin) * inner;
    dst = std::copy(src, src + (end - begin) * inner, dst);
  }
  return out;
}

// The sequence axis 0 reversed.
Tensor ReverseAxis0(const Tensor& t) {
  Tensor out(DataType::kFloat, t.dims());
  const int64_t rows = t.dim(0), row = rows == 0 ? 0 : t.numel() / rows;
  for (int64_t i = 0; i < rows; ++i) {
    std::copy_n(t.data<float>() + (rows - 1 - i) * row, row, out.data<float>() + i * row);
  }
  return out;
}

// Output axis i is input axis perm[i].
Tensor Permute(const Tensor& t, const std::vector<size_t>& perm) {
  const size_t rank = t.rank();
  Dims dims(rank), strides(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * t.dim(d);
  for (size_t d = 0; d < rank; ++d) dims[d] = t.dim(perm[d]);
  Tensor out(DataType::kFloat, dims);
  Dims index(rank, 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d) source += index[d] * strides[perm[d]];
    out.data<float>()[i] = t.data<float>()[source];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

int64_t Gates(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }

// Random X [seq, batch, input], W, R, B, no sequence_lens, initial_h, and for LSTM initial_c
// and P (layout 0).
std::vector<Tensor> RandomInputs(const std::string& op, int64_t seq, int64_t batch, int64_t input,
                                 int64_t hidden, int64_t directions, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto random = [&](const Dims& dims) {
    return FloatTensor(dims, RandomFloats(Tensor::NumElements(dims), rng));
  };
  const int64_t gh = Gates(op) * hidden;
  std::vector<Tensor> inputs = {random({seq, batch, input}),
                                random({directions, gh, input}),
                                random({directions, gh, hidden}),
                                random({directions, 2 * gh}),
                                Tensor(),
                                random({directions, batch, hidden})};
  if (op == "LSTM") {
    inputs.push_back(random({directions, batch, hidden}));
    inputs.push_back(random({directions, 3 * hidden}));
  }
  return inputs;
}

// One direction's weights and initial states out of bidirectional inputs.
std::vector<Tensor> DirectionInputs(const std::vector<Tensor>& inputs, int64_t d) {
  std::vector<Tensor> out = inputs;
  for (size_t i = kW; i < inputs.size(); ++i) {
    if (i != kSequenceLens && inputs[i].defined()) out[i] = SliceAxis(inputs[i], 0, d, d + 1);
  }
  return out;
}

const std::vector<std::string> kOps = {"RNN", "GRU", "LSTM"};

// ---- by hand ----

TEST(RecurrentTest, RnnTwoStepsByHand) {
  // Ht = tanh(Xt * 0.5 + Ht-1 * 0.3 + 0.1 + 0.2), H0 = 0.4.
  const std::vector<Tensor> inputs = {FloatTensor({2, 1, 1}, {2.0f, -1.0f}),
                                      FloatTensor({1, 1, 1}, {0.5f}),
                                      FloatTensor({1, 1, 1}, {0.3f}),
                                      FloatTensor({1, 2}, {0.1f, 0.2f}),
                                      Tensor(),
                                      FloatTensor({1, 1, 1}, {0.4f})};
  absl::StatusOr<std::vector<Tensor>> out =
      RunRecurrent("RNN", inputs, {IntAttr("hidden_size", 1)}, {true, true});
  ASSERT_TRUE(out.ok()) << out.status();
  const double h1 = std::tanh(2.0 * 0.5 + 0.4 * 0.3 + 0.3);
  const double h2 = std::tanh(-1.0 * 0.5 + h1 * 0.3 + 0.3);
  ExpectNear((*out)[0], {2, 1, 1, 1}, {h1, h2}, 1e-6, "Y");
  ExpectNear((*out)[1], {1, 1, 1}, {h2}, 1e-6, "Y_h");
}

TEST(RecurrentTest, GruOneStepByHand) {
  // Gates z, r, h: W = [0.5, -0.4, 0.3], R = [0.2, 0.6, -0.7], Wb = [0.1, 0.2, 0.3],
  // Rb = [-0.1, 0.05, 0.4], X = 1, H0 = 0.5.
  const std::vector<Tensor> inputs = {FloatTensor({1, 1, 1}, {1.0f}),
                                      FloatTensor({1, 3, 1}, {0.5f, -0.4f, 0.3f}),
                                      FloatTensor({1, 3, 1}, {0.2f, 0.6f, -0.7f}),
                                      FloatTensor({1, 6}, {0.1f, 0.2f, 0.3f, -0.1f, 0.05f, 0.4f}),
                                      Tensor(),
                                      FloatTensor({1, 1, 1}, {0.5f})};
  const double h0 = 0.5;
  const double z = Sigmoid(0.5 + 0.2 * h0 + 0.1 - 0.1);
  const double r = Sigmoid(-0.4 + 0.6 * h0 + 0.2 + 0.05);
  for (int linear_before_reset : {0, 1}) {
    const double candidate = linear_before_reset ? std::tanh(0.3 + r * (h0 * -0.7 + 0.4) + 0.3)
                                                 : std::tanh(0.3 + (r * h0) * -0.7 + 0.4 + 0.3);
    const double h = (1 - z) * candidate + z * h0;
    absl::StatusOr<std::vector<Tensor>> out = RunRecurrent(
        "GRU", inputs,
        {IntAttr("hidden_size", 1), IntAttr("linear_before_reset", linear_before_reset)},
        {true, true});
    ASSERT_TRUE(out.ok()) << out.status();
    const std::string what = "linear_before_reset " + std::to_string(linear_before_reset);
    ExpectNear((*out)[0], {1, 1, 1, 1}, {h}, 1e-6, what + " Y");
    ExpectNear((*out)[1], {1, 1, 1}, {h}, 1e-6, what + " Y_h");
  }
}

// Gates i, o, f, c: W = [0.5, 0.4, -0.3, 0.2], R = [0.1, -0.2, 0.3, 0.4],
// Wb = [0.05, 0, 0, 0], Rb = [0, 0, 0.1, 0], P (i, o, f) = [0.1, 0.2, 0.3], X = 1, H0 = 0.5,
// C0 = -0.6.
std::vector<Tensor> HandLstmInputs() {
  return {FloatTensor({1, 1, 1}, {1.0f}),
          FloatTensor({1, 4, 1}, {0.5f, 0.4f, -0.3f, 0.2f}),
          FloatTensor({1, 4, 1}, {0.1f, -0.2f, 0.3f, 0.4f}),
          FloatTensor({1, 8}, {0.05f, 0, 0, 0, 0, 0, 0.1f, 0}),
          Tensor(),
          FloatTensor({1, 1, 1}, {0.5f}),
          FloatTensor({1, 1, 1}, {-0.6f}),
          FloatTensor({1, 3}, {0.1f, 0.2f, 0.3f})};
}

TEST(RecurrentTest, LstmOneStepWithPeepholesByHand) {
  const double h0 = 0.5, c0 = -0.6;
  const double i = Sigmoid(0.5 + 0.1 * h0 + 0.1 * c0 + 0.05);
  const double f = Sigmoid(-0.3 + 0.3 * h0 + 0.3 * c0 + 0.1);
  const double cell = std::tanh(0.2 + 0.4 * h0);
  const double c = f * c0 + i * cell;
  const double o = Sigmoid(0.4 - 0.2 * h0 + 0.2 * c);
  const double h = o * std::tanh(c);
  absl::StatusOr<std::vector<Tensor>> out =
      RunRecurrent("LSTM", HandLstmInputs(), {IntAttr("hidden_size", 1)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 1, 1, 1}, {h}, 1e-6, "Y");
  ExpectNear((*out)[1], {1, 1, 1}, {h}, 1e-6, "Y_h");
  ExpectNear((*out)[2], {1, 1, 1}, {c}, 1e-6, "Y_c");
}

TEST(RecurrentTest, LstmInputForgetCouplesTheGates) {
  // ft = 1 - it: the forget weights, bias and peephole are not read.
  const double h0 = 0.5, c0 = -0.6;
  const double i = Sigmoid(0.5 + 0.1 * h0 + 0.1 * c0 + 0.05);
  const double c = (1 - i) * c0 + i * std::tanh(0.2 + 0.4 * h0);
  const double h = Sigmoid(0.4 - 0.2 * h0 + 0.2 * c) * std::tanh(c);
  absl::StatusOr<std::vector<Tensor>> out = RunRecurrent(
      "LSTM", HandLstmInputs(), {IntAttr("hidden_size", 1), IntAttr("input_forget", 1)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[1], {1, 1, 1}, {h}, 1e-6, "Y_h");
  ExpectNear((*out)[2], {1, 1, 1}, {c}, 1e-6, "Y_c");
}

// One RNN step with W = 1, R = 0 and no bias: Y = f(X), one X per batch entry.
absl::StatusOr<std::vector<Tensor>> ActivationRun(const std::vector<float>& x,
                                                  std::vector<onnx::AttributeProto> attributes,
                                                  int64_t directions = 1) {
  attributes.push_back(IntAttr("hidden_size", 1));
  const int64_t batch = static_cast<int64_t>(x.size());
  return RunRecurrent("RNN",
                      {FloatTensor({1, batch, 1}, x),
                       FloatTensor({directions, 1, 1}, std::vector<float>(directions, 1.0f)),
                       FloatTensor({directions, 1, 1}, std::vector<float>(directions, 0.0f))},
                      attributes, {true});
}

TEST(RecurrentTest, ActivationsFollowTheirFormulas) {
  const std::vector<float> x = {-2.0f, -0.5f, 0.0f, 0.5f, 1.5f, 3.0f};
  const double alpha = 0.5, beta = 0.4;  // x holds alpha: ThresholdedRelu keeps it
  const struct {
    std::string name;
    double (*formula)(double x, double alpha, double beta);
  } cases[] = {
      {"Relu", [](double v, double, double) { return std::max(v, 0.0); }},
      {"Tanh", [](double v, double, double) { return std::tanh(v); }},
      {"Sigmoid", [](double v, double, double) { return Sigmoid(v); }},
      {"Affine", [](double v, double a, double b) { return a * v + b; }},
      {"LeakyRelu", [](double v, double a, double) { return v >= 0 ? v : a * v; }},
      {"ThresholdedRelu", [](double v, double a, double) { return v >= a ? v : 0.0; }},
      {"ScaledTanh", [](double v, double a, double b) { return a * std::tanh(b * v); }},
      {"HardSigmoid",
       [](double v, double a, double b) { return std::min(std::max(a * v + b, 0.0), 1.0); }},
      {"Elu", [](double v, double a, double) { return v >= 0 ? v : a * (std::exp(v) - 1); }},
      {"Softsign", [](double v, double, double) { return v / (1 + std::fabs(v)); }},
      {"Softplus", [](double v, double, double) { return std::log(1 + std::exp(v)); }},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::vector<Tensor>> out = ActivationRun(
        x, {StringsAttr("activations", {c.name}), FloatsAttr("activation_alpha", {0.5f}),
            FloatsAttr("activation_beta", {0.4f})});
    ASSERT_TRUE(out.ok()) << c.name << ": " << out.status();
    std::vector<double> expected;
    for (float v : x) expected.push_back(c.formula(v, alpha, beta));
    ExpectNear((*out)[0], {1, 1, 6, 1}, expected, 1e-6, c.name);
  }
}

TEST(RecurrentTest, AlphaAndBetaAreConsumedInOrderOrDefault) {
  const std::vector<float> x = {-2.0f, 0.5f};
  // Relu takes no alpha, so LeakyRelu (the reverse direction's) takes the first.
  absl::StatusOr<std::vector<Tensor>> out = ActivationRun(
      x,
      {StringAttr("direction", "bidirectional"), StringsAttr("activations", {"Relu", "LeakyRelu"}),
       FloatsAttr("activation_alpha", {0.25f})},
      2);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 2, 2, 1}, {0.0, 0.5, -0.5, 0.5}, 1e-6, "Relu, LeakyRelu");
  out = ActivationRun(
      x,
      {StringAttr("direction", "bidirectional"),
       StringsAttr("activations", {"ScaledTanh", "HardSigmoid"}),
       FloatsAttr("activation_alpha", {2.0f, 0.3f}), FloatsAttr("activation_beta", {0.5f, 0.1f})},
      2);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 2, 2, 1},
             {2 * std::tanh(-1.0), 2 * std::tanh(0.25), 0.0, 0.3 * 0.5 + 0.1}, 1e-6,
             "ScaledTanh, HardSigmoid");
  // The defaults of the ONNX ops: LeakyRelu alpha 0.01, HardSigmoid alpha 0.2, beta 0.5.
  out = ActivationRun(x,
                      {StringAttr("direction", "bidirectional"),
                       StringsAttr("activations", {"leakyrelu", "HardSigmoid"})},
                      2);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 2, 2, 1}, {-0.02, 0.5, 0.1, 0.6}, 1e-6, "defaults");
}

TEST(RecurrentTest, ClipBoundsActivationInputs) {
  absl::StatusOr<std::vector<Tensor>> out = ActivationRun(
      {-2.0f, 0.25f, 3.0f}, {StringsAttr("activations", {"Affine"}),
                             FloatsAttr("activation_alpha", {2.0f}), FloatAttr("clip", 0.5f)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 1, 3, 1}, {-1.0, 0.5, 1.0}, 1e-6, "2 * clip(x, 0.5)");

  // LSTM: every gate input is 3, clipped to 1; Ct = 2 * s + s * tanh(1) (s = sigmoid(1)) is
  // past 1 too, so h(Ct) reads 1 while Y_c keeps Ct.
  const std::vector<Tensor> lstm = {FloatTensor({1, 1, 1}, {1.0f}),
                                    FloatTensor({1, 4, 1}, {3.0f, 3.0f, 3.0f, 3.0f}),
                                    FloatTensor({1, 4, 1}, {0.0f, 0.0f, 0.0f, 0.0f}),
                                    Tensor(),
                                    Tensor(),
                                    Tensor(),
                                    FloatTensor({1, 1, 1}, {2.0f})};
  out = RunRecurrent("LSTM", lstm, {IntAttr("hidden_size", 1), FloatAttr("clip", 1.0f)});
  ASSERT_TRUE(out.ok()) << out.status();
  const double s = Sigmoid(1.0);
  ExpectNear((*out)[1], {1, 1, 1}, {s * std::tanh(1.0)}, 1e-6, "LSTM Y_h");
  ExpectNear((*out)[2], {1, 1, 1}, {2 * s + s * std::tanh(1.0)}, 1e-6, "LSTM Y_c");
}

// ---- symmetries on random data ----

TEST(RecurrentTest, ReverseEqualsForwardOnReversedInput) {
  for (const std::string& op : kOps) {
    std::vector<Tensor> inputs = RandomInputs(op, 5, 3, 4, 3, 1, 11);
    const std::vector<onnx::AttributeProto> size = {IntAttr("hidden_size", 3)};
    absl::StatusOr<std::vector<Tensor>> reverse =
        RunRecurrent(op, inputs, {IntAttr("hidden_size", 3), StringAttr("direction", "reverse")});
    inputs[kX] = ReverseAxis0(inputs[kX]);
    absl::StatusOr<std::vector<Tensor>> forward = RunRecurrent(op, inputs, size);
    ASSERT_TRUE(reverse.ok()) << op << ": " << reverse.status();
    ASSERT_TRUE(forward.ok()) << op << ": " << forward.status();
    ExpectSame((*reverse)[0], ReverseAxis0((*forward)[0]), op + " Y");
    ExpectSame((*reverse)[1], (*forward)[1], op + " Y_h");
    if (op == "LSTM") ExpectSame((*reverse)[2], (*forward)[2], op + " Y_c");
  }
}

TEST(RecurrentTest, BidirectionalStacksForwardAndReverse) {
  for (const std::string& op : kOps) {
    for (int linear_before_reset : {0, 1}) {
      if (op != "GRU" && linear_before_reset == 1) continue;
      const std::string what = op + (linear_before_reset ? " linear_before_reset" : "");
      const std::vector<Tensor> inputs = RandomInputs(op, 4, 2, 3, 5, 2, 12);
      const std::vector<onnx::AttributeProto> attributes = {
          IntAttr("hidden_size", 5), IntAttr("linear_before_reset", linear_before_reset)};
      std::vector<onnx::AttributeProto> both = attributes, reverse = attributes;
      both.push_back(StringAttr("direction", "bidirectional"));
      reverse.push_back(StringAttr("direction", "reverse"));
      absl::StatusOr<std::vector<Tensor>> out = RunRecurrent(op, inputs, both);
      absl::StatusOr<std::vector<Tensor>> out0 =
          RunRecurrent(op, DirectionInputs(inputs, 0), attributes);
      absl::StatusOr<std::vector<Tensor>> out1 =
          RunRecurrent(op, DirectionInputs(inputs, 1), reverse);
      ASSERT_TRUE(out.ok()) << what << ": " << out.status();
      ASSERT_TRUE(out0.ok()) << what << ": " << out0.status();
      ASSERT_TRUE(out1.ok()) << what << ": " << out1.status();
      for (int64_t d : {0, 1}) {
        const std::vector<Tensor>& single = d == 0 ? *out0 : *out1;
        const std::string dir = what + " direction " + std::to_string(d);
        ExpectSame(SliceAxis((*out)[0], 1, d, d + 1), single[0], dir + " Y");
        ExpectSame(SliceAxis((*out)[1], 0, d, d + 1), single[1], dir + " Y_h");
        if (op == "LSTM") ExpectSame(SliceAxis((*out)[2], 0, d, d + 1), single[2], dir + " Y_c");
      }
    }
  }
}

TEST(RecurrentTest, SequenceLensCutEachBatchEntry) {
  const std::vector<int32_t> lengths = {5, 2, 0, 4};
  for (const std::string& op : kOps) {
    for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
      const std::string what = op + " " + direction;
      const int64_t directions = direction == "bidirectional" ? 2 : 1;
      std::vector<Tensor> inputs = RandomInputs(op, 5, 4, 3, 2, directions, 13);
      inputs[kSequenceLens] = Tensor::FromVector(DataType::kInt32, {4}, lengths);
      const std::vector<onnx::AttributeProto> attributes = {IntAttr("hidden_size", 2),
                                                            StringAttr("direction", direction)};
      absl::StatusOr<std::vector<Tensor>> out = RunRecurrent(op, inputs, attributes);
      ASSERT_TRUE(out.ok()) << what << ": " << out.status();
      for (int64_t b = 0; b < 4; ++b) {
        const std::string entry = what + " batch entry " + std::to_string(b);
        const int64_t length = lengths[b];
        const Tensor y = SliceAxis((*out)[0], 2, b, b + 1);
        // Past its length an entry's Y is zero.
        const Tensor tail = SliceAxis(y, 0, length, 5);
        ExpectNear(tail, tail.dims(), std::vector<double>(tail.numel(), 0.0), 0, entry + " Y tail");
        if (length == 0) {
          const Tensor y_h = SliceAxis((*out)[1], 1, b, b + 1);
          ExpectNear(y_h, y_h.dims(), std::vector<double>(y_h.numel(), 0.0), 0, entry + " Y_h");
          continue;
        }
        // Up to it, the same as a run over that entry's first `length` steps alone.
        std::vector<Tensor> alone = inputs;
        alone[kSequenceLens] = Tensor();
        alone[kX] = SliceAxis(SliceAxis(inputs[kX], 1, b, b + 1), 0, 0, length);
        for (size_t i : {kInitialH, kInitialC}) {
          if (i < inputs.size()) alone[i] = SliceAxis(inputs[i], 1, b, b + 1);
        }
        absl::StatusOr<std::vector<Tensor>> expected = RunRecurrent(op, alone, attributes);
        ASSERT_TRUE(expected.ok()) << entry << ": " << expected.status();
        ExpectSame(SliceAxis(y, 0, 0, length), (*expected)[0], entry + " Y");
        ExpectSame(SliceAxis((*out)[1], 1, b, b + 1), (*expected)[1], entry + " Y_h");
        if (op == "LSTM") {
          ExpectSame(SliceAxis((*out)[2], 1, b, b + 1), (*expected)[2], entry + " Y_c");
        }
      }
    }
  }
}

TEST(RecurrentTest, BatchFirstLayoutIsLayout0Transposed) {
  for (const std::string& op : kOps) {
    std::vector<Tensor> inputs = RandomInputs(op, 4, 3, 2, 3, 2, 14);
    inputs[kSequenceLens] =
        Tensor::FromVector(DataType::kInt32, {3}, std::vector<int32_t>{4, 1, 3});
    const std::vector<onnx::AttributeProto> attributes = {IntAttr("hidden_size", 3),
                                                          StringAttr("direction", "bidirectional")};
    absl::StatusOr<std::vector<Tensor>> expected = RunRecurrent(op, inputs, attributes);
    std::vector<Tensor> batch_first = inputs;
    batch_first[kX] = Permute(inputs[kX], {1, 0, 2});
    for (size_t i : {kInitialH, kInitialC}) {
      if (i < inputs.size()) batch_first[i] = Permute(inputs[i], {1, 0, 2});
    }
    std::vector<onnx::AttributeProto> layout1 = attributes;
    layout1.push_back(IntAttr("layout", 1));
    absl::StatusOr<std::vector<Tensor>> out = RunRecurrent(op, batch_first, layout1);
    ASSERT_TRUE(expected.ok()) << op << ": " << expected.status();
    ASSERT_TRUE(out.ok()) << op << ": " << out.status();
    ExpectSame((*out)[0], Permute((*expected)[0], {2, 0, 1, 3}), op + " Y");
    ExpectSame((*out)[1], Permute((*expected)[1], {1, 0, 2}), op + " Y_h");
    if (op == "LSTM") ExpectSame((*out)[2], Permute((*expected)[2], {1, 0, 2}), op + " Y_c");
  }
}

TEST(RecurrentTest, OmittedOutputsAreLeftOut) {
  const std::vector<Tensor> inputs = RandomInputs("LSTM", 3, 2, 2, 2, 1, 15);
  const std::vector<onnx::AttributeProto> attributes = {IntAttr("hidden_size", 2)};
  absl::StatusOr<std::vector<Tensor>> all = RunRecurrent("LSTM", inputs, attributes);
  absl::StatusOr<std::vector<Tensor>> only_c =
      RunRecurrent("LSTM", inputs, attributes, {false, false, true});
  absl::StatusOr<std::vector<Tensor>> only_y = RunRecurrent("LSTM", inputs, attributes, {true});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_TRUE(only_c.ok()) << only_c.status();
  ASSERT_TRUE(only_y.ok()) << only_y.status();
  EXPECT_FALSE((*only_c)[0].defined());
  EXPECT_FALSE((*only_c)[1].defined());
  ExpectSame((*only_c)[2], (*all)[2], "Y_c alone");
  ASSERT_EQ(only_y->size(), 1u);
  ExpectSame((*only_y)[0], (*all)[0], "Y alone");

  absl::StatusOr<std::vector<Tensor>> gru =
      RunRecurrent("GRU", RandomInputs("GRU", 3, 2, 2, 2, 1, 16), attributes, {false, true});
  ASSERT_TRUE(gru.ok()) << gru.status();
  EXPECT_FALSE((*gru)[0].defined());
  EXPECT_EQ((*gru)[1].dims(), (Dims{1, 2, 2}));
}

TEST(RecurrentTest, DoubleMatchesFloatAndOpset7MatchesOpset14) {
  for (const std::string& op : kOps) {
    const std::vector<Tensor> inputs = RandomInputs(op, 3, 2, 3, 2, 2, 17);
    const std::vector<onnx::AttributeProto> attributes = {IntAttr("hidden_size", 2),
                                                          StringAttr("direction", "bidirectional")};
    std::vector<Tensor> doubles;
    for (const Tensor& t : inputs) {
      doubles.push_back(t.defined() ? ConvertTensor(t, DataType::kDouble) : Tensor());
    }
    absl::StatusOr<std::vector<Tensor>> floats = RunRecurrent(op, inputs, attributes);
    absl::StatusOr<std::vector<Tensor>> wide = RunRecurrent(op, doubles, attributes);
    absl::StatusOr<std::vector<Tensor>> opset7 =
        RunRecurrent(op, inputs, attributes, {true, true, true}, 7);
    ASSERT_TRUE(floats.ok()) << op << ": " << floats.status();
    ASSERT_TRUE(wide.ok()) << op << ": " << wide.status();
    ASSERT_TRUE(opset7.ok()) << op << ": " << opset7.status();
    EXPECT_EQ((*wide)[0].type(), DataType::kDouble);
    ExpectSame((*wide)[0], (*floats)[0], op + " double Y");
    ExpectSame((*opset7)[0], (*floats)[0], op + " opset 7 Y");
  }
}

TEST(RecurrentTest, BadInputsAreErrors) {
  const std::vector<Tensor> good = RandomInputs("LSTM", 3, 2, 4, 2, 1, 18);
  const std::vector<onnx::AttributeProto> size = {IntAttr("hidden_size", 2)};
  const auto error = [&](std::vector<Tensor> inputs,
                         std::vector<onnx::AttributeProto> attributes) -> std::string {
    absl::StatusOr<std::vector<Tensor>> out = RunRecurrent("LSTM", inputs, attributes);
    EXPECT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(out.status().message());
  };
  ASSERT_TRUE(RunRecurrent("LSTM", good, size).ok());

  std::vector<Tensor> inputs = good;
  inputs[kX] = FloatTensor({3, 8}, std::vector<float>(24, 0.0f));
  EXPECT_THAT(error(inputs, size), HasSubstr("X must be 3-D"));
  inputs = good;
  inputs[kW] = FloatTensor({1, 8, 3}, std::vector<float>(24, 0.0f));
  EXPECT_THAT(error(inputs, size), HasSubstr("W is float[1,8,3], expected shape [1,8,4]"));
  EXPECT_THAT(error(good, {IntAttr("hidden_size", 3)}), HasSubstr("W is float[1,8,4]"));
  inputs = good;
  inputs[kB] = FloatTensor({1, 8}, std::vector<float>(8, 0.0f));
  EXPECT_THAT(error(inputs, size), HasSubstr("B is float[1,8], expected shape [1,16]"));
  inputs = good;
  inputs[kInitialC] = FloatTensor({1, 3, 2}, std::vector<float>(6, 0.0f));
  EXPECT_THAT(error(inputs, size), HasSubstr("initial_c"));
  inputs = good;
  inputs[kSequenceLens] = Tensor::FromVector(DataType::kInt32, {2}, std::vector<int32_t>{3, 4});
  EXPECT_THAT(error(inputs, size), HasSubstr("sequence_lens[1] is 4, outside [0, 3]"));
  inputs[kSequenceLens] = Tensor::FromVector(DataType::kInt32, {2}, std::vector<int32_t>{-1, 2});
  EXPECT_THAT(error(inputs, size), HasSubstr("sequence_lens[0] is -1"));
  inputs[kSequenceLens] = FloatTensor({2}, {1.0f, 2.0f});
  EXPECT_THAT(error(inputs, size), HasSubstr("expected int32[2]"));
  inputs = good;
  inputs[kInitialH] = ConvertTensor(good[kInitialH], DataType::kDouble);
  EXPECT_THAT(error(inputs, size), HasSubstr("initial_h is double[1,2,2] but X is float"));

  const auto with = [&](onnx::AttributeProto a) {
    std::vector<onnx::AttributeProto> attributes = size;
    attributes.push_back(std::move(a));
    return attributes;
  };
  EXPECT_THAT(error(good, with(StringsAttr("activations", {"Sigmoid", "Tanh", "Swish"}))),
              HasSubstr("unknown activation 'Swish'"));
  EXPECT_THAT(error(good, with(StringsAttr("activations", {"Sigmoid", "Tanh"}))),
              HasSubstr("activations lists 2 functions, expected 3"));
  EXPECT_THAT(error(good, with(StringAttr("direction", "sideways"))),
              HasSubstr("unknown direction 'sideways'"));
  EXPECT_THAT(error(good, with(StringAttr("direction", "bidirectional"))),
              HasSubstr("expected shape [2,8,4]"));
  EXPECT_THAT(error(good, with(IntAttr("layout", 2))), HasSubstr("layout must be 0 or 1"));
  EXPECT_THAT(error(good, with(FloatAttr("clip", -1.0f))), HasSubstr("clip must be positive"));
  EXPECT_THAT(error({good[kX], good[kW]}, size), HasSubstr("expects inputs X, W and R"));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
