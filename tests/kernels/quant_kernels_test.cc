// The quantized kernels on every int16 GEMM micro-kernel this CPU has (with "avx512vnni",
// ConvInteger runs the uint8 x int8 dot-product path of conv_integer_vnni.h): MatMulInteger
// and ConvInteger (uint8 and int8 x and w) against naive int64 loops written here, hand-worked
// cases of the values that break 16-bit shortcuts, rounding half to even and saturation in the
// requantizing ops, and the same answers with and without the thread pool.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/gemm_int8.h"
#include "gtest/gtest.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

Tensor Bytes(DataType type, const Dims& dims, const std::vector<int>& values) {
  Tensor t(type, dims);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DataType::kInt8) {
      t.data<int8_t>()[i] = static_cast<int8_t>(values[i]);
    } else {
      t.data<uint8_t>()[i] = static_cast<uint8_t>(values[i]);
    }
  }
  return t;
}

Tensor RandomBytes(DataType type, const Dims& dims, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(type == DataType::kInt8 ? -128 : 0,
                                          type == DataType::kInt8 ? 127 : 255);
  std::vector<int> v(Tensor::NumElements(dims));
  for (int& x : v) x = dist(rng);
  return Bytes(type, dims, v);
}

std::vector<int32_t> Ints(const Tensor& t) {
  return std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + t.numel());
}

// Runs the body once per micro-kernel, restoring the best one afterwards.
class QuantKernels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(SelectQuantGemmKernelForTesting(GetParam())); }
  void TearDown() override { SelectQuantGemmKernelForTesting(AvailableQuantGemmKernels()[0]); }
};

// 255 * -128 + 255 * -128 = -65280 does not fit 16 bits: a pairwise uint8 x int8 multiply-add
// that saturates (pmaddubsw) would give -32768 per pair. Four of them: -130560.
TEST_P(QuantKernels, MatMulIntegerPairsDoNotSaturate) {
  const Tensor a = Bytes(DataType::kUint8, {1, 4}, {255, 255, 255, 255});
  const Tensor b = Bytes(DataType::kInt8, {4, 1}, {-128, -128, -128, -128});
  auto y = RunNode("MatMulInteger", 10, {a, b}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Ints((*y)[0]), std::vector<int32_t>{-130560});
  // With zero points the widened operands reach -255 and 255: (0 - 255) * (255 - 0) * 3.
  const Tensor a2 = Bytes(DataType::kUint8, {1, 3}, {0, 0, 0});
  const Tensor b2 = Bytes(DataType::kUint8, {3, 1}, {255, 255, 255});
  auto y2 =
      RunNode("MatMulInteger", 10,
              {a2, b2, Bytes(DataType::kUint8, {}, {255}), Bytes(DataType::kUint8, {}, {0})}, {});
  ASSERT_TRUE(y2.ok()) << y2.status();
  EXPECT_EQ(Ints((*y2)[0]), std::vector<int32_t>{-195075});
}

TEST_P(QuantKernels, MatMulIntegerMatchesNaiveProduct) {
  std::mt19937 rng(7);
  struct Case {
    Dims a, b;
    DataType a_type, b_type;
  };
  const std::vector<Case> cases = {
      {{1, 1}, {1, 1}, DataType::kUint8, DataType::kInt8},
      {{5, 3}, {3, 9}, DataType::kUint8, DataType::kUint8},
      {{13, 17}, {17, 33}, DataType::kInt8, DataType::kInt8},
      {{2, 7, 64}, {64, 16}, DataType::kUint8, DataType::kInt8},
      {{3, 1, 6, 31}, {2, 31, 5}, DataType::kInt8, DataType::kUint8},
      // Several tiles of rows and columns, partial ones at the ends.
      {{19, 70}, {70, 45}, DataType::kUint8, DataType::kInt8},
  };
  for (const Case& c : cases) {
    const Tensor a = RandomBytes(c.a_type, c.a, rng), b = RandomBytes(c.b_type, c.b, rng);
    const Tensor a_zero = RandomBytes(c.a_type, {}, rng), b_zero = RandomBytes(c.b_type, {}, rng);
    const int64_t k = c.a.back(), m = c.a[c.a.size() - 2], n = c.b.back();
    const int64_t a_batches = a.numel() / (m * k), b_batches = b.numel() / (k * n);
    // Batch dims [3, 1] against [2] broadcast to [3, 2]; the other cases have one side's.
    const int64_t batches =
        c.a.size() == 4 ? a_batches * b_batches : std::max(a_batches, b_batches);
    std::vector<int32_t> expected;
    for (int64_t batch = 0; batch < batches; ++batch) {
      const int64_t ab = batch / (batches / a_batches), bb = batch % b_batches;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          int64_t sum = 0;
          for (int64_t p = 0; p < k; ++p) {
            sum += (a.GetAsInt64((ab * m + i) * k + p) - a_zero.GetAsInt64(0)) *
                   (b.GetAsInt64((bb * k + p) * n + j) - b_zero.GetAsInt64(0));
          }
          expected.push_back(static_cast<int32_t>(sum));
        }
      }
    }
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &MathPool()}) {
      NodeRun run;
      run.pool = pool;
      auto y = RunNode("MatMulInteger", 10, {a, b, a_zero, b_zero}, {}, run);
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(Ints((*y)[0]), expected)
          << DescribeTensor(a) << " x " << DescribeTensor(b) << (pool ? " pooled" : "");
    }
  }
}

struct ConvCase {
  Dims x, w;
  int64_t group;
  Dims strides, dilations, pads;  // pads: begins then ends
};

// Direct loop over output positions and taps, padding standing for x_zero.
std::vector<int32_t> NaiveConvInteger(const Tensor& x, int64_t x_zero, const Tensor& w,
                                      const std::vector<int64_t>& w_zero, const ConvCase& c,
                                      Dims& out_dims) {
  const size_t spatial = c.x.size() - 2;
  out_dims = {c.x[0], c.w[0]};
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t extent = (c.w[2 + d] - 1) * c.dilations[d] + 1;
    out_dims.push_back((c.x[2 + d] + c.pads[d] + c.pads[spatial + d] - extent) / c.strides[d] + 1);
  }
  const int64_t group_channels = c.x[1] / c.group, group_filters = c.w[0] / c.group;
  std::vector<int32_t> y(Tensor::NumElements(out_dims));
  std::vector<int64_t> o(spatial), t(spatial);
  const int64_t out_size = y.size() / (out_dims[0] * out_dims[1]);
  const int64_t taps = Tensor::NumElements(Dims(c.w.begin() + 2, c.w.end()));
  for (int64_t n = 0; n < c.x[0]; ++n) {
    for (int64_t f = 0; f < c.w[0]; ++f) {
      for (int64_t pos = 0; pos < out_size; ++pos) {
        for (int64_t d = spatial - 1, rest = pos; d >= 0; --d) {
          o[d] = rest % out_dims[2 + d];
          rest /= out_dims[2 + d];
        }
        int64_t sum = 0;
        for (int64_t ci = 0; ci < group_channels; ++ci) {
          const int64_t channel = f / group_filters * group_channels + ci;
          for (int64_t tap = 0; tap < taps; ++tap) {
            for (int64_t d = spatial - 1, rest = tap; d >= 0; --d) {
              t[d] = rest % c.w[2 + d];
              rest /= c.w[2 + d];
            }
            int64_t offset = n * c.x[1] + channel;
            bool inside = true;
            for (size_t d = 0; d < spatial; ++d) {
              const int64_t i = o[d] * c.strides[d] - c.pads[d] + t[d] * c.dilations[d];
              inside &= i >= 0 && i < c.x[2 + d];
              offset = offset * c.x[2 + d] + i;
            }
            if (!inside) continue;
            const int64_t widx = (f * group_channels + ci) * taps + tap;
            sum += (x.GetAsInt64(offset) - x_zero) * (w.GetAsInt64(widx) - w_zero[f]);
          }
        }
        y[(n * c.w[0] + f) * out_size + pos] = static_cast<int32_t>(sum);
      }
    }
  }
  return y;
}

std::vector<ConvCase> ConvCases() {
  return {
      {{1, 3, 9, 9}, {8, 3, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {{2, 4, 7, 6}, {6, 2, 3, 3}, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}},
      {{1, 5, 17}, {7, 5, 4}, 1, {3}, {1}, {2, 1}},
      {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 1}, 1, {1, 2, 1}, {1, 1, 1}, {0, 1, 0, 1, 1, 0}},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, 6, {1, 1}, {1, 1}, {1, 1, 1, 1}},  // depthwise
      {{1, 64, 20, 20}, {19, 64, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      // Several blocks of positions, the last one partial; K = 99 not a multiple of 4.
      {{1, 11, 37, 71}, {20, 11, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      // Output rows of 64 (whole panels of 32 read in place from the padded image), dilated,
      // with windows reaching into the padding on every side.
      {{1, 5, 12, 64}, {9, 5, 3, 3}, 1, {1, 1}, {2, 2}, {2, 2, 2, 2}},
  };
}

TEST_P(QuantKernels, ConvIntegerMatchesNaiveLoops) {
  std::mt19937 rng(11);
  const std::vector<ConvCase> cases = ConvCases();
  for (const DataType x_type : {DataType::kUint8, DataType::kInt8}) {
    for (const DataType w_type : {DataType::kInt8, DataType::kUint8}) {
      for (const ConvCase& c : cases) {
        const Tensor x = RandomBytes(x_type, c.x, rng);
        const Tensor w = RandomBytes(w_type, c.w, rng);
        const Tensor x_zero = RandomBytes(x_type, {}, rng);
        const Tensor w_zero = RandomBytes(w_type, {c.w[0]}, rng);
        std::vector<int64_t> w_zeros(c.w[0]);
        for (int64_t f = 0; f < c.w[0]; ++f) w_zeros[f] = w_zero.GetAsInt64(f);
        Dims out_dims;
        const std::vector<int32_t> expected =
            NaiveConvInteger(x, x_zero.GetAsInt64(0), w, w_zeros, c, out_dims);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &MathPool()}) {
          NodeRun run;
          run.pool = pool;
          auto y = RunNode("ConvInteger", 10, {x, w, x_zero, w_zero},
                           {IntAttr("group", c.group), IntsAttr("strides", c.strides),
                            IntsAttr("dilations", c.dilations), IntsAttr("pads", c.pads)},
                           run);
          ASSERT_TRUE(y.ok()) << y.status();
          EXPECT_EQ((*y)[0].dims(), out_dims);
          EXPECT_EQ(Ints((*y)[0]), expected)
              << DescribeTensor(x) << " * " << DescribeTensor(w) << (pool ? " pooled" : "");
        }
      }
    }
  }
}

// QLinearConv on the same geometries: the naive int32 sums plus the bias, times the float
// multiplier x_scale * w_scale[f] / y_scale, rounded half to even (std::nearbyint) and
// saturated, for uint8 and int8 x, w (with per-filter zero points) and y. The scales spread
// the outputs past both ends of the output type.
TEST_P(QuantKernels, QLinearConvMatchesNaiveRequantization) {
  std::mt19937 rng(12);
  for (const ConvCase& c : ConvCases()) {
    for (const DataType x_type : {DataType::kUint8, DataType::kInt8}) {
      for (const DataType w_type : {DataType::kInt8, DataType::kUint8}) {
        const DataType y_type = x_type == w_type ? DataType::kUint8 : DataType::kInt8;
        const int64_t filters = c.w[0];
        const Tensor x = RandomBytes(x_type, c.x, rng);
        const Tensor w = RandomBytes(w_type, c.w, rng);
        const Tensor x_zero = RandomBytes(x_type, {}, rng);
        const Tensor w_zero = RandomBytes(w_type, {filters}, rng);
        const Tensor y_zero = RandomBytes(y_type, {}, rng);
        std::uniform_real_distribution<float> scale(0.5f, 2.0f);
        std::uniform_int_distribution<int32_t> bias_value(-20000, 20000);
        const Tensor x_scale = FloatTensor({}, {scale(rng) * 0.01f});
        const Tensor y_scale = FloatTensor({}, {scale(rng)});
        std::vector<float> w_scales(filters);
        Tensor bias(DataType::kInt32, {filters});
        std::vector<int64_t> w_zeros(filters);
        for (int64_t f = 0; f < filters; ++f) {
          w_scales[f] = scale(rng);
          bias.data<int32_t>()[f] = bias_value(rng);
          w_zeros[f] = w_zero.GetAsInt64(f);
        }
        const Tensor w_scale = FloatTensor({filters}, w_scales);
        Dims out_dims;
        const std::vector<int32_t> sums =
            NaiveConvInteger(x, x_zero.GetAsInt64(0), w, w_zeros, c, out_dims);
        const int64_t out_size = static_cast<int64_t>(sums.size()) / (c.x[0] * filters);
        const int64_t zero = y_zero.GetAsInt64(0);
        const int64_t low = y_type == DataType::kInt8 ? -128 : 0, high = low + 255;
        std::vector<int64_t> expected;
        for (size_t i = 0; i < sums.size(); ++i) {
          const int64_t f = static_cast<int64_t>(i) / out_size % filters;
          const float multiplier =
              x_scale.data<float>()[0] * w_scales[f] / y_scale.data<float>()[0];
          const float v = static_cast<float>(sums[i] + bias.data<int32_t>()[f]) * multiplier;
          expected.push_back(std::clamp(static_cast<int64_t>(std::nearbyint(v)) + zero, low, high));
        }
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &MathPool()}) {
          NodeRun run;
          run.pool = pool;
          auto y = RunNode("QLinearConv", 10,
                           {x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, bias},
                           {IntAttr("group", c.group), IntsAttr("strides", c.strides),
                            IntsAttr("dilations", c.dilations), IntsAttr("pads", c.pads)},
                           run);
          ASSERT_TRUE(y.ok()) << y.status();
          EXPECT_EQ((*y)[0].dims(), out_dims);
          std::vector<int64_t> got;
          for (int64_t i = 0; i < (*y)[0].numel(); ++i) got.push_back((*y)[0].GetAsInt64(i));
          EXPECT_EQ(got, expected)
              << DescribeTensor(x) << " * " << DescribeTensor(w) << (pool ? " pooled" : "");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Available, QuantKernels, ::testing::ValuesIn(AvailableQuantGemmKernels()),
                         [](const auto& info) { return info.param; });

// 3x3 image 1..9 with zero point 1 (so 0..8), 2x2 kernel {1, -1, 2, 0}, pads 1 on the top
// and left: the padding is the zero point and adds nothing. Output (i, j) sums the window
// whose top-left is (i - 1, j - 1); e.g. (0, 0): only the kernel's bottom-right tap (0)
// sees the image, so 0; (1, 1): 0 * 1 - 1 * 1 + 3 * 2 + 4 * 0 = 5.
TEST(QuantKernelsByHand, ConvIntegerPaddingIsTheZeroPoint) {
  const Tensor x = Bytes(DataType::kUint8, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = Bytes(DataType::kInt8, {1, 1, 2, 2}, {1, -1, 2, 0});
  auto y = RunNode("ConvInteger", 10, {x, w, Bytes(DataType::kUint8, {}, {1})},
                   {IntsAttr("pads", {1, 1, 0, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  // Row 0: windows over padding and image row 0: (0,0)=0, (0,1)=0*2+1*0... computed below.
  // (0, j): taps (1,0) w=2 and (1,1) w=0 see row 0: 2 * x[0][j-1]; (0,0): 0, (0,1): 0, (0,2): 2.
  // (i, 0): taps (0,1) w=-1 and (1,1) w=0 see column 0: -x[i-1][0]; (1,0): 0, (2,0): -3.
  // (1,1): 0 - 1 + 6 + 0 = 5; (1,2): 1 - 2 + 8 = 7; (2,1): 3 - 4 + 12 = 11; (2,2): 4 - 5 + 14 = 13.
  EXPECT_EQ(Ints((*y)[0]), (std::vector<int32_t>{0, 0, 2, 0, 5, 7, -3, 11, 13}));
}

// Requantization: float(acc) * (a_scale * b_scale / y_scale), half to even, then saturation.
// With all scales 1 and a 1x1 product the output is a * b + zero point: 5 * 1 / 2 is not
// reachable, so use y_scale 2: 5 -> 2.5 -> 2, 7 -> 3.5 -> 4, 3 -> 1.5 -> 2, 1 -> 0.5 -> 0.
TEST(QuantKernelsByHand, QLinearMatMulRoundsHalfToEvenAndSaturates) {
  const Tensor a = Bytes(DataType::kUint8, {6, 1}, {5, 7, 3, 1, 255, 0});
  const Tensor b = Bytes(DataType::kUint8, {1, 1}, {1});
  const Tensor one = FloatTensor({}, {1.0f}), two = FloatTensor({}, {2.0f});
  const Tensor zero = Bytes(DataType::kUint8, {}, {0});
  const Tensor y_zero = Bytes(DataType::kInt8, {}, {10});
  auto y = RunNode("QLinearMatMul", 10,
                   {a, one, zero, b, one, Bytes(DataType::kUint8, {}, {0}), two, y_zero}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].type(), DataType::kInt8);
  // 2+10, 4+10, 2+10, 0+10, 127.5 -> 128 + 10 saturates at 127, 0 + 10.
  std::vector<int> got;
  for (int64_t i = 0; i < 6; ++i) got.push_back((*y)[0].data<int8_t>()[i]);
  EXPECT_EQ(got, (std::vector<int>{12, 14, 12, 10, 127, 10}));
}

// The same rule in QLinearConv, with the int32 bias added before requantizing: a 1x1 conv
// of 1 channel with weight 1; bias -8 takes 5 below 0 and uint8 saturates at 0.
TEST(QuantKernelsByHand, QLinearConvAddsBiasThenRounds) {
  const Tensor x = Bytes(DataType::kUint8, {1, 1, 1, 4}, {5, 7, 3, 13});
  const Tensor w = Bytes(DataType::kUint8, {2, 1, 1, 1}, {1, 1});
  const Tensor one = FloatTensor({}, {1.0f}), two = FloatTensor({}, {2.0f});
  const Tensor zero = Bytes(DataType::kUint8, {}, {0});
  Tensor bias(DataType::kInt32, {2});
  bias.data<int32_t>()[0] = 0;
  bias.data<int32_t>()[1] = -8;
  auto y = RunNode("QLinearConv", 10, {x, one, zero, w, one, zero, two, zero, bias}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<int> got;
  for (int64_t i = 0; i < 8; ++i) got.push_back((*y)[0].data<uint8_t>()[i]);
  // Filter 0: 2.5 -> 2, 3.5 -> 4, 1.5 -> 2, 6.5 -> 6. Filter 1: -1.5 -> 0 (saturated),
  // -0.5 -> 0, -2.5 -> 0, 2.5 -> 2.
  EXPECT_EQ(got, (std::vector<int>{2, 4, 2, 6, 0, 0, 0, 2}));
}

// An all-zero input has no range; onnxruntime answers scale 1 and zero point 0 (not a 0
// scale that the next Mul would spread as 0 or NaN).
TEST(QuantKernelsByHand, DynamicQuantizeLinearOfZerosHasScaleOne) {
  NodeRun run;
  run.num_outputs = 3;
  auto y = RunNode("DynamicQuantizeLinear", 11, {FloatTensor({3}, {0, 0, 0})}, {}, run);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[1].data<float>()[0], 1.0f);
  EXPECT_EQ((*y)[2].data<uint8_t>()[0], 0);
  EXPECT_EQ((*y)[0].data<uint8_t>()[1], 0);
}

}  // namespace
}  // namespace ovfix::exec::math_testing
