#include "ir/float16.h"

#include <immintrin.h>

namespace ovfix {
namespace {

bool HasF16c() {
  static const bool f16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return f16c;
}

__attribute__((target("f16c,avx"))) void HalvesToFloatsF16c(const uint16_t* in, float* out,
                                                            int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = HalfBitsToFloat(in[i]);
}

__attribute__((target("f16c,avx"))) void FloatsToHalvesF16c(const float* in, uint16_t* out,
                                                            int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = FloatToHalfBits(in[i]);
}

__attribute__((target("f16c,avx"))) void RoundFloatsToHalfF16c(float* data, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(data + i);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
  }
  for (; i < n; ++i) data[i] = RoundToHalf(data[i]);
}

}  // namespace

void HalvesToFloats(const uint16_t* in, float* out, int64_t n) {
  if (HasF16c()) return HalvesToFloatsF16c(in, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = HalfBitsToFloat(in[i]);
}

void FloatsToHalves(const float* in, uint16_t* out, int64_t n) {
  if (HasF16c()) return FloatsToHalvesF16c(in, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = FloatToHalfBits(in[i]);
}

void RoundFloatsToHalf(float* data, int64_t n) {
  if (HasF16c()) return RoundFloatsToHalfF16c(data, n);
  for (int64_t i = 0; i < n; ++i) data[i] = RoundToHalf(data[i]);
}

}  // namespace ovfix
