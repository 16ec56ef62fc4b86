// The narrow float encodings against hand-worked values from the ONNX Cast-19/25 tables and
// the format definitions (bias 7/8/15/16, e2m1's eight magnitudes, e8m0's powers of two), and
// the packing order of the sub-byte integers (element 0 in the low bits).
#include "ir/narrow_types.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace ovfix {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

uint8_t Encode(DataType t, float v, bool saturate = true) {
  return FloatToNarrowFloat(t, v, saturate);
}

TEST(NarrowTypes, E4M3FNRoundsAndSaturates) {
  const DataType t = DataType::kFloat8E4M3FN;
  EXPECT_EQ(Encode(t, 1.0f), 0x38);  // exponent 7 = bias
  EXPECT_EQ(Encode(t, 448.0f), 0x7E);
  EXPECT_EQ(Encode(t, 449.0f, false), 0x7E);  // rounds to 448, in range
  EXPECT_EQ(Encode(t, 464.0f, false), 0x7E);  // halfway 448/480: to the even mantissa 110
  EXPECT_EQ(Encode(t, 465.0f, true), 0x7E);
  EXPECT_EQ(Encode(t, 465.0f, false), 0x7F);  // rounds past 448: NaN
  EXPECT_EQ(Encode(t, 480.0f, true), 0x7E);
  EXPECT_EQ(Encode(t, 480.0f, false), 0x7F);
  EXPECT_EQ(Encode(t, kInf, true), 0x7E);
  EXPECT_EQ(Encode(t, kInf, false), 0x7F);
  EXPECT_EQ(Encode(t, -kInf, true), 0xFE);
  EXPECT_EQ(Encode(t, -kInf, false), 0xFF);
  EXPECT_EQ(Encode(t, kNaN, true), 0x7F);
  EXPECT_EQ(Encode(t, -0.0f), 0x80);
  EXPECT_EQ(Encode(t, std::ldexp(1.0f, -9)), 0x01);   // smallest subnormal
  EXPECT_EQ(Encode(t, std::ldexp(1.0f, -10)), 0x00);  // halfway to 0: even
  EXPECT_EQ(Encode(t, std::ldexp(3.0f, -10)), 0x02);  // halfway 1/2: even
  EXPECT_EQ(NarrowFloatToFloat(t, 0x7E), 448.0f);
  EXPECT_EQ(NarrowFloatToFloat(t, 0xFE), -448.0f);
  EXPECT_EQ(NarrowFloatToFloat(t, 0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(NarrowFloatToFloat(t, 0x03), std::ldexp(3.0f, -9));
  EXPECT_TRUE(std::isnan(NarrowFloatToFloat(t, 0x7F)));
  EXPECT_TRUE(std::isnan(NarrowFloatToFloat(t, 0xFF)));
  EXPECT_EQ(NarrowFloatToFloat(t, 0x77), 240.0f);  // exponent 14, mantissa 111: a number
}

TEST(NarrowTypes, E4M3FNUZ) {
  const DataType t = DataType::kFloat8E4M3FNUZ;
  EXPECT_EQ(Encode(t, 1.0f), 0x40);  // bias 8
  EXPECT_EQ(Encode(t, 240.0f), 0x7F);
  EXPECT_EQ(Encode(t, 1000.0f, true), 0x7F);
  EXPECT_EQ(Encode(t, 1000.0f, false), 0x80);
  EXPECT_EQ(Encode(t, -kInf, true), 0xFF);
  EXPECT_EQ(Encode(t, -kInf, false), 0x80);
  EXPECT_EQ(Encode(t, kNaN), 0x80);
  EXPECT_EQ(Encode(t, -0.0f), 0x00);  // no negative zero
  EXPECT_EQ(Encode(t, -1e-10f), 0x00);
  EXPECT_EQ(Encode(t, std::ldexp(1.0f, -10)), 0x01);
  EXPECT_TRUE(std::isnan(NarrowFloatToFloat(t, 0x80)));
  EXPECT_EQ(NarrowFloatToFloat(t, 0xFF), -240.0f);
}

TEST(NarrowTypes, E5M2) {
  const DataType t = DataType::kFloat8E5M2;
  EXPECT_EQ(Encode(t, 1.0f), 0x3C);
  EXPECT_EQ(Encode(t, 57344.0f), 0x7B);
  EXPECT_EQ(Encode(t, 61440.0f, true), 0x7B);   // halfway to 65536: even is "65536"
  EXPECT_EQ(Encode(t, 61440.0f, false), 0x7C);  // infinity
  EXPECT_EQ(Encode(t, 61439.0f, false), 0x7B);
  EXPECT_EQ(Encode(t, kInf, true), 0x7B);
  EXPECT_EQ(Encode(t, kInf, false), 0x7C);
  EXPECT_EQ(Encode(t, -kInf, false), 0xFC);
  EXPECT_EQ(Encode(t, -kNaN, false), 0xFF);
  EXPECT_EQ(Encode(t, 448.0f), 0x5F);
  EXPECT_EQ(Encode(t, std::ldexp(1.0f, -16)), 0x01);
  EXPECT_EQ(NarrowFloatToFloat(t, 0x7C), kInf);
  EXPECT_EQ(NarrowFloatToFloat(t, 0xFC), -kInf);
  EXPECT_TRUE(std::isnan(NarrowFloatToFloat(t, 0x7D)));
}

TEST(NarrowTypes, E5M2FNUZ) {
  const DataType t = DataType::kFloat8E5M2FNUZ;
  EXPECT_EQ(Encode(t, 1.0f), 0x40);  // bias 16
  EXPECT_EQ(Encode(t, 57344.0f), 0x7F);
  EXPECT_EQ(Encode(t, kInf, true), 0x7F);
  EXPECT_EQ(Encode(t, kInf, false), 0x80);
  EXPECT_EQ(Encode(t, -0.0f), 0x00);
  EXPECT_EQ(NarrowFloatToFloat(t, 0x01), std::ldexp(1.0f, -17));
}

TEST(NarrowTypes, E2M1) {
  const DataType t = DataType::kFloat4E2M1;
  const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (uint8_t c = 0; c < 8; ++c) {
    EXPECT_EQ(NarrowFloatToFloat(t, c), magnitudes[c]);
    EXPECT_EQ(NarrowFloatToFloat(t, c | 8), -magnitudes[c]);
    EXPECT_EQ(Encode(t, magnitudes[c]), c);
  }
  EXPECT_EQ(Encode(t, 2.5f), 4);  // halfway 2/3: even code
  EXPECT_EQ(Encode(t, 5.0f), 6);  // halfway 4/6: even code
  EXPECT_EQ(Encode(t, 0.25f), 0);
  EXPECT_EQ(Encode(t, 0.75f), 2);
  EXPECT_EQ(Encode(t, 7.0f, false), 7);  // no infinity: always saturates
  EXPECT_EQ(Encode(t, -100.0f, false), 15);
  EXPECT_EQ(Encode(t, kInf, false), 7);
}

TEST(NarrowTypes, E8M0Rounding) {
  const DataType t = DataType::kFloat8E8M0;
  auto e8 = [&](float v, E8M0Rounding r, bool saturate = true) {
    return FloatToNarrowFloat(t, v, saturate, r);
  };
  EXPECT_EQ(e8(1.0f, E8M0Rounding::kUp), 127);
  EXPECT_EQ(e8(3.0f, E8M0Rounding::kUp), 129);
  EXPECT_EQ(e8(3.0f, E8M0Rounding::kDown), 128);
  EXPECT_EQ(e8(3.0f, E8M0Rounding::kNearest), 129);  // 3 = halfway 2/4: ties up
  EXPECT_EQ(e8(2.9f, E8M0Rounding::kNearest), 128);
  EXPECT_EQ(e8(2.0f, E8M0Rounding::kUp), 128);
  EXPECT_EQ(e8(kNaN, E8M0Rounding::kUp), 0xFF);
  EXPECT_EQ(e8(kInf, E8M0Rounding::kUp, true), 0xFE);
  EXPECT_EQ(e8(kInf, E8M0Rounding::kNearest, false), 0xFF);
  EXPECT_EQ(e8(0.0f, E8M0Rounding::kUp, true), 0x00);
  EXPECT_EQ(e8(0.0f, E8M0Rounding::kNearest, false), 0xFF);
  EXPECT_EQ(e8(std::numeric_limits<float>::max(), E8M0Rounding::kUp, true), 0xFE);
  EXPECT_EQ(e8(std::numeric_limits<float>::max(), E8M0Rounding::kUp, false), 0xFF);
  EXPECT_EQ(e8(std::numeric_limits<float>::max(), E8M0Rounding::kDown, false), 0xFE);
  EXPECT_EQ(NarrowFloatToFloat(t, 127), 1.0f);
  EXPECT_EQ(NarrowFloatToFloat(t, 0), std::ldexp(1.0f, -127));
  EXPECT_EQ(NarrowFloatToFloat(t, 254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(NarrowFloatToFloat(t, 255)));
}

TEST(NarrowTypes, PackedOrderAndClamping) {
  uint8_t int4[2] = {0, 0};
  SetPackedElement(DataType::kInt4, int4, 0, 1);
  SetPackedElement(DataType::kInt4, int4, 1, -2);
  SetPackedElement(DataType::kInt4, int4, 2, 9);  // clamps to 7
  EXPECT_EQ(int4[0], 0xE1);
  EXPECT_EQ(int4[1], 0x07);
  EXPECT_EQ(GetPackedElement(DataType::kInt4, int4, 1), -2);
  EXPECT_EQ(GetPackedElement(DataType::kUint4, int4, 1), 14);
  uint8_t int2 = 0;
  const int32_t values[4] = {1, -1, -2, 0};
  for (int i = 0; i < 4; ++i) SetPackedElement(DataType::kInt2, &int2, i, values[i]);
  EXPECT_EQ(int2, 0x2D);  // 00 10 11 01
  for (int i = 0; i < 4; ++i) EXPECT_EQ(GetPackedElement(DataType::kInt2, &int2, i), values[i]);
  EXPECT_EQ(GetPackedElement(DataType::kUint2, &int2, 1), 3);
}

}  // namespace
}  // namespace ovfix
