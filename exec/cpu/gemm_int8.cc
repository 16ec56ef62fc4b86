#include "exec/cpu/gemm_int8.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace ovfix::exec {
namespace {

// ---- portable: 4 rows x 8 columns ----
void PortableTile(int64_t pairs, const int16_t* a, const int16_t* b, int32_t* c, int64_t ldc,
                  int rows, int cols) {
  constexpr int kMr = 4, kNr = 8;
  int32_t acc[kMr][kNr] = {};
  for (int64_t p = 0; p < pairs; ++p, a += kMr * 2, b += kNr * 2) {
    for (int r = 0; r < kMr; ++r) {
      for (int j = 0; j < kNr; ++j) {
        acc[r][j] += int32_t{a[2 * r]} * b[2 * j] + int32_t{a[2 * r + 1]} * b[2 * j + 1];
      }
    }
  }
  for (int r = 0; r < rows; ++r) std::memcpy(c + r * ldc, acc[r], cols * sizeof(int32_t));
}

// ---- AVX2: 6 rows x 16 columns, 12 ymm accumulators ----
__attribute__((target("avx2"))) void Avx2Tile(int64_t pairs, const int16_t* a, const int16_t* b,
                                              int32_t* c, int64_t ldc, int rows, int cols) {
  constexpr int kMr = 6, kNr = 16;
  __m256i acc[kMr][2];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t p = 0; p < pairs; ++p, a += kMr * 2, b += kNr * 2) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + 2 * r, sizeof(pair));
      const __m256i ar = _mm256_set1_epi32(pair);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(ar, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(ar, b1));
    }
  }
  for (int r = 0; r < rows; ++r) {
    int32_t* row = c + r * ldc;
    if (cols == kNr) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), acc[r][0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + 8), acc[r][1]);
    } else {
      alignas(32) int32_t out[kNr];
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), acc[r][0]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), acc[r][1]);
      std::memcpy(row, out, cols * sizeof(int32_t));
    }
  }
}

// ---- AVX-512: 8 rows x 32 columns, 16 zmm accumulators; VNNI fuses the add ----
#define OVFIX_AVX512_TILE(NAME, TARGET, MULTIPLY_ADD)                                          \
  __attribute__((target(TARGET))) void NAME(int64_t pairs, const int16_t* a, const int16_t* b, \
                                            int32_t* c, int64_t ldc, int rows, int cols) {     \
    constexpr int kMr = 8, kNr = 32;                                                           \
    __m512i acc[kMr][2];                                                                       \
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();              \
    for (int64_t p = 0; p < pairs; ++p, a += kMr * 2, b += kNr * 2) {                          \
      const __m512i b0 = _mm512_loadu_si512(b);                                                \
      const __m512i b1 = _mm512_loadu_si512(b + 32);                                           \
      _Pragma("GCC unroll 8") for (int r = 0; r < kMr; ++r) {                                  \
        int32_t pair;                                                                          \
        std::memcpy(&pair, a + 2 * r, sizeof(pair));                                           \
        const __m512i ar = _mm512_set1_epi32(pair);                                            \
        acc[r][0] = MULTIPLY_ADD(acc[r][0], ar, b0);                                           \
        acc[r][1] = MULTIPLY_ADD(acc[r][1], ar, b1);                                           \
      }                                                                                        \
    }                                                                                          \
    const __mmask16 low = cols >= 16 ? 0xFFFF : (1u << cols) - 1;                              \
    const __mmask16 high = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (1u << (cols - 16)) - 1;     \
    for (int r = 0; r < rows; ++r) {                                                           \
      _mm512_mask_storeu_epi32(c + r * ldc, low, acc[r][0]);                                   \
      _mm512_mask_storeu_epi32(c + r * ldc + 16, high, acc[r][1]);                             \
    }                                                                                          \
  }

#define OVFIX_MADD_BW(acc, a, b) _mm512_add_epi32(acc, _mm512_madd_epi16(a, b))
#define OVFIX_MADD_VNNI(acc, a, b) _mm512_dpwssd_epi32(acc, a, b)
OVFIX_AVX512_TILE(Avx512BwTile, "avx512f,avx512bw", OVFIX_MADD_BW)
OVFIX_AVX512_TILE(Avx512VnniTile, "avx512f,avx512bw,avx512vnni", OVFIX_MADD_VNNI)
#undef OVFIX_MADD_BW
#undef OVFIX_MADD_VNNI
#undef OVFIX_AVX512_TILE

constexpr QuantGemmKernel kAvx512Vnni = {"avx512vnni", 8, 32, Avx512VnniTile};
constexpr QuantGemmKernel kAvx512Bw = {"avx512bw", 8, 32, Avx512BwTile};
constexpr QuantGemmKernel kAvx2 = {"avx2", 6, 16, Avx2Tile};
constexpr QuantGemmKernel kPortable = {"portable", 4, 8, PortableTile};

const std::vector<const QuantGemmKernel*>& Supported() {
  static const std::vector<const QuantGemmKernel*> list = [] {
    std::vector<const QuantGemmKernel*> l;
    __builtin_cpu_init();
    const bool bw = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    if (bw && __builtin_cpu_supports("avx512vnni")) l.push_back(&kAvx512Vnni);
    if (bw) l.push_back(&kAvx512Bw);
    if (__builtin_cpu_supports("avx2")) l.push_back(&kAvx2);
    l.push_back(&kPortable);
    return l;
  }();
  return list;
}

const QuantGemmKernel*& Current() {
  static const QuantGemmKernel* current = Supported().front();
  return current;
}

}  // namespace

const QuantGemmKernel& CurrentQuantGemmKernel() { return *Current(); }

std::vector<std::string> AvailableQuantGemmKernels() {
  std::vector<std::string> names;
  for (const QuantGemmKernel* k : Supported()) names.push_back(k->name);
  return names;
}

bool SelectQuantGemmKernelForTesting(const std::string& name) {
  for (const QuantGemmKernel* k : Supported()) {
    if (name == k->name) {
      Current() = k;
      return true;
    }
  }
  return false;
}

void PackedQuantA::Reset(int64_t rows, int64_t depth) {
  mr_ = CurrentQuantGemmKernel().mr;
  rows_ = rows;
  pairs_ = (depth + 1) / 2;
  data_.assign((rows + mr_ - 1) / mr_ * panel_size(), 0);
}

void QuantGemmBlock(const PackedQuantA& a, const int16_t* b, int64_t columns, int32_t* c,
                    int64_t ldc) {
  const QuantGemmKernel& kernel = CurrentQuantGemmKernel();
  const int64_t pairs = a.pairs();
  const int64_t b_panel = pairs * kernel.nr * 2;
  for (int64_t n0 = 0; n0 < columns; n0 += kernel.nr) {
    const int cols = static_cast<int>(std::min<int64_t>(kernel.nr, columns - n0));
    const int16_t* panel = b + n0 / kernel.nr * b_panel;
    for (int64_t m0 = 0; m0 < a.rows(); m0 += kernel.mr) {
      const int rows = static_cast<int>(std::min<int64_t>(kernel.mr, a.rows() - m0));
      kernel.tile(pairs, a.panel(m0 / kernel.mr), panel, c + m0 * ldc + n0, ldc, rows, cols);
    }
  }
}

void QuantGemm(const PackedQuantA& a, const int16_t* b, int64_t columns, int32_t* c, int64_t ldc,
               ThreadPool* pool) {
  const QuantGemmKernel& kernel = CurrentQuantGemmKernel();
  const int64_t row_panels = (a.rows() + kernel.mr - 1) / kernel.mr;
  const int64_t column_panels = (columns + kernel.nr - 1) / kernel.nr;
  const int64_t b_panel = a.pairs() * kernel.nr * 2;
  // Work items: one column panel against every row panel, so B is read once per item.
  const int64_t min_items =
      std::max<int64_t>(1, 4096 / std::max<int64_t>(1, row_panels * a.pairs()));
  ParallelFor(pool, column_panels, min_items, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n0 = p * kernel.nr;
      const int cols = static_cast<int>(std::min<int64_t>(kernel.nr, columns - n0));
      for (int64_t r = 0; r < row_panels; ++r) {
        const int64_t m0 = r * kernel.mr;
        const int rows = static_cast<int>(std::min<int64_t>(kernel.mr, a.rows() - m0));
        kernel.tile(a.pairs(), a.panel(r), b + p * b_panel, c + m0 * ldc + n0, ldc, rows, cols);
      }
    }
  });
}

}  // namespace ovfix::exec
