#include "exec/cpu/conv_channels_last.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/cpu/avx2_transpose.h"
#include "exec/cpu/avx512_tile.h"
#include "exec/cpu/avx512_transpose.h"

namespace ovfix::exec {
namespace {

// A tile: at most mr positions (the GEMM micro-kernel's rows) by one panel of nr maps, for the
// micro-kernel in use (the weights' panels are nr maps wide).
constexpr int kAvx512Mr = 12, kAvx512Nr = 32;
constexpr int kAvx2Mr = 6, kAvx2Nr = 16;
constexpr int kMaxMr = kAvx512Mr;
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
  // Each position's pixel through tap (0, 0) (a tile's positions may span output rows).
  std::array<const float*, kMaxMr> a{};
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
struct Avx512Tile {
  __attribute__((target("avx512f,fma"))) static void Run(const TileArgs& t) {
    __m512 acc[R][2];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const float* b = t.b;
    for (int64_t p = 0; p < t.piece_count; ++p) {
      const Piece& piece = t.pieces[p];
      const int64_t count = piece.count;
      if (t.reach.Skips(piece)) {
        b += count * kAvx512Nr;
        continue;
      }
      const float* a[R];
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) a[r] = t.a[r] + piece.offset;
      for (int64_t k = 0; k < count; ++k) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) {
          const __m512 ar = _mm512_set1_ps(a[r][k]);
          acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
        }
        b += kAvx512Nr;
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

// R positions by 16 maps: Avx512Tile for AVX2 + FMA.
template <int R>
struct Avx2Tile {
  __attribute__((target("avx2,fma"))) static void Run(const TileArgs& t) {
    __m256 acc[R][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    const float* b = t.b;
    for (int64_t p = 0; p < t.piece_count; ++p) {
      const Piece& piece = t.pieces[p];
      const int64_t count = piece.count;
      if (t.reach.Skips(piece)) {
        b += count * kAvx2Nr;
        continue;
      }
      const float* a[R];
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) a[r] = t.a[r] + piece.offset;
      for (int64_t k = 0; k < count; ++k) {
        const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
          const __m256 ar = _mm256_broadcast_ss(a[r] + k);
          acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
        }
        b += kAvx2Nr;
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      float* c = t.c + r * t.ldc;
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v) {
        __m256 x = acc[r][v];
        if (t.accumulate) x = _mm256_add_ps(_mm256_loadu_ps(c + 8 * v), x);
        _mm256_storeu_ps(c + 8 * v, x);
      }
    }
  }
};

template <template <int> class Tile, int... R>
constexpr std::array<TileFn, sizeof...(R)> Table(std::integer_sequence<int, R...>) {
  return {&Tile<R + 1>::Run...};
}

constexpr auto kAvx512Tiles = Table<Avx512Tile>(std::make_integer_sequence<int, kAvx512Mr>());
constexpr auto kAvx2Tiles = Table<Avx2Tile>(std::make_integer_sequence<int, kAvx2Mr>());

// Input row ih (columns [0, count)) into the channels-last buffer at `dst` (its column 0):
// 16 channels by 16 pixels at a time through an in-register transpose.
__attribute__((target("avx512f"))) void CopyRowChannelsLastAvx512(const float* image,
                                                                  int64_t channels, int64_t plane,
                                                                  int64_t count, float* dst) {
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

// CopyRowChannelsLastAvx512 for AVX2: 8 channels by 8 pixels at a time, the rest one by one.
__attribute__((target("avx2"))) void CopyRowChannelsLastAvx2(const float* image, int64_t channels,
                                                             int64_t plane, int64_t count,
                                                             float* dst) {
  const int64_t full_c = channels / 8 * 8, full_w = count / 8 * 8;
  for (int64_t c0 = 0; c0 < full_c; c0 += 8) {
    for (int64_t w0 = 0; w0 < full_w; w0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(image + (c0 + i) * plane + w0);
      avx2::Transpose8x8(r);
      float* out = dst + w0 * channels + c0;
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(out + i * channels, r[i]);
    }
  }
  for (int64_t w = 0; w < count; ++w) {
    const int64_t c_from = w < full_w ? full_c : 0;
    for (int64_t c = c_from; c < channels; ++c) dst[w * channels + c] = image[c * plane + w];
  }
}

using CopyRowFn = void (*)(const float* image, int64_t channels, int64_t plane, int64_t count,
                           float* dst);

// The tiles and row copy of one instruction set.
struct Kernels {
  std::string_view gemm;  // the GEMM micro-kernel whose tile the tiles have
  int mr, nr;
  const TileFn* tiles;  // by rows - 1
  CopyRowFn copy_row;
};

constexpr Kernels kAvx512Kernels{"avx512", kAvx512Mr, kAvx512Nr, kAvx512Tiles.data(),
                                 &CopyRowChannelsLastAvx512};
constexpr Kernels kAvx2Kernels{"avx2", kAvx2Mr, kAvx2Nr, kAvx2Tiles.data(),
                               &CopyRowChannelsLastAvx2};

// The kernels for the GEMM micro-kernel in use, or null.
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

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) void AddBiasToMaps(
    const float* src, int64_t lds, int64_t rows, int64_t m0, int64_t m1,
    const GemmEpilogue& epilogue, const float* residual, float* dst, int64_t ldd) {
  const float* bias = epilogue.row_bias;
  for (int64_t i = 0; i < rows; ++i) {
    const float* s = src + i * lds;
    float* d = dst + i * ldd;
    for (int64_t m = m0; m < m1; ++m) d[m] = s[m] + (bias != nullptr ? bias[m] : 0.0f);
    if (residual != nullptr) {
      const float* r = residual + i * ldd;
      for (int64_t m = m0; m < m1; ++m) d[m] += r[m];
    }
    if (epilogue.any()) {
      for (int64_t m = m0; m < m1; ++m) d[m] = epilogue.Activate(d[m]);
    }
  }
}

void CopyPixelsChannelsLast(const float* image, int64_t channels, int64_t plane, int64_t count,
                            float* dst) {
  if (const Kernels* kernels = CurrentKernels(); kernels != nullptr) {
    kernels->copy_row(image, channels, plane, count, dst);
    return;
  }
  for (int64_t w = 0; w < count; ++w) {
    for (int64_t c = 0; c < channels; ++c) dst[w * channels + c] = image[c * plane + w];
  }
}

bool ChannelsLastConvApplies(const Spatial3& s) {
  return CurrentKernels() != nullptr && s.in[0] == 1 && s.kernel[0] == 1 && s.pad[0] == 0 &&
         s.out[0] == 1 && s.stride[0] == 1 && s.pad[1] >= 0 && s.pad[2] >= 0;
}

ChannelsLastWeights::ChannelsLastWeights(const float* w, int64_t maps, int64_t channels,
                                         const Spatial3& s)
    : maps_(maps), depth_(channels * s.kernel_size()), panel_width_(CurrentKernels()->nr) {
  const int64_t taps = s.kernel_size(), panels = (maps + panel_width_ - 1) / panel_width_;
  const size_t bytes = static_cast<size_t>(panels * panel_width_ * depth_) * sizeof(float);
  data_.reset(static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
  // Maps past the last are 0 in the last panel.
  if (maps % panel_width_ != 0) {
    float* last = data_.get() + (panels - 1) * panel_width_ * depth_;
    std::fill(last, last + panel_width_ * depth_, 0.0f);
  }
  // W is read in its own order (map by map): element (m, c, t) goes to depth (t, c) of lane
  // m % panel_width of panel m / panel_width. A panel's writes for one map are a lane of
  // lines that the next maps of the panel fill in while they are in cache.
  for (int64_t m = 0; m < maps; ++m) {
    float* lane = data_.get() + (m / panel_width_) * panel_width_ * depth_ + m % panel_width_;
    const float* src = w + m * channels * taps;
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t t = 0; t < taps; ++t)
        lane[(t * channels + c) * panel_width_] = src[c * taps + t];
    }
  }
}

void ChannelsLastConv(const ChannelsLastWeights& weights, const float* image, int64_t channels,
                      const Spatial3& s, const GemmEpilogue& epilogue, float* out, ThreadPool* pool,
                      ChannelsLastIo io) {
  const int64_t in_h = s.in[1], in_w = s.in[2], out_h = s.out[1], out_w = s.out[2];
  const int64_t kernel_h = s.kernel[1], kernel_w = s.kernel[2];
  const int64_t stride_h = s.stride[1], stride_w = s.stride[2];
  const int64_t dilation_h = s.dilation[1], dilation_w = s.dilation[2];
  const int64_t pad_top = s.pad[1], pad_left = s.pad[2];
  const Kernels& kernels = *CurrentKernels();
  const int mr = kernels.mr, nr = kernels.nr;
  const int64_t maps = weights.maps(), depth = weights.depth(), positions = out_h * out_w;
  const int64_t threads = pool != nullptr ? pool->size() : 1;
  const bool parallel = threads > 1 && maps * depth * positions >= kMinParallelMacs;
  ThreadPool* const used = parallel ? pool : nullptr;

  // Tiles: the positions in row-major order cut into runs of mr (the last run shorter). A
  // run may span output rows: each position has its own pixel address, so rows whose width is
  // not a multiple of mr (7 or 14 at the end of a ResNet) leave no short tile per row.
  struct TileSpan {
    int64_t position = 0;  // first position
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
  // A tile's positions as runs within one output row: (row, first column, end column).
  auto for_each_segment = [out_w](int64_t position, int rows, auto&& fn) {
    for (int64_t p = position, end = position + rows; p < end;) {
      const int64_t oh = p / out_w, ow = p % out_w;
      const int64_t ow_end = std::min(out_w, ow + (end - p));
      fn(oh, ow, ow_end);
      p += ow_end - ow;
    }
  };
  std::vector<TileSpan> tiles;
  tiles.reserve((positions + mr - 1) / mr);
  // The padded pixels the taps that are not skipped read: rows [y_lo, y_hi) by columns
  // [x_lo, x_hi) of the image padded as the convolution pads it. Only these are copied: with
  // large dilations (DeepLab's ASPP at rate 36 on a 32x32 map) the padding is most of the
  // padded image, and every tile skips it.
  int64_t y_lo = INT64_MAX, y_hi = 0, x_lo = INT64_MAX, x_hi = 0;
  for (int64_t position = 0; position < positions; position += mr) {
    const int rows = static_cast<int>(std::min<int64_t>(mr, positions - position));
    // The taps some position of the tile reaches the image through (the union of its rows').
    Reach reach{static_cast<int32_t>(kernel_h), 0, static_cast<int32_t>(kernel_w), 0};
    for_each_segment(position, rows, [&](int64_t oh, int64_t ow0, int64_t ow1) {
      const auto [kh_lo, kh_hi] =
          reaching(oh, oh + 1, stride_h, dilation_h, pad_top, in_h, kernel_h);
      const auto [kw_lo, kw_hi] =
          reaching(ow0, ow1, stride_w, dilation_w, pad_left, in_w, kernel_w);
      if (kh_lo >= kh_hi || kw_lo >= kw_hi) return;  // this run reads only padding
      reach.kh_lo = std::min(reach.kh_lo, kh_lo);
      reach.kh_hi = std::max(reach.kh_hi, kh_hi);
      reach.kw_lo = std::min(reach.kw_lo, kw_lo);
      reach.kw_hi = std::max(reach.kw_hi, kw_hi);
    });
    reach.kh_hi = std::max(reach.kh_lo, reach.kh_hi);
    reach.kw_hi = std::max(reach.kw_lo, reach.kw_hi);
    tiles.push_back({position, rows, reach});
    if (reach.kh_lo < reach.kh_hi && reach.kw_lo < reach.kw_hi) {
      // Every position of the tile reads through every tap of the reach.
      for_each_segment(position, rows, [&](int64_t oh, int64_t ow0, int64_t ow1) {
        y_lo = std::min(y_lo, oh * stride_h + reach.kh_lo * dilation_h);
        y_hi = std::max(y_hi, oh * stride_h + (reach.kh_hi - 1) * dilation_h + 1);
        x_lo = std::min(x_lo, ow0 * stride_w + reach.kw_lo * dilation_w);
        x_hi = std::max(x_hi, (ow1 - 1) * stride_w + (reach.kw_hi - 1) * dilation_w + 1);
      });
    }
  }
  if (y_lo >= y_hi) y_lo = y_hi = x_lo = x_hi = 0;  // every tap of every tile is skipped

  // The copied pixels channels-last: pixel (y, x) of the padded image is input pixel
  // (y - pad_top, x - pad_left), or 0, at ((y - y_lo) * kept_w + x - x_lo) * channels.
  const int64_t kept_h = y_hi - y_lo, kept_w = x_hi - x_lo;
  const int64_t row_floats = kept_w * channels;
  thread_local std::vector<float> padded;
  padded.resize(kept_h * row_floats);
  // The kept columns inside the image: [first_column, first_column + columns) of a kept row.
  const int64_t first_column = std::clamp<int64_t>(pad_left - x_lo, 0, kept_w);
  const int64_t columns =
      std::clamp<int64_t>(std::min(x_hi, pad_left + in_w) - x_lo - first_column, 0, in_w);
  float* const buffer = padded.data();
  ParallelFor(kept_h * row_floats >= (int64_t{1} << 16) ? used : nullptr, kept_h, 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t y = begin; y < end; ++y) {
                  float* row = buffer + y * row_floats;
                  const int64_t ih = y + y_lo - pad_top;
                  if (ih < 0 || ih >= in_h || columns == 0) {
                    std::fill(row, row + row_floats, 0.0f);
                    continue;
                  }
                  std::fill(row, row + first_column * channels, 0.0f);
                  std::fill(row + (first_column + columns) * channels, row + row_floats, 0.0f);
                  const int64_t iw = x_lo + first_column - pad_left;
                  if (io.input_channels_last) {
                    std::memcpy(row + first_column * channels, image + (ih * in_w + iw) * channels,
                                columns * channels * sizeof(float));
                  } else {
                    kernels.copy_row(image + ih * in_w + iw, channels, in_h * in_w, columns,
                                     row + first_column * channels);
                  }
                }
              });
  // Where position p reads through tap (0, 0), as an address only: with the first rows or
  // columns not kept it lies before the buffer, which the tile's taps that are not skipped
  // never do.
  auto pixel = [&](int64_t p) {
    const int64_t oh = p / out_w, ow = p % out_w;
    const int64_t offset = ((oh * stride_h - y_lo) * kept_w + (ow * stride_w - x_lo)) * channels;
    return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(buffer) +
                                          static_cast<uintptr_t>(offset * int64_t{sizeof(float)}));
  };

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
      pieces.push_back({(kh * dilation_h * kept_w + kw * dilation_w) * channels + c, count,
                        static_cast<int32_t>(kh), static_cast<int32_t>(kw)});
      k += count;
    }
    first_piece.push_back(static_cast<int64_t>(pieces.size()));
  }

  const int64_t tile_count = static_cast<int64_t>(tiles.size());

  // The product, positions by maps: a row holds every panel whole. A channels-last output
  // whose maps fill whole panels holds it itself.
  const int64_t panels = (maps + nr - 1) / nr, ldp = panels * nr;
  thread_local std::vector<float> product;
  const bool in_output = io.output_channels_last && ldp == maps;
  if (!in_output) product.resize(positions * ldp);
  float* const result = in_output ? out : product.data();
  // Items: a panel of maps for a run of tiles, the panels of a run one after another, so that
  // the threads work on the same pixels at once (DenseNet's 128->32 3x3 convolution at 32x32,
  // two panels: 0.497 -> 0.460 ms on two threads, against runs of one panel after another).
  int64_t runs = parallel ? std::clamp<int64_t>((kItemsPerThread * threads + panels - 1) / panels,
                                                1, tile_count)
                          : 1;
  // Every panel of a run reads the run's pixels, every run reads all the weights. Pixels that
  // do not fit in half the L2 come back from L3 for each panel; runs cut small enough to fit
  // read them once, for the weights read once a run. The weights count twice: the pixels were
  // just written by the layer before and are in L3, a layer's weights come from memory. The
  // smaller traffic is taken (ResNet-50's 3x3 stride-2 convolution at 56x56, 128 channels, a
  // 1.6 MB padded image, 8 panels, 0.6 MB of weights: 7 runs, 2.1-2.6 -> 1.8-2.2 ms; at
  // 28x28, 256 channels, 2.4 MB of weights, 4 runs were no faster and are not taken).
  const double image_bytes = static_cast<double>(kept_h * row_floats) * sizeof(float);
  const double weight_bytes = static_cast<double>(ldp * depth) * sizeof(float);
  const double fits = static_cast<double>(L2CacheBytes()) / 2;
  auto traffic = [&](int64_t r) {
    return 2 * static_cast<double>(r) * weight_bytes +
           (image_bytes / static_cast<double>(r) <= fits ? image_bytes : image_bytes * panels);
  };
  const int64_t fitting =
      std::min<int64_t>(tile_count, static_cast<int64_t>(std::ceil(image_bytes / fits)));
  if (io.runs_fit_l2 && fitting > runs && traffic(fitting) < traffic(runs)) runs = fitting;
  ParallelForEach(used, panels * runs, [&](int64_t item) {
    const int64_t panel = item % panels, run = item / panels;
    const int64_t t0 = tile_count * run / runs, t1 = tile_count * (run + 1) / runs;
    if (t0 == t1) return;
    TileArgs args;
    args.ldc = ldp;
    // Each tile's pixel addresses, made once for all the depth blocks.
    thread_local std::vector<std::array<const float*, kMaxMr>> pixels;
    pixels.resize(t1 - t0);
    for (int64_t t = t0; t < t1; ++t) {
      for (int r = 0; r < tiles[t].rows; ++r) pixels[t - t0][r] = pixel(tiles[t].position + r);
    }
    for (int64_t k0 = 0, b = 0; k0 < depth; k0 += block, ++b) {
      args.pieces = pieces.data() + first_piece[b];
      args.piece_count = first_piece[b + 1] - first_piece[b];
      args.b = weights.panel(panel) + k0 * nr;
      args.accumulate = k0 > 0;
      // The next depth block's weights (or the next panel's first), fetched into the cache a
      // part before each tile: the first tile of a block would otherwise wait on memory for
      // every line of it (a deep layer's weights are megabytes, read once a run).
      const char* next = reinterpret_cast<const char*>(
          k0 + block < depth ? args.b + block * nr
                             : (panel + 1 < panels ? weights.panel(panel + 1) : nullptr));
      const int64_t next_depth =
          k0 + block < depth ? std::min(block, depth - (k0 + block)) : std::min(block, depth);
      const int64_t next_lines =
          next == nullptr ? 0 : next_depth * nr * int64_t{sizeof(float)} / 64;
      const int64_t tiles_here = t1 - t0;
      for (int64_t t = t0; t < t1; ++t) {
        for (int64_t line = next_lines * (t - t0) / tiles_here,
                     end = next_lines * (t - t0 + 1) / tiles_here;
             line < end; ++line) {
          __builtin_prefetch(next + line * 64);
        }
        args.a = pixels[t - t0];
        args.c = result + tiles[t].position * ldp + panel * nr;
        args.reach = tiles[t].reach;
        kernels.tiles[tiles[t].rows - 1](args);
      }
    }
    const int64_t p0 = tiles[t0].position;
    const int64_t p1 = t1 < tile_count ? tiles[t1].position : positions;
    if (io.output_channels_last) {
      AddBiasToMaps(result + p0 * ldp, ldp, p1 - p0, panel * nr, std::min(maps, (panel + 1) * nr),
                    epilogue,
                    epilogue.residual != nullptr ? epilogue.residual + p0 * maps : nullptr,
                    out + p0 * maps, maps);
    } else {
      TransposeAddBiasMaps(result + p0 * ldp, ldp, p1 - p0, panel * nr,
                           std::min(maps, (panel + 1) * nr), epilogue, out + p0, positions);
    }
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

// TransposeAddBiasMaps 8 maps by 8 positions at a time through an in-register transpose (as
// gemm_kernels.cc's AVX2 epilogue rounds), the rest one by one.
__attribute__((target("avx2"))) void TransposeAddBiasAvx2(const float* src, int64_t lds,
                                                          int64_t rows, int64_t m0, int64_t m1,
                                                          const GemmEpilogue& epilogue, float* dst,
                                                          int64_t ldd) {
  const float* bias = epilogue.row_bias;
  const __m256 lo = _mm256_set1_ps(epilogue.clamp_min), hi = _mm256_set1_ps(epilogue.clamp_max);
  const __m256 hs_alpha = _mm256_set1_ps(epilogue.hard_swish_alpha);
  const __m256 hs_beta = _mm256_set1_ps(epilogue.hard_swish_beta);
  const int64_t full_rows = rows / 8 * 8;
  int64_t m = m0;
  for (; m + 8 <= m1; m += 8) {
    for (int64_t i = 0; i < full_rows; i += 8) {
      __m256 r[8];
      for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + (i + j) * lds + m);
      avx2::Transpose8x8(r);
      for (int j = 0; j < 8; ++j) {
        __m256 x = _mm256_add_ps(r[j], _mm256_set1_ps(bias != nullptr ? bias[m + j] : 0.0f));
        if (epilogue.clamp) x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));  // NaN stays
        if (epilogue.hard_swish) {
          __m256 product = _mm256_mul_ps(hs_alpha, x);
          __asm__("" : "+x"(product));  // no contraction into a multiply-add
          const __m256 gate = _mm256_add_ps(product, hs_beta);
          x = _mm256_mul_ps(
              x, _mm256_min_ps(_mm256_max_ps(gate, _mm256_setzero_ps()), _mm256_set1_ps(1.0f)));
        }
        _mm256_storeu_ps(dst + (m + j) * ldd + i, x);
      }
    }
  }
  for (int64_t map = m0; map < m1; ++map) {
    const float b = bias != nullptr ? bias[map] : 0.0f;
    for (int64_t i = map < m ? full_rows : 0; i < rows; ++i) {
      dst[map * ldd + i] = epilogue.Activate(src[i * lds + map] + b);
    }
  }
}

}  // namespace

void TransposeAddBiasMaps(const float* src, int64_t lds, int64_t rows, int64_t m0, int64_t m1,
                          const GemmEpilogue& epilogue, float* dst, int64_t ldd) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx512) {
    TransposeAddBiasAvx512(src, lds, rows, m0, m1, epilogue, dst, ldd);
  } else if (avx2) {
    TransposeAddBiasAvx2(src, lds, rows, m0, m1, epilogue, dst, ldd);
  } else {
    for (int64_t m = m0; m < m1; ++m) {
      const float b = epilogue.row_bias != nullptr ? epilogue.row_bias[m] : 0.0f;
      for (int64_t i = 0; i < rows; ++i) {
        dst[m * ldd + i] = epilogue.Activate(src[i * lds + m] + b);
      }
    }
  }
}

}  // namespace ovfix::exec
