// bfloat16 rounding written out for tests, independently of ir/float16.h, so that a test of
// the executor or of the bfloat16 island policy does not check ir/float16.h against itself.
#pragma once

#include <cstdint>
#include <cstring>

namespace ovfix::test_support {

// Round to nearest even on the 16 bits bfloat16 drops (finite inputs).
inline float RoundToBfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t upper = u >> 16;
  const uint32_t lower = u & 0xffffu;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u) != 0)) ++upper;
  u = upper << 16;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace ovfix::test_support
