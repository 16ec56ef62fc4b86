#include "ir/float16.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace ovfix {
namespace {

bool HasF16c() {
  // cpuid rather than __builtin_cpu_supports("f16c"), which clang 14 (the fuzz build) lacks.
  static const bool f16c = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 &&
           (ecx & bit_F16C) != 0;
  }();
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

void AccumulateMagnitudes(const float* data, int64_t n, MagnitudeRange& r, float& least) {
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(data[i]);
    if (std::isnan(a)) {
      r.nan = true;
      continue;
    }
    r.largest = std::max(r.largest, a);
    if (a > 0) least = std::min(least, a);
    if (a == 0) r.zero = true;
  }
}

// Eight lanes at a time; NaN lanes are tracked apart (max/min would drop them).
__attribute__((target("avx"))) void AccumulateMagnitudesAvx(const float* data, int64_t n,
                                                            MagnitudeRange& r, float& least) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 inf = _mm256_set1_ps(INFINITY);
  const __m256 zero = _mm256_setzero_ps();
  __m256 largest = zero, smallest = inf, nan = zero, zeros = zero;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(data + i));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    // max/min return their second operand when one is NaN: the accumulator.
    largest = _mm256_max_ps(a, largest);
    const __m256 is_zero = _mm256_cmp_ps(a, zero, _CMP_EQ_OQ);
    zeros = _mm256_or_ps(zeros, is_zero);
    const __m256 zeros_as_inf = _mm256_and_ps(is_zero, inf);
    smallest = _mm256_min_ps(_mm256_or_ps(a, zeros_as_inf), smallest);
  }
  alignas(32) float big[8], small[8];
  _mm256_store_ps(big, largest);
  _mm256_store_ps(small, smallest);
  for (int k = 0; k < 8; ++k) {
    r.largest = std::max(r.largest, big[k]);
    least = std::min(least, small[k]);
  }
  r.nan = r.nan || _mm256_movemask_ps(nan) != 0;
  r.zero = r.zero || _mm256_movemask_ps(zeros) != 0;
  AccumulateMagnitudes(data + i, n - i, r, least);
}

}  // namespace

MagnitudeRange FloatMagnitudes(const float* data, int64_t n) {
  MagnitudeRange r;
  float least = INFINITY;
  if (__builtin_cpu_supports("avx")) {
    AccumulateMagnitudesAvx(data, n, r, least);
  } else {
    AccumulateMagnitudes(data, n, r, least);
  }
  r.smallest_nonzero = r.largest > 0 ? least : 0;
  return r;
}

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
