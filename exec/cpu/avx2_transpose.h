// An 8 x 8 float transpose in AVX2 registers (three rounds: 32-bit pairs, 64-bit pairs within
// 128-bit lanes, then the lanes), for kernels that move between channel planes (NCHW) and
// vectors of 8 channels where AVX-512 (avx512_transpose.h) is missing.
#pragma once

#include <immintrin.h>

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

}  // namespace ovfix::exec::avx2
