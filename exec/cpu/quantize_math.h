// The arithmetic of linear quantization, as onnxruntime does it (the peer `compare` and the
// tests check against): scale multipliers in float, round half to even, saturate.
#pragma once

#include <cstdint>
#include <limits>

namespace ovfix::exec {

// The requantization multiplier of QLinearConv / QLinearMatMul, in float:
// (a_scale * b_scale) / y_scale.
inline float RequantizeMultiplier(float a_scale, float b_scale, float y_scale) {
  return a_scale * b_scale / y_scale;
}

// saturate(round_half_even(v) + zero_point) into T (uint8 or int8); NaN gives T's lowest.
// v is clamped to the representable range first (the same thing, as the bounds are whole),
// which lets 1.5 * 2^23 do the rounding: adding it leaves no fraction bits, and the default
// rounding mode rounds half to even. Plain float operations, so the loops vectorize.
template <typename T>
inline T Quantize(float v, int32_t zero_point) {
  const float low = static_cast<float>(int32_t{std::numeric_limits<T>::min()} - zero_point);
  const float high = static_cast<float>(int32_t{std::numeric_limits<T>::max()} - zero_point);
  v = v > low ? v : low;
  v = v < high ? v : high;
  constexpr float kRounder = 12582912.0f;  // 1.5 * 2^23
  const float rounded = (v + kRounder) - kRounder;
  return static_cast<T>(static_cast<int32_t>(rounded) + zero_point);
}

}  // namespace ovfix::exec
