#include "exec/cpu/gemm_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>
#include <utility>

#include "exec/cpu/avx512_tile.h"
#include "exec/cpu/float_vec.h"

namespace ovfix::exec {
namespace {

using TileFn = void (*)(const TileArgs&);

// A table of Tile<rows, vectors>::Run for rows 1..sizeof...(R), so that every tile size gets a
// kernel whose loops the compiler fully unrolls with the accumulators in registers.
template <template <int, int> class Tile, int V, int... R>
constexpr std::array<TileFn, sizeof...(R)> RowTable(std::integer_sequence<int, R...>) {
  return {&Tile<R + 1, V>::Run...};
}

// Element (r, j) of a tile's product `acc` finished as the vector epilogues finish it, before
// the activation: alpha * acc, plus beta * C (its value `c`), then the row bias once the
// product is complete, then the column bias and the residual.
inline float FinishElement(const TileArgs& t, int r, int j, float acc, float c) {
  float x;
  if (t.beta == 0.0f) {
    x = t.alpha * acc + (t.bias != nullptr ? t.bias[r] : 0.0f);
  } else {
    x = t.alpha * acc;
    x = x + t.beta * c;
    if (t.bias != nullptr) x += t.bias[r];
  }
  if (t.column_bias != nullptr) x += t.column_bias[j];
  if (t.residual != nullptr) x += t.residual[r * t.ldc + j];
  return x;
}

// ---- AVX-512: 12 rows x 32 columns (24 zmm accumulators) ----

constexpr int kAvx512Mr = 12, kAvx512Nr = 32;

template <int R, int V>
struct Avx512Tile {
  __attribute__((target("avx512f,fma"))) static void Run(const TileArgs& t) {
    __m512 acc[R][V];
    const float* const b = t.b;
    avx512::Accumulate<R, V, true>(acc, t.a, kAvx512Mr, t.kc,
                                   [b](int64_t k) { return b + k * kAvx512Nr; });
    __mmask16 mask[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      const int left = t.cols - 16 * v;
      mask[v] = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max(left, 0)) - 1);
    }
    const __m512 alpha = _mm512_set1_ps(t.alpha);
    const __m512 beta = _mm512_set1_ps(t.beta);
    const bool read_c = t.beta != 0.0f, clamp = t.activation.clamp,
               hard_swish = t.activation.hard_swish;
    const __m512 lo = _mm512_set1_ps(t.activation.clamp_min),
                 hi = _mm512_set1_ps(t.activation.clamp_max);
    const __m512 hs_alpha = _mm512_set1_ps(t.activation.hard_swish_alpha),
                 hs_beta = _mm512_set1_ps(t.activation.hard_swish_beta);
    float* const c0 = t.c;
    const int64_t ldc = t.ldc;
    const float* const bias_row = t.bias;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      float* c = c0 + r * ldc;
      const __m512 bias = _mm512_set1_ps(bias_row != nullptr ? bias_row[r] : 0.0f);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) {
        // The row bias once the product is complete: after what C holds of it.
        __m512 x = _mm512_fmadd_ps(acc[r][v], alpha, read_c ? _mm512_setzero_ps() : bias);
        if (read_c) {
          x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask[v], c + 16 * v), beta, x);
          if (bias_row != nullptr) x = _mm512_add_ps(x, bias);
        }
        if (clamp) x = avx512::Clamp(x, lo, hi);
        if (hard_swish) x = avx512::HardSwish(x, hs_alpha, hs_beta);
        _mm512_mask_storeu_ps(c + 16 * v, mask[v], x);
      }
    }
  }
};

constexpr auto kAvx512Half = RowTable<Avx512Tile, 1>(std::make_integer_sequence<int, 12>());
constexpr auto kAvx512Full = RowTable<Avx512Tile, 2>(std::make_integer_sequence<int, 12>());

void Avx512Dispatch(const TileArgs& t) { (t.cols > 16 ? kAvx512Full : kAvx512Half)[t.rows - 1](t); }

// ---- AVX2 + FMA: 6 rows x 16 columns (12 ymm accumulators) ----

constexpr int kAvx2Mr = 6, kAvx2Nr = 16;

template <int R, int V>
struct Avx2Tile {
  // acc += A * B over the tile's depth, A packed or (kInPlace) its rows in place: the same
  // products in the same order.
  template <bool kInPlace>
  __attribute__((target("avx2,fma"), always_inline)) static inline void Accumulate(
      const TileArgs& t, __m256 (&acc)[R][V]) {
    const float* a = t.a;
    const float* b = t.b;
    const float* rows[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) rows[r] = a + r * t.lda;
    // Unrolled four times: a quarter of the loop's counting and branching per multiply-add
    // (AMD Zen 3: 256 x 384 x 384 in cache at a median 0.70 of the core's multiply-add rate
    // rolled, 0.75 unrolled, over three runs; the same products in the same order).
    const int64_t kc = t.kc;
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
      __m256 bv[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) bv[v] = _mm256_load_ps(b + 8 * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 ar = _mm256_broadcast_ss(kInPlace ? rows[r] + k : a + r);
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
      }
      if constexpr (!kInPlace) a += kAvx2Mr;
      b += kAvx2Nr;
    }
  }

  __attribute__((target("avx2,fma"))) static void Run(const TileArgs& t) {
    __m256 acc[R][V];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
    }
    if (t.lda != 0) {
      Accumulate<true>(t, acc);
    } else {
      Accumulate<false>(t, acc);
    }
    const __m256 alpha = _mm256_set1_ps(t.alpha);
    const __m256 beta = _mm256_set1_ps(t.beta);
    const __m256 lo = _mm256_set1_ps(t.activation.clamp_min),
                 hi = _mm256_set1_ps(t.activation.clamp_max);
    if (t.cols == 8 * V) {
      __m256 column_bias[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) {
        column_bias[v] =
            t.column_bias != nullptr ? _mm256_loadu_ps(t.column_bias + 8 * v) : _mm256_setzero_ps();
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        float* c = t.c + r * t.ldc;
        const __m256 bias = _mm256_set1_ps(t.bias != nullptr ? t.bias[r] : 0.0f);
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) {
          // The row bias once the product is complete: after what C holds of it.
          __m256 x = _mm256_fmadd_ps(acc[r][v], alpha, t.beta != 0.0f ? _mm256_setzero_ps() : bias);
          if (t.beta != 0.0f) {
            x = _mm256_fmadd_ps(_mm256_loadu_ps(c + 8 * v), beta, x);
            if (t.bias != nullptr) x = _mm256_add_ps(x, bias);
          }
          if (t.column_bias != nullptr) x = _mm256_add_ps(x, column_bias[v]);
          if (t.residual != nullptr) {
            x = _mm256_add_ps(x, _mm256_loadu_ps(t.residual + r * t.ldc + 8 * v));
          }
          if (t.activation.clamp) x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
          if (t.activation.hard_swish) {
            __m256 product = _mm256_mul_ps(_mm256_set1_ps(t.activation.hard_swish_alpha), x);
            __asm__("" : "+x"(product));  // no contraction into a multiply-add
            const __m256 gate =
                _mm256_add_ps(product, _mm256_set1_ps(t.activation.hard_swish_beta));
            x = _mm256_mul_ps(
                x, _mm256_min_ps(_mm256_max_ps(gate, _mm256_setzero_ps()), _mm256_set1_ps(1.0f)));
          }
          _mm256_storeu_ps(c + 8 * v, x);
        }
      }
      return;
    }
    alignas(32) float tile[R][8 * V];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) _mm256_store_ps(tile[r] + 8 * v, acc[r][v]);
    }
    for (int r = 0; r < R; ++r) {
      float* c = t.c + r * t.ldc;
      for (int j = 0; j < t.cols; ++j)
        c[j] = t.activation.Activate(FinishElement(t, r, j, tile[r][j], c[j]));
    }
  }
};

constexpr auto kAvx2Half = RowTable<Avx2Tile, 1>(std::make_integer_sequence<int, 6>());
constexpr auto kAvx2Full = RowTable<Avx2Tile, 2>(std::make_integer_sequence<int, 6>());

void Avx2Dispatch(const TileArgs& t) { (t.cols > 8 ? kAvx2Full : kAvx2Half)[t.rows - 1](t); }

// ---- Portable: 4 rows x 8 columns, left to the compiler's vectorizer ----

constexpr int kPortableMr = 4, kPortableNr = 8;

void PortableTile(const TileArgs& t) {
  float acc[kPortableMr][kPortableNr] = {};
  const float* a = t.a;
  const float* b = t.b;
  for (int64_t k = 0; k < t.kc; ++k) {
    for (int r = 0; r < kPortableMr; ++r) {
      for (int j = 0; j < kPortableNr; ++j) acc[r][j] += a[r] * b[j];
    }
    a += kPortableMr;
    b += kPortableNr;
  }
  for (int r = 0; r < t.rows; ++r) {
    float* c = t.c + r * t.ldc;
    for (int j = 0; j < t.cols; ++j)
      c[j] = t.activation.Activate(FinishElement(t, r, j, acc[r][j], c[j]));
  }
}

const GemmKernel kAvx512Kernel{{"avx512", kAvx512Mr, kAvx512Nr}, &Avx512Dispatch};
const GemmKernel kAvx2Kernel{{"avx2", kAvx2Mr, kAvx2Nr}, &Avx2Dispatch, true, true};
const GemmKernel kPortableKernel{{"portable", kPortableMr, kPortableNr}, &PortableTile};

// ---- Matrix-vector products ----

// out[r] = dot(mat + r * ld, x) over k elements, for r in [0, rows).
template <int W>
__attribute__((always_inline)) inline void DotRowsImpl(const float* mat, int64_t ld, int64_t rows,
                                                       const float* x, int64_t k, float* out) {
  using Vec = FloatVec<W>;
  int64_t r = 0;
  if (ld == k && k >= 4 * W) {
    // Dense rows (a constant weight as stored): one row after the other is one sequential
    // stream through the matrix, which the hardware prefetcher follows, where rows read four
    // at a time are four short streams (a classifier's rows are a few KiB). Four accumulators
    // keep the multiply-adds independent.
    for (; r < rows; ++r) {
      const float* m0 = mat + r * ld;
      Vec s0 = {}, s1 = {}, s2 = {}, s3 = {};
      int64_t i = 0;
      for (; i + 4 * W <= k; i += 4 * W) {
        Vec x0, x1, x2, x3, v0, v1, v2, v3;
        std::memcpy(&x0, x + i, sizeof(Vec));
        std::memcpy(&x1, x + i + W, sizeof(Vec));
        std::memcpy(&x2, x + i + 2 * W, sizeof(Vec));
        std::memcpy(&x3, x + i + 3 * W, sizeof(Vec));
        std::memcpy(&v0, m0 + i, sizeof(Vec));
        std::memcpy(&v1, m0 + i + W, sizeof(Vec));
        std::memcpy(&v2, m0 + i + 2 * W, sizeof(Vec));
        std::memcpy(&v3, m0 + i + 3 * W, sizeof(Vec));
        s0 += v0 * x0;
        s1 += v1 * x1;
        s2 += v2 * x2;
        s3 += v3 * x3;
      }
      for (; i + W <= k; i += W) {
        Vec xv, v0;
        std::memcpy(&xv, x + i, sizeof(Vec));
        std::memcpy(&v0, m0 + i, sizeof(Vec));
        s0 += v0 * xv;
      }
      const Vec sum = (s0 + s1) + (s2 + s3);
      float t = 0;
      for (int l = 0; l < W; ++l) t += sum[l];
      for (; i < k; ++i) t += m0[i] * x[i];
      out[r] = t;
    }
    return;
  }
  for (; r + 4 <= rows; r += 4) {
    const float* m0 = mat + r * ld;
    const float* m1 = m0 + ld;
    const float* m2 = m1 + ld;
    const float* m3 = m2 + ld;
    Vec s0 = {}, s1 = {}, s2 = {}, s3 = {};
    int64_t i = 0;
    // The next four rows are fetched while these are read: the product streams a matrix
    // (weights of megabytes) from memory, and four row streams alone leave it waiting.
    const float* next = r + 8 <= rows ? m3 + ld : nullptr;
    for (; i + W <= k; i += W) {
      if (next != nullptr && i % 16 == 0) {
        __builtin_prefetch(next + i);
        __builtin_prefetch(next + ld + i);
        __builtin_prefetch(next + 2 * ld + i);
        __builtin_prefetch(next + 3 * ld + i);
      }
      Vec xv, v0, v1, v2, v3;
      std::memcpy(&xv, x + i, sizeof(Vec));
      std::memcpy(&v0, m0 + i, sizeof(Vec));
      std::memcpy(&v1, m1 + i, sizeof(Vec));
      std::memcpy(&v2, m2 + i, sizeof(Vec));
      std::memcpy(&v3, m3 + i, sizeof(Vec));
      s0 += v0 * xv;
      s1 += v1 * xv;
      s2 += v2 * xv;
      s3 += v3 * xv;
    }
    float t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (int l = 0; l < W; ++l) {
      t0 += s0[l];
      t1 += s1[l];
      t2 += s2[l];
      t3 += s3[l];
    }
    for (; i < k; ++i) {
      t0 += m0[i] * x[i];
      t1 += m1[i] * x[i];
      t2 += m2[i] * x[i];
      t3 += m3[i] * x[i];
    }
    out[r] = t0;
    out[r + 1] = t1;
    out[r + 2] = t2;
    out[r + 3] = t3;
  }
  for (; r < rows; ++r) {
    const float* m0 = mat + r * ld;
    Vec s0 = {};
    int64_t i = 0;
    for (; i + W <= k; i += W) {
      Vec xv, v0;
      std::memcpy(&xv, x + i, sizeof(Vec));
      std::memcpy(&v0, m0 + i, sizeof(Vec));
      s0 += v0 * xv;
    }
    float t0 = 0;
    for (int l = 0; l < W; ++l) t0 += s0[l];
    for (; i < k; ++i) t0 += m0[i] * x[i];
    out[r] = t0;
  }
}

// out[j] = sum over i < k of x[i] * mat[i * ld + j], for j in [0, n).
template <int W>
__attribute__((always_inline)) inline void AxpyRowsImpl(const float* mat, int64_t ld, int64_t k,
                                                        const float* x, int64_t n, float* out) {
  using Vec = FloatVec<W>;
  int64_t j = 0;
  for (; j + 4 * W <= n; j += 4 * W) {
    VecRun<W> sums{};
    MultiplyAddRows(
        sums, k, [&](int64_t i) { return std::pair<const float*, float>(mat + i * ld + j, x[i]); });
    StoreRun(sums, out + j);
  }
  for (; j + W <= n; j += W) {
    Vec s0 = {};
    for (int64_t i = 0; i < k; ++i) {
      Vec v0;
      std::memcpy(&v0, mat + i * ld + j, sizeof(Vec));
      s0 += v0 * x[i];
    }
    std::memcpy(out + j, &s0, sizeof(Vec));
  }
  if (j < n) {
    for (int64_t jj = j; jj < n; ++jj) out[jj] = 0.0f;
    for (int64_t i = 0; i < k; ++i) {
      const float* row = mat + i * ld;
      for (int64_t jj = j; jj < n; ++jj) out[jj] += x[i] * row[jj];
    }
  }
}

__attribute__((target("avx512f,fma"), optimize("fp-contract=fast"))) void DotRowsAvx512(
    const float* mat, int64_t ld, int64_t rows, const float* x, int64_t k, float* out) {
  DotRowsImpl<16>(mat, ld, rows, x, k, out);
}
__attribute__((target("avx2,fma"), optimize("fp-contract=fast"))) void DotRowsAvx2(
    const float* mat, int64_t ld, int64_t rows, const float* x, int64_t k, float* out) {
  DotRowsImpl<8>(mat, ld, rows, x, k, out);
}
void DotRowsBaseline(const float* mat, int64_t ld, int64_t rows, const float* x, int64_t k,
                     float* out) {
  DotRowsImpl<4>(mat, ld, rows, x, k, out);
}
__attribute__((target("avx512f,fma"), optimize("fp-contract=fast"))) void AxpyRowsAvx512(
    const float* mat, int64_t ld, int64_t k, const float* x, int64_t n, float* out) {
  AxpyRowsImpl<16>(mat, ld, k, x, n, out);
}
__attribute__((target("avx2,fma"), optimize("fp-contract=fast"))) void AxpyRowsAvx2(
    const float* mat, int64_t ld, int64_t k, const float* x, int64_t n, float* out) {
  AxpyRowsImpl<8>(mat, ld, k, x, n, out);
}
void AxpyRowsBaseline(const float* mat, int64_t ld, int64_t k, const float* x, int64_t n,
                      float* out) {
  AxpyRowsImpl<4>(mat, ld, k, x, n, out);
}

template <int kNr>
inline void CopyIntoPanels(const float* row, int64_t count, int64_t panel_stride, float* dst) {
  int64_t j = 0;
  for (; j + kNr <= count; j += kNr, dst += panel_stride) {
    std::memcpy(dst, row + j, kNr * sizeof(float));
  }
  if (j < count) {
    const int64_t left = count - j;
    for (int64_t i = 0; i < left; ++i) dst[i] = row[j + i];
    for (int64_t i = left; i < kNr; ++i) dst[i] = 0.0f;
  }
}

// CopyIntoPanels for the first of kNrs that is `nr`; false when none is.
template <int... kNrs>
__attribute__((always_inline)) inline bool CopyIntoPanelsOfWidth(int nr, const float* row,
                                                                 int64_t count,
                                                                 int64_t panel_stride, float* dst) {
  return ((nr == kNrs && (CopyIntoPanels<kNrs>(row, count, panel_stride, dst), true)) || ...);
}

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) void PackRowIntoPanels(
    const float* row, int64_t count, int nr, int64_t panel_stride, float* dst) {
  // The panel widths of the micro-kernels, each copied with its width known.
  if (CopyIntoPanelsOfWidth<32, 16, 12, 8, 6, 4>(nr, row, count, panel_stride, dst)) return;
  for (int64_t j = 0; j < count; j += nr, dst += panel_stride) {
    for (int64_t i = 0; i < nr; ++i) dst[i] = j + i < count ? row[j + i] : 0.0f;
  }
}

namespace {

// The low (high) 64-bit pairs of x and y, interleaved per 128-bit lane.
__attribute__((target("avx512f"), always_inline)) inline __m512 PairsLow(__m512 x, __m512 y) {
  return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(x), _mm512_castps_pd(y)));
}
__attribute__((target("avx512f"), always_inline)) inline __m512 PairsHigh(__m512 x, __m512 y) {
  return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(x), _mm512_castps_pd(y)));
}

// Rows [r0, r0 + 4) of the panel (those at or past `rows` read as 0), depth [kk, kk + 16):
// a 4x4 transpose in each 128-bit lane, then each lane (4 rows of one depth) stored whole.
__attribute__((target("avx512f"), always_inline)) inline void PackFourRows(const float* a,
                                                                           int64_t lda, int rows,
                                                                           int r0, int64_t kk,
                                                                           __mmask16 depth_mask,
                                                                           int mr, float* dst) {
  __m512 r[4];
  for (int i = 0; i < 4; ++i) {
    r[i] = r0 + i < rows ? _mm512_maskz_loadu_ps(depth_mask, a + (r0 + i) * lda + kk)
                         : _mm512_setzero_ps();
  }
  const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]);
  const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]);
  // u[d] lane L holds depth kk + 4L + d of the four rows.
  const __m512 u[4] = {PairsLow(t0, t2), PairsHigh(t0, t2), PairsLow(t1, t3), PairsHigh(t1, t3)};
  float* out = dst + kk * mr + r0;
  for (int d = 0; d < 4; ++d) {
    _mm_storeu_ps(out + (0 + d) * mr, _mm512_extractf32x4_ps(u[d], 0));
    _mm_storeu_ps(out + (4 + d) * mr, _mm512_extractf32x4_ps(u[d], 1));
    _mm_storeu_ps(out + (8 + d) * mr, _mm512_extractf32x4_ps(u[d], 2));
    _mm_storeu_ps(out + (12 + d) * mr, _mm512_extractf32x4_ps(u[d], 3));
  }
}

__attribute__((target("avx512f"))) void PackRowsIntoPanelAvx512(const float* a, int64_t lda,
                                                                int rows, int mr, int64_t kc,
                                                                float* dst) {
  int64_t kk = 0;
  for (; kk + 16 <= kc; kk += 16) {
    for (int r0 = 0; r0 < mr; r0 += 4) PackFourRows(a, lda, rows, r0, kk, 0xFFFF, mr, dst);
  }
  if (kk == kc) return;
  // The last depths through a buffer: the 16-deep stores would run past the panel.
  alignas(64) float tail[16 * 16];
  const __mmask16 mask = static_cast<__mmask16>((1u << (kc - kk)) - 1);
  for (int r0 = 0; r0 < mr; r0 += 4) PackFourRows(a + kk, lda, rows, r0, 0, mask, mr, tail);
  std::memcpy(dst + kk * mr, tail, (kc - kk) * mr * sizeof(float));
}

}  // namespace

void PackRowsIntoPanel(const float* a, int64_t lda, int rows, int mr, int64_t kc, float* dst) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 && mr % 4 == 0 && mr <= 16) {
    PackRowsIntoPanelAvx512(a, lda, rows, mr, kc, dst);
    return;
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    float* out = dst + kk * mr;
    for (int r = 0; r < rows; ++r) out[r] = a[r * lda + kk];
    for (int r = rows; r < mr; ++r) out[r] = 0.0f;
  }
}

const std::vector<const GemmKernel*>& SupportedGemmKernels() {
  static const std::vector<const GemmKernel*> kernels = [] {
    std::vector<const GemmKernel*> list;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) list.push_back(&kAvx512Kernel);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      list.push_back(&kAvx2Kernel);
    }
    list.push_back(&kPortableKernel);
    return list;
  }();
  return kernels;
}

const GemmKernel& BestGemmKernel() { return *SupportedGemmKernels().front(); }

void GemvProduct(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, ThreadPool* pool) {
  // Either a row vector times op(B) (m == 1) or op(A) times a column vector (n == 1); both
  // reduce to "dot each row of a matrix with x" or "sum rows of a matrix scaled by x".
  const bool row_vector = m == 1;
  const int64_t len = row_vector ? n : m;
  const float* x = row_vector ? a : b;
  const int64_t x_stride = row_vector ? (trans_a ? lda : 1) : (trans_b ? 1 : ldb);
  std::vector<float> x_copy;
  if (x_stride != 1) {
    x_copy.resize(k);
    for (int64_t i = 0; i < k; ++i) x_copy[i] = x[i * x_stride];
    x = x_copy.data();
  }
  const float* mat = row_vector ? b : a;
  const int64_t ld = row_vector ? ldb : lda;
  // Rows of `mat` are the output positions when they hold the contracted dimension.
  const bool dot_form = row_vector ? trans_b : !trans_a;
  std::vector<float> out(len);
  const bool parallel = len * k >= (int64_t{1} << 16) && len >= 64;
  // The vector width follows the GEMM micro-kernel in use.
  const std::string_view isa = CurrentGemmGeometry().name;
  const bool avx512 = isa == "avx512", avx2 = isa == "avx2";
  auto dot = avx512 ? &DotRowsAvx512 : avx2 ? &DotRowsAvx2 : &DotRowsBaseline;
  auto axpy = avx512 ? &AxpyRowsAvx512 : avx2 ? &AxpyRowsAvx2 : &AxpyRowsBaseline;
  ParallelFor(parallel ? pool : nullptr, len, 64, [&](int64_t begin, int64_t end) {
    if (dot_form) {
      dot(mat + begin * ld, ld, end - begin, x, k, out.data() + begin);
    } else {
      axpy(mat + begin, ld, k, x, end - begin, out.data() + begin);
    }
  });
  const int64_t c_stride = row_vector ? 1 : ldc;
  for (int64_t i = 0; i < len; ++i) {
    float& y = c[i * c_stride];
    y = beta == 0.0f ? alpha * out[i] : alpha * out[i] + beta * y;
  }
}

}  // namespace ovfix::exec
