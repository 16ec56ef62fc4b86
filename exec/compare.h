// Comparing a computed tensor with a reference (conformance tests, `ovfix run --test-data`,
// model tests): numpy.allclose semantics, |actual - expected| <= atol + rtol * |expected|,
// NaN equal to NaN, infinities equal when of the same sign; integers, bools and strings exact.
// And the error metric of validation and `ovfix compare`: the largest difference relative to
// the reference's range (RelativeError).
#pragma once

#include <cstdint>
#include <string>

#include "ir/tensor.h"

namespace ovfix::exec {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

struct Comparison {
  bool ok = true;
  // Why not, in one line (type or shape mismatch, or the first differing element).
  std::string message;
  int64_t mismatches = 0;                     // elements outside the tolerance
  double max_abs_error = 0;                   // over elements where both are finite
  double max_rel_error = 0;                   // |a - e| / |e| over finite elements with e != 0
  double expected_min = 0, expected_max = 0;  // over finite expected elements
  int64_t non_finite_differences = 0;         // NaN/inf in one but not the same in the other
};

Comparison CompareTensors(const Tensor& actual, const Tensor& expected,
                          const Tolerance& tolerance = {});

// One line: "max abs error 1.2e-06, max rel error 3.4e-05" (+ ", N mismatches" when some).
std::string DescribeComparison(const Comparison& c);

// The largest |actual - expected| relative to the range of `expected` (max - min over its
// finite elements; its largest magnitude when the range is 0; 1 when all are 0), and never
// to less than `resolution` times its largest magnitude: an output that hardly varies (a
// saturated tanh, all 0.99999..1) is measured against what the precision at hand can tell
// apart, not against a range below it. Integer and bool tensors compare exactly (0 or
// infinity); a NaN/inf in one but not the other, or a shape mismatch, is infinity.
double RelativeError(const Tensor& actual, const Tensor& expected, double resolution = 0);

// The resolution of comparisons that involve float16: its machine epsilon (2^-10).
constexpr double kFloat16Resolution = 0x1.0p-10;

}  // namespace ovfix::exec
