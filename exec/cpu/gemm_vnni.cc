#include "exec/cpu/gemm_vnni.h"

#include <immintrin.h>

#include <cstring>

namespace ovfix::exec::vnni {

void InterleaveQuad(const uint8_t* rows, int64_t ld, int64_t panels, int64_t panel_stride,
                    uint8_t* out) {
  for (int64_t p = 0; p < panels; ++p) {
    for (int half = 0; half < 2; ++half) {
      const int64_t col = p * kNr + half * 16;
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows + col));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows + ld + col));
      const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows + 2 * ld + col));
      const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows + 3 * ld + col));
      const __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
      const __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
      __m128i* dst = reinterpret_cast<__m128i*>(out + p * panel_stride + half * 64);
      _mm_storeu_si128(dst, _mm_unpacklo_epi16(lo01, lo23));
      _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(lo01, lo23));
      _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(hi01, hi23));
      _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(hi01, hi23));
    }
  }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void DotTile(int64_t quads, const int8_t* a,
                                                                    const uint8_t* b, int32_t* c,
                                                                    int64_t ldc, int rows,
                                                                    int cols) {
  __m512i acc[kMr][2];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (int64_t q = 0; q < quads; ++q, a += kMr * 4, b += kNr * 4) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 64);
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      int32_t quad;
      std::memcpy(&quad, a + 4 * r, sizeof(quad));
      const __m512i ar = _mm512_set1_epi32(quad);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b0, ar);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b1, ar);
    }
  }
  const __mmask16 low = cols >= 16 ? 0xFFFF : (1u << cols) - 1;
  const __mmask16 high = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (1u << (cols - 16)) - 1;
  for (int r = 0; r < rows; ++r) {
    _mm512_mask_storeu_epi32(c + r * ldc, low, acc[r][0]);
    _mm512_mask_storeu_epi32(c + r * ldc + 16, high, acc[r][1]);
  }
}

}  // namespace ovfix::exec::vnni
