// An 8 x 8 float transpose in AVX2 registers (three rounds: 32-bit pairs, 64-bit pairs within
// 128-bit lanes, then the lanes), for kernels that move between channel planes (NCHW) and
// vectors of 8 channels where AVX-512 (avx512_transpose.h) is missing.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ovfix::exec::avx2 {

// r[i] lane j becomes r[j] lane i.
__attribute__((target("avx2"), always_inline)) inline void Transpose8x8(__m256 (&r)[8]) {
  __m256 u[8], v[8];
  for (int i = 0; i < 8; i += 2) {
    u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    v[i] = _mm256_shuffle_ps(u[i], u[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    v[i + 1] = _mm256_shuffle_ps(u[i], u[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    v[i + 2] = _mm256_shuffle_ps(u[i + 1], u[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    v[i + 3] = _mm256_shuffle_ps(u[i + 1], u[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x31);
  }
}

// A mask of the first n lanes (all 8 for n >= 8) for the masked loads and stores.
__attribute__((target("avx2"), always_inline)) inline __m256i FirstLanes(int64_t n) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < 8 ? (n > 0 ? n : 0) : 8)),
                            index);
}

// Columns [0, cols) of `rows` rows `stride` floats apart from src (the rest 0), transposed:
// r[j] lane i is src[i * stride + j]. Reads nothing past the columns.
__attribute__((target("avx2"), always_inline)) inline void LoadTransposed(
    const float* src, int64_t stride, int64_t rows, int64_t cols, __m256 (&r)[8]) {
  const __m256i mask = FirstLanes(cols);
  for (int64_t i = 0; i < 8; ++i) {
    r[i] = i < rows ? _mm256_maskload_ps(src + i * stride, mask) : _mm256_setzero_ps();
  }
  Transpose8x8(r);
}

}  // namespace ovfix::exec::avx2
