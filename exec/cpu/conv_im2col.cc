#include "exec/cpu/conv_im2col.h"

namespace ovfix::exec {
namespace {

// dst[t] = src[t * stride] for t < count.
__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
GatherStrided(const float* src, int64_t stride, int64_t count, float* dst) {
  if (stride == 2) {  // the common strided convolution; a constant stride vectorizes
    for (int64_t t = 0; t < count; ++t) dst[t] = src[2 * t];
    return;
  }
  for (int64_t t = 0; t < count; ++t) dst[t] = src[t * stride];
}

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

Tap::Tap(const Spatial3& s, int64_t k)
    : c(k / s.kernel_size()),
      kd((k / (s.kernel[2] * s.kernel[1])) % s.kernel[0]),
      kh((k / s.kernel[2]) % s.kernel[1]),
      kw(k % s.kernel[2]) {}

Position::Position(const Spatial3& s, int64_t n)
    : od(n / (s.out[2] * s.out[1])), oh((n / s.out[2]) % s.out[1]), ow(n % s.out[2]) {}

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

const float* Im2colB::Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                           float* dst) const {
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

}  // namespace ovfix::exec
