// im2col for Conv: the column matrix (a row per input channel and kernel offset, a column per
// output position) of one image and group, produced row by row. Inputs read with a column
// stride above 1 are first split into column phases, so that every row of the column matrix
// is a few contiguous copies whatever the stride and dilation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/gemm.h"

namespace ovfix::exec {

// Spatial sizes as 3-D (depth, height, width): lower ranks get leading 1s.
struct Spatial3 {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1}, pad[3] = {0, 0, 0};

  explicit Spatial3(const SpatialGeometry& g);
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// A row of the column matrix: input channel c seen through kernel offset (kd, kh, kw).
struct Tap {
  int64_t c = 0, kd = 0, kh = 0, kw = 0;

  Tap(const Spatial3& s, int64_t k)
      : c(k / s.kernel_size()),
        kd((k / (s.kernel[2] * s.kernel[1])) % s.kernel[0]),
        kh((k / s.kernel[2]) % s.kernel[1]),
        kw(k % s.kernel[2]) {}
  void Next(const Spatial3& s) {
    if (++kw < s.kernel[2]) return;
    kw = 0;
    if (++kh < s.kernel[1]) return;
    kh = 0;
    if (++kd < s.kernel[0]) return;
    kd = 0;
    ++c;
  }
};

// An output position: a column of the column matrix.
struct Position {
  int64_t od = 0, oh = 0, ow = 0;
  Position(const Spatial3& s, int64_t n)
      : od(n / (s.out[2] * s.out[1])), oh((n / s.out[2]) % s.out[1]), ow(n % s.out[2]) {}
  // `run` columns on along the output row, wrapping to the next row and plane at their ends.
  void Advance(const Spatial3& s, int64_t run) {
    ow += run;
    if (ow == s.out[2]) {
      ow = 0;
      if (++oh == s.out[1]) {
        oh = 0;
        ++od;
      }
    }
  }
};

// How im2col reads input rows. With column stride 1 a row is used as it is; otherwise it is
// split into `stride` phases of phase_width elements (phase b holds columns b, b + stride, ...).
// Kernel column kw then reads output columns [lo[kw], hi[kw]) at offset[kw] + ow of the row.
struct ColumnLayout {
  int64_t stride = 1, phase_width = 0, row_width = 0;
  std::vector<int64_t> lo, hi, offset;

  explicit ColumnLayout(const Spatial3& s);
  bool split() const { return stride > 1; }
};

// dst[t] = src[t * stride] for t < count.
void GatherStrided(const float* src, int64_t stride, int64_t count, float* dst);

// Splits `rows` input rows of `s.in[2]` elements into column phases (see ColumnLayout).
void SplitColumnPhases(const float* image, int64_t rows, const Spatial3& s,
                       const ColumnLayout& layout, float* out);
void SplitColumnPhases(const double* image, int64_t rows, const Spatial3& s,
                       const ColumnLayout& layout, double* out);
void SplitColumnPhases(const int32_t* image, int64_t rows, const Spatial3& s,
                       const ColumnLayout& layout, int32_t* out);

// The image as im2col reads it: itself, or its column phases written into `storage`.
template <typename T>
const T* PrepareImage(const T* image, int64_t channels, const Spatial3& s,
                      const ColumnLayout& layout, std::vector<T>& storage) {
  if (!layout.split()) return image;
  const int64_t rows = channels * s.in[0] * s.in[1];
  storage.resize(rows * layout.row_width);
  SplitColumnPhases(image, rows, s, layout, storage.data());
  return storage.data();
}

// Row `tap` of the column matrix for `count` output positions from `p`, from a prepared
// image: out[i] is the input pixel the i-th position sees through the tap, or 0 (padding).
template <typename T>
void Im2colRow(const T* image, const Spatial3& s, const ColumnLayout& layout, const Tap& tap,
               Position p, int64_t count, T* out) {
  const int64_t width = layout.row_width;
  const int64_t kd = tap.kd * s.dilation[0] - s.pad[0], kh = tap.kh * s.dilation[1] - s.pad[1];
  const int64_t lo_tap = layout.lo[tap.kw], hi_tap = layout.hi[tap.kw];
  const int64_t offset = layout.offset[tap.kw];
  const T* channel = image + tap.c * s.in[0] * s.in[1] * width;
  for (int64_t done = 0; done < count;) {
    const int64_t run = std::min(s.out[2] - p.ow, count - done);
    T* dst = out + done;
    const int64_t id = p.od * s.stride[0] + kd, ih = p.oh * s.stride[1] + kh;
    if (id < 0 || id >= s.in[0] || ih < 0 || ih >= s.in[1]) {
      std::fill(dst, dst + run, T(0));
    } else {
      const T* row = channel + (id * s.in[1] + ih) * width;
      const int64_t lo = std::clamp<int64_t>(lo_tap - p.ow, 0, run);
      const int64_t hi = std::clamp<int64_t>(hi_tap - p.ow, lo, run);
      std::fill(dst, dst + lo, T(0));
      std::memcpy(dst + lo, row + (offset + p.ow + lo), (hi - lo) * sizeof(T));
      std::fill(dst + hi, dst + run, T(0));
    }
    done += run;
    p.Advance(s, run);
  }
}

// The column matrix of a prepared image, produced block by block in packed form.
class Im2colB : public BSource {
 public:
  Im2colB(const float* image, const Spatial3& s, const ColumnLayout& layout)
      : image_(image), s_(s), layout_(layout) {}
  const float* Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                    float* dst) const override;

 private:
  const float* image_;
  const Spatial3& s_;
  const ColumnLayout& layout_;
};

// The column matrix of a prepared image packed for at most 16 positions per panel (the
// transposed product packs it as A, in panels of the micro-kernel's mr rows). The positions
// of a panel that share an output row read consecutive elements of one input row through any
// kernel offset: each such run is a segment, worked out once, and a row of a panel is one
// masked AVX-512 load per segment (padding lanes stay 0). Use it only where Applies() says
// so; Pack takes whole panels (n0 a multiple of nr).
class SegmentedColumns : public BSource {
 public:
  SegmentedColumns(const float* image, const Spatial3& s, const ColumnLayout& layout, int nr);
  static bool Applies(const Spatial3& s, int nr);
  const float* Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                    float* dst) const override;

 private:
  // Lanes `mask` of a panel row read the channel from element `offset` + lane (the offset
  // of lane 0, which may lie before the channel: only the masked lanes are read).
  struct Segment {
    int64_t offset;
    uint32_t mask;
  };
  const float* image_;
  int64_t taps_ = 0, channel_stride_ = 0;
  int nr_ = 0;
  std::vector<Segment> segments_;
  // Panel p, tap t has segments [first_[p * taps + t], first_[p * taps + t + 1]).
  std::vector<int64_t> first_;
};

}  // namespace ovfix::exec
