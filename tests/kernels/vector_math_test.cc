// The vectorized erf and exp (exec/cpu/vector_math.h) against double-precision libm, for
// every instruction set this CPU runs: within a few units in the last place everywhere,
// special values exact.
#include "exec/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

INSTANTIATE_TEST_SUITE_P(Math, VectorMath, ::testing::ValuesIn(AvailableGemmKernels()));

}  // namespace
}  // namespace ovfix::exec
