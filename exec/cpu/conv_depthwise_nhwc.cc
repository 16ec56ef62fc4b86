#include "exec/cpu/conv_depthwise_nhwc.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

#include "exec/cpu/float_vec.h"
#include "exec/cpu/gemm.h"
#include "exec/kernel.h"

namespace ovfix::exec {
namespace {

// Output pixels of a row computed together (RunPixels), with two chains and without: their
// weights are loaded once per tap, and their addresses (a register each) leave registers for
// the loops.
constexpr int kRun = 4;
constexpr int kRunTwoChains = 2;
// Channels swept over a row at a time: the weights of their taps stay in L1.
constexpr int64_t kGroup = 64;
// Below this many multiply-adds the convolution runs on the calling thread.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;

// W channels: a GCC vector, or a float where there are fewer channels than a vector holds.
template <int W>
using Lanes = std::conditional_t<W == 1, float, FloatVec<W>>;

// v = the W floats at p (no vector returned by value: the baseline's ABI passes none).
template <typename V>
inline __attribute__((always_inline)) void LoadTo(V& v, const float* p) {
  std::memcpy(&v, p, sizeof(V));
}

// What every output row needs.
struct Job {
  const float* x;
  const float* taps;
  const float* bias;
  float* y;
  DepthwiseShape s;
  DepthwiseSumOrder order;
  // Output columns [interior_begin, interior_end) read every column of taps inside the image.
  int64_t interior_begin, interior_end;
  FusedActivation activation;
  // Each row is cut into this many ranges of channel groups (work items of their own).
  int64_t parts = 1;
};

// N output pixels of a row, B vectors of W channels from channel c, over kernel rows
// [kh_begin, kh_end) and columns [kw_begin, kw_end), the taps inside the image. image: the
// input image; ih0, iw0: the input pixel of tap (0, 0) of the first pixel; out: the first
// pixel's output. The sums are DepthwiseConv2D's (see DepthwiseConv2DSumOrder): the bias,
// then the taps in order, or two chains (the even taps, the odd ones) summed at the end. The
// multiply-adds are fused where the caller is compiled with fp-contract=fast for FMA, as
// DepthwiseConv2D's are.
template <int W, int N, int B, bool kTwoChains>
inline __attribute__((always_inline)) void SumPixels(const Job& j, const float* image, int64_t ih0,
                                                     int64_t iw0, int64_t kh_begin, int64_t kh_end,
                                                     int64_t kw_begin, int64_t kw_end, int64_t c,
                                                     float* out) {
  using V = Lanes<W>;
  constexpr int kSums = N * B;  // sums[u * B + b]: pixel u, vector b
  const DepthwiseShape& s = j.s;
  const int64_t channels = s.channels;
  const int64_t step = s.stride_w * channels;  // between the pixels of the run
  V acc[kSums], odd[kSums];
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b) {
    V bias;
    LoadTo(bias, j.bias + c + b * W);
#pragma GCC unroll 8
    for (int u = 0; u < N; ++u) {
      acc[u * B + b] = bias;
      if constexpr (kTwoChains) odd[u * B + b] = V{};
    }
  }
  for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
    const float* row = image + (ih0 + kh * s.dilation_h) * s.in_w * channels + c;
    const float* weights = j.taps + kh * s.kernel_w * channels + c;
    // Tap kw of the row into `sums`: sums[u * B + b] += x * w (a multiply-add where contracted).
    auto tap = [&](int64_t kw, V * sums) __attribute__((always_inline)) {
      V w[B];
#pragma GCC unroll 8
      for (int b = 0; b < B; ++b) LoadTo(w[b], weights + kw * channels + b * W);
      const float* in = row + (iw0 + kw * s.dilation_w) * channels;
#pragma GCC unroll 8
      for (int u = 0; u < N; ++u) {
#pragma GCC unroll 8
        for (int b = 0; b < B; ++b) {
          V v;
          LoadTo(v, in + u * step + b * W);
          sums[u * B + b] += v * w[b];
        }
      }
    };
    if constexpr (!kTwoChains) {
      for (int64_t kw = kw_begin; kw < kw_end; ++kw) tap(kw, acc);
    } else {
      // Taps in pairs, the first to the chain of its parity: the chains swap places for a
      // row that starts on an odd tap. (One statement per chain: with the parity tested per
      // tap, the compiler shares the product of both branches and fuses neither.)
      const bool odd_first = ((kh * s.kernel_w + kw_begin) & 1) != 0;
      if (odd_first) {
#pragma GCC unroll 8
        for (int i = 0; i < kSums; ++i) std::swap(acc[i], odd[i]);
      }
      int64_t kw = kw_begin;
      for (; kw + 2 <= kw_end; kw += 2) {
        tap(kw, acc);
        tap(kw + 1, odd);
      }
      if (kw < kw_end) tap(kw, acc);
      if (odd_first) {
#pragma GCC unroll 8
        for (int i = 0; i < kSums; ++i) std::swap(acc[i], odd[i]);
      }
    }
  }
#pragma GCC unroll 8
  for (int u = 0; u < N; ++u) {
#pragma GCC unroll 8
    for (int b = 0; b < B; ++b) {
      if constexpr (kTwoChains) acc[u * B + b] += odd[u * B + b];
      std::memcpy(out + u * channels + c + b * W, &acc[u * B + b], sizeof(V));
    }
  }
}

// SumPixels over the channels of a group [c_begin, c_end): vectors of W, the last one moved
// back to end at the last channel (the channels it repeats get the same floats again). Runs
// of one or two pixels take several vectors at once, so that enough sums are under way to
// cover the multiply-add's latency.
template <int W, int N, bool kTwoChains>
inline __attribute__((always_inline)) void RunPixels(const Job& j, const float* image, int64_t ih0,
                                                     int64_t iw0, int64_t kh_begin, int64_t kh_end,
                                                     int64_t kw_begin, int64_t kw_end,
                                                     int64_t c_begin, int64_t c_end, float* out) {
  // Vectors at once: 8 sums (a vector of pixel and channels, twice with two chains).
  constexpr int kChains = kTwoChains ? 2 : 1;
  constexpr int kPixelSums = N * kChains;
  constexpr int B = kPixelSums == 1 ? 8 : kPixelSums == 2 ? 4 : kPixelSums <= 4 ? 2 : 1;
  int64_t c = c_begin;
  if constexpr (B > 1) {
    for (; c + B * W <= c_end; c += B * W) {
      SumPixels<W, N, B, kTwoChains>(j, image, ih0, iw0, kh_begin, kh_end, kw_begin, kw_end, c,
                                     out);
    }
  }
  for (; c < c_end; c += W) {
    SumPixels<W, N, 1, kTwoChains>(j, image, ih0, iw0, kh_begin, kh_end, kw_begin, kw_end,
                                   std::min(c, j.s.channels - W), out);
  }
}

// Unit stride and dilation along the row, K columns of taps: runs of N pixels with a
// vector of channels each, where every input vector of a kernel row is loaded once and
// multiplied into each pixel of the run that it reaches (N + K - 1 loads for N * K taps
// instead of N * K), the K weights of the kernel row held in registers. Each pixel still sums
// its taps in order (the input vectors come left to right). All taps of the rows
// [kh_begin, kh_end) are inside the image; the channels as in RunPixels.
template <int K>
constexpr int kSharedRun = K <= 5 ? 8 : 6;

template <int W, int K>
inline __attribute__((always_inline)) void RunSharedInputs(const Job& j, const float* image,
                                                           int64_t ih0, int64_t iw0,
                                                           int64_t kh_begin, int64_t kh_end,
                                                           int64_t c_begin, int64_t c_end,
                                                           float* out) {
  using V = Lanes<W>;
  constexpr int N = kSharedRun<K>;
  const DepthwiseShape& s = j.s;
  const int64_t channels = s.channels;
  for (int64_t c = c_begin; c < c_end; c += W) {
    c = std::min(c, channels - W);
    V acc[N];
    LoadTo(acc[0], j.bias + c);
#pragma GCC unroll 8
    for (int p = 1; p < N; ++p) acc[p] = acc[0];
    for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
      const float* in = image + ((ih0 + kh * s.dilation_h) * s.in_w + iw0) * channels + c;
      const float* weights = j.taps + kh * K * channels + c;
      V w[K];
#pragma GCC unroll 8
      for (int kw = 0; kw < K; ++kw) LoadTo(w[kw], weights + kw * channels);
#pragma GCC unroll 16
      for (int i = 0; i < N + K - 1; ++i) {
        V x;
        LoadTo(x, in + i * channels);
#pragma GCC unroll 8
        for (int p = 0; p < N; ++p) {
          if (i - p >= 0 && i - p < K) acc[p] += x * w[i - p];
        }
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < N; ++p) std::memcpy(out + p * channels + c, &acc[p], sizeof(V));
  }
}

// The width of the runs of RunSharedInputs for the shape, or 0 where it does not apply.
inline int SharedRun(const DepthwiseShape& s) {
  if (s.stride_w != 1 || s.dilation_w != 1) return 0;
  switch (s.kernel_w) {
    case 3:
      return kSharedRun<3>;
    case 5:
      return kSharedRun<5>;
    case 7:
      return kSharedRun<7>;
  }
  return 0;
}

// RunPixels with n (1 to kRun) pixels.
template <int W, bool kTwoChains, typename... Args>
inline __attribute__((always_inline)) void RunSome(int n, Args... args) {
  switch (n) {
    case 1:
      return RunPixels<W, 1, kTwoChains>(args...);
    case 2:
      return RunPixels<W, 2, kTwoChains>(args...);
    case 3:
      return RunPixels<W, 3, kTwoChains>(args...);
    case 4:
      return RunPixels<W, 4, kTwoChains>(args...);
  }
  if constexpr (!kTwoChains) {
    switch (n) {
      case 5:
        return RunPixels<W, 5, false>(args...);
      case 6:
        return RunPixels<W, 6, false>(args...);
      case 7:
        return RunPixels<W, 7, false>(args...);
      case 8:
        return RunPixels<W, 8, false>(args...);
    }
  }
}

// The first k in [0, count) with first + k * step >= 0, and the end of those with
// first + k * step < size (an empty range where none is inside).
inline std::pair<int64_t, int64_t> InsideTaps(int64_t first, int64_t step, int64_t count,
                                              int64_t size) {
  const int64_t begin = first >= 0 ? 0 : std::min(count, (-first + step - 1) / step);
  const int64_t end = first >= size ? 0 : std::min(count, (size - first + step - 1) / step);
  return {begin, std::max(begin, end)};
}

// Output row `row` (batch * out_h + oh), channels [c_begin, c_end) (whole groups of kGroup,
// and whole vectors where the row is cut), vectors of W channels (channels >= W).
template <int W>
inline void ConvolveRow(const Job& j, int64_t row, int64_t c_begin, int64_t c_end) {
  const DepthwiseShape& s = j.s;
  const int64_t channels = s.channels;
  const int64_t n = row / s.out_h, oh = row % s.out_h;
  const float* image = j.x + n * s.in_h * s.in_w * channels;
  float* out = j.y + row * s.out_w * channels;
  const int64_t ih0 = oh * s.stride_h - s.pad_top;
  const auto [kh_begin, kh_end] = InsideTaps(ih0, s.dilation_h, s.kernel_h, s.in_h);
  // Pixels from `two_from` on are summed as two chains.
  const int64_t two_from =
      std::clamp(j.order.split - std::min(j.order.split, oh * j.order.grid_w), int64_t{0}, s.out_w);
  const int shared_run = SharedRun(s);
  for (int64_t g = c_begin; g < c_end; g += kGroup) {
    const int64_t g_end = std::min(c_end, g + kGroup);
    for (int64_t ow = 0; ow < s.out_w;) {
      const bool two = ow >= two_from;
      const int64_t chain_end = two ? s.out_w : two_from;
      const int64_t iw0 = ow * s.stride_w - s.pad_left;
      float* o = out + ow * channels;
      if (!two && shared_run > 0 && ow >= j.interior_begin &&
          ow + shared_run <= std::min(j.interior_end, chain_end)) {
        switch (s.kernel_w) {
          case 3:
            RunSharedInputs<W, 3>(j, image, ih0, iw0, kh_begin, kh_end, g, g_end, o);
            break;
          case 5:
            RunSharedInputs<W, 5>(j, image, ih0, iw0, kh_begin, kh_end, g, g_end, o);
            break;
          case 7:
            RunSharedInputs<W, 7>(j, image, ih0, iw0, kh_begin, kh_end, g, g_end, o);
            break;
        }
        ow += shared_run;
        continue;
      }
      if (ow >= j.interior_begin && ow < j.interior_end) {
        const int run = static_cast<int>(std::min<int64_t>(
            two ? kRunTwoChains : kRun, std::min(j.interior_end, chain_end) - ow));
        if (two) {
          RunSome<W, true>(run, j, image, ih0, iw0, kh_begin, kh_end, int64_t{0}, s.kernel_w, g,
                           g_end, o);
        } else {
          RunSome<W, false>(run, j, image, ih0, iw0, kh_begin, kh_end, int64_t{0}, s.kernel_w, g,
                            g_end, o);
        }
        ow += run;
        continue;
      }
      // A pixel at the border: only its columns of taps inside the image.
      const auto [kw_begin, kw_end] = InsideTaps(iw0, s.dilation_w, s.kernel_w, s.in_w);
      if (two) {
        RunPixels<W, 1, true>(j, image, ih0, iw0, kh_begin, kh_end, kw_begin, kw_end, g, g_end, o);
      } else {
        RunPixels<W, 1, false>(j, image, ih0, iw0, kh_begin, kh_end, kw_begin, kw_end, g, g_end, o);
      }
      ++ow;
    }
  }
  // The finished row (still in cache), as DepthwiseConv2D activates its planes.
  if (!j.activation.any()) return;
  if (c_begin == 0 && c_end == channels) {
    ActivateFloats(out, s.out_w * channels, j.activation, nullptr);
    return;
  }
  for (int64_t ow = 0; ow < s.out_w; ++ow) {
    ActivateFloats(out + ow * channels + c_begin, c_end - c_begin, j.activation, nullptr);
  }
}

// Work items [begin, end) (a row, or a range of a row's channel groups: Job::parts) with
// vectors of W channels, or of fewer where the channels are fewer.
template <int W>
inline void ConvolveRows(const Job& j, int64_t begin, int64_t end) {
  const int64_t channels = j.s.channels;
  const int64_t groups = (channels + kGroup - 1) / kGroup;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t row = item / j.parts, part = item % j.parts;
    const int64_t c_begin = part * groups / j.parts * kGroup;
    const int64_t c_end = std::min(channels, (part + 1) * groups / j.parts * kGroup);
    if (channels >= W) {
      ConvolveRow<W>(j, row, c_begin, c_end);
    } else if (W > 4 && channels >= 4) {
      ConvolveRow<4>(j, row, c_begin, c_end);
    } else {
      ConvolveRow<1>(j, row, c_begin, c_end);
    }
  }
}

// fp-contract=fast: the sums' multiply-adds are fused, as in DepthwiseConv2D's AVX2 and
// AVX-512 kernels.
__attribute__((target("avx2,fma"), optimize("fp-contract=fast"), flatten)) void ConvolveRowsFma(
    const Job& j, int64_t begin, int64_t end) {
  ConvolveRows<8>(j, begin, end);
}

// A product then a sum, as DepthwiseConv2D's portable kernel.
__attribute__((flatten)) void ConvolveRowsBaseline(const Job& j, int64_t begin, int64_t end) {
  ConvolveRows<4>(j, begin, end);
}

}  // namespace

DepthwiseNhwcWeights::DepthwiseNhwcWeights(const float* w, const float* bias, int64_t channels,
                                           int64_t kernel_h, int64_t kernel_w)
    : channels_(channels),
      kernel_h_(kernel_h),
      kernel_w_(kernel_w),
      taps_(channels * kernel_h * kernel_w),
      bias_(channels, 0.0f) {
  const int64_t taps = kernel_h * kernel_w;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t t = 0; t < taps; ++t) taps_[t * channels + c] = w[c * taps + t];
  }
  if (bias != nullptr) std::copy(bias, bias + channels, bias_.begin());
}

void DepthwiseConv2DNhwc(const float* x, const DepthwiseNhwcWeights& weights, float* y,
                         const DepthwiseShape& s, ThreadPool* pool,
                         const FusedActivation& activation) {
  Job j{x, weights.taps(), weights.bias(), y, s, DepthwiseConv2DSumOrder(s), 0, 0, activation};
  // Output columns whose first tap is at or right of column 0 and whose last is left of in_w.
  j.interior_begin = std::min(s.out_w, (s.pad_left + s.stride_w - 1) / s.stride_w);
  const int64_t last = s.in_w - 1 + s.pad_left - (s.kernel_w - 1) * s.dilation_w;
  j.interior_end =
      std::clamp(last < 0 ? int64_t{0} : last / s.stride_w + 1, j.interior_begin, s.out_w);
  // The instruction set follows DepthwiseConv2D's (the GEMM's choice): with FMA for AVX2 and
  // AVX-512 (whose lanes sum alike), else the portable product and sum.
  const std::string_view isa = CurrentGemmGeometry().name;
  const bool fma = isa == "avx512" || isa == "avx2";
  const int64_t rows = s.batch * s.out_h;
  const int64_t work = rows * s.out_w * s.channels * s.kernel_h * s.kernel_w;
  ThreadPool* const used = work >= kMinParallelWork ? pool : nullptr;
  // Few rows for the threads (a recognizer's maps 3 rows high, 480 channels): rows are cut
  // into ranges of channel groups as well, four items per thread at least. Only where every
  // group is whole vectors, so that no vector of one range reaches into another's channels
  // (each channel's sums are the same however the channels are grouped).
  const int64_t threads = used != nullptr ? used->size() : 1;
  const int64_t groups = (s.channels + kGroup - 1) / kGroup;
  if (threads > 1 && rows < 4 * threads && s.channels % 8 == 0) {
    j.parts = std::min(groups, (4 * threads + rows - 1) / rows);
  }
  ParallelFor(used, rows * j.parts, 1, [&](int64_t begin, int64_t end) {
    if (fma) {
      ConvolveRowsFma(j, begin, end);
    } else {
      ConvolveRowsBaseline(j, begin, end);
    }
  });
}

void DepthwiseConv2DNhwc(const float* x, const float* w, const float* bias, float* y,
                         const DepthwiseShape& s, ThreadPool* pool,
                         const FusedActivation& activation) {
  const DepthwiseNhwcWeights weights(w, bias, s.channels, s.kernel_h, s.kernel_w);
  DepthwiseConv2DNhwc(x, weights, y, s, pool, activation);
}

}  // namespace ovfix::exec
