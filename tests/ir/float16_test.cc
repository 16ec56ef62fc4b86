// The bulk float16 functions (F16C where the CPU has it) against the scalar conversions,
// bit for bit, and the magnitude scan against a plain loop, with NaN, inf, zeros and
// lengths that leave a tail after the vector loop.
#include "ir/float16.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace ovfix {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Floats that exercise rounding: random magnitudes across the half range and beyond,
// values halfway between halves, subnormals, specials.
std::vector<float> TrickyFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::vector<float> v;
  for (size_t i = 0; i < n; ++i) v.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  for (float special :
       {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f, 1.0f + 1.0f / 2048,
        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::quiet_NaN()}) {
    v.push_back(special);
  }
  return v;
}

TEST(Float16Bulk, HalvesToFloatsMatchesScalarForEveryHalf) {
  std::vector<uint16_t> halves(65536);
  for (uint32_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  std::vector<float> floats(halves.size());
  HalvesToFloats(halves.data(), floats.data(), static_cast<int64_t>(halves.size()));
  for (uint32_t i = 0; i < halves.size(); ++i) {
    const float want = HalfBitsToFloat(halves[i]);
    if (std::isnan(want)) {  // F16C quiets signaling NaNs; the scalar path keeps the payload
      ASSERT_TRUE(std::isnan(floats[i])) << "half 0x" << std::hex << i;
      ASSERT_EQ(std::signbit(floats[i]), std::signbit(want)) << "half 0x" << std::hex << i;
      continue;
    }
    ASSERT_EQ(Bits(floats[i]), Bits(want)) << "half 0x" << std::hex << i;
  }
}

TEST(Float16Bulk, FloatsToHalvesAndRoundingMatchScalar) {
  for (size_t n : {size_t{5}, size_t{8}, size_t{1003}}) {
    const std::vector<float> in = TrickyFloats(n, static_cast<uint32_t>(n));
    std::vector<uint16_t> halves(in.size());
    FloatsToHalves(in.data(), halves.data(), static_cast<int64_t>(in.size()));
    std::vector<float> rounded = in;
    RoundFloatsToHalf(rounded.data(), static_cast<int64_t>(rounded.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      const uint16_t want = FloatToHalfBits(in[i]);
      if (std::isnan(in[i])) {
        EXPECT_TRUE(std::isnan(HalfBitsToFloat(halves[i])));
        EXPECT_TRUE(std::isnan(rounded[i]));
        continue;
      }
      ASSERT_EQ(halves[i], want) << in[i];
      ASSERT_EQ(Bits(rounded[i]), Bits(HalfBitsToFloat(want))) << in[i];
    }
  }
}

MagnitudeRange PlainMagnitudes(const std::vector<float>& v, size_t begin, size_t end) {
  MagnitudeRange r;
  float least = std::numeric_limits<float>::infinity();
  for (size_t i = begin; i < end; ++i) {
    if (std::isnan(v[i])) {
      r.nan = true;
      continue;
    }
    r.largest = std::max(r.largest, std::fabs(v[i]));
    if (v[i] != 0) least = std::min(least, std::fabs(v[i]));
    if (v[i] == 0) r.zero = true;
  }
  r.smallest_nonzero = r.largest > 0 ? least : 0;
  return r;
}

TEST(Float16Bulk, FloatMagnitudesMatchesAPlainLoop) {
  std::vector<float> v = TrickyFloats(200, 9);
  // Every window, so that each special value lands in the vector loop and in the tail.
  for (size_t begin = 0; begin < v.size(); begin += 7) {
    for (size_t len : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{23}}) {
      const size_t end = std::min(v.size(), begin + len);
      const MagnitudeRange want = PlainMagnitudes(v, begin, end);
      const MagnitudeRange got =
          FloatMagnitudes(v.data() + begin, static_cast<int64_t>(end - begin));
      ASSERT_EQ(got.nan, want.nan) << begin << "+" << len;
      ASSERT_EQ(got.largest, want.largest) << begin << "+" << len;
      ASSERT_EQ(got.smallest_nonzero, want.smallest_nonzero) << begin << "+" << len;
      ASSERT_EQ(got.zero, want.zero) << begin << "+" << len;
    }
  }
}

TEST(Float16Bulk, FloatMagnitudesOfZerosAndOfNaNs) {
  const std::vector<float> zeros(19, -0.0f);
  MagnitudeRange r = FloatMagnitudes(zeros.data(), 19);
  EXPECT_EQ(r.largest, 0.0f);
  EXPECT_EQ(r.smallest_nonzero, 0.0f);
  EXPECT_TRUE(r.zero);
  EXPECT_FALSE(r.nan);
  const std::vector<float> nans(17, std::numeric_limits<float>::quiet_NaN());
  r = FloatMagnitudes(nans.data(), 17);
  EXPECT_TRUE(r.nan);
  EXPECT_EQ(r.largest, 0.0f);
  std::vector<float> mixed(16, 3.0f);
  mixed[3] = std::numeric_limits<float>::quiet_NaN();
  mixed[12] = -70000.0f;
  r = FloatMagnitudes(mixed.data(), 16);
  EXPECT_TRUE(r.nan);
  EXPECT_EQ(r.largest, 70000.0f);
  EXPECT_EQ(r.smallest_nonzero, 3.0f);
}

}  // namespace
}  // namespace ovfix
