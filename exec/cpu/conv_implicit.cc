#include "exec/cpu/conv_implicit.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/cpu/avx512_tile.h"

namespace ovfix::exec {
namespace {

// The register tiles of gemm_kernels.cc (maps x virtual columns): the weights come packed for
// the one in use.
constexpr int kAvx512Mr = 12, kAvx512Nr = 32;
constexpr int kAvx2Mr = 6, kAvx2Nr = 16;
// A band holds about this many virtual columns, and at most this many bytes of padded image.
constexpr int64_t kBandColumns = 4096;
constexpr int64_t kMaxBandBytes = int64_t{2} << 20;
// Tiles (of nr virtual columns) whose output stays in cache across the depth blocks.
constexpr int64_t kTilesPerBlock = 12;
// Below this many multiply-adds a convolution runs on the calling thread.
constexpr int64_t kMinParallelMacs = int64_t{1} << 19;
// Depth blocks of the weights at most this deep: each block ends in a round trip of the
// tile's sums through memory. Measured (3x3 convolutions of 64 to 384 channels, one and two
// threads): 1200 beats the GEMM's 256 by 4-8% and 640 by up to 4%; 3600 is slower again.
constexpr int64_t kMaxDepthBlock = 1200;
// A band shared by threads holds at least this many tiles' worth of columns; the threads
// take about this many items each.
constexpr int64_t kMinBandTiles = 4;
constexpr int64_t kItemsPerThread = 4;
// Output rows at least this wide: a tile (32 columns at most) then spans at most 6 rows
// (pieces of row).
constexpr int64_t kMinWidth = 8;
constexpr int kMaxSegments = 6;
// With bands bigger than this (a half of L2) the tiles prefetch the rows they read
// kPrefetchAhead steps ahead: the offsets jump from channel to channel, which the hardware
// does not follow. Measured on two threads: 7-12% on a 192-channel 128x128 layer (2 MB
// bands), 4% on 384 channels at 64x64 (1 MB), 1% slower where the band stays in cache (64
// channels at 56x56, 133 KB).
constexpr int64_t kPrefetchBandBytes = int64_t{1} << 19;
constexpr int kPrefetchAhead = 24;

// The columns of a tile that go to one output row: column i goes to position dst + i of each
// map when bit i of `columns` is set.
struct Segment {
  int64_t dst = 0;
  uint32_t columns = 0;
};

// One tile of a band: virtual columns [start, start + width) and where they are stored.
struct TileMap {
  int64_t start = 0;
  int width = 0;
  int segments = 0;
  Segment segment[kMaxSegments];
};

struct ImplicitArgs {
  const float* a = nullptr;          // packed weights: kc steps of mr floats
  const float* b = nullptr;          // band buffer at the tile's first virtual column
  const int32_t* offsets = nullptr;  // kc column-matrix rows: their offsets from b
  int64_t kc = 0;
  float* c = nullptr;  // map 0 of the panel in Y
  int64_t ldc = 0;     // floats from one map to the next
  const TileMap* map = nullptr;
  const float* bias = nullptr;  // per map, or null
  bool accumulate = false;      // add to what Y holds (a later depth block)
  FusedActivation activation;   // on the last depth block only
};

using ImplicitFn = void (*)(const ImplicitArgs&);

// `row` + offset floats, as an address only: lanes a mask leaves out are never touched, and
// the first of them may lie before the row.
inline float* At(float* row, int64_t offset) {
  return reinterpret_cast<float*>(reinterpret_cast<uintptr_t>(row) +
                                  static_cast<uintptr_t>(offset * int64_t{sizeof(float)}));
}

// The lanes of vector v (16 columns) that a segment covers.
inline __mmask16 Lanes(const Segment& seg, int v) {
  return static_cast<__mmask16>(seg.columns >> (16 * v));
}

// R maps by 16 * V virtual columns. The sums run over k in the order of the packed GEMM's
// tile and the epilogue rounds as its epilogue does, so the result is the im2col path's.
template <int R, int V, bool kPrefetch>
struct Avx512Tile {
  __attribute__((target("avx512f,fma"))) static void Run(const ImplicitArgs& t) {
    __m512 acc[R][V];
    const float* const b = t.b;
    const int32_t* const offsets = t.offsets;
    avx512::Accumulate<R, V, false>(acc, t.a, kAvx512Mr, t.kc, [b, offsets](int64_t k) {
      if (kPrefetch) {
        const float* ahead = b + offsets[k + kPrefetchAhead];
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ahead + 16 * V), _MM_HINT_T0);
      }
      return b + offsets[k];
    });
    const TileMap& map = *t.map;
    const __m512 lo = _mm512_set1_ps(t.activation.clamp_min),
                 hi = _mm512_set1_ps(t.activation.clamp_max);
    const __m512 hs_alpha = _mm512_set1_ps(t.activation.hard_swish_alpha),
                 hs_beta = _mm512_set1_ps(t.activation.hard_swish_beta);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      float* row = t.c + r * t.ldc;
      const __m512 bias = _mm512_set1_ps(t.bias != nullptr ? t.bias[r] : 0.0f);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) {
        __m512 x = _mm512_add_ps(acc[r][v], bias);
        if (t.accumulate) {
          __m512 held = _mm512_setzero_ps();
          for (int s = 0; s < map.segments; ++s) {
            const Segment& seg = map.segment[s];
            held = _mm512_mask_loadu_ps(held, Lanes(seg, v), At(row, seg.dst + 16 * v));
          }
          x = _mm512_add_ps(held, x);
        }
        if (t.activation.clamp) x = avx512::Clamp(x, lo, hi);
        if (t.activation.hard_swish) x = avx512::HardSwish(x, hs_alpha, hs_beta);
        for (int s = 0; s < map.segments; ++s) {
          const Segment& seg = map.segment[s];
          _mm512_mask_storeu_ps(At(row, seg.dst + 16 * v), Lanes(seg, v), x);
        }
      }
    }
  }
};

// The lanes of vector v (8 columns) that a segment covers, as AVX2's masked loads and stores
// take them: every bit of lane i set when column 8 * v + i is the segment's.
__attribute__((target("avx2"))) inline __m256i Avx2Lanes(const Segment& seg, int v) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i columns = _mm256_set1_epi32(static_cast<int>(seg.columns >> (8 * v)));
  return _mm256_cmpeq_epi32(_mm256_and_si256(columns, bit), bit);
}

// R maps by 8 * V virtual columns: Avx512Tile for AVX2 + FMA, the sums and the epilogue as
// gemm_kernels.cc's AVX2 tile has them.
template <int R, int V, bool kPrefetch>
struct Avx2Tile {
  __attribute__((target("avx2,fma"))) static void Run(const ImplicitArgs& t) {
    __m256 acc[R][V];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
    }
    const float* a = t.a;
    for (int64_t k = 0; k < t.kc; ++k) {
      const float* bk = t.b + t.offsets[k];
      if (kPrefetch) {
        const float* ahead = t.b + t.offsets[k + kPrefetchAhead];
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ahead + 8 * V), _MM_HINT_T0);
      }
      __m256 bv[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) bv[v] = _mm256_loadu_ps(bk + 8 * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 ar = _mm256_broadcast_ss(a + r);
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
      }
      a += kAvx2Mr;
    }
    const TileMap& map = *t.map;
    const __m256 lo = _mm256_set1_ps(t.activation.clamp_min),
                 hi = _mm256_set1_ps(t.activation.clamp_max);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* row = t.c + r * t.ldc;
      const __m256 bias = _mm256_set1_ps(t.bias != nullptr ? t.bias[r] : 0.0f);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) {
        __m256 x = _mm256_add_ps(acc[r][v], bias);
        if (t.accumulate) {
          // Lanes a mask leaves out load as zero: the segments' parts add up to the whole.
          __m256 held = _mm256_setzero_ps();
          for (int s = 0; s < map.segments; ++s) {
            const Segment& seg = map.segment[s];
            held =
                _mm256_or_ps(held, _mm256_maskload_ps(At(row, seg.dst + 8 * v), Avx2Lanes(seg, v)));
          }
          x = _mm256_add_ps(held, x);
        }
        if (t.activation.clamp) x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
        if (t.activation.hard_swish) {
          __m256 product = _mm256_mul_ps(_mm256_set1_ps(t.activation.hard_swish_alpha), x);
          __asm__("" : "+x"(product));  // no contraction into a multiply-add
          const __m256 gate = _mm256_add_ps(product, _mm256_set1_ps(t.activation.hard_swish_beta));
          x = _mm256_mul_ps(
              x, _mm256_min_ps(_mm256_max_ps(gate, _mm256_setzero_ps()), _mm256_set1_ps(1.0f)));
        }
        for (int s = 0; s < map.segments; ++s) {
          const Segment& seg = map.segment[s];
          // A masked store costs more than a plain one (on AMD's cores many times more): whole
          // vectors go plainly.
          if (((seg.columns >> (8 * v)) & 0xFF) == 0xFF) {
            _mm256_storeu_ps(At(row, seg.dst + 8 * v), x);
          } else {
            _mm256_maskstore_ps(At(row, seg.dst + 8 * v), Avx2Lanes(seg, v), x);
          }
        }
      }
    }
  }
};

template <template <int, int, bool> class Tile, int V, bool kPrefetch, int... R>
constexpr std::array<ImplicitFn, sizeof...(R)> Table(std::integer_sequence<int, R...>) {
  return {&Tile<R + 1, V, kPrefetch>::Run...};
}

// The tiles of one instruction set by rows - 1: `half` for tiles of at most half the
// columns, `full` for wider ones; with prefetching or without.
struct Kernels {
  std::string_view gemm;  // the GEMM micro-kernel whose packing the weights have
  int mr, nr;
  const ImplicitFn *half, *full, *half_prefetch, *full_prefetch;
};

template <template <int, int, bool> class Tile, int kRows>
struct Tables {
  static constexpr auto half = Table<Tile, 1, false>(std::make_integer_sequence<int, kRows>());
  static constexpr auto full = Table<Tile, 2, false>(std::make_integer_sequence<int, kRows>());
  static constexpr auto half_prefetch =
      Table<Tile, 1, true>(std::make_integer_sequence<int, kRows>());
  static constexpr auto full_prefetch =
      Table<Tile, 2, true>(std::make_integer_sequence<int, kRows>());
};
using Avx512Tables = Tables<Avx512Tile, kAvx512Mr>;
using Avx2Tables = Tables<Avx2Tile, kAvx2Mr>;

constexpr Kernels kAvx512Kernels{"avx512",
                                 kAvx512Mr,
                                 kAvx512Nr,
                                 Avx512Tables::half.data(),
                                 Avx512Tables::full.data(),
                                 Avx512Tables::half_prefetch.data(),
                                 Avx512Tables::full_prefetch.data()};
constexpr Kernels kAvx2Kernels{"avx2",
                               kAvx2Mr,
                               kAvx2Nr,
                               Avx2Tables::half.data(),
                               Avx2Tables::full.data(),
                               Avx2Tables::half_prefetch.data(),
                               Avx2Tables::full_prefetch.data()};

// The tiles for the GEMM micro-kernel in use (the weights are packed for it), or null.
const Kernels* CurrentKernels() {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const GemmGeometry& g = CurrentGemmGeometry();
  for (const auto& [kernels, supported] :
       {std::pair{&kAvx512Kernels, avx512}, std::pair{&kAvx2Kernels, avx2}}) {
    if (supported && g.name == kernels->gemm && g.mr == kernels->mr && g.nr == kernels->nr) {
      return kernels;
    }
  }
  return nullptr;
}

// Where the virtual columns [start, start + width) of a band whose first output row is oh0
// go: runs of positions within one output row.
TileMap MapTile(int64_t start, int width, int64_t oh0, int64_t padded_width, int64_t out_width) {
  TileMap map;
  map.start = start;
  map.width = width;
  for (int i = 0; i < width; ++i) {
    const int64_t column = start + i;
    const int64_t row = column / padded_width, ow = column - row * padded_width;
    if (ow >= out_width) continue;
    const int64_t q = (oh0 + row) * out_width + ow;
    if (map.segments == 0 || q - i != map.segment[map.segments - 1].dst) {
      Segment& seg = map.segment[map.segments++];
      seg.dst = q - i;
    }
    Segment& seg = map.segment[map.segments - 1];
    seg.columns |= 1u << i;
  }
  return map;
}

}  // namespace

namespace {

// Whether the pool's threads should share the convolution (by bands of output rows).
bool Parallel(const Spatial3& s, int64_t maps, int64_t depth, ThreadPool* pool) {
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  return threads > 1 && maps * depth * s.out_size() >= kMinParallelMacs;
}

}  // namespace

bool ImplicitConvApplies(const Spatial3& s, int64_t depth) {
  // A band of one output row (the least ImplicitConv makes) must keep its offsets in 32 bits.
  const int64_t channels = depth / std::max<int64_t>(1, s.kernel_size());
  const int64_t padded_w = s.out[2] + (s.kernel[2] - 1) * s.dilation[2] / s.stride[2];
  const int64_t band_rows = 2 + (s.kernel[1] - 1) * s.dilation[1] / s.stride[1];
  const bool small =
      channels * s.stride[1] * s.stride[2] * padded_w * band_rows < (int64_t{1} << 30);
  return CurrentKernels() != nullptr && small && s.in[0] == 1 && s.kernel[0] == 1 &&
         s.pad[0] == 0 && s.out[0] == 1 && s.stride[0] == 1 && s.out[2] >= kMinWidth;
}

int64_t ImplicitConvDepthBlock(int64_t depth) {
  const int64_t blocks = std::max<int64_t>(1, (depth + kMaxDepthBlock - 1) / kMaxDepthBlock);
  return (depth + blocks - 1) / blocks;
}

void ImplicitConv(const PackedA& weights, const float* image, int64_t channels, const Spatial3& s,
                  const GemmEpilogue& epilogue, float* out, ThreadPool* pool) {
  const int64_t in_h = s.in[1], in_w = s.in[2], out_h = s.out[1], out_w = s.out[2];
  const int64_t kernel_h = s.kernel[1], kernel_w = s.kernel[2];
  const int64_t dilation_h = s.dilation[1], dilation_w = s.dilation[2];
  const int64_t stride_h = s.stride[1], stride_w = s.stride[2];
  const int64_t pad_top = s.pad[1], pad_left = s.pad[2];
  const Kernels& kernels = *CurrentKernels();
  const int mr = kernels.mr, nr = kernels.nr;
  // With strides the band holds stride_h x stride_w phase planes per channel: phase (a, b)
  // has the input pixels (y * stride_h + a, x * stride_w + b), so that every kernel tap reads
  // one phase plane with unit strides.
  const int64_t phases = stride_h * stride_w;
  const int64_t padded_w = out_w + (kernel_w - 1) * dilation_w / stride_w;
  const int64_t halo = (kernel_h - 1) * dilation_h / stride_h;
  const int64_t maps = weights.rows(), depth = weights.depth(), out_size = out_h * out_w;
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  const bool parallel = Parallel(s, maps, depth, pool);

  // Output rows per band: enough columns to fill the tiles, a few bands per thread (taken as
  // threads come free) while a band keeps a few tiles' worth of columns, a padded band that
  // stays in cache.
  int64_t rows = std::max<int64_t>(1, (kBandColumns + padded_w - 1) / padded_w);
  const int64_t min_rows = (kMinBandTiles * nr + padded_w - 1) / padded_w;
  if (parallel) rows = std::min(rows, std::max(min_rows, out_h / (kItemsPerThread * threads)));
  rows = std::min(
      rows, std::max<int64_t>(
                1, kMaxBandBytes / (channels * phases * padded_w * int64_t{sizeof(float)}) - halo));
  rows = std::min(rows, out_h);
  const int64_t bands = (out_h + rows - 1) / rows;
  const int64_t panels = (maps + mr - 1) / mr;
  // Too few bands to go round (small maps of late layers): the threads split the maps too,
  // each copying a band once for its run of items.
  const int64_t groups =
      parallel ? std::clamp<int64_t>((kItemsPerThread * threads + bands - 1) / bands, 1, panels)
               : 1;
  const int64_t channel_stride = (rows + halo) * padded_w;
  // The last tile reads up to nr virtual columns past the band's end.
  const size_t buffer_size =
      static_cast<size_t>(channels * phases * channel_stride + padded_w + 2 * nr);

  // Row k = (c, kh, kw) of the column matrix: where it starts in the band.
  // Phase rows and columns some tap reads (the others are not filled).
  std::vector<uint8_t> row_used(stride_h, 0), column_used(stride_w, 0);
  // (Padded: the prefetch reads kPrefetchAhead past the last.)
  std::vector<int32_t> offsets(depth + kPrefetchAhead, 0);
  for (int64_t c = 0, k = 0; c < channels; ++c) {
    for (int64_t kh = 0; kh < kernel_h; ++kh) {
      const int64_t a = kh * dilation_h % stride_h, shift_h = kh * dilation_h / stride_h;
      row_used[a] = 1;
      for (int64_t kw = 0; kw < kernel_w; ++kw, ++k) {
        const int64_t b = kw * dilation_w % stride_w, shift_w = kw * dilation_w / stride_w;
        column_used[b] = 1;
        offsets[k] = static_cast<int32_t>(((c * stride_h + a) * stride_w + b) * channel_stride +
                                          shift_h * padded_w + shift_w);
      }
    }
  }

  const int64_t depth_block = weights.depth_block();
  // Copies band `band` of the padded input into `buffer` and maps its tiles.
  auto fill_band = [&](int64_t band, float* buffer, std::vector<TileMap>& tiles) {
    const int64_t oh0 = band * rows, band_rows = std::min(rows, out_h - oh0);
    // The padded input rows of the band (of each phase plane a tap reads).
    for (int64_t c = 0; c < channels; ++c) {
      const float* plane = image + c * in_h * in_w;
      for (int64_t a = 0; a < stride_h; ++a) {
        if (!row_used[a]) continue;
        for (int64_t b = 0; b < stride_w; ++b) {
          if (!column_used[b]) continue;
          float* phase = buffer + ((c * stride_h + a) * stride_w + b) * channel_stride;
          // Phase column j reads input column j * stride_w + b - pad_left: inside for [lo, hi).
          const int64_t lo =
              std::min(padded_w, std::max<int64_t>(0, pad_left - b + stride_w - 1) / stride_w);
          const int64_t hi =
              std::clamp<int64_t>((in_w + pad_left - b + stride_w - 1) / stride_w, lo, padded_w);
          for (int64_t r = 0; r < band_rows + halo; ++r) {
            float* dst = phase + r * padded_w;
            const int64_t ih = (oh0 + r) * stride_h + a - pad_top;
            if (ih < 0 || ih >= in_h) {
              std::memset(dst, 0, padded_w * sizeof(float));
              continue;
            }
            // Input column of phase column lo: the first inside.
            const float* src = plane + ih * in_w + (lo * stride_w + b - pad_left);
            std::memset(dst, 0, lo * sizeof(float));
            if (stride_w == 1) {
              std::memcpy(dst + lo, src, (hi - lo) * sizeof(float));
            } else {
              GatherStrided(src, stride_w, hi - lo, dst + lo);
            }
            std::memset(dst + hi, 0, (padded_w - hi) * sizeof(float));
          }
        }
      }
    }
    const int64_t columns = (band_rows - 1) * padded_w + out_w;
    tiles.clear();
    for (int64_t start = 0; start < columns; start += nr) {
      tiles.push_back(MapTile(start, static_cast<int>(std::min<int64_t>(nr, columns - start)), oh0,
                              padded_w, out_w));
    }
  };
  const bool prefetch = buffer_size * sizeof(float) > kPrefetchBandBytes;
  const ImplicitFn* half = prefetch ? kernels.half_prefetch : kernels.half;
  const ImplicitFn* full = prefetch ? kernels.full_prefetch : kernels.full;
  // Map panels [p0, p1) over a filled band.
  auto run_band = [&](const float* buffer, const std::vector<TileMap>& tiles, int64_t p0,
                      int64_t p1) {
    const int64_t count = static_cast<int64_t>(tiles.size());
    ImplicitArgs args;
    args.ldc = out_size;
    for (int64_t j0 = 0; j0 < count; j0 += kTilesPerBlock) {
      const int64_t j1 = std::min(count, j0 + kTilesPerBlock);
      for (int64_t k0 = 0; k0 < depth; k0 += depth_block) {
        const int64_t kc = std::min(depth_block, depth - k0);
        const bool last = k0 + kc >= depth;
        args.offsets = offsets.data() + k0;
        args.kc = kc;
        args.accumulate = k0 > 0;
        args.activation = last ? FusedActivation(epilogue) : FusedActivation();
        for (int64_t p = p0; p < p1; ++p) {
          const int rows_here = static_cast<int>(std::min<int64_t>(mr, maps - p * mr));
          args.a = weights.panel(k0, kc, p);
          args.c = out + p * mr * out_size;
          args.bias =
              k0 == 0 && epilogue.row_bias != nullptr ? epilogue.row_bias + p * mr : nullptr;
          for (int64_t j = j0; j < j1; ++j) {
            args.b = buffer + tiles[j].start;
            args.map = &tiles[j];
            (tiles[j].width > nr / 2 ? full : half)[rows_here - 1](args);
          }
        }
      }
    }
  };

  // Per thread: a padded band, where the tiles of a band go, and which band of which call it
  // holds.
  struct Scratch {
    std::vector<float> buffer;
    std::vector<TileMap> tiles;
    uint64_t call = 0;
    int64_t band = -1;
  };
  thread_local Scratch scratch;
  static std::atomic<uint64_t> calls{0};
  const uint64_t call = ++calls;
  ParallelForEach(parallel ? pool : nullptr, bands * groups, [&](int64_t item) {
    Scratch& mine = scratch;
    const int64_t band = item / groups, group = item % groups;
    if (mine.call != call || mine.band != band) {
      if (mine.buffer.size() < buffer_size) mine.buffer.assign(buffer_size, 0.0f);
      fill_band(band, mine.buffer.data(), mine.tiles);
      mine.call = call;
      mine.band = band;
    }
    run_band(mine.buffer.data(), mine.tiles, panels * group / groups,
             panels * (group + 1) / groups);
  });
}

}  // namespace ovfix::exec
