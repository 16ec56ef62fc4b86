// IEEE 754 binary16 <-> binary32 conversion, round to nearest even, bit exact.
// fp16-storage emulation rounds every float tensor through these.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace ovfix {

inline float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf / NaN (payload kept)
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal half: normalize
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t FloatToHalfBits(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (abs >= 0x38800000u) {                       // normal half
    const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
  }
  if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal
  // Subnormal half: shift the full mantissa, round to nearest even.
  const uint32_t exponent = abs >> 23;
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  uint32_t value = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (value & 1u))) ++value;
  return sign | static_cast<uint16_t>(value);
}

inline float RoundToHalf(float f) { return HalfBitsToFloat(FloatToHalfBits(f)); }

inline float Bfloat16BitsToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  return std::bit_cast<float>(bits);
}

inline uint16_t FloatToBfloat16Bits(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace ovfix

namespace ovfix {

// Bulk conversions, with the F16C instructions where the CPU has them (same IEEE round to
// nearest even as the scalar functions above, several times faster on large tensors).
void HalvesToFloats(const uint16_t* in, float* out, int64_t n);
void FloatsToHalves(const float* in, uint16_t* out, int64_t n);
// Each float rounded to the nearest half value (what fp16 storage keeps), in place.
void RoundFloatsToHalf(float* data, int64_t n);

// The magnitudes of n floats: the largest |x| and the smallest non-zero |x| (0 when all are
// 0), NaNs aside; `nan` says whether there was one. What deciding fp16 safety looks at.
struct MagnitudeRange {
  float largest = 0;
  float smallest_nonzero = 0;
  bool zero = false;  // some element is +0 or -0
  bool nan = false;
};
MagnitudeRange FloatMagnitudes(const float* data, int64_t n);

}  // namespace ovfix
