// The vectorized erf and exp (exec/cpu/vector_math.h) against double-precision libm, for
// every instruction set this CPU runs: within a few units in the last place everywhere,
// special values exact. GELU and the LayerNormalization row against double-precision hand
// loops: within 1e-6 of the output's range (issue 41's contract for changed arithmetic).
#include "exec/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/gemm.h"

namespace ovfix::exec {
namespace {

class VectorMath : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(SelectGemmKernelForTesting(GetParam())); }
  void TearDown() override { SelectGemmKernelForTesting(AvailableGemmKernels().front()); }
};

// Distance from the double reference in units of the float's last place at the reference.
double UlpError(float got, double want) {
  const float rounded = static_cast<float>(want);
  double ulp = std::nextafter(rounded, std::numeric_limits<float>::infinity()) - rounded;
  if (ulp == 0 || std::isinf(ulp)) ulp = std::numeric_limits<float>::denorm_min();
  return std::abs(got - want) / ulp;
}

// Every 97th float of [lo, hi) (positive bounds), with either sign when `both_signs`.
std::vector<float> Sample(float lo, float hi, bool both_signs) {
  uint32_t first, last;
  std::memcpy(&first, &lo, 4);
  std::memcpy(&last, &hi, 4);
  std::vector<float> values;
  for (uint32_t bits = first; bits < last; bits += 97) {
    float v;
    std::memcpy(&v, &bits, 4);
    values.push_back(v);
    if (both_signs) values.push_back(-v);
  }
  return values;
}

TEST_P(VectorMath, ErfWithinThreeUlp) {
  const std::vector<float> x = Sample(1e-30f, 6.0f, true);
  std::vector<float> y(x.size());
  ErfFloats(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_LE(UlpError(y[i], std::erf(static_cast<double>(x[i]))), 3.0) << "erf(" << x[i] << ")";
  }
}

TEST_P(VectorMath, ExpWithinTwoUlp) {
  std::vector<float> x = Sample(1e-30f, 110.0f, true);
  std::vector<float> y(x.size());
  ExpFloats(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    if (want > std::numeric_limits<float>::max()) {
      ASSERT_EQ(y[i], std::numeric_limits<float>::infinity()) << "exp(" << x[i] << ")";
    } else {
      ASSERT_LE(UlpError(y[i], want), 2.0) << "exp(" << x[i] << ")";
    }
  }
}

TEST_P(VectorMath, SpecialValuesAndTails) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // 7 values: every tail length below a vector is taken by some prefix.
  const std::vector<float> x = {0.0f, -0.0f, inf, -inf, nan, 1.0f, -200.0f};
  for (size_t n = 1; n <= x.size(); ++n) {
    std::vector<float> erf(n), exp(n);
    ErfFloats(x.data(), erf.data(), n);
    ExpFloats(x.data(), exp.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const float want_erf = std::erf(x[i]), want_exp = std::exp(x[i]);
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(erf[i]) && std::isnan(exp[i]));
        continue;
      }
      EXPECT_EQ(erf[i], want_erf) << x[i];
      EXPECT_EQ(std::signbit(erf[i]), std::signbit(want_erf)) << x[i];
      if (std::isinf(want_exp) || want_exp == 0) {
        EXPECT_EQ(exp[i], want_exp) << x[i];
      } else {
        EXPECT_NEAR(exp[i], want_exp, 1e-7f * want_exp) << x[i];
      }
    }
  }
}

TEST_P(VectorMath, MaxAndShiftedExpSum) {
  std::vector<float> x;
  for (int i = 0; i < 37; ++i) x.push_back(std::sin(0.7f * i) * 5.0f);
  for (size_t n = 1; n <= x.size(); ++n) {
    float want_max = x[0];
    for (size_t i = 0; i < n; ++i) want_max = std::max(want_max, x[i]);
    ASSERT_EQ(MaxFloats(x.data(), n), want_max);
    std::vector<float> y(n);
    double want_sum = 0;
    for (size_t i = 0; i < n; ++i) want_sum += std::exp(static_cast<double>(x[i]) - want_max);
    EXPECT_NEAR(ExpShiftedSum(x.data(), want_max, y.data(), n), want_sum, 1e-6 * want_sum);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i], std::exp(static_cast<double>(x[i]) - want_max), 2e-7);
    }
    // In place: the same values and sum.
    std::vector<float> in_place(x.begin(), x.begin() + n);
    EXPECT_NEAR(ExpShiftedSum(in_place.data(), want_max, in_place.data(), n), want_sum,
                1e-6 * want_sum);
    EXPECT_EQ(in_place, y) << n;
    // The softmax's normalization: one rounding of the double product.
    const double factor = 1.0 / want_sum;
    std::vector<float> scaled = y;
    ScaleInDouble(scaled.data(), n, factor);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(scaled[i], static_cast<float>(static_cast<double>(y[i]) * factor)) << i;
    }
  }
  for (size_t at = 0; at < x.size(); ++at) {  // in a whole vector or in the tail
    std::vector<float> with_nan = x;
    with_nan[at] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(MaxFloats(with_nan.data(), with_nan.size()))) << at;
  }
}

// max want - min want.
double Range(const std::vector<double>& want) {
  return *std::max_element(want.begin(), want.end()) - *std::min_element(want.begin(), want.end());
}

// max |got - want| over `range` (the reference's range by default).
double ErrorOverRange(const std::vector<float>& got, const std::vector<double>& want,
                      double range = -1) {
  if (range < 0) range = Range(want);
  double error = 0;
  for (size_t i = 0; i < got.size(); ++i) error = std::max(error, std::abs(got[i] - want[i]));
  return range > 0 ? error / range : (error == 0 ? 0 : std::numeric_limits<double>::infinity());
}

TEST_P(VectorMath, GeluWithinMillionthOfRange) {
  // Every step of 1/1024 over [-12, 12], and the same over [-3, 3] (a smaller range, a tighter
  // bound); every length below a vector for the tail, and in place.
  for (const float bound : {12.0f, 3.0f}) {
    std::vector<float> x;
    for (int k = -1024 * static_cast<int>(bound); k <= 1024 * static_cast<int>(bound); ++k) {
      x.push_back(static_cast<float>(k) / 1024);
    }
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      want[i] = 0.5 * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0)));
    }
    for (const int64_t n : {int64_t{1}, int64_t{5}, int64_t{13}, static_cast<int64_t>(x.size())}) {
      std::vector<float> y(n);
      GeluFloats(x.data(), y.data(), n);
      EXPECT_LE(ErrorOverRange(y, want, Range(want)), 1e-6) << n << " over +-" << bound;
      // And per element: the erf's few units in the last place, scaled by x / 2, and roundings.
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(y[i], want[i], 2e-7 * (std::abs(x[i]) + std::abs(want[i]))) << x[i];
      }
    }
  }
  // Special values (-inf gives NaN, as x * 0.5 * (1 + erf) always has: inf * 0).
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> special = {inf, 0.0f, -1e-30f, 1e30f, -1e30f, 2.5f, -7.0f};
  const std::vector<float> want = {inf, 0.0f, -5e-31f, 1e30f, 0.0f, 2.4844757f, 0.0f};
  for (size_t n = 1; n <= special.size(); ++n) {
    std::vector<float> in_place(special.begin(), special.begin() + n);
    GeluFloats(in_place.data(), in_place.data(), n);
    for (size_t i = 0; i < n; ++i) {
      if (std::isinf(want[i])) {
        EXPECT_EQ(in_place[i], want[i]);
      } else {
        EXPECT_NEAR(in_place[i], want[i], 1e-6f) << special[i];
      }
    }
  }
  std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
  GeluFloats(nan.data(), nan.data(), 1);
  EXPECT_TRUE(std::isnan(nan[0]));
}

// The double-precision reference row: two passes for the statistics, every step in double.
LayerNormStatistics ReferenceLayerNorm(const float* x, int64_t n, const float* scale,
                                       const float* bias, double epsilon, double* y) {
  double mean = 0, variance = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) variance += (x[i] - mean) * (x[i] - mean);
  variance /= static_cast<double>(n);
  LayerNormStatistics stats{mean, 1 / std::sqrt(variance + epsilon)};
  for (int64_t i = 0; i < n; ++i) {
    y[i] = (x[i] - mean) * stats.inv_std * scale[i] + (bias != nullptr ? bias[i] : 0.0);
  }
  return stats;
}

TEST_P(VectorMath, LayerNormRowWithinMillionthOfRange) {
  struct Case {
    int64_t n;
    double mean, spread;  // x = mean + spread * N(0, 1)
    bool bias;
  };
  // Odd lengths (1, below a vector, a vector and a tail, long rows), a large mean (1e4 and 1e6
  // with unit noise: the variance's cancellation), a tiny spread, no bias.
  const Case cases[] = {{1, 0.5, 1, true},      {3, 0, 1, true},        {7, 1, 2, false},
                        {9, -3, 0.5, true},     {96, 0, 1, true},       {383, 1e4, 1, true},
                        {384, 1e4, 1, false},   {1000, 1e6, 3, true},   {4097, 1e4, 0.01, true},
                        {65537, -2e3, 1, true}, {17, 1e-3, 1e-4, true}, {768, 0, 1e3, true}};
  std::mt19937 random(41);
  for (const Case& c : cases) {
    std::normal_distribution<double> normal(0, 1);
    std::vector<float> x(c.n), scale(c.n), bias(c.n);
    for (int64_t i = 0; i < c.n; ++i) {
      x[i] = static_cast<float>(c.mean + c.spread * normal(random));
      scale[i] = static_cast<float>(1 + 0.5 * normal(random));
      bias[i] = static_cast<float>(0.1 * normal(random));
    }
    const float* b = c.bias ? bias.data() : nullptr;
    std::vector<double> want(c.n);
    const LayerNormStatistics expected =
        ReferenceLayerNorm(x.data(), c.n, scale.data(), b, 1e-5f, want.data());
    std::vector<float> y(c.n);
    const LayerNormStatistics got = LayerNormRow(x.data(), y.data(), c.n, scale.data(), b, 1e-5f);
    const std::string what = "n " + std::to_string(c.n) + " mean " + std::to_string(c.mean);
    EXPECT_LE(ErrorOverRange(y, want), 1e-6) << what;
    EXPECT_NEAR(got.mean, expected.mean, 1e-9 * std::abs(expected.mean) + 1e-12) << what;
    EXPECT_NEAR(got.inv_std, expected.inv_std, 1e-9 * expected.inv_std) << what;
    if (c.n > 1) {
      // Also within a few float roundings of each element (the range bound could hide a
      // systematic error in small outputs).
      for (int64_t i = 0; i < c.n; ++i) {
        ASSERT_NEAR(y[i], want[i], 1e-6 * (std::abs(want[i]) + 1)) << what << " element " << i;
      }
    }
    // In place: the same values.
    std::vector<float> in_place = x;
    LayerNormRow(in_place.data(), in_place.data(), c.n, scale.data(), b, 1e-5f);
    EXPECT_EQ(in_place, y) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Math, VectorMath, ::testing::ValuesIn(AvailableGemmKernels()));

}  // namespace
}  // namespace ovfix::exec
