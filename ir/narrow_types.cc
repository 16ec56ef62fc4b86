#include "ir/narrow_types.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace ovfix {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A sign-exponent-mantissa float format of at most 8 bits.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_inf;            // e5m2: the all-ones exponent with a zero mantissa
  bool ieee_nan;           // e5m2: every all-ones exponent with a non-zero mantissa is NaN
  bool nan_all_ones;       // e4m3fn: only the all-ones code (either sign) is NaN
  bool nan_negative_zero;  // the fnuz formats: 0x80 is NaN, and there is no -0
  bool has_nan;
};

const Format* FormatOf(DataType type) {
  static constexpr Format kE4M3FN{4, 3, 7, false, false, true, false, true};
  static constexpr Format kE4M3FNUZ{4, 3, 8, false, false, false, true, true};
  static constexpr Format kE5M2{5, 2, 15, true, true, false, false, true};
  static constexpr Format kE5M2FNUZ{5, 2, 16, false, false, false, true, true};
  static constexpr Format kE2M1{2, 1, 1, false, false, false, false, false};
  switch (type) {
    case DataType::kFloat8E4M3FN:
      return &kE4M3FN;
    case DataType::kFloat8E4M3FNUZ:
      return &kE4M3FNUZ;
    case DataType::kFloat8E5M2:
      return &kE5M2;
    case DataType::kFloat8E5M2FNUZ:
      return &kE5M2FNUZ;
    case DataType::kFloat4E2M1:
      return &kE2M1;
    default:
      return nullptr;
  }
}

int Bits(const Format& f) { return 1 + f.exponent_bits + f.mantissa_bits; }

// The magnitude of a code without its sign bit (NaN and infinity as the format says).
float Magnitude(const Format& f, uint32_t code) {
  const uint32_t mantissa = code & ((1u << f.mantissa_bits) - 1);
  const uint32_t exponent = code >> f.mantissa_bits;
  const uint32_t all_ones = (1u << f.exponent_bits) - 1;
  if (f.nan_all_ones && exponent == all_ones && mantissa == (1u << f.mantissa_bits) - 1) {
    return kNaN;
  }
  if (f.ieee_nan && exponent == all_ones) return mantissa == 0 ? kInf : kNaN;
  const float scale = static_cast<float>(1u << f.mantissa_bits);
  if (exponent == 0) return std::ldexp(static_cast<float>(mantissa) / scale, 1 - f.bias);
  return std::ldexp(1.0f + static_cast<float>(mantissa) / scale,
                    static_cast<int>(exponent) - f.bias);
}

// The largest finite magnitude's code (sign bit clear).
uint32_t MaxFiniteCode(const Format& f) {
  const uint32_t top = (1u << (Bits(f) - 1)) - 1;  // every bit below the sign set
  if (f.nan_all_ones) return top - 1;
  if (f.ieee_nan) return top - (1u << f.mantissa_bits);  // below the all-ones exponent
  return top;
}

uint8_t NaNCode(const Format& f, bool negative) {
  if (f.nan_negative_zero) return 0x80;
  const uint32_t top = (1u << (Bits(f) - 1)) - 1;
  return static_cast<uint8_t>(top | (negative ? 1u << (Bits(f) - 1) : 0));
}

uint8_t EncodeFormat(const Format& f, float value, bool saturate) {
  const uint32_t sign_bit = 1u << (Bits(f) - 1);
  const bool negative = std::signbit(value);
  const uint32_t sign = negative ? sign_bit : 0;
  const uint32_t max_code = MaxFiniteCode(f);
  const float max_value = Magnitude(f, max_code);
  if (std::isnan(value)) return f.has_nan ? NaNCode(f, negative) : static_cast<uint8_t>(max_code);
  const float magnitude = std::fabs(value);
  // What an out-of-range value becomes: the largest finite value, or infinity/NaN.
  auto overflow = [&]() -> uint8_t {
    if (saturate || !f.has_nan) return static_cast<uint8_t>(sign | max_code);
    if (f.has_inf) return static_cast<uint8_t>(sign | (max_code + 1));
    return NaNCode(f, negative);
  };
  if (std::isinf(magnitude)) return overflow();
  // Round to nearest even over the codes 0..max_code, and one code past the largest (its
  // value the next step of the same spacing), which stands for "out of range".
  const float beyond = max_value + (max_value - Magnitude(f, max_code - 1));
  uint32_t low = 0, high = max_code + 1;  // the answer is in [low, high]
  auto value_of = [&](uint32_t code) { return code > max_code ? beyond : Magnitude(f, code); };
  if (magnitude >= beyond) return overflow();
  while (high - low > 1) {
    const uint32_t mid = (low + high) / 2;
    if (value_of(mid) <= magnitude) {
      low = mid;
    } else {
      high = mid;
    }
  }
  uint32_t code = low;
  if (value_of(low) != magnitude) {
    const float below = magnitude - value_of(low), above = value_of(high) - magnitude;
    if (above < below || (above == below && (high & 1u) == 0)) code = high;
  }
  if (code > max_code) return overflow();
  if (code == 0 && f.nan_negative_zero) return 0;  // no -0
  return static_cast<uint8_t>(sign | code);
}

uint8_t EncodeE8M0(float value, bool saturate, E8M0Rounding rounding) {
  // 2^(code - 127) for codes 0..254; 255 is NaN.
  if (std::isnan(value)) return 0xFF;
  const float magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return saturate ? 0xFE : 0xFF;
  if (magnitude == 0.0f) return saturate ? 0x00 : 0xFF;
  int exponent = 0;
  const float fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction * 2^exponent
  // magnitude = 2^(exponent - 1) * (2 * fraction), 2 * fraction in [1, 2).
  int e = exponent - 1;
  const float mantissa = 2.0f * fraction;
  if (mantissa > 1.0f) {
    switch (rounding) {
      case E8M0Rounding::kUp:
        ++e;
        break;
      case E8M0Rounding::kDown:
        break;
      case E8M0Rounding::kNearest:
        if (mantissa >= 1.5f) ++e;
        break;
    }
  }
  const int code = e + 127;
  if (code > 254) return saturate ? 0xFE : 0xFF;
  if (code < 0) return saturate ? 0x00 : 0xFF;
  return static_cast<uint8_t>(code);
}

}  // namespace

float NarrowFloatToFloat(DataType type, uint8_t code) {
  if (type == DataType::kFloat8E8M0) {
    return code == 0xFF ? kNaN : std::ldexp(1.0f, static_cast<int>(code) - 127);
  }
  const Format* f = FormatOf(type);
  if (f == nullptr) return kNaN;
  const uint32_t sign_bit = 1u << (Bits(*f) - 1);
  const uint32_t bits = code & ((1u << Bits(*f)) - 1);
  if (f->nan_negative_zero && bits == 0x80) return kNaN;
  const float magnitude = Magnitude(*f, bits & (sign_bit - 1));
  return (bits & sign_bit) != 0 ? -magnitude : magnitude;
}

uint8_t FloatToNarrowFloat(DataType type, float value, bool saturate, E8M0Rounding e8m0) {
  if (type == DataType::kFloat8E8M0) return EncodeE8M0(value, saturate, e8m0);
  const Format* f = FormatOf(type);
  return f == nullptr ? 0 : EncodeFormat(*f, value, saturate);
}

int32_t PackedIntegerMin(DataType type) {
  switch (type) {
    case DataType::kInt4:
      return -8;
    case DataType::kInt2:
      return -2;
    default:
      return 0;
  }
}

int32_t PackedIntegerMax(DataType type) {
  switch (type) {
    case DataType::kInt4:
      return 7;
    case DataType::kUint4:
    case DataType::kFloat4E2M1:
      return 15;
    case DataType::kInt2:
      return 1;
    case DataType::kUint2:
      return 3;
    default:
      return 0;
  }
}

int32_t GetPackedElement(DataType type, const void* data, int64_t i) {
  const int bits = BitsPerElement(type);
  const int per_byte = 8 / bits;
  const uint8_t byte = static_cast<const uint8_t*>(data)[i / per_byte];
  const uint32_t mask = (1u << bits) - 1;
  const int32_t field = static_cast<int32_t>((byte >> ((i % per_byte) * bits)) & mask);
  const bool is_signed = type == DataType::kInt4 || type == DataType::kInt2;
  if (is_signed && (field & (1 << (bits - 1))) != 0) return field - (1 << bits);
  return field;
}

void SetPackedElement(DataType type, void* data, int64_t i, int32_t value) {
  const int bits = BitsPerElement(type);
  const int per_byte = 8 / bits;
  if (type != DataType::kFloat4E2M1) {
    value = std::clamp(value, PackedIntegerMin(type), PackedIntegerMax(type));
  }
  const uint32_t mask = (1u << bits) - 1;
  const int shift = static_cast<int>(i % per_byte) * bits;
  uint8_t& byte = static_cast<uint8_t*>(data)[i / per_byte];
  byte = static_cast<uint8_t>((byte & ~(mask << shift)) |
                              ((static_cast<uint32_t>(value) & mask) << shift));
}

}  // namespace ovfix
