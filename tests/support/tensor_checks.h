// Checks on tensors that several tests make.
#pragma once

#include <cmath>

#include "ir/tensor.h"

namespace ovfix::test_support {

// Whether every element is finite (no NaN, no inf).
inline bool AllFinite(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(t.GetAsDouble(i))) return false;
  }
  return true;
}

}  // namespace ovfix::test_support
