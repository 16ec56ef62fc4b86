// A value's dims for counting work: an initializer's dims, or its shape with each dim that is
// not a known number (a free batch) counted as 1. Cost reports and the tests that check them
// count multiply-adds on these.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/value.h"

namespace ovfix {

// nullopt for a null value or one of unknown rank.
inline std::optional<std::vector<int64_t>> NominalDims(const Value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_initializer()) return v->tensor().dims();
  const std::optional<std::vector<Dim>> shape = v->shape();
  if (!shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const Dim& d : *shape) dims.push_back(d.known() ? d.value : 1);
  return dims;
}

}  // namespace ovfix
