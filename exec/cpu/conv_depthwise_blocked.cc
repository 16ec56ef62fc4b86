// Depthwise 2-D convolution over blocks of 16 channels (AVX-512). The block's input planes are
// transposed into one zero-padded image of 16-channel pixels; each output pixel is then one
// vector of 16 channels summed over the taps (a run of output pixels of a row kept in
// registers), and the output pixels are transposed back into the channel planes. The
// plane-at-a-time kernel (conv_depthwise.cc) spends most of a small plane in set-up and in
// vectors that overhang its short rows; here every lane is a channel.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "exec/cpu/avx512_transpose.h"
#include "exec/cpu/conv_depthwise.h"

namespace ovfix::exec {
namespace {

constexpr int kLanes = 16;
// Output pixels of a row computed together (their accumulators stay in registers).
constexpr int kRun = 8;
// The padded block image of a band must stay in L2.
constexpr int64_t kMaxImageFloats = int64_t{1} << 16;
// Output rows this wide or wider, with unit stride and at most 3 x 3 taps, are left to the
// plane-at-a-time kernel.
constexpr int64_t kWideRow = 64;
// Below this many multiply-adds the convolution runs on the calling thread.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;

// A band of output rows and the padded block image it reads: the input rows and columns some
// tap of the band's outputs reads, each a row of `width` 16-channel pixels.
struct Band {
  int64_t rows = 0;        // output rows per band (the last may have fewer)
  int64_t image_rows = 0;  // image rows of a full band
  int64_t width = 0;       // image columns
  Band(const DepthwiseShape& s, int64_t rows_per_band)
      : rows(rows_per_band),
        image_rows((rows_per_band - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1),
        width((s.out_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1) {}
  int64_t floats() const { return image_rows * width * kLanes; }
};

// 64-byte aligned floats (whole-vector loads then never split a cache line).
class AlignedFloats {
 public:
  float* Get(int64_t count) {
    if (static_cast<int64_t>(storage_.size()) < count + kLanes) storage_.resize(count + kLanes);
    const uintptr_t address = reinterpret_cast<uintptr_t>(storage_.data());
    return reinterpret_cast<float*>((address + 63) & ~uintptr_t{63});
  }

 private:
  std::vector<float> storage_;
};

struct BlockScratch {
  AlignedFloats image, out, weights;
  // The geometry the image's padding was zeroed for: the interior is rewritten by every
  // block, so the zeros stay while the geometry does.
  int64_t key[4] = {-1, -1, -1, -1};
};

// N output pixels of one row, `step` floats apart in the image (SW: the column stride when it
// is a constant, else 0 and `step` says it).
template <int N, int SW>
__attribute__((target("avx512f,fma"))) void RunPixels(const float* in, int64_t step,
                                                      const int64_t* tap_offsets, int64_t taps,
                                                      const float* weights, __m512 bias,
                                                      float* out) {
  const int64_t stride = SW > 0 ? SW * kLanes : step;
  __m512 acc[N];
  for (int u = 0; u < N; ++u) acc[u] = bias;
  for (int64_t t = 0; t < taps; ++t) {
    const float* x = in + tap_offsets[t];
    const __m512 w = _mm512_loadu_ps(weights + t * kLanes);
#pragma GCC unroll 8
    for (int u = 0; u < N; ++u)
      acc[u] = _mm512_fmadd_ps(_mm512_loadu_ps(x + u * stride), w, acc[u]);
  }
  for (int u = 0; u < N; ++u) _mm512_storeu_ps(out + u * kLanes, acc[u]);
}

using RunFn = void (*)(const float*, int64_t, const int64_t*, int64_t, const float*, __m512,
                       float*);

template <int SW, int... N>
constexpr std::array<RunFn, sizeof...(N)> RunTable(std::integer_sequence<int, N...>) {
  return {&RunPixels<N + 1, SW>...};
}

// Output rows [oh0, oh0 + band.rows) of one block of 16 channels (`count` of them real) of one
// image. The image's columns of padding are zero already (they never change); its rows are
// written whole, with zeros for the rows of padding.
__attribute__((target("avx512f,fma"))) void ConvolveBand(
    const float* x, const float* w, const float* bias, float* y, const DepthwiseShape& s, int count,
    const Band& band, int64_t oh0, const std::vector<int64_t>& taps, BlockScratch& scratch) {
  static constexpr auto kStride1 = RunTable<1>(std::make_integer_sequence<int, kRun>());
  static constexpr auto kStride2 = RunTable<2>(std::make_integer_sequence<int, kRun>());
  static constexpr auto kAnyStride = RunTable<0>(std::make_integer_sequence<int, kRun>());
  const auto& run = s.stride_w == 1 ? kStride1 : s.stride_w == 2 ? kStride2 : kAnyStride;
  const int64_t in_size = s.in_h * s.in_w, out_size = s.out_h * s.out_w;
  const int64_t out_rows = std::min(band.rows, s.out_h - oh0);
  const int64_t image_rows = (out_rows - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1;
  const int64_t tap_count = static_cast<int64_t>(taps.size());
  float* img = scratch.image.Get(band.floats());
  // The input rows into the image.
  __m512 r[kLanes];
  const int64_t columns = std::min(s.in_w, band.width - s.pad_left);
  for (int64_t row = 0; row < image_rows; ++row) {
    const int64_t ih = oh0 * s.stride_h + row - s.pad_top;
    float* dst = img + row * band.width * kLanes;
    if (ih < 0 || ih >= s.in_h) {
      std::fill(dst, dst + band.width * kLanes, 0.0f);
      continue;
    }
    dst += s.pad_left * kLanes;
    for (int64_t iw = 0; iw < columns; iw += kLanes) {
      avx512::LoadTransposed(x + ih * s.in_w + iw, in_size, count, columns - iw, r);
      const int64_t n = std::min<int64_t>(kLanes, columns - iw);
      for (int64_t q = 0; q < n; ++q) _mm512_store_ps(dst + (iw + q) * kLanes, r[q]);
    }
  }
  // The weights of the block, a vector of channels per tap.
  float* weights = scratch.weights.Get(tap_count * kLanes);
  for (int64_t t = 0; t < tap_count; t += kLanes) {
    avx512::LoadTransposed(w + t, tap_count, count, tap_count - t, r);
    const int64_t n = std::min<int64_t>(kLanes, tap_count - t);
    for (int64_t q = 0; q < n; ++q) _mm512_store_ps(weights + (t + q) * kLanes, r[q]);
  }
  alignas(64) float bias_lanes[kLanes] = {};
  for (int i = 0; i < count && bias != nullptr; ++i) bias_lanes[i] = bias[i];
  const __m512 b = _mm512_load_ps(bias_lanes);
  // The output pixels, row by row.
  float* out = scratch.out.Get(out_rows * s.out_w * kLanes);
  const int64_t step = s.stride_w * kLanes;
  for (int64_t oh = 0; oh < out_rows; ++oh) {
    const float* row = img + oh * s.stride_h * band.width * kLanes;
    for (int64_t ow = 0; ow < s.out_w; ow += kRun) {
      const int n = static_cast<int>(std::min<int64_t>(kRun, s.out_w - ow));
      run[n - 1](row + ow * step, step, taps.data(), tap_count, weights, b,
                 out + (oh * s.out_w + ow) * kLanes);
    }
  }
  // Back into the channel planes: the band's pixels are consecutive in them.
  const int64_t pixels = out_rows * s.out_w;
  y += oh0 * s.out_w;
  for (int64_t p = 0; p < pixels; p += kLanes) {
    avx512::LoadTransposed(out + p * kLanes, kLanes, pixels - p, kLanes, r);
    const __mmask16 mask = avx512::FirstLanes(pixels - p);
    for (int i = 0; i < count; ++i) _mm512_mask_storeu_ps(y + i * out_size + p, mask, r[i]);
  }
}

}  // namespace

bool DepthwiseBlockedApplies(const DepthwiseShape& s) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  // Wide rows through a small kernel with unit stride are what the plane-at-a-time kernel
  // does best: transposing in and out would cost about as much as the taps.
  const bool wide_and_light =
      s.kernel_h * s.kernel_w <= 9 && s.stride_w == 1 && s.out_w >= kWideRow;
  return avx512 && s.multiplier == 1 && !wide_and_light && Band(s, 1).floats() <= kMaxImageFloats;
}

void DepthwiseConv2DBlocked(const float* x, const float* w, const float* bias, float* y,
                            const DepthwiseShape& s, ThreadPool* pool) {
  const int64_t blocks = (s.channels + kLanes - 1) / kLanes;
  const int64_t taps_per_pixel = s.kernel_h * s.kernel_w;
  const int64_t work = s.batch * s.channels * s.out_h * s.out_w * taps_per_pixel;
  const bool parallel = pool != nullptr && pool->size() > 1 && work >= kMinParallelWork;
  // Bands: enough items for the threads to share, and an image that stays in L2.
  int64_t rows = s.out_h;
  if (parallel) {
    const int64_t wanted = 4 * pool->size();
    const int64_t items = s.batch * blocks;
    if (items < wanted) rows = std::max<int64_t>(1, s.out_h * items / wanted);
  }
  while (rows > 1 && Band(s, rows).floats() > kMaxImageFloats) rows = (rows + 1) / 2;
  const Band band(s, rows);
  const int64_t bands = (s.out_h + rows - 1) / rows;
  std::vector<int64_t> taps;
  for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
    for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
      taps.push_back((kh * s.dilation_h * band.width + kw * s.dilation_w) * kLanes);
    }
  }
  const int64_t in_size = s.in_h * s.in_w, out_size = s.out_h * s.out_w;
  // What decides which image elements stay zero: the columns of padding.
  const int64_t key[4] = {s.in_w, s.pad_left, band.width, band.image_rows};
  thread_local BlockScratch scratch;
  ParallelForEach(parallel ? pool : nullptr, s.batch * blocks * bands, [&](int64_t item) {
    BlockScratch& mine = scratch;
    if (!std::equal(key, key + 4, mine.key)) {
      float* img = mine.image.Get(band.floats());
      std::fill(img, img + band.floats(), 0.0f);
      std::copy(key, key + 4, mine.key);
    }
    const int64_t block = item / bands, oh0 = item % bands * rows;
    const int64_t n = block / blocks, c0 = block % blocks * kLanes;
    const int count = static_cast<int>(std::min<int64_t>(kLanes, s.channels - c0));
    ConvolveBand(x + (n * s.channels + c0) * in_size, w + c0 * taps_per_pixel,
                 bias != nullptr ? bias + c0 : nullptr, y + (n * s.channels + c0) * out_size, s,
                 count, band, oh0, taps, mine);
  });
}

}  // namespace ovfix::exec
