#include "exec/cpu/conv_depthwise.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/cpu/float_vec.h"
#include "exec/cpu/gemm.h"
#include "exec/kernel.h"

namespace ovfix::exec {
namespace {

// The padded input plane is split into stride_h * stride_w phase planes (phase (a, b) holds
// the padded pixels at rows = a mod stride_h, columns = b mod stride_w). Every kernel tap
// then reads one phase plane at a fixed offset with unit stride, so a whole output plane
// (computed on a grid as wide as a phase row; the extra columns are dropped) is a sum of
// shifted contiguous vectors, whatever the stride and dilation.
struct Layout {
  int64_t phase_w = 0, phase_h = 0, phase_stride = 0, phases = 0;
  int64_t length = 0;  // output grid elements, rounded up to whole chunks
  std::vector<int64_t> tap_phase, tap_offset;
  // Column phase b takes input columns first[b], first[b] + stride_w, ... (count[b] of them)
  // to position offset[b] of its phase row.
  std::vector<int64_t> column_first, column_count, column_offset;
};

// The output grid is computed in chunks of 64 floats, kept in registers across the taps; its
// length is rounded up to whole vectors of the widest kind (16 floats).
constexpr int64_t kChunk = 64;
constexpr int64_t kVector = 16;
// The grid is computed a run of vectors at a time, one accumulator each: 64 floats (kChunk)
// with AVX-512 (4 vectors) and AVX2 (8), 8 vectors of the baseline's 4 floats; with fewer
// accumulators than the multiply-add's latency covers, they would wait on one another.
template <int W>
constexpr int kRunVecs = W >= 8 ? static_cast<int>(kChunk / W) : 8;

Layout MakeLayout(const DepthwiseShape& s) {
  Layout l;
  const int64_t extent_h = (s.kernel_h - 1) * s.dilation_h + 1;
  const int64_t extent_w = (s.kernel_w - 1) * s.dilation_w + 1;
  l.phase_w = std::max((s.in_w + s.pad_left + s.stride_w - 1) / s.stride_w,
                       s.out_w + (extent_w - 1) / s.stride_w);
  // One spare row: the dropped grid columns of the last output row read past its end.
  l.phase_h = std::max((s.in_h + s.pad_top + s.stride_h - 1) / s.stride_h,
                       s.out_h + (extent_h - 1) / s.stride_h) +
              1;
  l.length = (s.out_h * l.phase_w + kVector - 1) / kVector * kVector;
  l.phase_stride = l.phase_h * l.phase_w + kChunk;
  l.phases = s.stride_h * s.stride_w;
  for (int64_t b = 0; b < s.stride_w; ++b) {
    const int64_t first = ((b - s.pad_left) % s.stride_w + s.stride_w) % s.stride_w;
    l.column_first.push_back(first);
    l.column_count.push_back(first < s.in_w ? (s.in_w - first + s.stride_w - 1) / s.stride_w : 0);
    l.column_offset.push_back((first + s.pad_left) / s.stride_w);
  }
  for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
    for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
      const int64_t a = kh * s.dilation_h, b = kw * s.dilation_w;
      l.tap_phase.push_back((a % s.stride_h) * s.stride_w + b % s.stride_w);
      l.tap_offset.push_back((a / s.stride_h) * l.phase_w + b / s.stride_w);
    }
  }
  return l;
}

struct Scratch {
  std::vector<float> phases, acc;
  std::vector<const float*> sources;
};

// Short row copies, the hot spot of small planes: with AVX-512 the tails are masked vector
// operations instead of scalar loops.
template <bool kAvx512>
struct RowOps {
  // dst[i] = src[i] for i < n.
  static inline __attribute__((always_inline)) void Copy(const float* src, int64_t n, float* dst) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
  // dst[q] = src[2 * q] for q < n; src has `available` readable elements.
  static inline __attribute__((always_inline)) void Even(const float* src, int64_t n,
                                                         int64_t available, float* dst) {
    for (int64_t q = 0; q < n; ++q) dst[q] = src[2 * q];
  }
};

template <>
struct RowOps<true> {
  static inline __attribute__((target("avx512f"))) __mmask16 Mask(int64_t n) {
    return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(n, 0)) - 1);
  }
  static inline __attribute__((target("avx512f"))) void Copy(const float* src, int64_t n,
                                                             float* dst) {
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = Mask(n - i);
      _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
    }
  }
  static inline __attribute__((target("avx512f"))) void Even(const float* src, int64_t n,
                                                             int64_t available, float* dst) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t q = 0; q < n; q += 16) {
      const int64_t left = std::min<int64_t>(available - 2 * q, 32);
      const __m512 a = _mm512_maskz_loadu_ps(Mask(left), src + 2 * q);
      const __m512 b = _mm512_maskz_loadu_ps(Mask(left - 16), src + 2 * q + 16);
      _mm512_mask_storeu_ps(dst + q, Mask(n - q), _mm512_permutex2var_ps(a, even, b));
    }
  }
};

// One input plane (phases already zero in their padding) to its `multiplier` output planes.
template <bool kAvx512, int W>
inline void ConvolveOnePlane(const float* x, const float* w, const float* bias, float* y,
                             const DepthwiseShape& s, const Layout& l, float* phases, float* acc,
                             const float* const* sources) {
  using Ops = RowOps<kAvx512>;
  const int64_t taps = s.kernel_h * s.kernel_w;
  // Row phase and row within the phase of input row ih, kept without dividing per row.
  int64_t row_phase = s.pad_top % s.stride_h, phase_row = s.pad_top / s.stride_h;
  for (int64_t ih = 0; ih < s.in_h; ++ih) {
    float* row = phases + row_phase * s.stride_w * l.phase_stride + phase_row * l.phase_w;
    if (++row_phase == s.stride_h) {
      row_phase = 0;
      ++phase_row;
    }
    const float* src = x + ih * s.in_w;
    if (s.stride_w == 1) {
      Ops::Copy(src, s.in_w, row + s.pad_left);
      continue;
    }
    for (int64_t b = 0; b < s.stride_w; ++b) {
      float* dst = row + b * l.phase_stride + l.column_offset[b];
      const float* from = src + l.column_first[b];
      const int64_t count = l.column_count[b];
      if (s.stride_w == 2) {
        Ops::Even(from, count, s.in_w - l.column_first[b], dst);
      } else {
        for (int64_t q = 0; q < count; ++q) dst[q] = from[q * s.stride_w];
      }
    }
  }
  using Vec = FloatVec<W>;
  constexpr int kRunVecs = exec::kRunVecs<W>;
  for (int64_t j = 0; j < s.multiplier; ++j) {
    const float* weights = w + j * taps;
    const float b = bias != nullptr ? bias[j] : 0.0f;
    int64_t i = 0;
    for (; i + kRunVecs * W <= l.length; i += kRunVecs * W) {
      VecRun<W, kRunVecs> sums;
      for (Vec& v : sums.v) v = Vec{} + b;
      MultiplyAddRows(sums, taps, [&](int64_t t) {
        return std::pair<const float*, float>(sources[t] + i, weights[t]);
      });
      StoreRun(sums, acc + i);
    }
    // The last vectors of the grid: two chains (even and odd taps) each, so the additions do
    // not wait on one another.
    for (; i < l.length; i += W) {
      Vec a0 = Vec{} + b, a1 = {};
      int64_t t = 0;
      for (; t + 2 <= taps; t += 2) {
        Vec v0, v1;
        std::memcpy(&v0, sources[t] + i, sizeof(Vec));
        std::memcpy(&v1, sources[t + 1] + i, sizeof(Vec));
        a0 += v0 * weights[t];
        a1 += v1 * weights[t + 1];
      }
      if (t < taps) {
        Vec v0;
        std::memcpy(&v0, sources[t] + i, sizeof(Vec));
        a0 += v0 * weights[t];
      }
      a0 += a1;
      std::memcpy(acc + i, &a0, sizeof(Vec));
    }
    float* out = y + j * s.out_h * s.out_w;
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      Ops::Copy(acc + oh * l.phase_w, s.out_w, out + oh * s.out_w);
    }
  }
}

// Input planes [begin, end) to their output planes: split the padded input into phases, then
// per output plane sum the shifted phase vectors (acc[i] += w[t] * source_t[i]) with the
// accumulators of a chunk in registers across all taps. The padding in the phase planes is
// zeroed once: every plane writes the same interior positions.
template <bool kAvx512, int W>
inline void ConvolvePlanes(const float* x, const float* w, const float* bias, float* y,
                           const DepthwiseShape& s, const Layout& l, int64_t begin, int64_t end,
                           const FusedActivation& activation, Scratch& scratch) {
  const int64_t taps = s.kernel_h * s.kernel_w;
  const bool activate = activation.clamp || activation.hard_swish;
  const int64_t outputs = s.multiplier * s.out_h * s.out_w;  // of one input plane
  float* phases = scratch.phases.data();
  std::fill(phases, phases + l.phases * l.phase_stride, 0.0f);
  for (int64_t t = 0; t < taps; ++t) {
    scratch.sources[t] = phases + l.tap_phase[t] * l.phase_stride + l.tap_offset[t];
  }
  for (int64_t plane = begin; plane < end; ++plane) {
    const int64_t first_map = (plane % s.channels) * s.multiplier;
    ConvolveOnePlane<kAvx512, W>(x + plane * s.in_h * s.in_w, w + first_map * taps,
                                 bias != nullptr ? bias + first_map : nullptr, y + plane * outputs,
                                 s, l, phases, scratch.acc.data(), scratch.sources.data());
    // The outputs just written (still in cache), as the whole output would have it afterwards.
    if (activate) ActivateFloats(y + plane * outputs, outputs, activation, nullptr);
  }
}

__attribute__((target("avx512f,fma"), optimize("fp-contract=fast"), flatten)) void
ConvolvePlanesAvx512(const float* x, const float* w, const float* bias, float* y,
                     const DepthwiseShape& s, const Layout& l, int64_t begin, int64_t end,
                     const FusedActivation& activation, Scratch& scratch) {
  ConvolvePlanes<true, 16>(x, w, bias, y, s, l, begin, end, activation, scratch);
}

__attribute__((target("avx2,fma"), optimize("fp-contract=fast", "vect-cost-model=dynamic"),
               flatten)) void
ConvolvePlanesAvx2(const float* x, const float* w, const float* bias, float* y,
                   const DepthwiseShape& s, const Layout& l, int64_t begin, int64_t end,
                   const FusedActivation& activation, Scratch& scratch) {
  ConvolvePlanes<false, 8>(x, w, bias, y, s, l, begin, end, activation, scratch);
}

__attribute__((optimize("vect-cost-model=dynamic"), flatten)) void ConvolvePlanesBaseline(
    const float* x, const float* w, const float* bias, float* y, const DepthwiseShape& s,
    const Layout& l, int64_t begin, int64_t end, const FusedActivation& activation,
    Scratch& scratch) {
  ConvolvePlanes<false, 4>(x, w, bias, y, s, l, begin, end, activation, scratch);
}

}  // namespace

DepthwiseSumOrder DepthwiseConv2DSumOrder(const DepthwiseShape& s) {
  const std::string_view isa = CurrentGemmGeometry().name;
  if (isa == "avx512" && DepthwiseBlockedApplies(s)) return {};
  // The grid positions before `split` are summed by whole runs (ConvolveOnePlane).
  const int64_t run = isa == "avx512" ? kRunVecs<16> * 16
                      : isa == "avx2" ? kRunVecs<8> * 8
                                      : kRunVecs<4> * 4;
  const Layout layout = MakeLayout(s);
  return {layout.phase_w, layout.length / run * run};
}

void DepthwiseConv2D(const float* x, const float* w, const float* bias, float* y,
                     const DepthwiseShape& s, ThreadPool* pool, const FusedActivation& activation) {
  // The instruction set follows the GEMM's choice (so tests can switch both together).
  const std::string_view isa = CurrentGemmGeometry().name;
  const bool avx512 = isa == "avx512", avx2 = isa == "avx2";
  if (avx512 && DepthwiseBlockedApplies(s)) {
    DepthwiseConv2DBlocked(x, w, bias, y, s, pool);
    ActivateFloats(y, s.batch * s.channels * s.multiplier * s.out_h * s.out_w, activation, pool);
    return;
  }
  const Layout layout = MakeLayout(s);
  const int64_t taps = s.kernel_h * s.kernel_w;
  const int64_t planes = s.batch * s.channels;
  const int64_t work = planes * s.multiplier * taps * layout.length;
  auto run = [&](int64_t begin, int64_t end) {
    thread_local Scratch scratch;
    scratch.phases.resize(layout.phases * layout.phase_stride);
    scratch.acc.resize(layout.length);
    scratch.sources.resize(taps);
    if (avx512) {
      ConvolvePlanesAvx512(x, w, bias, y, s, layout, begin, end, activation, scratch);
    } else if (avx2) {
      ConvolvePlanesAvx2(x, w, bias, y, s, layout, begin, end, activation, scratch);
    } else {
      ConvolvePlanesBaseline(x, w, bias, y, s, layout, begin, end, activation, scratch);
    }
  };
  ParallelFor(work >= (int64_t{1} << 19) ? pool : nullptr, planes, 1, run);
}

}  // namespace ovfix::exec
