#include "exec/cpu/conv_integer_core.h"

#include <algorithm>
#include <array>

#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/conv_integer_vnni.h"
#include "exec/cpu/gemm_int8.h"

namespace ovfix::exec {
namespace {

// dst = e[0], o[0], e[1], o[1], ... (NR pairs: a panel's columns of a pair of rows).
template <int NR>
inline void Interleave(const int16_t* e, const int16_t* o, int16_t* dst) {
  for (int n = 0; n < NR; ++n) {
    dst[2 * n] = e[n];
    dst[2 * n + 1] = o[n];
  }
}

// The im2col rows of output positions [first, first + count) of one group's image, packed as
// B (QuantPackedBIndex) with the zero point taken off (padding: 0, the zero point's value).
// Two passes over data the core's cache holds: each row of taps into `rows` (depth rows of
// `count`, a contiguous copy per run of the image's row), then the rows interleaved in pairs
// into panels of nr columns. Every element of `packed` is written, the panels' columns past
// `count` and the odd depth's last row with zeros.
template <typename T>
void PackColumns(const T* image, int32_t x_zero, const Spatial3& s, int64_t depth, int64_t first,
                 int64_t count, int nr, int16_t* rows, int16_t* packed) {
  const int64_t stride = s.stride[2], width = s.in[2];
  // The positions' runs along output rows (where the input row is fixed), the same for every
  // tap: found once, with each run's first input row and column at tap 0.
  struct Segment {
    int64_t j, run, i0, i1, i2;
  };
  thread_local std::vector<Segment> segments;
  segments.clear();
  Position p(s, first);
  for (int64_t j = 0; j < count;) {
    const int64_t run = std::min(count - j, s.out[2] - p.ow);
    segments.push_back({j, run, p.od * s.stride[0] - s.pad[0], p.oh * s.stride[1] - s.pad[1],
                        p.ow * stride - s.pad[2]});
    j += run;
    p.Advance(s, run);
  }
  Tap tap(s, 0);
  for (int64_t k = 0; k < depth; ++k, tap.Next(s)) {
    int16_t* out = rows + k * count;
    const T* plane = image + tap.c * s.in_size();
    const int64_t d0 = tap.kd * s.dilation[0], d1 = tap.kh * s.dilation[1];
    const int64_t d2 = tap.kw * s.dilation[2];
    for (const Segment& g : segments) {
      int16_t* o = out + g.j;
      const int64_t i0 = g.i0 + d0, i1 = g.i1 + d1, i2_first = g.i2 + d2, run = g.run;
      if (i0 < 0 || i0 >= s.in[0] || i1 < 0 || i1 >= s.in[1]) {
        std::fill(o, o + run, int16_t{0});
        continue;
      }
      const T* row = plane + (i0 * s.in[1] + i1) * width;
      // The positions r whose column i2_first + r * stride lies inside [0, width).
      int64_t lo, hi;
      if (stride == 1) {
        lo = std::clamp<int64_t>(-i2_first, 0, run);
        hi = std::clamp<int64_t>(width - i2_first, lo, run);
        const T* src = row + i2_first;
        for (int64_t r = lo; r < hi; ++r) o[r] = static_cast<int16_t>(int32_t{src[r]} - x_zero);
      } else {
        lo = i2_first >= 0 ? 0 : std::min(run, (-i2_first + stride - 1) / stride);
        hi = std::max(lo,
                      i2_first >= width ? 0 : std::min(run, (width - 1 - i2_first) / stride + 1));
        for (int64_t r = lo; r < hi; ++r) {
          o[r] = static_cast<int16_t>(int32_t{row[i2_first + r * stride]} - x_zero);
        }
      }
      std::fill(o, o + lo, int16_t{0});
      std::fill(o + hi, o + run, int16_t{0});
    }
  }
  const int64_t pairs = (depth + 1) / 2;
  for (int64_t q = 0; q < pairs; ++q) {
    const int16_t* even = rows + 2 * q * count;
    const int16_t* odd = 2 * q + 1 < depth ? rows + (2 * q + 1) * count : nullptr;
    for (int64_t n0 = 0; n0 < count; n0 += nr) {
      int16_t* dst = packed + QuantPackedBIndex(pairs, nr, 2 * q, n0);
      const int64_t cols = std::min<int64_t>(nr, count - n0);
      if (odd != nullptr && cols == nr) {
        switch (nr) {
          case 16:
            Interleave<16>(even + n0, odd + n0, dst);
            continue;
          case 8:
            Interleave<8>(even + n0, odd + n0, dst);
            continue;
        }
      }
      for (int64_t n = 0; n < nr; ++n) {
        dst[2 * n] = n < cols ? even[n0 + n] : int16_t{0};
        dst[2 * n + 1] = n < cols && odd != nullptr ? odd[n0 + n] : int16_t{0};
      }
    }
  }
}

template <typename X, typename W>
void Run(const Tensor& x, int32_t x_zero, const Tensor& w, const std::vector<int32_t>& w_zero,
         const SpatialGeometry& geometry, int64_t group, int32_t* y, ThreadPool* pool) {
  const Spatial3 s(geometry);
  const int64_t batch = x.dim(0), channels = x.dim(1), filters = w.dim(0);
  const int64_t group_channels = channels / group, group_filters = filters / group;
  const int64_t depth = group_channels * s.kernel_size();
  const int64_t out_size = s.out_size();
  const int nr = CurrentQuantGemmKernel().nr;
  std::vector<PackedQuantA> weights(group);
  for (int64_t g = 0; g < group; ++g) {
    const W* base = w.data<W>() + g * group_filters * depth;
    const int32_t* zeros = w_zero.data() + g * group_filters;
    weights[g].Pack(group_filters, depth, [&](int64_t m, int64_t k) {
      return static_cast<int16_t>(int32_t{base[m * depth + k]} - zeros[m]);
    });
  }
  const int64_t pairs = (depth + 1) / 2;
  // Blocks of columns whose packed B stays in the core's cache next to the weights.
  const int64_t block = std::clamp<int64_t>(
      (int64_t{96} << 10) / std::max<int64_t>(1, pairs * 4) / nr * nr, nr, 32 * nr);
  const int64_t blocks = (out_size + block - 1) / block;
  const int64_t items = batch * group * blocks;
  ParallelFor(pool, items, 1, [&](int64_t begin, int64_t end) {
    std::vector<int16_t> packed(QuantPackedBSize(pairs, nr, block));
    std::vector<int16_t> rows(depth * block);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (group * blocks), g = item / blocks % group, b = item % blocks;
      const int64_t first = b * block, count = std::min(block, out_size - first);
      const X* image = x.data<X>() + (n * channels + g * group_channels) * s.in_size();
      PackColumns(image, x_zero, s, depth, first, count, nr, rows.data(), packed.data());
      int32_t* out = y + (n * filters + g * group_filters) * out_size + first;
      QuantGemmBlock(weights[g], packed.data(), count, out, out_size);
    }
  });
}

template <typename X>
void RunX(const Tensor& x, int32_t x_zero, const Tensor& w, const std::vector<int32_t>& w_zero,
          const SpatialGeometry& g, int64_t group, int32_t* y, ThreadPool* pool) {
  if (w.type() == DataType::kInt8) {
    Run<X, int8_t>(x, x_zero, w, w_zero, g, group, y, pool);
  } else {
    Run<X, uint8_t>(x, x_zero, w, w_zero, g, group, y, pool);
  }
}

}  // namespace

void IntegerConv(const Tensor& x, int32_t x_zero, const Tensor& w,
                 const std::vector<int32_t>& w_zero, const SpatialGeometry& g, int64_t group,
                 int32_t* y, ThreadPool* pool) {
  if (IntegerConvVnniAvailable()) {
    IntegerConvVnni(x, x_zero, w, w_zero, g, group, y, pool);
    return;
  }
  if (x.type() == DataType::kInt8) {
    RunX<int8_t>(x, x_zero, w, w_zero, g, group, y, pool);
  } else {
    RunX<uint8_t>(x, x_zero, w, w_zero, g, group, y, pool);
  }
}

}  // namespace ovfix::exec
