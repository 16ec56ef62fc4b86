#include "exec/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ovfix::exec {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool IsExactType(DataType type) { return !IsFloatingPoint(type); }

}  // namespace

Comparison CompareTensors(const Tensor& actual, const Tensor& expected,
                          const Tolerance& tolerance) {
  Comparison c;
  if (actual.type() != expected.type() || actual.dims() != expected.dims()) {
    c.ok = false;
    c.message =
        absl::StrCat("got ", DescribeTensor(actual), ", expected ", DescribeTensor(expected));
    return c;
  }
  const int64_t n = expected.numel();
  int64_t first_bad = -1;
  if (expected.type() == DataType::kString) {
    for (int64_t i = 0; i < n; ++i) {
      if (actual.strings()[i] != expected.strings()[i]) {
        ++c.mismatches;
        if (first_bad < 0) first_bad = i;
      }
    }
    if (first_bad >= 0) {
      c.ok = false;
      c.message = absl::StrCat(c.mismatches, " of ", n, " strings differ, first at ", first_bad,
                               ": \"", actual.strings()[first_bad], "\" vs \"",
                               expected.strings()[first_bad], "\"");
    }
    return c;
  }
  if (IsExactType(expected.type())) {
    const size_t element = ElementSize(expected.type());
    const auto* a = static_cast<const unsigned char*>(actual.raw());
    const auto* e = static_cast<const unsigned char*>(expected.raw());
    for (int64_t i = 0; i < n; ++i) {
      const double av = actual.GetAsDouble(i), ev = expected.GetAsDouble(i);
      if (std::memcmp(a + i * element, e + i * element, element) != 0) {
        ++c.mismatches;
        if (first_bad < 0) first_bad = i;
        c.max_abs_error = std::max(c.max_abs_error, std::fabs(av - ev));
      }
      if (i == 0 || ev < c.expected_min) c.expected_min = ev;
      if (i == 0 || ev > c.expected_max) c.expected_max = ev;
    }
    if (first_bad >= 0) {
      c.ok = false;
      c.message =
          absl::StrCat(c.mismatches, " of ", n, " elements differ, first at ", first_bad, ": ",
                       actual.GetAsInt64(first_bad), " vs ", expected.GetAsInt64(first_bad));
    }
    return c;
  }
  bool have_range = false;
  for (int64_t i = 0; i < n; ++i) {
    const double av = actual.GetAsDouble(i), ev = expected.GetAsDouble(i);
    bool good;
    if (std::isfinite(ev) && std::isfinite(av)) {
      const double diff = std::fabs(av - ev);
      c.max_abs_error = std::max(c.max_abs_error, diff);
      if (ev != 0) c.max_rel_error = std::max(c.max_rel_error, diff / std::fabs(ev));
      good = diff <= tolerance.atol + tolerance.rtol * std::fabs(ev);
    } else {
      good = (std::isnan(av) && std::isnan(ev)) || av == ev;
      if (!good) ++c.non_finite_differences;
    }
    if (std::isfinite(ev)) {
      if (!have_range || ev < c.expected_min) c.expected_min = ev;
      if (!have_range || ev > c.expected_max) c.expected_max = ev;
      have_range = true;
    }
    if (!good) {
      ++c.mismatches;
      if (first_bad < 0) first_bad = i;
    }
  }
  if (first_bad >= 0) {
    c.ok = false;
    c.message = absl::StrFormat("%d of %d elements differ, first at %d: %g vs %g (%s)",
                                c.mismatches, n, first_bad, actual.GetAsDouble(first_bad),
                                expected.GetAsDouble(first_bad), DescribeComparison(c));
  }
  return c;
}

std::string DescribeComparison(const Comparison& c) {
  std::string s =
      absl::StrFormat("max abs error %.3g, max rel error %.3g", c.max_abs_error, c.max_rel_error);
  if (c.mismatches > 0) absl::StrAppend(&s, ", ", c.mismatches, " mismatches");
  if (c.non_finite_differences > 0) {
    absl::StrAppend(&s, ", ", c.non_finite_differences, " non-finite differences");
  }
  return s;
}

double RelativeError(const Tensor& actual, const Tensor& expected, double resolution) {
  if (actual.dims() != expected.dims()) return kInfinity;
  const bool floats = IsFloatingPoint(expected.type()) || IsFloatingPoint(actual.type());
  if (!floats) {
    const int64_t n = expected.numel();
    for (int64_t i = 0; i < n; ++i) {
      if (actual.GetAsDouble(i) != expected.GetAsDouble(i)) return kInfinity;
    }
    return 0;
  }
  // Compare in float32 (the types validation sees are float, float16 or double).
  const Tensor a =
      actual.type() == DataType::kFloat ? actual : ConvertTensor(actual, DataType::kFloat);
  const Tensor e =
      expected.type() == DataType::kFloat ? expected : ConvertTensor(expected, DataType::kFloat);
  double lo = kInfinity, hi = -kInfinity, largest = 0, worst = 0;
  const float* pa = a.data<float>();
  const float* pe = e.data<float>();
  const int64_t n = e.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double x = pe[i];
    const double y = pa[i];
    if (!std::isfinite(x) || !std::isfinite(y)) {
      const bool same = (std::isnan(x) && std::isnan(y)) || x == y;
      if (!same) return kInfinity;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    largest = std::max(largest, std::abs(x));
    worst = std::max(worst, std::abs(y - x));
  }
  const double range = hi > lo ? hi - lo : 0;
  const double scale =
      std::max(range > 0 ? range : (largest > 0 ? largest : 1), resolution * largest);
  return worst / scale;
}

}  // namespace ovfix::exec
