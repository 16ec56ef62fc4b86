// A 16 x 16 float transpose in AVX-512 registers (three rounds of interleaves: 32-bit pairs,
// 64-bit pairs, then 128-bit lanes), for kernels that move between channel planes (NCHW) and
// vectors of 16 channels.
#pragma once

#include <immintrin.h>

namespace ovfix::exec::avx512 {

// The merge-masked forms with every lane taken: the plain intrinsics start from an undefined
// vector, which trips g++ 12's uninitialized warning.
constexpr __mmask16 kAll16 = 0xFFFF;
constexpr __mmask8 kAll8 = 0xFF;

__attribute__((target("avx512f"), always_inline)) inline __m512 UnpackLo(__m512 a, __m512 b) {
  return _mm512_mask_unpacklo_ps(a, kAll16, a, b);
}
__attribute__((target("avx512f"), always_inline)) inline __m512 UnpackHi(__m512 a, __m512 b) {
  return _mm512_mask_unpackhi_ps(a, kAll16, a, b);
}
__attribute__((target("avx512f"), always_inline)) inline __m512 PairsLo(__m512 a, __m512 b) {
  const __m512d x = _mm512_castps_pd(a), y = _mm512_castps_pd(b);
  return _mm512_castpd_ps(_mm512_mask_unpacklo_pd(x, kAll8, x, y));
}
__attribute__((target("avx512f"), always_inline)) inline __m512 PairsHi(__m512 a, __m512 b) {
  const __m512d x = _mm512_castps_pd(a), y = _mm512_castps_pd(b);
  return _mm512_castpd_ps(_mm512_mask_unpackhi_pd(x, kAll8, x, y));
}
template <int kImm>
__attribute__((target("avx512f"), always_inline)) inline __m512 Lanes(__m512 a, __m512 b) {
  return _mm512_mask_shuffle_f32x4(a, kAll16, a, b, kImm);
}

// r[i] lane j becomes r[j] lane i.
__attribute__((target("avx512f"), always_inline)) inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = UnpackLo(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = UnpackHi(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + j], 128-bit lane L: column 4L + j of rows 4i .. 4i + 3.
  __m512 u[16];
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = PairsLo(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = PairsHi(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = PairsLo(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = PairsHi(t[4 * i + 1], t[4 * i + 3]);
  }
  // Column 4L + j is lane L of u[j], u[4 + j], u[8 + j], u[12 + j].
  for (int j = 0; j < 4; ++j) {
    const __m512 p = Lanes<0x88>(u[j], u[4 + j]);  // lanes 0, 2 of each
    const __m512 q = Lanes<0xDD>(u[j], u[4 + j]);  // lanes 1, 3 of each
    const __m512 v = Lanes<0x88>(u[8 + j], u[12 + j]);
    const __m512 w = Lanes<0xDD>(u[8 + j], u[12 + j]);
    r[j] = Lanes<0x88>(p, v);
    r[8 + j] = Lanes<0xDD>(p, v);
    r[4 + j] = Lanes<0x88>(q, w);
    r[12 + j] = Lanes<0xDD>(q, w);
  }
}

// The first n lanes (all 16 for n >= 16).
__attribute__((target("avx512f"), always_inline)) inline __mmask16 FirstLanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n > 0 ? n : 0)) - 1);
}

// Columns [0, cols) of `rows` rows `stride` floats apart from src (the rest 0), transposed:
// r[j] lane i is src[i * stride + j].
__attribute__((target("avx512f"), always_inline)) inline void LoadTransposed(
    const float* src, int64_t stride, int64_t rows, int64_t cols, __m512 r[16]) {
  const __mmask16 mask = FirstLanes(cols);
  for (int64_t i = 0; i < 16; ++i) {
    r[i] = i < rows ? _mm512_maskz_loadu_ps(mask, src + i * stride) : _mm512_setzero_ps();
  }
  Transpose16x16(r);
}

}  // namespace ovfix::exec::avx512
