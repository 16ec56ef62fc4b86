#include "exec/cpu/conv_im2col.h"

#include <immintrin.h>

namespace ovfix::exec {

__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
GatherStrided(const float* src, int64_t stride, int64_t count, float* dst) {
  if (stride == 2) {  // the common strided convolution; a constant stride vectorizes
    for (int64_t t = 0; t < count; ++t) dst[t] = src[2 * t];
    return;
  }
  for (int64_t t = 0; t < count; ++t) dst[t] = src[t * stride];
}

namespace {

template <typename T>
void GatherStrided(const T* src, int64_t stride, int64_t count, T* dst) {
  for (int64_t t = 0; t < count; ++t) dst[t] = src[t * stride];
}

template <typename T>
void SplitRows(const T* image, int64_t rows, const Spatial3& s, const ColumnLayout& layout,
               T* out) {
  const int64_t width = s.in[2], stride = layout.stride;
  for (int64_t r = 0; r < rows; ++r) {
    const T* src = image + r * width;
    T* dst = out + r * layout.row_width;
    for (int64_t b = 0; b < stride; ++b) {
      const int64_t count = b < width ? (width - b + stride - 1) / stride : 0;
      GatherStrided(src + b, stride, count, dst + b * layout.phase_width);
    }
  }
}

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

Spatial3::Spatial3(const SpatialGeometry& g) {
  const size_t shift = 3 - g.rank();
  for (size_t i = 0; i < g.rank(); ++i) {
    in[i + shift] = g.input[i];
    out[i + shift] = g.output[i];
    kernel[i + shift] = g.kernel[i];
    stride[i + shift] = g.strides[i];
    dilation[i + shift] = g.dilations[i];
    pad[i + shift] = g.pads_begin[i];
  }
}

ColumnLayout::ColumnLayout(const Spatial3& s) : stride(s.stride[2]) {
  const int64_t width = s.in[2], out_width = s.out[2];
  phase_width = (width + stride - 1) / stride;
  row_width = stride == 1 ? width : stride * phase_width;
  for (int64_t kw = 0; kw < s.kernel[2]; ++kw) {
    // Output column ow reads input column ow * stride + a: phase b, position ow + f.
    const int64_t a = kw * s.dilation[2] - s.pad[2];
    const int64_t f = FloorDiv(a, stride), b = a - f * stride;
    offset.push_back(stride == 1 ? a : b * phase_width + f);
    const int64_t first = a >= 0 ? 0 : (-a + stride - 1) / stride;
    const int64_t end = a >= width ? 0 : (width - a + stride - 1) / stride;
    lo.push_back(std::min(first, out_width));
    hi.push_back(std::clamp(end, lo.back(), out_width));
  }
}

void SplitColumnPhases(const float* image, int64_t rows, const Spatial3& s,
                       const ColumnLayout& layout, float* out) {
  SplitRows(image, rows, s, layout, out);
}

void SplitColumnPhases(const double* image, int64_t rows, const Spatial3& s,
                       const ColumnLayout& layout, double* out) {
  SplitRows(image, rows, s, layout, out);
}

void SplitColumnPhases(const int32_t* image, int64_t rows, const Spatial3& s,
                       const ColumnLayout& layout, int32_t* out) {
  SplitRows(image, rows, s, layout, out);
}

namespace {

// Writes `len` floats from `src` (zeros when src is null) at positions [j, j + len) of one
// row of the packed panels: position j goes to panel j / nr, lane j % nr.
__attribute__((target("avx512f"), always_inline)) inline void PutRunAvx512(
    const float* src, int64_t j, int64_t len, int nr, int64_t panel_stride, float* base) {
  int64_t panel = j / nr, lane = j - panel * nr;
  while (len > 0) {
    const int64_t take = std::min<int64_t>(nr - lane, len);
    float* d = base + panel * panel_stride + lane;
    for (int64_t t = 0; t < take; t += 16) {
      const int64_t left = take - t;
      const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
      const __m512 v = src != nullptr ? _mm512_maskz_loadu_ps(mask, src + t) : _mm512_setzero_ps();
      _mm512_mask_storeu_ps(d + t, mask, v);
    }
    if (src != nullptr) src += take;
    len -= take;
    ++panel;
    lane = 0;
  }
}

// Im2colB::Pack in one pass: every run of a column-matrix row goes straight into the panels
// with masked vector moves (no row buffer, no library calls for the short runs of late layers).
__attribute__((target("avx512f"))) void Im2colPanelsAvx512(const float* image, const Spatial3& s,
                                                           const ColumnLayout& layout, int64_t k0,
                                                           int64_t kc, int64_t n0, int64_t nc,
                                                           int nr, float* dst) {
  const Position start(s, n0);
  const int64_t panel_stride = kc * nr, padded = (nc + nr - 1) / nr * nr;
  const int64_t width = layout.row_width;
  Tap tap(s, k0);
  for (int64_t kk = 0; kk < kc; ++kk, tap.Next(s)) {
    float* base = dst + kk * nr;
    const int64_t kd = tap.kd * s.dilation[0] - s.pad[0];
    const int64_t kh = tap.kh * s.dilation[1] - s.pad[1];
    const int64_t lo_tap = layout.lo[tap.kw], hi_tap = layout.hi[tap.kw];
    const int64_t offset = layout.offset[tap.kw];
    const float* channel = image + tap.c * s.in[0] * s.in[1] * width;
    Position p = start;
    for (int64_t done = 0; done < nc;) {
      const int64_t run = std::min(s.out[2] - p.ow, nc - done);
      const int64_t id = p.od * s.stride[0] + kd, ih = p.oh * s.stride[1] + kh;
      if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1]) {
        PutRunAvx512(nullptr, done, run, nr, panel_stride, base);
      } else {
        const float* row = channel + (id * s.in[1] + ih) * width;
        const int64_t lo = std::clamp<int64_t>(lo_tap - p.ow, 0, run);
        const int64_t hi = std::clamp<int64_t>(hi_tap - p.ow, lo, run);
        if (lo > 0) PutRunAvx512(nullptr, done, lo, nr, panel_stride, base);
        PutRunAvx512(row + offset + p.ow + lo, done + lo, hi - lo, nr, panel_stride, base);
        if (hi < run) PutRunAvx512(nullptr, done + hi, run - hi, nr, panel_stride, base);
      }
      done += run;
      p.Advance(s, run);
    }
    if (padded > nc) PutRunAvx512(nullptr, nc, padded - nc, nr, panel_stride, base);
  }
}

}  // namespace

const float* Im2colB::Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                           float* dst) const {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) {
    Im2colPanelsAvx512(image_, s_, layout_, k0, kc, n0, nc, nr, dst);
    return dst;
  }
  thread_local std::vector<float> row;
  if (static_cast<int64_t>(row.size()) < nc) row.resize(nc);
  const Position start(s_, n0);
  Tap tap(s_, k0);
  for (int64_t kk = 0; kk < kc; ++kk, tap.Next(s_)) {
    Im2colRow(image_, s_, layout_, tap, start, nc, row.data());
    PackRowIntoPanels(row.data(), nc, nr, kc * nr, dst + kk * nr);
  }
  return dst;
}

namespace {

// How many segments SegmentedColumns keeps at most.
constexpr int64_t kMaxSegments = int64_t{1} << 20;

}  // namespace

bool SegmentedColumns::Applies(const Spatial3& s, int nr) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  // A panel's positions span at most this many output rows, each a segment per tap.
  const int64_t rows_per_panel = std::min<int64_t>(nr, (nr - 1) / s.out[2] + 2);
  const int64_t panels = (s.out_size() + nr - 1) / nr;
  return avx512 && nr <= 16 && panels * s.kernel_size() * rows_per_panel <= kMaxSegments;
}

SegmentedColumns::SegmentedColumns(const float* image, const Spatial3& s,
                                   const ColumnLayout& layout, int nr)
    : image_(image),
      taps_(s.kernel_size()),
      channel_stride_(s.in[0] * s.in[1] * layout.row_width),
      nr_(nr) {
  const int64_t positions = s.out_size(), panels = (positions + nr - 1) / nr;
  first_.reserve(panels * taps_ + 1);
  for (int64_t panel = 0; panel < panels; ++panel) {
    const int64_t n0 = panel * nr, n1 = std::min(positions, n0 + nr);
    Tap tap(s, 0);
    for (int64_t t = 0; t < taps_; ++t, tap.Next(s)) {
      first_.push_back(static_cast<int64_t>(segments_.size()));
      // One output row's positions [n, end) of the panel at a time.
      for (int64_t n = n0; n < n1;) {
        const Position p(s, n);
        const int64_t end = std::min(n1, n + s.out[2] - p.ow);
        const int64_t id = p.od * s.stride[0] + tap.kd * s.dilation[0] - s.pad[0];
        const int64_t ih = p.oh * s.stride[1] + tap.kh * s.dilation[1] - s.pad[1];
        // Output columns [lo, hi) of the row see the input; the others are padding.
        const int64_t lo = std::max(p.ow, layout.lo[tap.kw]);
        const int64_t hi = std::min(p.ow + (end - n), layout.hi[tap.kw]);
        if (id >= 0 && id < s.in[0] && ih >= 0 && ih < s.in[1] && lo < hi) {
          const int64_t lane = n - n0 + (lo - p.ow);  // the lane of output column lo
          const int64_t element =
              (id * s.in[1] + ih) * layout.row_width + layout.offset[tap.kw] + lo;
          const uint32_t mask = ((1u << (hi - lo)) - 1) << lane;
          segments_.push_back({element - lane, mask});
        }
        n = end;
      }
    }
  }
  first_.push_back(static_cast<int64_t>(segments_.size()));
}

__attribute__((target("avx512f"))) const float* SegmentedColumns::Pack(int64_t k0, int64_t kc,
                                                                       int64_t n0, int64_t nc,
                                                                       int nr, float* dst) const {
  const int64_t first = n0 / nr_, panels = (nc + nr_ - 1) / nr_;
  const __mmask16 row = static_cast<__mmask16>((1u << nr_) - 1);
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t* starts = first_.data() + (first + p) * taps_;
    float* out = dst + p * kc * nr_;
    int64_t c = k0 / taps_, t = k0 % taps_;
    // Addresses as integers: lane 0 of a segment may lie before the image.
    uintptr_t channel = reinterpret_cast<uintptr_t>(image_ + c * channel_stride_);
    // Rows are stored whole (16 lanes, unmasked: masked stores are slow on some cores); the
    // lanes past nr spill into the next row, written next. The block's very last row is
    // stored masked: past it lies another block, perhaps another thread's.
    const bool last_panel = p + 1 == panels;
    for (int64_t kk = 0; kk < kc; ++kk) {
      __m512 v = _mm512_setzero_ps();
      for (int64_t i = starts[t]; i < starts[t + 1]; ++i) {
        const Segment& segment = segments_[i];
        v = _mm512_mask_loadu_ps(
            v, static_cast<__mmask16>(segment.mask),
            reinterpret_cast<const float*>(channel + segment.offset * sizeof(float)));
      }
      if (last_panel && kk + 1 == kc) {
        _mm512_mask_storeu_ps(out + kk * nr_, row, v);
      } else {
        _mm512_storeu_ps(out + kk * nr_, v);
      }
      if (++t == taps_) {
        t = 0;
        channel += channel_stride_ * sizeof(float);
      }
    }
  }
  return dst;
}

}  // namespace ovfix::exec
