#include "exec/cpu/resize_bilinear.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ovfix::exec {
namespace {

float OriginalCoordinate(BilinearCoordinates mode, int64_t position, float scale, int64_t in_size,
                         int64_t out_size) {
  const float x = static_cast<float>(position);
  switch (mode) {
    case BilinearCoordinates::kHalfPixel:
      return (x + 0.5f) / scale - 0.5f;
    case BilinearCoordinates::kPytorchHalfPixel:
      return out_size > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case BilinearCoordinates::kAlignCorners:
      return out_size == 1 ? 0.0f
                           : x * static_cast<float>(in_size - 1) / static_cast<float>(out_size - 1);
    case BilinearCoordinates::kAsymmetric:
      return x / scale;
  }
  return 0.0f;
}

// The first `count` floats from `row` (at most 16; the rest zero).
__attribute__((target("avx512f"), always_inline)) inline __m512 LoadFirst(const float* row,
                                                                          int64_t count) {
  if (count <= 0) return _mm512_setzero_ps();
  return _mm512_maskz_loadu_ps(count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << count) - 1), row);
}

// One output row from input rows row1 and row2 (weights dy1, dy2) as the scalar loop in
// ResizeBilinearFloat forms it, 16 outputs at a time: the same products and sums in the same
// order, each rounded to float (the empty asm keeps g++ from contracting them into
// multiply-adds). When the 16 outputs read fewer than 32 consecutive inputs (upsampling,
// mild downsampling) the inputs come from two loads and a permute, else from gathers.
__attribute__((target("avx512f"))) void BilinearRowAvx512(const float* row1, const float* row2,
                                                          float dy1, float dy2,
                                                          const BilinearTaps& xs, int64_t in_width,
                                                          int64_t width, float* dst) {
  const __m512 vdy1 = _mm512_set1_ps(dy1), vdy2 = _mm512_set1_ps(dy2);
  for (int64_t x = 0; x < width; x += 16) {
    const int64_t left = width - x;
    const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __m512i x1 = _mm512_maskz_loadu_epi32(mask, xs.first32.data() + x);
    const __m512i x2 = _mm512_maskz_loadu_epi32(mask, xs.second32.data() + x);
    const __m512 dx1 = _mm512_maskz_loadu_ps(mask, xs.d1.data() + x);
    const __m512 dx2 = _mm512_maskz_loadu_ps(mask, xs.d2.data() + x);
    // The inputs the 16 outputs read: [lo, hi] when the taps never go back.
    const int32_t lo = xs.first32[x];
    const int32_t hi = xs.second32[x + std::min<int64_t>(left, 16) - 1];
    __m512 x11, x21, x12, x22;
    if (xs.ascending && hi - lo < 32) {
      const __m512i base = _mm512_set1_epi32(lo);
      const __m512i i1 = _mm512_sub_epi32(x1, base), i2 = _mm512_sub_epi32(x2, base);
      const int64_t count = in_width - lo;
      const __m512 a0 = LoadFirst(row1 + lo, count), a1 = LoadFirst(row1 + lo + 16, count - 16);
      const __m512 b0 = LoadFirst(row2 + lo, count), b1 = LoadFirst(row2 + lo + 16, count - 16);
      x11 = _mm512_permutex2var_ps(a0, i1, a1);
      x21 = _mm512_permutex2var_ps(a0, i2, a1);
      x12 = _mm512_permutex2var_ps(b0, i1, b1);
      x22 = _mm512_permutex2var_ps(b0, i2, b1);
    } else {
      const __m512 zero = _mm512_setzero_ps();
      x11 = _mm512_mask_i32gather_ps(zero, mask, x1, row1, 4);
      x21 = _mm512_mask_i32gather_ps(zero, mask, x2, row1, 4);
      x12 = _mm512_mask_i32gather_ps(zero, mask, x1, row2, 4);
      x22 = _mm512_mask_i32gather_ps(zero, mask, x2, row2, 4);
    }
    __m512 t11 = _mm512_mul_ps(_mm512_mul_ps(dx2, vdy2), x11);
    __m512 t21 = _mm512_mul_ps(_mm512_mul_ps(dx1, vdy2), x21);
    __m512 t12 = _mm512_mul_ps(_mm512_mul_ps(dx2, vdy1), x12);
    __m512 t22 = _mm512_mul_ps(_mm512_mul_ps(dx1, vdy1), x22);
    __asm__("" : "+v"(t11), "+v"(t21), "+v"(t12), "+v"(t22));
    __m512 sum = _mm512_add_ps(t11, t21);
    sum = _mm512_add_ps(sum, t12);
    sum = _mm512_add_ps(sum, t22);
    _mm512_mask_storeu_ps(dst + x, mask, sum);
  }
}

}  // namespace

BilinearTaps MakeBilinearTaps(BilinearCoordinates mode, int64_t in_size, int64_t out_size,
                              float scale) {
  BilinearTaps t;
  t.first.resize(out_size);
  t.second.resize(out_size);
  t.d1.resize(out_size);
  t.d2.resize(out_size);
  const float last = static_cast<float>(in_size - 1);
  for (int64_t j = 0; j < out_size; ++j) {
    const float x = std::clamp(OriginalCoordinate(mode, j, scale, in_size, out_size), 0.0f, last);
    const int64_t first = std::min(static_cast<int64_t>(x), in_size - 1);
    const int64_t second = std::min(first + 1, in_size - 1);
    t.first[j] = first;
    t.second[j] = second;
    // At the last position both taps are the same element: half of it twice.
    t.d1[j] = first == second ? 0.5f : std::fabs(x - static_cast<float>(first));
    t.d2[j] = first == second ? 0.5f : std::fabs(x - static_cast<float>(second));
  }
  for (int64_t j = 1; j < out_size; ++j) {
    if (t.first[j] < t.first[j - 1] || t.second[j] < t.second[j - 1]) t.ascending = false;
  }
  t.first32.assign(t.first.begin(), t.first.end());
  t.second32.assign(t.second.begin(), t.second.end());
  return t;
}

void ResizeBilinearFloat(const float* in, float* out, const BilinearShape& s,
                         BilinearCoordinates coordinates, ThreadPool* pool) {
  const BilinearTaps ys = MakeBilinearTaps(coordinates, s.in_height, s.out_height, s.height_scale);
  const BilinearTaps xs = MakeBilinearTaps(coordinates, s.in_width, s.out_width, s.width_scale);
  const int64_t rows = s.planes * s.out_height;
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool vector = avx512 && s.in_width <= (int64_t{1} << 31) / sizeof(float);
  ParallelFor(pool, rows, std::max<int64_t>(1, 2048 / std::max<int64_t>(s.out_width, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const int64_t plane = r / s.out_height, y = r % s.out_height;
                  const float* image = in + plane * s.in_height * s.in_width;
                  const float* row1 = image + ys.first[y] * s.in_width;
                  const float* row2 = image + ys.second[y] * s.in_width;
                  const float dy1 = ys.d1[y], dy2 = ys.d2[y];
                  float* dst = out + r * s.out_width;
                  if (vector) {
                    BilinearRowAvx512(row1, row2, dy1, dy2, xs, s.in_width, s.out_width, dst);
                    continue;
                  }
                  for (int64_t x = 0; x < s.out_width; ++x) {
                    const int64_t x1 = xs.first[x], x2 = xs.second[x];
                    const float dx1 = xs.d1[x], dx2 = xs.d2[x];
                    // The weight products first, then the sum left to right, each step
                    // rounded to float (no fused multiply-add): onnxruntime's order.
                    const float t11 = (dx2 * dy2) * row1[x1];
                    const float t21 = (dx1 * dy2) * row1[x2];
                    const float t12 = (dx2 * dy1) * row2[x1];
                    const float t22 = (dx1 * dy1) * row2[x2];
                    dst[x] = ((t11 + t21) + t12) + t22;
                  }
                }
              });
}

}  // namespace ovfix::exec
