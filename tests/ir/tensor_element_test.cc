// Tensor::GetAsDouble / SetFromDouble on every stored element type: worked values, the
// saturation of integers (an out-of-range conversion must not be undefined behaviour), NaN,
// float16 rounding, and bool bytes other than 0 and 1.
#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/tensor.h"

namespace ovfix {
namespace {

double RoundTrip(DataType type, double v) {
  Tensor t(type, {1});
  t.SetFromDouble(0, v);
  return t.GetAsDouble(0);
}

TEST(TensorElement, IntegersTruncateTowardZeroAndSaturate) {
  EXPECT_EQ(RoundTrip(DataType::kInt8, 2.7), 2);
  EXPECT_EQ(RoundTrip(DataType::kInt8, -2.7), -2);
  EXPECT_EQ(RoundTrip(DataType::kInt8, 300), 127);
  EXPECT_EQ(RoundTrip(DataType::kInt8, -1e9), -128);
  EXPECT_EQ(RoundTrip(DataType::kUint8, -5), 0);
  EXPECT_EQ(RoundTrip(DataType::kUint16, 1e6), 65535);
  EXPECT_EQ(RoundTrip(DataType::kInt32, 1e12), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(RoundTrip(DataType::kUint32, 4e9), 4e9);
  EXPECT_EQ(RoundTrip(DataType::kInt64, -1e30), static_cast<double>(INT64_MIN));
  EXPECT_EQ(RoundTrip(DataType::kUint64, INFINITY), static_cast<double>(UINT64_MAX));
  EXPECT_EQ(RoundTrip(DataType::kInt16, NAN), 0);
  Tensor big(DataType::kInt64, {1});
  big.SetFromDouble(0, 9007199254740993.0);  // 2^53 + 1 is not a double: 2^53
  EXPECT_EQ(big.data<int64_t>()[0], int64_t{1} << 53);
}

TEST(TensorElement, FloatTypesRound) {
  EXPECT_EQ(RoundTrip(DataType::kDouble, 1.0 / 3), 1.0 / 3);
  EXPECT_EQ(RoundTrip(DataType::kFloat, 1.0 / 3), static_cast<double>(1.0f / 3));
  Tensor h(DataType::kFloat16, {1});
  h.SetFromDouble(0, 1.0 / 3);
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3555);  // 0.333251953125, the nearest half
  EXPECT_EQ(h.GetAsDouble(0), 0.333251953125);
  EXPECT_EQ(RoundTrip(DataType::kFloat16, 1e6), INFINITY);  // beyond 65504
  Tensor b(DataType::kBfloat16, {1});
  b.SetFromDouble(0, 1.0);
  EXPECT_EQ(b.data<uint16_t>()[0], 0x3f80);
  EXPECT_TRUE(std::isnan(RoundTrip(DataType::kFloat, NAN)));
}

TEST(TensorElement, BoolIsNonZero) {
  EXPECT_EQ(RoundTrip(DataType::kBool, 0.5), 1);
  EXPECT_EQ(RoundTrip(DataType::kBool, -0.0), 0);
  Tensor t(DataType::kBool, {1});
  t.data<uint8_t>()[0] = 7;  // a byte from a file: any non-zero byte is true
  EXPECT_EQ(t.GetAsDouble(0), 1.0);
}

TEST(TensorElement, TypesWithoutANumberAreLeftAlone) {
  Tensor c(DataType::kComplex64, {1});
  c.SetFromDouble(0, 5);
  EXPECT_EQ(c.GetAsDouble(0), 0.0);
  EXPECT_EQ(c.data<float>()[0], 0.0f);
}

}  // namespace
}  // namespace ovfix
