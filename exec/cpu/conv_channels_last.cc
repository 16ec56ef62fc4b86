#include "exec/cpu/conv_channels_last.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/cpu/avx512_tile.h"
#include "exec/cpu/avx512_transpose.h"

namespace ovfix::exec {
namespace {

// A tile: at most kMr positions (the AVX-512 GEMM's rows) by one panel of kNr maps.
constexpr int kMr = 12, kNr = ChannelsLastWeights::kPanel;
// Below this many multiply-adds a convolution runs on the calling thread.
constexpr int64_t kMinParallelMacs = int64_t{1} << 19;
// The threads take about this many items each.
constexpr int64_t kItemsPerThread = 4;

// Channels [c, c + count) of kernel tap (kh, kw): a run of a depth block, at `offset` floats
// from a position's pixel.
struct Piece {
  int64_t offset = 0, count = 0;
  int32_t kh = 0, kw = 0;
};

// The taps [kh_lo, kh_hi) x [kw_lo, kw_hi) that reach the image for some position of a tile:
// the others read only padding and are skipped.
struct Reach {
  int32_t kh_lo = 0, kh_hi = 0, kw_lo = 0, kw_hi = 0;
  bool Skips(const Piece& p) const {
    return p.kh < kh_lo || p.kh >= kh_hi || p.kw < kw_lo || p.kw >= kw_hi;
  }
};

struct TileArgs {
  const float* a = nullptr;  // the tile's first position: its pixel through tap (0, 0)
  int64_t lda = 0;           // floats from one position's pixel to the next
  const Piece* pieces = nullptr;
  int64_t piece_count = 0;
  Reach reach;
  const float* b = nullptr;  // the B panel of the depth block (64-byte aligned)
  float* c = nullptr;        // the product row of the tile's first position, at the panel
  int64_t ldc = 0;
  bool accumulate = false;  // add to what the product holds (a later depth block)
};

using TileFn = void (*)(const TileArgs&);

// R positions by 32 maps over one depth block; sums of a block are added to the product's as
// the packed GEMM adds them.
template <int R>
struct Tile {
  __attribute__((target("avx512f,fma"))) static void Run(const TileArgs& t) {
    __m512 acc[R][2];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const float* b = t.b;
    const int64_t lda = t.lda;
    for (int64_t p = 0; p < t.piece_count; ++p) {
      const Piece& piece = t.pieces[p];
      const int64_t count = piece.count;
      if (t.reach.Skips(piece)) {
        b += count * kNr;
        continue;
      }
      const float* a = t.a + piece.offset;
      for (int64_t k = 0; k < count; ++k) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) {
          const __m512 ar = _mm512_set1_ps(a[r * lda + k]);
          acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
        }
        b += kNr;
      }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      float* c = t.c + r * t.ldc;
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v) {
        __m512 x = acc[r][v];
        if (t.accumulate) x = _mm512_add_ps(_mm512_loadu_ps(c + 16 * v), x);
        _mm512_storeu_ps(c + 16 * v, x);
      }
    }
  }
};

template <int... R>
constexpr std::array<TileFn, sizeof...(R)> Table(std::integer_sequence<int, R...>) {
  return {&Tile<R + 1>::Run...};
}

constexpr auto kTiles = Table(std::make_integer_sequence<int, kMr>());

// Input row ih (columns [0, count)) into the channels-last buffer at `dst` (its column 0):
// 16 channels by 16 pixels at a time through an in-register transpose.
__attribute__((target("avx512f"))) void CopyRowChannelsLast(const float* image, int64_t channels,
                                                            int64_t plane, int64_t count,
                                                            float* dst) {
  for (int64_t c0 = 0; c0 < channels; c0 += 16) {
    const int64_t lanes = std::min<int64_t>(16, channels - c0);
    const __mmask16 mask = avx512::FirstLanes(lanes);
    for (int64_t w0 = 0; w0 < count; w0 += 16) {
      const int64_t pixels = std::min<int64_t>(16, count - w0);
      __m512 r[16];
      avx512::LoadTransposed(image + c0 * plane + w0, plane, lanes, pixels, r);
      float* out = dst + w0 * channels + c0;
      if (lanes == 16) {
        for (int64_t j = 0; j < pixels; ++j) _mm512_storeu_ps(out + j * channels, r[j]);
      } else {
        for (int64_t j = 0; j < pixels; ++j) _mm512_mask_storeu_ps(out + j * channels, mask, r[j]);
      }
    }
  }
}

}  // namespace

bool ChannelsLastConvApplies(const Spatial3& s) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  const GemmGeometry& g = CurrentGemmGeometry();
  return avx512 && std::string_view(g.name) == "avx512" && g.nr == kNr && s.in[0] == 1 &&
         s.kernel[0] == 1 && s.pad[0] == 0 && s.out[0] == 1 && s.stride[0] == 1 && s.pad[1] >= 0 &&
         s.pad[2] >= 0;
}

ChannelsLastWeights::ChannelsLastWeights(const float* w, int64_t maps, int64_t channels,
                                         const Spatial3& s)
    : maps_(maps), depth_(channels * s.kernel_size()) {
  const int64_t taps = s.kernel_size(), panels = (maps + kPanel - 1) / kPanel;
  const size_t bytes = static_cast<size_t>(panels * kPanel * depth_) * sizeof(float);
  data_.reset(static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
  for (int64_t j = 0; j < panels; ++j) {
    float* panel = data_.get() + j * kPanel * depth_;
    for (int64_t t = 0, k = 0; t < taps; ++t) {
      for (int64_t c = 0; c < channels; ++c, ++k) {
        for (int64_t i = 0; i < kPanel; ++i) {
          const int64_t m = j * kPanel + i;
          panel[k * kPanel + i] = m < maps ? w[(m * channels + c) * taps + t] : 0.0f;
        }
      }
    }
  }
}

void ChannelsLastConv(const ChannelsLastWeights& weights, const float* image, int64_t channels,
                      const Spatial3& s, const GemmEpilogue& epilogue, float* out,
                      ThreadPool* pool) {
  const int64_t in_h = s.in[1], in_w = s.in[2], out_h = s.out[1], out_w = s.out[2];
  const int64_t kernel_h = s.kernel[1], kernel_w = s.kernel[2];
  const int64_t stride_h = s.stride[1], stride_w = s.stride[2];
  const int64_t dilation_h = s.dilation[1], dilation_w = s.dilation[2];
  const int64_t pad_top = s.pad[1], pad_left = s.pad[2];
  const int64_t maps = weights.maps(), depth = weights.depth(), positions = out_h * out_w;
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  const bool parallel = threads > 1 && maps * depth * positions >= kMinParallelMacs;
  ThreadPool* const used = parallel ? pool : nullptr;

  // The padded image covers what the taps reach: padded pixel (y, x) is input pixel
  // (y - pad_top, x - pad_left), or 0.
  const int64_t padded_h = (out_h - 1) * stride_h + (kernel_h - 1) * dilation_h + 1;
  const int64_t padded_w = (out_w - 1) * stride_w + (kernel_w - 1) * dilation_w + 1;
  const int64_t row_floats = padded_w * channels;
  thread_local std::vector<float> padded;
  padded.resize(padded_h * row_floats);
  const int64_t first_column = std::min(pad_left, padded_w);
  const int64_t columns = std::clamp<int64_t>(padded_w - pad_left, 0, in_w);
  float* const buffer = padded.data();
  ParallelFor(padded_h * row_floats >= (int64_t{1} << 16) ? used : nullptr, padded_h, 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t y = begin; y < end; ++y) {
                  float* row = buffer + y * row_floats;
                  const int64_t ih = y - pad_top;
                  if (ih < 0 || ih >= in_h || columns == 0) {
                    std::fill(row, row + row_floats, 0.0f);
                    continue;
                  }
                  std::fill(row, row + first_column * channels, 0.0f);
                  std::fill(row + (first_column + columns) * channels, row + row_floats, 0.0f);
                  CopyRowChannelsLast(image + ih * in_w, channels, in_h * in_w, columns,
                                      row + first_column * channels);
                }
              });

  // The pieces of every depth block, in depth order (kh, kw, c): a block's panel of weights
  // stays in L1 while the tiles of the item go through it.
  const int64_t block = GemmDepthBlock(depth);
  std::vector<Piece> pieces;
  std::vector<int64_t> first_piece = {0};
  for (int64_t k0 = 0; k0 < depth; k0 += block) {
    const int64_t k1 = std::min(depth, k0 + block);
    for (int64_t k = k0; k < k1;) {
      const int64_t tap = k / channels, c = k % channels;
      const int64_t kh = tap / kernel_w, kw = tap % kernel_w;
      const int64_t count = std::min(channels - c, k1 - k);
      pieces.push_back({(kh * dilation_h * padded_w + kw * dilation_w) * channels + c, count,
                        static_cast<int32_t>(kh), static_cast<int32_t>(kw)});
      k += count;
    }
    first_piece.push_back(static_cast<int64_t>(pieces.size()));
  }

  // Tiles: each output row cut into runs of at most kMr positions, as even as can be.
  struct TileSpan {
    int64_t position = 0, pixel = 0;  // first position; its pixel's offset in the buffer
    int rows = 0;
    Reach reach;
  };
  // The taps [lo, hi) through which some output index of [o0, o1) reads inside [0, size).
  auto reaching = [](int64_t o0, int64_t o1, int64_t stride, int64_t dilation, int64_t pad,
                     int64_t size, int64_t kernel) {
    int32_t lo = static_cast<int32_t>(kernel), hi = 0;
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t first = o0 * stride + k * dilation - pad,
                    last = (o1 - 1) * stride + k * dilation - pad;
      if (last >= 0 && first < size) {
        lo = std::min(lo, static_cast<int32_t>(k));
        hi = static_cast<int32_t>(k + 1);
      }
    }
    return std::make_pair(lo, std::max(lo, hi));
  };
  std::vector<TileSpan> tiles;
  const int64_t per_row = (out_w + kMr - 1) / kMr;
  for (int64_t oh = 0; oh < out_h; ++oh) {
    const auto [kh_lo, kh_hi] = reaching(oh, oh + 1, stride_h, dilation_h, pad_top, in_h, kernel_h);
    for (int64_t i = 0, ow = 0; i < per_row; ++i) {
      const int rows = static_cast<int>(out_w / per_row + (i < out_w % per_row ? 1 : 0));
      const auto [kw_lo, kw_hi] =
          reaching(ow, ow + rows, stride_w, dilation_w, pad_left, in_w, kernel_w);
      tiles.push_back({oh * out_w + ow,
                       (oh * stride_h * padded_w + ow * stride_w) * channels,
                       rows,
                       {kh_lo, kh_hi, kw_lo, kw_hi}});
      ow += rows;
    }
  }
  const int64_t tile_count = static_cast<int64_t>(tiles.size());

  // The product, positions by maps: a row holds every panel whole.
  const int64_t panels = (maps + kNr - 1) / kNr, ldp = panels * kNr;
  thread_local std::vector<float> product;
  product.resize(positions * ldp);
  float* const result = product.data();
  // Items: a panel of maps for a run of tiles.
  const int64_t runs =
      parallel
          ? std::clamp<int64_t>((kItemsPerThread * threads + panels - 1) / panels, 1, tile_count)
          : 1;
  ParallelForEach(used, panels * runs, [&](int64_t item) {
    // A thread's items are mostly runs of its own panels: it streams those weights alone.
    const int64_t panel = item / runs, run = item % runs;
    const int64_t t0 = tile_count * run / runs, t1 = tile_count * (run + 1) / runs;
    if (t0 == t1) return;
    TileArgs args;
    args.lda = stride_w * channels;
    args.ldc = ldp;
    for (int64_t k0 = 0, b = 0; k0 < depth; k0 += block, ++b) {
      args.pieces = pieces.data() + first_piece[b];
      args.piece_count = first_piece[b + 1] - first_piece[b];
      args.b = weights.panel(panel) + k0 * kNr;
      args.accumulate = k0 > 0;
      for (int64_t t = t0; t < t1; ++t) {
        args.a = buffer + tiles[t].pixel;
        args.c = result + tiles[t].position * ldp + panel * kNr;
        args.reach = tiles[t].reach;
        kTiles[tiles[t].rows - 1](args);
      }
    }
    const int64_t p0 = tiles[t0].position;
    const int64_t p1 = t1 < tile_count ? tiles[t1].position : positions;
    TransposeAddBiasMaps(result + p0 * ldp, ldp, p1 - p0, panel * kNr,
                         std::min(maps, (panel + 1) * kNr), epilogue, out + p0, positions);
  });
}

namespace {

// TransposeAddBiasMaps 16 maps by 16 positions at a time through an in-register transpose.
__attribute__((target("avx512f"))) void TransposeAddBiasAvx512(const float* src, int64_t lds,
                                                               int64_t rows, int64_t m0, int64_t m1,
                                                               const GemmEpilogue& epilogue,
                                                               float* dst, int64_t ldd) {
  const float* bias = epilogue.row_bias;
  const bool clamp = epilogue.clamp, hard_swish = epilogue.hard_swish;
  const __m512 lo = _mm512_set1_ps(epilogue.clamp_min), hi = _mm512_set1_ps(epilogue.clamp_max);
  const __m512 hs_alpha = _mm512_set1_ps(epilogue.hard_swish_alpha);
  const __m512 hs_beta = _mm512_set1_ps(epilogue.hard_swish_beta);
  for (int64_t m = m0; m < m1; m += 16) {
    const int64_t maps = std::min<int64_t>(16, m1 - m);
    for (int64_t i = 0; i < rows; i += 16) {
      const __mmask16 mask = avx512::FirstLanes(rows - i);
      __m512 r[16];
      avx512::LoadTransposed(src + i * lds + m, lds, rows - i, maps, r);
      for (int64_t j = 0; j < maps; ++j) {
        __m512 x = _mm512_add_ps(r[j], _mm512_set1_ps(bias != nullptr ? bias[m + j] : 0.0f));
        if (clamp) x = avx512::Clamp(x, lo, hi);  // NaN stays
        if (hard_swish) x = avx512::HardSwish(x, hs_alpha, hs_beta);
        _mm512_mask_storeu_ps(dst + (m + j) * ldd + i, mask, x);
      }
    }
  }
}

}  // namespace

void TransposeAddBiasMaps(const float* src, int64_t lds, int64_t rows, int64_t m0, int64_t m1,
                          const GemmEpilogue& epilogue, float* dst, int64_t ldd) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) {
    TransposeAddBiasAvx512(src, lds, rows, m0, m1, epilogue, dst, ldd);
    return;
  }
  for (int64_t m = m0; m < m1; ++m) {
    const float b = epilogue.row_bias != nullptr ? epilogue.row_bias[m] : 0.0f;
    for (int64_t i = 0; i < rows; ++i) dst[m * ldd + i] = epilogue.Activate(src[i * lds + m] + b);
  }
}

}  // namespace ovfix::exec
