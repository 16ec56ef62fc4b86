// Comparing a computed tensor with a reference (conformance tests, `ovfix run --test-data`,
// model tests): numpy.allclose semantics, |actual - expected| <= atol + rtol * |expected|,
// NaN equal to NaN, infinities equal when of the same sign; integers, bools and strings exact.
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
  int64_t mismatches = 0;     // elements outside the tolerance
  double max_abs_error = 0;   // over elements where both are finite
  double max_rel_error = 0;   // |a - e| / |e| over finite elements with e != 0
  double expected_min = 0, expected_max = 0;  // over finite expected elements
  int64_t non_finite_differences = 0;  // NaN/inf in one but not the same in the other
};

Comparison CompareTensors(const Tensor& actual, const Tensor& expected,
                          const Tolerance& tolerance = {});

// One line: "max abs error 1.2e-06, max rel error 3.4e-05" (+ ", N mismatches" when some).
std::string DescribeComparison(const Comparison& c);

}  // namespace ovfix::exec
