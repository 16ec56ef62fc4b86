// The OpenCL quantization and recurrent kernels (exec/opencl/ops_quant.cc, ops_recurrent.cc)
// against the CPU executor: a small model per case, random inputs (whole multiples of a half
// step where rounding ties matter), run on both backends in fp32, fp16-storage and fp16 (half
// arithmetic, where the device has it). Integer outputs and the quantization ops' float
// outputs must be the same bits; the recurrent ops' outputs agree to float (or half)
// rounding. Every case must run on the device: no CPU fallback in the session's placement.
#include <cmath>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/opencl/opencl_runtime.h"
#include "exec/opencl/opencl_session.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/text_form.h"
#include "tests/opencl/matches_cpu.h"

namespace ovfix::exec {
namespace {

using Dims = std::vector<int64_t>;

// A graph input: uniform in [low, high], in steps of `step` when step > 0 (ties for the
// rounding of quantization), every 7th value NaN with `nan`.
struct Input {
  std::string name;
  DataType type = DataType::kFloat;
  Dims dims;
  double low = -2, high = 2, step = 0;
  bool nan = false;
};

enum class Expect { kExact, kClose, kError, kFallback };

struct Case {
  std::string name;
  int opset = 13;
  std::vector<Input> inputs;
  std::string outputs;  // "uint8 y, float s"
  std::string body;
  Expect expect = Expect::kExact;
};

std::string ModelText(const Case& c) {
  std::vector<std::string> inputs;
  for (const Input& in : c.inputs) {
    inputs.push_back(matches_cpu::Declaration(in.type, in.dims, in.name));
  }
  return matches_cpu::ModelText(c.opset, inputs, c.outputs, c.body);
}

TensorMap RandomInputs(const Case& c) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name)));
  TensorMap out;
  for (const Input& in : c.inputs) {
    Tensor t(in.type, in.dims);
    std::uniform_real_distribution<double> real(in.low, in.high);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = real(rng);
      if (in.step > 0) v = std::round(v / in.step) * in.step;
      if (!IsFloatingPoint(in.type)) v = std::round(v);
      if (in.nan && i % 7 == 3) v = NAN;
      matches_cpu::SetRandomElement(t, i, v);
    }
    out[in.name] = std::move(t);
  }
  return out;
}

Input F(std::string name, Dims dims, double low = -2, double high = 2, double step = 0) {
  return {std::move(name), DataType::kFloat, std::move(dims), low, high, step};
}
Input U8(std::string name, Dims dims) {
  return {std::move(name), DataType::kUint8, std::move(dims), 0, 255};
}
Input I8(std::string name, Dims dims) {
  return {std::move(name), DataType::kInt8, std::move(dims), -128, 127};
}

std::vector<Case> QuantCases() {
  std::vector<Case> cases;
  // x / 0.5 over multiples of 0.25: every other quotient is a tie (round half to even), and
  // [-100, 100] saturates both 8-bit types.
  cases.push_back({"QuantizeLinear_uint8_ties",
                   13,
                   {F("x", {3, 4, 5}, -100, 100, 0.25)},
                   "uint8 y",
                   "s = Constant<value = float {0.5}>()\n"
                   "z = Constant<value = uint8 {128}>()\n"
                   "y = QuantizeLinear(x, s, z)"});
  cases.push_back({"QuantizeLinear_int8_nan",
                   13,
                   {{"x", DataType::kFloat, {2, 33}, -100, 100, 0.25, true}},
                   "int8 y",
                   "s = Constant<value = float {0.5}>()\n"
                   "z = Constant<value = int8 {-3}>()\n"
                   "y = QuantizeLinear(x, s, z)"});
  cases.push_back({"QuantizeLinear_default_zero_opset10",
                   10,
                   {F("x", {17}, -3, 300)},
                   "uint8 y",
                   "s = Constant<value = float {1.3}>()\ny = QuantizeLinear(x, s)"});
  cases.push_back({"QuantizeLinear_per_axis",
                   13,
                   {F("x", {2, 3, 4}, -50, 50, 0.125)},
                   "int8 y",
                   "s = Constant<value = float[3] {0.25, 0.5, 0.75}>()\n"
                   "z = Constant<value = int8[3] {0, 5, -7}>()\n"
                   "y = QuantizeLinear<axis = 1>(x, s, z)"});
  cases.push_back({"QuantizeLinear_per_last_axis",
                   13,
                   {F("x", {3, 2}, -50, 50, 0.125)},
                   "uint8 y",
                   "s = Constant<value = float[2] {0.25, 0.375}>()\n"
                   "z = Constant<value = uint8[2] {10, 200}>()\n"
                   "y = QuantizeLinear<axis = -1>(x, s, z)"});
  cases.push_back({"DequantizeLinear_uint8",
                   13,
                   {U8("x", {4, 9})},
                   "float y",
                   "s = Constant<value = float {0.037}>()\n"
                   "z = Constant<value = uint8 {131}>()\n"
                   "y = DequantizeLinear(x, s, z)"});
  cases.push_back({"DequantizeLinear_int8_per_axis",
                   13,
                   {I8("x", {2, 3, 5})},
                   "float y",
                   "s = Constant<value = float[3] {0.1, 0.02, 3.5}>()\n"
                   "z = Constant<value = int8[3] {1, -2, 0}>()\n"
                   "y = DequantizeLinear<axis = 1>(x, s, z)"});
  cases.push_back({"DequantizeLinear_int32",
                   13,
                   {{"x", DataType::kInt32, {11}, -100000, 100000}},
                   "float y",
                   "s = Constant<value = float {0.0013}>()\ny = DequantizeLinear(x, s)"});
  cases.push_back({"DynamicQuantizeLinear_small",
                   11,
                   {F("x", {2, 3, 7}, -3, 5)},
                   "uint8 y, float s, uint8 z",
                   "y, s, z = DynamicQuantizeLinear(x)"});
  cases.push_back({"DynamicQuantizeLinear_positive",
                   11,
                   {F("x", {5, 5}, 0.5, 9)},
                   "uint8 y, float s, uint8 z",
                   "y, s, z = DynamicQuantizeLinear(x)"});
  // More than one slice of the range pass, with NaNs (skipped by the range).
  cases.push_back({"DynamicQuantizeLinear_large_nan",
                   11,
                   {{"x", DataType::kFloat, {3, 4100}, -7, 2, 0, true}},
                   "uint8 y, float s, uint8 z",
                   "y, s, z = DynamicQuantizeLinear(x)"});
  cases.push_back({"DynamicQuantizeLinear_zeros",
                   11,
                   {F("x", {6}, 0, 0)},
                   "uint8 y, float s, uint8 z",
                   "y, s, z = DynamicQuantizeLinear(x)"});
  cases.push_back({"MatMulInteger_uint8_int8",
                   10,
                   {U8("a", {3, 7}), I8("b", {7, 5})},
                   "int32 y",
                   "za = Constant<value = uint8 {12}>()\n"
                   "zb = Constant<value = int8 {-5}>()\n"
                   "y = MatMulInteger(a, b, za, zb)"});
  cases.push_back({"MatMulInteger_batched_per_row_and_column",
                   10,
                   {U8("a", {2, 1, 3, 6}), U8("b", {4, 6, 5})},
                   "int32 y",
                   "za = Constant<value = uint8[3] {1, 100, 255}>()\n"
                   "zb = Constant<value = uint8[5] {0, 7, 128, 9, 250}>()\n"
                   "y = MatMulInteger(a, b, za, zb)"});
  cases.push_back({"MatMulInteger_no_zero_points_vector",
                   10,
                   {I8("a", {6}), I8("b", {2, 6, 3})},
                   "int32 y",
                   "y = MatMulInteger(a, b)"});
  // As onnxruntime's dynamic quantizer writes a convolution.
  cases.push_back({"ConvInteger_dynamic_quantized",
                   11,
                   {F("x", {1, 3, 9, 8})},
                   "int32 y",
                   "q, s, z = DynamicQuantizeLinear(x)\n"
                   "w = Constant<value = uint8[4, 3, 3, 3] {" +
                       [] {
                         std::vector<std::string> v;
                         for (int i = 0; i < 108; ++i) v.push_back(std::to_string(i * 37 % 256));
                         return absl::StrJoin(v, ", ");
                       }() +
                       "}>()\n"
                       "wz = Constant<value = uint8 {131}>()\n"
                       "y = ConvInteger<pads = [1, 1, 1, 1]>(q, w, z, wz)"});
  cases.push_back({"ConvInteger_strides_dilations_group",
                   10,
                   {U8("x", {2, 4, 11, 10}), U8("w", {6, 2, 3, 2})},
                   "int32 y",
                   "xz = Constant<value = uint8 {7}>()\n"
                   "wz = Constant<value = uint8[6] {0, 1, 2, 250, 128, 9}>()\n"
                   "y = ConvInteger<group = 2, strides = [2, 1], dilations = [1, 2], "
                   "pads = [0, 2, 1, 1]>(x, w, xz, wz)"});
  cases.push_back({"ConvInteger_int8_1d_same_upper",
                   10,
                   {I8("x", {1, 3, 13}), I8("w", {2, 3, 4})},
                   "int32 y",
                   "xz = Constant<value = int8 {-4}>()\n"
                   "y = ConvInteger<auto_pad = \"SAME_UPPER\", strides = [2]>(x, w, xz)"});
  cases.push_back({"ConvInteger_3d_no_zero_points",
                   10,
                   {U8("x", {1, 2, 4, 5, 3}), I8("w", {3, 2, 2, 3, 2})},
                   "int32 y",
                   "y = ConvInteger(x, w)"});
  cases.push_back({"ConvInteger_bad_group",
                   10,
                   {U8("x", {1, 3, 5, 5}), U8("w", {2, 2, 3, 3})},
                   "int32 y",
                   "y = ConvInteger<group = 2>(x, w)",
                   Expect::kError});
  cases.push_back({"QuantizeLinear_int32_falls_back",
                   13,
                   {{"x", DataType::kInt32, {9}, -500, 500}},
                   "uint8 y",
                   "s = Constant<value = float {3.0}>()\n"
                   "z = Constant<value = uint8 {0}>()\n"
                   "y = QuantizeLinear(x, s, z)",
                   Expect::kFallback});
  return cases;
}

std::vector<Case> RecurrentCases() {
  std::vector<Case> cases;
  const auto close = [](Case c) {
    c.expect = Expect::kClose;
    return c;
  };
  // An exporter's LSTM: forward, weights constant-folded into inputs, every output.
  cases.push_back(close({"LSTM_forward",
                         13,
                         {F("x", {5, 2, 3}), F("w", {1, 16, 3}, -0.5, 0.5),
                          F("r", {1, 16, 4}, -0.5, 0.5), F("b", {1, 32}, -0.5, 0.5)},
                         "float y, float yh, float yc",
                         "y, yh, yc = LSTM<hidden_size = 4>(x, w, r, b)"}));
  cases.push_back(close({"LSTM_bidirectional_all_inputs",
                         13,
                         {F("x", {4, 3, 2}),
                          F("w", {2, 12, 2}, -0.5, 0.5),
                          F("r", {2, 12, 3}, -0.5, 0.5),
                          F("b", {2, 24}, -0.5, 0.5),
                          {"lens", DataType::kInt32, {3}, 0, 4},
                          F("h0", {2, 3, 3}),
                          F("c0", {2, 3, 3}),
                          F("p", {2, 9}, -0.5, 0.5)},
                         "float y, float yh, float yc",
                         "y, yh, yc = LSTM<hidden_size = 3, direction = \"bidirectional\">("
                         "x, w, r, b, lens, h0, c0, p)"}));
  cases.push_back(close({"LSTM_reverse_clip_input_forget_activations",
                         13,
                         {F("x", {3, 2, 4}, -3, 3), F("w", {1, 20, 4}), F("r", {1, 20, 5})},
                         "float y",
                         "y = LSTM<hidden_size = 5, direction = \"reverse\", clip = 1.5, "
                         "input_forget = 1, activations = [\"HardSigmoid\", \"LeakyRelu\", "
                         "\"Softsign\"], activation_alpha = [0.3, 0.2], "
                         "activation_beta = [0.4]>(x, w, r)"}));
  cases.push_back(close({"LSTM_batch_first",
                         14,
                         {F("x", {2, 4, 3}), F("w", {2, 8, 3}, -0.5, 0.5),
                          F("r", {2, 8, 2}, -0.5, 0.5), F("h0", {2, 2, 2})},
                         "float y, float yh",
                         "y, yh = LSTM<hidden_size = 2, direction = \"bidirectional\", "
                         "layout = 1>(x, w, r, , , h0)"}));
  cases.push_back(close({"GRU_linear_before_reset",
                         13,
                         {F("x", {4, 2, 3}),
                          F("w", {2, 12, 3}, -0.5, 0.5),
                          F("r", {2, 12, 4}, -0.5, 0.5),
                          F("b", {2, 24}, -0.5, 0.5),
                          {"lens", DataType::kInt32, {2}, 1, 4}},
                         "float y, float yh",
                         "y, yh = GRU<hidden_size = 4, direction = \"bidirectional\", "
                         "linear_before_reset = 1>(x, w, r, b, lens)"}));
  cases.push_back(
      close({"GRU_reset_product",
             13,
             {F("x", {3, 2, 3}), F("w", {1, 9, 3}, -0.5, 0.5), F("r", {1, 9, 3}, -0.5, 0.5),
              F("b", {1, 18}, -0.5, 0.5), F("h0", {1, 2, 3})},
             "float y, float yh",
             "y, yh = GRU<hidden_size = 3>(x, w, r, b, , h0)"}));
  cases.push_back(
      close({"RNN_relu_reverse",
             13,
             {F("x", {3, 2, 3}), F("w", {1, 4, 3}, -0.5, 0.5), F("r", {1, 4, 4}, -0.5, 0.5)},
             "float y, float yh",
             "y, yh = RNN<hidden_size = 4, direction = \"reverse\", "
             "activations = [\"Relu\"]>(x, w, r)"}));
  cases.push_back({"LSTM_bad_weight_shape",
                   13,
                   {F("x", {2, 1, 3}), F("w", {1, 15, 3}), F("r", {1, 16, 4})},
                   "float y",
                   "y = LSTM<hidden_size = 4>(x, w, r)",
                   Expect::kError});
  return cases;
}

using KernelCase = matches_cpu::InPrecision<Case>;

std::vector<KernelCase> AllCases() {
  std::vector<KernelCase> out;
  for (const auto& cases : {QuantCases(), RecurrentCases()}) {
    for (const Case& c : cases) {
      for (Precision p : {Precision::kFp32, Precision::kFp16Storage, Precision::kFp16}) {
        // Errors and fallbacks are the same in every precision.
        if (p != Precision::kFp32 &&
            (c.expect == Expect::kError || c.expect == Expect::kFallback)) {
          continue;
        }
        out.push_back({c, p});
      }
    }
  }
  return out;
}

class QuantKernelTest : public ::testing::TestWithParam<KernelCase> {};

TEST_P(QuantKernelTest, MatchesCpu) {
  const Case& c = GetParam().op;
  matches_cpu::Expectation expect;
  // Placement is checked below, on the session's own account of it.
  expect.where = c.expect == Expect::kError ? matches_cpu::Placement::kError
                                            : matches_cpu::Placement::kAnywhere;
  expect.agreement = c.expect == Expect::kClose ? matches_cpu::Agreement::kRelative
                                                : matches_cpu::Agreement::kExact;
  expect.integer_outputs_exact = false;  // quantized outputs may round a tie apart
  std::unique_ptr<Session> cl;
  matches_cpu::ExpectBackendsAgree(ModelText(c), RandomInputs(c), GetParam().precision, expect,
                                   &cl);
  if (HasFatalFailure() || IsSkipped() || cl == nullptr) return;
  const auto placement = opencl::DevicePlacementOf(*cl);
  ASSERT_TRUE(placement.has_value());
  if (c.expect == Expect::kError) {
    // The device kernel's own check, not the CPU kernel's after a fallback.
    EXPECT_TRUE(placement->cpu.empty()) << placement->Summary();
  } else if (c.expect == Expect::kFallback) {
    ASSERT_EQ(placement->cpu.size(), 1u) << placement->Summary();
    EXPECT_TRUE(absl::StrContains(placement->Summary(), "runs on the CPU: 1 of"))
        << placement->Summary();
  } else {
    EXPECT_TRUE(placement->cpu.empty()) << placement->Summary();
    EXPECT_EQ(placement->host, 0) << "a node ran on the host";
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, QuantKernelTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) { return info.param.name(); });

// One line for every fallback of a session: the count, the total, and each op with its
// count and reason.
TEST(DevicePlacement, SummaryIsOneLineWithCountsAndReasons) {
  opencl::DevicePlacement placement;
  placement.nodes = 12;
  EXPECT_EQ(placement.Summary(), "");
  placement.cpu = {{"node a", "Transpose", "no OpenCL kernel"},
                   {"node b", "Resize", "antialias"},
                   {"node c", "Transpose", "no OpenCL kernel"}};
  EXPECT_EQ(placement.Summary(),
            "runs on the CPU: 3 of 12 nodes (Transpose x2: no OpenCL kernel, Resize: antialias)");
}

}  // namespace
}  // namespace ovfix::exec
