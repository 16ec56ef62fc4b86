#include "exec/cpu/conv_integer_vnni.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <type_traits>

#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/gemm_int8.h"
#include "exec/cpu/gemm_vnni.h"

namespace ovfix::exec {
namespace {

using vnni::DotTile;
using vnni::InterleaveQuad;
using vnni::kMr;
using vnni::kNr;

// Bytes of x as uint8: int8 values shifted by 128 (the flip of the sign bit).
inline uint8_t AsUnsigned(uint8_t v) { return v; }
inline uint8_t AsUnsigned(int8_t v) { return static_cast<uint8_t>(v) ^ 0x80; }
inline int8_t AsSigned(int8_t v) { return v; }
inline int8_t AsSigned(uint8_t v) { return static_cast<int8_t>(v ^ 0x80); }

// Row k of the im2col matrix for output positions [first, first + count): the input byte
// under tap k of each position's window, `pad` outside the image. `row` has `count` bytes.
template <typename X>
void Im2colRowBytes(const X* image, const Spatial3& s, int64_t k, int64_t first, int64_t count,
                    uint8_t pad, uint8_t* row) {
  auto write_run = [&](int64_t j, int64_t run, const X* in, int64_t i2_first)
      __attribute__((always_inline)) {
    // Locals, not captures: the byte stores below may alias anything a capture refers to,
    // which would reload it on every element.
    const int64_t stride = s.stride[2], width = s.in[2];
    uint8_t* out = row + j;
    if (in == nullptr) {
      std::memset(out, pad, run);
      return;
    }
    // Positions r in [lo, hi) read inside the row; first_inside(i2_min) is the smallest r
    // whose i2 = i2_first + r * stride is at least i2_min.
    auto first_inside = [&](int64_t i2_min) {
      const int64_t num = i2_min - i2_first;
      return num <= 0 ? int64_t{0} : (num + stride - 1) / stride;
    };
    const int64_t lo = std::min(run, first_inside(0));
    const int64_t hi = std::max(lo, std::min(run, first_inside(width)));
    std::memset(out, pad, lo);
    const X* src = in + (i2_first + lo * stride);
    if (stride == 1 && sizeof(X) == 1 && std::is_same_v<X, uint8_t>) {
      std::memcpy(out + lo, src, hi - lo);
    } else {
      for (int64_t r = 0; r < hi - lo; ++r) out[lo + r] = AsUnsigned(src[r * stride]);
    }
    std::memset(out + hi, pad, run - hi);
  };
  ForEachIm2colRun(image, s, k, first, count, write_run);
}

// One group's filters as int8, in panels of kMr rows: per panel, per quad of K, per row, four
// bytes (K padded with zeros); and each filter's sum of its weights.
struct PackedFilters {
  std::vector<int8_t> data;
  std::vector<int32_t> sums;
  int64_t quads = 0;
  const int8_t* panel(int64_t p) const { return data.data() + p * quads * kMr * 4; }
};

template <typename W>
PackedFilters PackFilters(const W* w, int64_t filters, int64_t depth) {
  PackedFilters f;
  f.quads = (depth + 3) / 4;
  f.data.assign((filters + kMr - 1) / kMr * f.quads * kMr * 4, 0);
  f.sums.assign(filters, 0);
  for (int64_t m = 0; m < filters; ++m) {
    int8_t* panel = f.data.data() + (m / kMr) * f.quads * kMr * 4 + (m % kMr) * 4;
    for (int64_t k = 0; k < depth; ++k) {
      const int8_t v = AsSigned(w[m * depth + k]);
      panel[(k / 4) * kMr * 4 + (k % 4)] = v;
      f.sums[m] += v;
    }
  }
  return f;
}

template <typename X, typename W>
void Run(const Tensor& x, int32_t x_zero, const Tensor& w, const std::vector<int32_t>& w_zero,
         const SpatialGeometry& geometry, int64_t group, int32_t* y, ThreadPool* pool,
         const IntegerConvSink* sink) {
  const Spatial3 s(geometry);
  const int64_t batch = x.dim(0), channels = x.dim(1), filters = w.dim(0);
  const int64_t group_channels = channels / group, group_filters = filters / group;
  const int64_t depth = group_channels * s.kernel_size();
  const int64_t out_size = s.out_size();
  // The zero points of the shifted operands.
  const int32_t xz = std::is_same_v<X, int8_t> ? x_zero + 128 : x_zero;
  std::vector<int32_t> wz(w_zero);
  if (std::is_same_v<W, uint8_t>) {
    for (int32_t& z : wz) z -= 128;
  }
  const bool column_sums = std::any_of(wz.begin(), wz.end(), [](int32_t z) { return z != 0; });
  std::vector<PackedFilters> packed(group);
  for (int64_t g = 0; g < group; ++g) {
    packed[g] = PackFilters(w.data<W>() + g * group_filters * depth, group_filters, depth);
  }
  const int64_t quads = (depth + 3) / 4;
  // Blocks of positions whose im2col rows and packed columns stay in the core's cache.
  const int64_t block = std::clamp<int64_t>(
      (int64_t{128} << 10) / std::max<int64_t>(1, quads * 4) / kNr * kNr, kNr, 64 * kNr);
  const int64_t blocks = (out_size + block - 1) / block;
  const int64_t row_panels = (group_filters + kMr - 1) / kMr;
  ParallelFor(pool, batch * group * blocks, 1, [&](int64_t begin, int64_t end) {
    // im2col rows (4 * quads rows of `block` bytes; rows past depth stay zero) and the
    // interleaved panels.
    std::vector<uint8_t> rows(quads * 4 * block, 0), columns(quads * 4 * block);
    std::vector<int32_t> sums(column_sums ? block : 0);
    // With a sink: this block's results, one row of `block` per filter of the group.
    std::vector<int32_t> results(sink != nullptr ? group_filters * block : 0);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (group * blocks), g = item / blocks % group, b = item % blocks;
      const int64_t first = b * block, count = std::min(block, out_size - first);
      const X* image = x.data<X>() + (n * channels + g * group_channels) * s.in_size();
      for (int64_t k = 0; k < depth; ++k) {
        Im2colRowBytes(image, s, k, first, count, static_cast<uint8_t>(xz),
                       rows.data() + k * block);
      }
      const int64_t panels = (count + kNr - 1) / kNr;
      for (int64_t q = 0; q < quads; ++q) {
        InterleaveQuad(rows.data() + q * 4 * block, block, panels, quads * kNr * 4,
                       columns.data() + q * kNr * 4);
      }
      if (column_sums) {
        std::fill(sums.begin(), sums.end(), 0);
        for (int64_t k = 0; k < depth; ++k) {
          const uint8_t* row = rows.data() + k * block;
          for (int64_t j = 0; j < count; ++j) sums[j] += row[j];
        }
      }
      int32_t* out = sink != nullptr ? results.data()
                                     : y + (n * filters + g * group_filters) * out_size + first;
      const int64_t ld = sink != nullptr ? block : out_size;
      for (int64_t p = 0; p < panels; ++p) {
        const int cols = static_cast<int>(std::min<int64_t>(kNr, count - p * kNr));
        for (int64_t r = 0; r < row_panels; ++r) {
          const int rows_here = static_cast<int>(std::min<int64_t>(kMr, group_filters - r * kMr));
          DotTile(quads, packed[g].panel(r), columns.data() + p * quads * kNr * 4,
                  out + r * kMr * ld + p * kNr, ld, rows_here, cols);
        }
      }
      // The zero point terms.
      for (int64_t m = 0; m < group_filters; ++m) {
        const int32_t filter_zero = wz[g * group_filters + m];
        const int32_t constant = depth * xz * filter_zero - xz * packed[g].sums[m];
        int32_t* row = out + m * ld;
        if (filter_zero != 0) {
          for (int64_t j = 0; j < count; ++j) row[j] += constant - filter_zero * sums[j];
        } else if (constant != 0) {
          for (int64_t j = 0; j < count; ++j) row[j] += constant;
        }
      }
      if (sink != nullptr) (*sink)(n, g * group_filters, group_filters, first, count, out, ld);
    }
  });
}

template <typename X>
void RunX(const Tensor& x, int32_t x_zero, const Tensor& w, const std::vector<int32_t>& w_zero,
          const SpatialGeometry& g, int64_t group, int32_t* y, ThreadPool* pool,
          const IntegerConvSink* sink) {
  if (w.type() == DataType::kInt8) {
    Run<X, int8_t>(x, x_zero, w, w_zero, g, group, y, pool, sink);
  } else {
    Run<X, uint8_t>(x, x_zero, w, w_zero, g, group, y, pool, sink);
  }
}

}  // namespace

bool IntegerConvVnniAvailable() {
  return std::string(CurrentQuantGemmKernel().name) == "avx512vnni";
}

void IntegerConvVnni(const Tensor& x, int32_t x_zero, const Tensor& w,
                     const std::vector<int32_t>& w_zero, const SpatialGeometry& g, int64_t group,
                     int32_t* y, ThreadPool* pool, const IntegerConvSink* sink) {
  if (x.type() == DataType::kInt8) {
    RunX<int8_t>(x, x_zero, w, w_zero, g, group, y, pool, sink);
  } else {
    RunX<uint8_t>(x, x_zero, w, w_zero, g, group, y, pool, sink);
  }
}

}  // namespace ovfix::exec
