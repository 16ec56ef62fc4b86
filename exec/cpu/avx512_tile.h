// The AVX-512 pieces shared by the packed GEMM's 12x32 tiles (gemm_kernels.cc) and the
// convolution tiles that read their columns in place (conv_implicit.cc): the depth loop that
// accumulates R rows by 16 * V columns, and the fused activations of the epilogues. Both
// tiles sum in this one order, so a convolution gives the same bits on either path.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ovfix::exec::avx512 {

// acc[r][v] = sum over k < kc of a[k * a_stride + r] * row_of_b(k)[16 * v ...]: row_of_b(k)
// points at row k of B (aligned to 64 bytes when kAlignedB).
template <int R, int V, bool kAlignedB, typename RowOfB>
__attribute__((target("avx512f,fma"), always_inline)) inline void Accumulate(
    __m512 (&acc)[R][V], const float* a, int64_t a_stride, int64_t kc, RowOfB row_of_b) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const float* bk = row_of_b(k);
    __m512 bv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      bv[v] = kAlignedB ? _mm512_load_ps(bk + 16 * v) : _mm512_loadu_ps(bk + 16 * v);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
    a += a_stride;
  }
}

// min(max(x, lo), hi) keeping NaN: max and min return their second operand when either is
// NaN. (The merge-masked forms: the plain intrinsics trip g++ 12's uninitialized warning.)
__attribute__((target("avx512f"), always_inline)) inline __m512 Clamp(__m512 x, __m512 lo,
                                                                      __m512 hi) {
  x = _mm512_mask_max_ps(x, __mmask16(0xFFFF), lo, x);
  return _mm512_mask_min_ps(x, __mmask16(0xFFFF), hi, x);
}

// x * min(max(alpha * x + beta, 0), 1), rounded as the unfused HardSigmoid and Mul kernels
// round it (a product, then a sum: no fused multiply-add).
__attribute__((target("avx512f"), always_inline)) inline __m512 HardSwish(__m512 x, __m512 alpha,
                                                                          __m512 beta) {
  __m512 product = _mm512_mul_ps(alpha, x);
  __asm__("" : "+v"(product));  // keeps g++ from contracting the two into a multiply-add
  __m512 gate = _mm512_add_ps(product, beta);
  gate = _mm512_mask_max_ps(gate, __mmask16(0xFFFF), gate, _mm512_setzero_ps());
  gate = _mm512_mask_min_ps(gate, __mmask16(0xFFFF), gate, _mm512_set1_ps(1.0f));
  return _mm512_mul_ps(x, gate);
}

}  // namespace ovfix::exec::avx512
