// Element-wise kernels run one node at a time through the kernel table, checked against
// values worked out by hand or against naive loops.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/broadcast.h"
#include "exec/kernel.h"
#include "exec/thread_pool.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/graph.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

template <typename T>
Tensor Make(DataType type, std::vector<int64_t> dims, const std::vector<T>& v) {
  return Tensor::FromVector(type, std::move(dims), v);
}
template <typename T>
std::vector<T> Values(const Tensor& t) {
  auto span = t.values<T>();
  return {span.begin(), span.end()};
}
std::vector<bool> Bools(const Tensor& t) {
  std::vector<bool> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.data<uint8_t>()[i] != 0);
  return out;
}

// Naive broadcast index: the element of `dims` read by output element `index` of `out_dims`.
int64_t NaiveOffset(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& dims,
                    int64_t index) {
  int64_t offset = 0, stride = 1;
  for (size_t i = 0; i < out_dims.size(); ++i) {
    const size_t d = out_dims.size() - 1 - i;
    const int64_t coordinate = index % out_dims[d];
    index /= out_dims[d];
    if (i < dims.size()) {
      const int64_t dim = dims[dims.size() - 1 - i];
      if (dim != 1) offset += coordinate * stride;
      stride *= dim;
    }
  }
  return offset;
}

TEST(BroadcastTest, Shapes) {
  EXPECT_EQ(*BroadcastShape({2, 3, 4}, {4}), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(*BroadcastShape({1, 4, 1, 6}, {3, 1, 5, 6}), (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(*BroadcastShape({}, {2, 0}), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(*BroadcastShape({0}, {1}), (std::vector<int64_t>{0}));
  auto bad = BroadcastShape({2, 3}, {4});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "cannot broadcast shapes [2,3] and [4]");
  EXPECT_FALSE(BroadcastShape({2, 0}, {2, 3}).ok());
}

TEST(BroadcastTest, RunsCollapse) {
  auto runs = [](const BroadcastPlan& plan) {
    int count = 0;
    plan.ForEachRun(0, plan.output_size(), [&](int64_t, const int64_t*, int64_t) { ++count; });
    return count;
  };
  auto same = *BroadcastPlan::Make({2, 3, 4}, {2, 3, 4});
  EXPECT_EQ(runs(same), 1);
  EXPECT_TRUE(same.all_same_shape());
  auto scalar = *BroadcastPlan::Make({2, 3, 4}, {});
  EXPECT_EQ(runs(scalar), 1);
  EXPECT_EQ(scalar.run_stride(1), 0);
  auto vector = *BroadcastPlan::Make({2, 3, 4}, {4});
  EXPECT_EQ(runs(vector), 6);
  EXPECT_EQ(vector.run_length(), 4);
  auto channel = *BroadcastPlan::Make({2, 3, 4, 5}, {3, 1, 1});
  EXPECT_EQ(runs(channel), 6);
  EXPECT_EQ(channel.run_length(), 20);
  EXPECT_EQ(channel.run_stride(0), 1);
  EXPECT_EQ(channel.run_stride(1), 0);
  auto one = *BroadcastPlan::Make({1, 1}, {1});
  EXPECT_EQ(one.output_size(), 1);
  EXPECT_EQ(runs(one), 1);
  auto empty = *BroadcastPlan::Make({0, 3}, {3});
  EXPECT_EQ(runs(empty), 0);
}

TEST(BroadcastTest, OffsetsMatchNaiveOverRandomShapesAndRanges) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = rng() % 5;
    std::vector<int64_t> out(rank), a, b, c;
    for (auto& d : out) d = 1 + rng() % 4;
    auto pick = [&](std::vector<int64_t>& dims) {
      const int r = rng() % (rank + 1);
      for (int i = rank - r; i < rank; ++i) dims.push_back(rng() % 3 == 0 ? 1 : out[i]);
    };
    pick(a);
    pick(b);
    pick(c);
    const std::vector<int64_t> shapes[] = {a, b, c};
    auto plan = BroadcastPlan::Make(shapes);
    ASSERT_TRUE(plan.ok());
    const auto& dims = plan->output_dims();
    const int64_t n = plan->output_size();
    const int64_t begin = n ? rng() % n : 0, end = begin + (n ? rng() % (n - begin + 1) : 0);
    int64_t expected_next = begin;
    plan->ForEachRun(begin, end, [&](int64_t o, const int64_t* offsets, int64_t count) {
      ASSERT_EQ(o, expected_next);
      for (int64_t i = 0; i < count; ++i) {
        for (int k = 0; k < 3; ++k) {
          ASSERT_EQ(offsets[k] + i * plan->run_stride(k), NaiveOffset(dims, shapes[k], o + i))
              << "operand " << k << " element " << o + i;
        }
      }
      expected_next += count;
    });
    EXPECT_EQ(expected_next, std::max(begin, end));
  }
}

TEST(ElementwiseTest, AddBroadcastsAndParallelizes) {
  // Big enough for the parallel path; [N,C,H,W] + [C,1,1] and + scalar and same shape.
  const std::vector<int64_t> dims = {2, 8, 128, 130};
  const int64_t n = 2 * 8 * 128 * 130;
  std::vector<float> x(n), bias(8), other(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000) * 0.5f;
  for (int64_t i = 0; i < n; ++i) other[i] = static_cast<float>(i % 7);
  for (int i = 0; i < 8; ++i) bias[i] = static_cast<float>(i) * 100.0f;
  auto channel = RunOp("Add", 14, {FloatTensor(dims, x), FloatTensor({8, 1, 1}, bias)});
  ASSERT_TRUE(channel.ok()) << channel.status();
  auto got = Values<float>((*channel)[0]);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[i], x[i] + bias[(i / (128 * 130)) % 8]) << i;
  }
  auto same = RunOp("Add", 14, {FloatTensor(dims, x), FloatTensor(dims, other)});
  got = Values<float>((*same)[0]);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] + other[i]);
  auto scalar = RunOp("Sub", 14, {FloatTensor({}, {1.0f}), FloatTensor(dims, x)});
  got = Values<float>((*scalar)[0]);
  EXPECT_EQ((*scalar)[0].dims(), dims);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 1.0f - x[i]);
}

TEST(ElementwiseTest, IntegerArithmeticWrapsAndTruncates) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  auto add = RunOp("Add", 14,
                   {Make<int32_t>(DataType::kInt32, {2}, {INT32_MAX, 5}),
                    Make<int32_t>(DataType::kInt32, {2}, {1, -7})});
  EXPECT_EQ(Values<int32_t>((*add)[0]), (std::vector<int32_t>{kMin, -2}));
  auto mul = RunOp("Mul", 14,
                   {Make<uint16_t>(DataType::kUint16, {1}, {65535}),
                    Make<uint16_t>(DataType::kUint16, {1}, {65535})});
  EXPECT_EQ(Values<uint16_t>((*mul)[0]), (std::vector<uint16_t>{1}));
  auto div = RunOp("Div", 14,
                   {Make<int32_t>(DataType::kInt32, {4}, {7, -7, kMin, 9}),
                    Make<int32_t>(DataType::kInt32, {4}, {2, 2, -1, -3})});
  EXPECT_EQ(Values<int32_t>((*div)[0]), (std::vector<int32_t>{3, -3, kMin, -3}));
  auto zero = RunOp(
      "Div", 14,
      {Make<int64_t>(DataType::kInt64, {2}, {1, 2}), Make<int64_t>(DataType::kInt64, {2}, {1, 0})});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("division by zero"), std::string::npos);
  EXPECT_NE(zero.status().message().find("Div"), std::string::npos);
}

TEST(ElementwiseTest, ModFollowsDivisorOrDividendSign) {
  auto python = RunOp("Mod", 13,
                      {Make<int32_t>(DataType::kInt32, {4}, {-4, 7, 5, -5}),
                       Make<int32_t>(DataType::kInt32, {4}, {3, -3, 3, -3})});
  EXPECT_EQ(Values<int32_t>((*python)[0]), (std::vector<int32_t>{2, -2, 2, -2}));
  auto c = RunOp("Mod", 13,
                 {Make<int32_t>(DataType::kInt32, {4}, {-4, 7, 5, -5}),
                  Make<int32_t>(DataType::kInt32, {4}, {3, -3, 3, -3})},
                 {IntAttr("fmod", 1)});
  EXPECT_EQ(Values<int32_t>((*c)[0]), (std::vector<int32_t>{-1, 1, 2, -2}));
  auto f = RunOp("Mod", 13, {FloatTensor({2}, {-4.5f, 4.5f}), FloatTensor({2}, {2.0f, -2.0f})},
                 {IntAttr("fmod", 1)});
  EXPECT_EQ(Values<float>((*f)[0]), (std::vector<float>{-0.5f, 0.5f}));
}

TEST(ElementwiseTest, PowMixedTypes) {
  auto int_float = RunOp(
      "Pow", 15,
      {Make<int32_t>(DataType::kInt32, {3}, {2, 3, -2}), FloatTensor({3}, {2.0f, 0.5f, 3.0f})});
  EXPECT_EQ((*int_float)[0].type(), DataType::kInt32);
  EXPECT_EQ(Values<int32_t>((*int_float)[0]), (std::vector<int32_t>{4, 1, -8}));
  auto float_int = RunOp(
      "Pow", 15, {FloatTensor({2}, {2.0f, 4.0f}), Make<int64_t>(DataType::kInt64, {2}, {3, -1})});
  EXPECT_EQ(Values<float>((*float_int)[0]), (std::vector<float>{8.0f, 0.25f}));
  auto ints = RunOp("Pow", 15,
                    {Make<int64_t>(DataType::kInt64, {3}, {3, -1, 2}),
                     Make<int64_t>(DataType::kInt64, {3}, {4, -3, -1})});
  EXPECT_EQ(Values<int64_t>((*ints)[0]), (std::vector<int64_t>{81, -1, 0}));
}

// Exponents 2, 3, 0.5, 1, -1 and -0.5 take a path without pow(): the exact power rounded once
// to float (pow in double, then rounded) for 2, 1, 0.5 and -1 (where float powf may be an ulp
// off), within an ulp for 3 and -0.5; pow's answers at -0 and -inf included.
TEST(ElementwiseTest, PowBySmallExponentsMatchesStdPow) {
  std::vector<float> x = {0.0f,  -0.0f,     1.0f,     -1.0f, 2.5f, -3.25f,  1e-20f,
                          7e18f, -INFINITY, INFINITY, NAN,   0.3f, 123.456f};
  std::mt19937 random(3);
  std::uniform_real_distribution<float> uniform(-50.0f, 50.0f);
  for (int i = 0; i < 200; ++i) x.push_back(uniform(random));
  const int64_t n = static_cast<int64_t>(x.size());
  for (float e : {2.0f, 3.0f, 0.5f, 1.0f, -1.0f, -0.5f}) {
    for (std::vector<int64_t> exponent_dims : {std::vector<int64_t>{}, {1}}) {
      auto y = RunOp("Pow", 15, {FloatTensor({n}, x), FloatTensor(exponent_dims, {e})});
      ASSERT_TRUE(y.ok()) << y.status();
      ASSERT_EQ((*y)[0].dims(), (std::vector<int64_t>{n}));
      const bool exact = e == 2.0f || e == 1.0f || e == 0.5f || e == -1.0f;
      for (int64_t i = 0; i < n; ++i) {
        const float got = (*y)[0].data<float>()[i];
        const float want =
            static_cast<float>(std::pow(static_cast<double>(x[i]), static_cast<double>(e)));
        SCOPED_TRACE(testing::Message() << x[i] << " ^ " << e);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << got;
        } else if (exact || std::isinf(want) || want == 0.0f) {
          EXPECT_EQ(got, want);
          EXPECT_EQ(std::signbit(got), std::signbit(want));
        } else {
          EXPECT_LE(std::abs(got - want), std::abs(want) * 2.5e-7f) << got << " vs " << want;
        }
      }
    }
  }
}

TEST(ElementwiseTest, ComparisonsLogicAndShifts) {
  auto less = RunOp("Less", 13, {FloatTensor({3}, {1, 2, 3}), FloatTensor({}, {2})});
  EXPECT_EQ((*less)[0].type(), DataType::kBool);
  EXPECT_EQ(Bools((*less)[0]), (std::vector<bool>{true, false, false}));
  auto equal = RunOp("Equal", 13,
                     {Make<uint8_t>(DataType::kBool, {2}, {true, false}),
                      Make<uint8_t>(DataType::kBool, {1}, {true})});
  EXPECT_EQ(Bools((*equal)[0]), (std::vector<bool>{true, false}));
  auto xor_ = RunOp("Xor", 7,
                    {Make<uint8_t>(DataType::kBool, {2, 1}, {true, false}),
                     Make<uint8_t>(DataType::kBool, {2}, {true, false})});
  EXPECT_EQ((*xor_)[0].dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Bools((*xor_)[0]), (std::vector<bool>{false, true, true, false}));
  auto shift = RunOp("BitShift", 11,
                     {Make<uint8_t>(DataType::kUint8, {3}, {16, 4, 1}),
                      Make<uint8_t>(DataType::kUint8, {3}, {1, 2, 9})},
                     {StringAttr("direction", "LEFT")});
  EXPECT_EQ(Values<uint8_t>((*shift)[0]), (std::vector<uint8_t>{32, 16, 0}));
  EXPECT_FALSE(
      RunOp("BitShift", 11,
            {Make<uint8_t>(DataType::kUint8, {1}, {1}), Make<uint8_t>(DataType::kUint8, {1}, {1})},
            {StringAttr("direction", "UP")})
          .ok());
}

TEST(ElementwiseTest, BadInputsAreErrorsNotCrashes) {
  EXPECT_FALSE(RunOp("Add", 14, {FloatTensor({2, 3}, {}), FloatTensor({4}, {})}).ok());
  EXPECT_FALSE(
      RunOp("Add", 14, {FloatTensor({2}, {}), Make<int32_t>(DataType::kInt32, {2}, {})}).ok());
  EXPECT_FALSE(RunOp("Add", 14, {FloatTensor({2}, {})}).ok());
  EXPECT_FALSE(RunOp("Relu", 14, {Make<uint8_t>(DataType::kUint8, {2}, {})}).ok());
  EXPECT_FALSE(
      RunOp("Where", 16, {FloatTensor({2}, {}), FloatTensor({2}, {}), FloatTensor({2}, {})}).ok());
  EXPECT_FALSE(RunOp("Cast", 13, {FloatTensor({2}, {})}).ok());  // no 'to'
  EXPECT_FALSE(RunOp("Cast", 13, {FloatTensor({2}, {})}, {IntAttr("to", 99)}).ok());
  auto empty = RunOp("Add", 14, {FloatTensor({0, 3}, {}), FloatTensor({3}, {1, 2, 3})});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)[0].dims(), (std::vector<int64_t>{0, 3}));
}

TEST(ElementwiseTest, LegacyBroadcastAttribute) {
  // Add-6 with broadcast=1, axis=1: B [3] lines up with A's dim 1 of [2,3,2].
  std::vector<float> a(12, 0.0f);
  auto out = RunOp("Add", 6, {FloatTensor({2, 3, 2}, a), FloatTensor({3}, {1, 2, 3})},
                   {IntAttr("broadcast", 1), IntAttr("axis", 1)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
}

TEST(ElementwiseTest, UnaryMath) {
  auto round = RunOp("Round", 11, {FloatTensor({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f})});
  EXPECT_EQ(Values<float>((*round)[0]), (std::vector<float>{0, 2, 2, -0, -2, 2}));
  auto sign = RunOp("Sign", 13, {Make<int8_t>(DataType::kInt8, {3}, {-5, 0, 9})});
  EXPECT_EQ(Values<int8_t>((*sign)[0]), (std::vector<int8_t>{-1, 0, 1}));
  auto abs = RunOp("Abs", 13, {Make<int32_t>(DataType::kInt32, {2}, {INT32_MIN, -3})});
  EXPECT_EQ(Values<int32_t>((*abs)[0]), (std::vector<int32_t>{INT32_MIN, 3}));
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto positive =
      RunOp("IsInf", 10, {FloatTensor({3}, {inf, -inf, nan})}, {IntAttr("detect_negative", 0)});
  EXPECT_EQ(Bools((*positive)[0]), (std::vector<bool>{true, false, false}));
  auto isnan = RunOp("IsNaN", 13, {FloatTensor({2}, {nan, 1})});
  EXPECT_EQ(Bools((*isnan)[0]), (std::vector<bool>{true, false}));
  auto not_ = RunOp("Not", 1, {Make<uint8_t>(DataType::kBool, {2}, {true, false})});
  EXPECT_EQ(Bools((*not_)[0]), (std::vector<bool>{false, true}));
  auto exp = RunOp("Exp", 13, {Make<double>(DataType::kDouble, {1}, {1.0})});
  EXPECT_DOUBLE_EQ(Values<double>((*exp)[0])[0], std::exp(1.0));
}

TEST(ElementwiseTest, Opset18Ops) {
  auto and_ = RunOp(
      "BitwiseAnd", 18,
      {Make<int32_t>(DataType::kInt32, {2}, {12, -1}), Make<int32_t>(DataType::kInt32, {1}, {10})});
  ASSERT_TRUE(and_.ok()) << and_.status();
  EXPECT_EQ(Values<int32_t>((*and_)[0]), (std::vector<int32_t>{8, 10}));
  auto not_ = RunOp("BitwiseNot", 18, {Make<uint8_t>(DataType::kUint8, {2}, {0, 0xf0})});
  EXPECT_EQ(Values<uint8_t>((*not_)[0]), (std::vector<uint8_t>{0xff, 0x0f}));
  auto mish = RunOp("Mish", 18, {FloatTensor({2}, {0, 1})});
  EXPECT_EQ(Values<float>((*mish)[0])[0], 0.0f);
  EXPECT_NEAR(Values<float>((*mish)[0])[1], std::tanh(std::log1p(std::exp(1.0f))), 1e-6);
  EXPECT_EQ(FindKernel("", "Mish", 17), nullptr);
}

TEST(ElementwiseTest, Activations) {
  auto relu = RunOp("Relu", 14, {FloatTensor({3}, {-1, 0, 2})});
  EXPECT_EQ(Values<float>((*relu)[0]), (std::vector<float>{0, 0, 2}));
  auto relu_int = RunOp("Relu", 14, {Make<int8_t>(DataType::kInt8, {2}, {-3, 3})});
  EXPECT_EQ(Values<int8_t>((*relu_int)[0]), (std::vector<int8_t>{0, 3}));
  auto leaky = RunOp("LeakyRelu", 16, {FloatTensor({2}, {-10, 10})}, {FloatAttr("alpha", 0.1f)});
  EXPECT_EQ(Values<float>((*leaky)[0]), (std::vector<float>{-1, 10}));
  auto sigmoid = RunOp("Sigmoid", 13, {FloatTensor({3}, {0, -1000, 1000})});
  EXPECT_EQ(Values<float>((*sigmoid)[0]), (std::vector<float>{0.5f, 0.0f, 1.0f}));
  auto softplus = RunOp("Softplus", 1, {FloatTensor({2}, {0, 100})});
  EXPECT_FLOAT_EQ(Values<float>((*softplus)[0])[0], std::log(2.0f));
  EXPECT_FLOAT_EQ(Values<float>((*softplus)[0])[1], 100.0f);
  auto hardswish = RunOp("HardSwish", 14, {FloatTensor({3}, {-4, 0, 3})});
  EXPECT_EQ(Values<float>((*hardswish)[0]), (std::vector<float>{0, 0, 3}));
  auto shrink = RunOp("Shrink", 9, {FloatTensor({3}, {-2, 0.5f, 2})},
                      {FloatAttr("lambd", 1.0f), FloatAttr("bias", 0.5f)});
  EXPECT_EQ(Values<float>((*shrink)[0]), (std::vector<float>{-1.5f, 0, 1.5f}));
}

TEST(ElementwiseTest, ClipBothForms) {
  auto attrs =
      RunOp("Clip", 6, {FloatTensor({3}, {-5, 0, 5})}, {FloatAttr("min", -1), FloatAttr("max", 1)});
  EXPECT_EQ(Values<float>((*attrs)[0]), (std::vector<float>{-1, 0, 1}));
  auto only_max = RunOp("Clip", 13,
                        {Make<int8_t>(DataType::kInt8, {3}, {-100, 0, 100}), Tensor(),
                         Make<int8_t>(DataType::kInt8, {}, {5})});
  ASSERT_TRUE(only_max.ok()) << only_max.status();
  EXPECT_EQ(Values<int8_t>((*only_max)[0]), (std::vector<int8_t>{-100, 0, 5}));
  auto crossed =
      RunOp("Clip", 13, {FloatTensor({2}, {-5, 5}), FloatTensor({}, {2}), FloatTensor({}, {1})});
  EXPECT_EQ(Values<float>((*crossed)[0]), (std::vector<float>{1, 1}));
  EXPECT_FALSE(RunOp("Clip", 13, {FloatTensor({2}, {-5, 5}), FloatTensor({2}, {2, 3})}).ok());
}

TEST(ElementwiseTest, PReluSlopeBroadcastsToInput) {
  auto out =
      RunOp("PRelu", 16, {FloatTensor({1, 2, 2}, {-1, 1, -1, 1}), FloatTensor({2, 1}, {0.5f, 2})});
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{-0.5f, 1, -2, 1}));
  EXPECT_FALSE(RunOp("PRelu", 16, {FloatTensor({2}, {-1, 1}), FloatTensor({3, 2}, {})}).ok());
}

TEST(ElementwiseTest, VariadicBroadcastAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto max =
      RunOp("Max", 13,
            {FloatTensor({3}, {1, nan, 5}), FloatTensor({2, 1}, {2, 4}), FloatTensor({}, {3})});
  ASSERT_TRUE(max.ok()) << max.status();
  auto got = Values<float>((*max)[0]);
  EXPECT_EQ((*max)[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(got[0], 3);
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], 5);
  EXPECT_EQ(got[3], 4);
  auto mean = RunOp("Mean", 13,
                    {FloatTensor({2}, {1, 2}), FloatTensor({2}, {3, 4}), FloatTensor({2}, {5, 9})});
  EXPECT_EQ(Values<float>((*mean)[0]), (std::vector<float>{3, 5}));
  auto sum = RunOp("Sum", 13, {FloatTensor({}, {1}), FloatTensor({2}, {1, 2})});
  EXPECT_EQ(Values<float>((*sum)[0]), (std::vector<float>{2, 3}));
  auto one = RunOp("Min", 13, {Make<uint64_t>(DataType::kUint64, {2}, {7, 3})});
  EXPECT_EQ(Values<uint64_t>((*one)[0]), (std::vector<uint64_t>{7, 3}));
}

TEST(ElementwiseTest, WhereBroadcastsThreeWays) {
  auto out = RunOp(
      "Where", 16,
      {Make<uint8_t>(DataType::kBool, {2, 1}, {true, false}),
       Make<int64_t>(DataType::kInt64, {3}, {1, 2, 3}), Make<int64_t>(DataType::kInt64, {}, {-1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int64_t>((*out)[0]), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  auto strings = RunOp("Where", 16,
                       {Make<uint8_t>(DataType::kBool, {2}, {false, true}), Tensor({2}, {"a", "b"}),
                        Tensor({1}, {"z"})});
  EXPECT_EQ((*strings)[0].strings(), (std::vector<std::string>{"z", "b"}));
}

TEST(CastTest, FloatingConversionsRoundExactly) {
  // 1 + 2^-11 + 2^-40 lies just above a half-way point of float16: double rounding through
  // float would tie and round down to 1.0; the right answer rounds up.
  const double tricky = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  auto half = RunOp("Cast", 13, {Make<double>(DataType::kDouble, {2}, {tricky, 65520.0})},
                    {IntAttr("to", 10)});
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(Values<uint16_t>((*half)[0]), (std::vector<uint16_t>{0x3c01, 0x7c00}));
  auto back =
      RunOp("Cast", 13, {Make<uint16_t>(DataType::kFloat16, {1}, {0x3555})}, {IntAttr("to", 1)});
  EXPECT_EQ(Values<float>((*back)[0])[0], HalfBitsToFloat(0x3555));
  auto bf16 =
      RunOp("Cast", 13, {FloatTensor({1}, {1.0f + std::ldexp(1.0f, -8)})}, {IntAttr("to", 16)});
  EXPECT_EQ(Values<uint16_t>((*bf16)[0]), (std::vector<uint16_t>{0x3f80}));  // ties to even
  auto ints = RunOp(
      "Cast", 13,
      {FloatTensor({5}, {-1.7f, 300.0f, std::numeric_limits<float>::quiet_NaN(), 1e30f, 2.9f})},
      {IntAttr("to", 6)});
  EXPECT_EQ(Values<int32_t>((*ints)[0]), (std::vector<int32_t>{-1, 300, 0, -1, 2}));
  auto to_bool = RunOp("Cast", 13, {FloatTensor({3}, {0, -0.5f, 2})}, {IntAttr("to", 9)});
  EXPECT_EQ(Bools((*to_bool)[0]), (std::vector<bool>{false, true, true}));
  auto legacy =
      RunOp("Cast", 1, {Make<int32_t>(DataType::kInt32, {1}, {3})}, {StringAttr("to", "DOUBLE")});
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_EQ(Values<double>((*legacy)[0]), (std::vector<double>{3.0}));
}

TEST(CastTest, Strings) {
  auto parsed =
      RunOp("Cast", 13, {Tensor({5}, {"0.5", "1e-5", "NaN", "+INF", "-INF"})}, {IntAttr("to", 1)});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto v = Values<float>((*parsed)[0]);
  EXPECT_EQ(v[0], 0.5f);
  EXPECT_EQ(v[1], 1e-5f);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(v[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[4], -std::numeric_limits<float>::infinity());
  auto printed =
      RunOp("Cast", 13, {FloatTensor({3}, {0.039187793f, 2.0f, -0.5f})}, {IntAttr("to", 8)});
  EXPECT_EQ((*printed)[0].strings(), (std::vector<std::string>{"0.039187793", "2", "-0.5"}));
  EXPECT_FALSE(RunOp("Cast", 13, {Tensor({1}, {"abc"})}, {IntAttr("to", 6)}).ok());
  auto like =
      RunOp("CastLike", 15, {Tensor({1}, {"42"}), Make<int64_t>(DataType::kInt64, {1}, {0})});
  EXPECT_EQ(Values<int64_t>((*like)[0]), (std::vector<int64_t>{42}));
}

TEST(ElementwiseTest, DropoutAtInference) {
  auto out = RunOp("Dropout", 13, {FloatTensor({2}, {1, 2}), FloatTensor({}, {0.5f})}, {}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(Bools((*out)[1]), (std::vector<bool>{true, true}));
  auto old = RunOp("Dropout", 7, {FloatTensor({2}, {1, 2})}, {FloatAttr("ratio", 0.3f)}, 2);
  EXPECT_EQ((*old)[1].type(), DataType::kFloat);
  EXPECT_EQ(Values<float>((*old)[1]), (std::vector<float>{1, 1}));
  auto training = RunOp("Dropout", 13,
                        {FloatTensor({4}, {1, 1, 1, 1}), FloatTensor({}, {0.5f}),
                         Make<uint8_t>(DataType::kBool, {}, {true})},
                        {IntAttr("seed", 3)}, 2);
  ASSERT_TRUE(training.ok()) << training.status();
  auto values = Values<float>((*training)[0]);
  auto mask = Bools((*training)[1]);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(values[i], mask[i] ? 2.0f : 0.0f);
}

TEST(ElementwiseTest, Bfloat16ComputesInFloat) {
  auto out = RunOp("Relu", 14, {Make<uint16_t>(DataType::kBfloat16, {2}, {0xbf80, 0x4000})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].type(), DataType::kBfloat16);
  EXPECT_EQ(Values<uint16_t>((*out)[0]), (std::vector<uint16_t>{0x0000, 0x4000}));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
