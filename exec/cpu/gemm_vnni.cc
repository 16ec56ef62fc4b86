#include "exec/cpu/gemm_vnni.h"

#include <immintrin.h>

#include <cstring>

namespace ovfix::exec::vnni {

void InterleaveQuadRows(const uint8_t* r0, const uint8_t* r1, const uint8_t* r2, const uint8_t* r3,
                        uint8_t* out) {
  for (int half = 0; half < 2; ++half) {
    const int64_t col = half * 16;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + col));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + col));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r2 + col));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r3 + col));
    const __m128i lo01 = _mm_unpacklo_epi8(a, b), hi01 = _mm_unpackhi_epi8(a, b);
    const __m128i lo23 = _mm_unpacklo_epi8(c, d), hi23 = _mm_unpackhi_epi8(c, d);
    __m128i* dst = reinterpret_cast<__m128i*>(out + half * 64);
    _mm_storeu_si128(dst, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
}

void InterleaveQuad(const uint8_t* rows, int64_t ld, int64_t panels, int64_t panel_stride,
                    uint8_t* out) {
  for (int64_t p = 0; p < panels; ++p) {
    const uint8_t* r = rows + p * kNr;
    InterleaveQuadRows(r, r + ld, r + 2 * ld, r + 3 * ld, out + p * panel_stride);
  }
}

namespace {

// Step of four rows of 32 bytes each: the 16-byte lanes of the unpacks hold columns
// 0-3 | 16-19, 4-7 | 20-23, 8-11 | 24-27 and 12-15 | 28-31, put back in order by the permutes.
__attribute__((target("avx2"))) inline void InterleaveQuadAvx2(const uint8_t* r0, const uint8_t* r1,
                                                               const uint8_t* r2, const uint8_t* r3,
                                                               uint8_t* out) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1));
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r2));
  const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r3));
  const __m256i lo01 = _mm256_unpacklo_epi8(a, b), hi01 = _mm256_unpackhi_epi8(a, b);
  const __m256i lo23 = _mm256_unpacklo_epi8(c, d), hi23 = _mm256_unpackhi_epi8(c, d);
  const __m256i x0 = _mm256_unpacklo_epi16(lo01, lo23), x1 = _mm256_unpackhi_epi16(lo01, lo23);
  const __m256i x2 = _mm256_unpacklo_epi16(hi01, hi23), x3 = _mm256_unpackhi_epi16(hi01, hi23);
  __m256i* dst = reinterpret_cast<__m256i*>(out);
  _mm256_storeu_si256(dst, _mm256_permute2x128_si256(x0, x1, 0x20));
  _mm256_storeu_si256(dst + 1, _mm256_permute2x128_si256(x2, x3, 0x20));
  _mm256_storeu_si256(dst + 2, _mm256_permute2x128_si256(x0, x1, 0x31));
  _mm256_storeu_si256(dst + 3, _mm256_permute2x128_si256(x2, x3, 0x31));
}

}  // namespace

__attribute__((target("avx2"))) void PackPanelFromRows(const uint8_t* base, const int64_t* offsets,
                                                       int64_t depth, uint8_t* out) {
  const int64_t full = depth / 4;
  for (int64_t q = 0; q < full; ++q, offsets += 4, out += kNr * 4) {
    InterleaveQuadAvx2(base + offsets[0], base + offsets[1], base + offsets[2], base + offsets[3],
                       out);
  }
  if (depth % 4 != 0) {
    alignas(32) static const uint8_t kZeros[kNr] = {};
    const uint8_t* r[4];
    for (int64_t i = 0; i < 4; ++i) r[i] = i < depth % 4 ? base + offsets[i] : kZeros;
    InterleaveQuadAvx2(r[0], r[1], r[2], r[3], out);
  }
}

namespace {

#define OVFIX_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

// acc[r][half] = A panel . B panel over `quads` steps (columns half * 16 ..).
OVFIX_VNNI_TARGET inline void Accumulate(int64_t quads, const int8_t* a, const uint8_t* b,
                                         __m512i (&acc)[kMr][2]) {
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
}

}  // namespace

OVFIX_VNNI_TARGET void DotTile(int64_t quads, const int8_t* a, const uint8_t* b, int32_t* c,
                               int64_t ldc, int rows, int cols) {
  __m512i acc[kMr][2];
  Accumulate(quads, a, b, acc);
  const __mmask16 low = cols >= 16 ? 0xFFFF : (1u << cols) - 1;
  const __mmask16 high = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (1u << (cols - 16)) - 1;
  for (int r = 0; r < rows; ++r) {
    _mm512_mask_storeu_epi32(c + r * ldc, low, acc[r][0]);
    _mm512_mask_storeu_epi32(c + r * ldc + 16, high, acc[r][1]);
  }
}

// GCC 12's unmasked float intrinsics start from _mm512_undefined_ps(), which its
// -Wmaybe-uninitialized takes for a read of an uninitialized value.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
OVFIX_VNNI_TARGET void DotTileRequantize(int64_t quads, const int8_t* a, const uint8_t* b,
                                         const TileRequantization& q, uint8_t* y, int64_t ldy,
                                         int rows, int cols) {
  __m512i acc[kMr][2];
  Accumulate(quads, a, b, acc);
  const __mmask16 masks[2] = {static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1),
                              static_cast<__mmask16>(cols >= 32   ? 0xFFFF
                                                     : cols <= 16 ? 0
                                                                  : (1u << (cols - 16)) - 1)};
  __m512i sums[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
  if (q.row_zeros != nullptr) {
    sums[0] = _mm512_maskz_loadu_epi32(masks[0], q.column_sums);
    sums[1] = _mm512_maskz_loadu_epi32(masks[1], q.column_sums + 16);
  }
  const __m512 low = _mm512_set1_ps(q.low), high = _mm512_set1_ps(q.high);
  const __m512i zero = _mm512_set1_epi32(q.zero);
  for (int r = 0; r < rows; ++r) {
    const __m512i offset = _mm512_set1_epi32(q.offsets[r]);
    const __m512 multiplier = _mm512_set1_ps(q.multipliers[r]);
    for (int half = 0; half < 2; ++half) {
      __m512i v = _mm512_add_epi32(acc[r][half], offset);
      if (q.row_zeros != nullptr) {
        v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(q.row_zeros[r]), sums[half]));
      }
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), multiplier);
      // max/min return their second operand where the first is NaN, as Quantize's compares.
      f = _mm512_max_ps(f, low);
      f = _mm512_min_ps(f, high);
      const __m512i rounded = _mm512_add_epi32(_mm512_cvtps_epi32(f), zero);
      _mm512_mask_cvtepi32_storeu_epi8(y + r * ldy + half * 16, masks[half], rounded);
    }
  }
}

#pragma GCC diagnostic pop

#undef OVFIX_VNNI_TARGET

}  // namespace ovfix::exec::vnni
