#include "exec/cpu/conv_integer_vnni.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/gemm_int8.h"
#include "exec/cpu/gemm_vnni.h"

namespace ovfix::exec {
namespace {

using vnni::DotTile;
using vnni::DotTileRequantize;
using vnni::InterleaveQuadRows;
using vnni::kMr;
using vnni::kNr;
using vnni::PackPanelFromRows;

// Bytes of x as uint8: int8 values shifted by 128 (the flip of the sign bit).
inline uint8_t AsUnsigned(int8_t v) { return static_cast<uint8_t>(v) ^ 0x80; }
inline int8_t AsSigned(int8_t v) { return v; }
inline int8_t AsSigned(uint8_t v) { return static_cast<int8_t>(v ^ 0x80); }

// Images of x as uint8 with their padding written out (the shifted zero point): every
// window then reads inside its image, and the taps of a run of positions along one output
// row, at stride 1, are runs of bytes that the packing reads in place (no im2col rows).
struct PaddedImages {
  std::array<int64_t, 3> dims;  // spatial
  int64_t plane = 0;            // dims[0] * dims[1] * dims[2]
  // [images, dims...] and kNr bytes of slack for the last run; left uninitialized by the
  // allocation, as every byte is written once (padding, image or slack).
  std::unique_ptr<uint8_t[]> data;
};

template <typename X>
PaddedImages PadImages(const X* x, int64_t images, const Spatial3& s, uint8_t pad,
                       ThreadPool* pool) {
  PaddedImages p;
  for (int d = 0; d < 3; ++d) {
    const int64_t reach = (s.out[d] - 1) * s.stride[d] + (s.kernel[d] - 1) * s.dilation[d] + 1;
    p.dims[d] = std::max(s.in[d] + s.pad[d], reach);
  }
  p.plane = p.dims[0] * p.dims[1] * p.dims[2];
  p.data.reset(new uint8_t[images * p.plane + 2 * kNr]);
  std::memset(p.data.get() + images * p.plane, 0, 2 * kNr);
  const int64_t right = p.dims[2] - s.pad[2] - s.in[2];  // padding after each image row
  ParallelFor(pool, images, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const X* in = x + c * s.in_size();
      uint8_t* out = p.data.get() + c * p.plane;
      for (int64_t i0 = 0; i0 < p.dims[0]; ++i0) {
        for (int64_t i1 = 0; i1 < p.dims[1]; ++i1, out += p.dims[2]) {
          const int64_t r0 = i0 - s.pad[0], r1 = i1 - s.pad[1];
          if (r0 < 0 || r0 >= s.in[0] || r1 < 0 || r1 >= s.in[1]) {
            std::memset(out, pad, p.dims[2]);
            continue;
          }
          const X* row = in + (r0 * s.in[1] + r1) * s.in[2];
          std::memset(out, pad, s.pad[2]);
          uint8_t* inside = out + s.pad[2];
          if constexpr (std::is_same_v<X, uint8_t>) {
            std::memcpy(inside, row, s.in[2]);
          } else {
            for (int64_t i2 = 0; i2 < s.in[2]; ++i2) inside[i2] = AsUnsigned(row[i2]);
          }
          std::memset(inside + s.in[2], pad, right);
        }
      }
    }
  });
  return p;
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

}  // namespace

struct VnniConvFilters {
  std::vector<PackedFilters> groups;
};

std::shared_ptr<VnniConvFilters> PackVnniConvFilters(const Tensor& w, int64_t group) {
  auto packed = std::make_shared<VnniConvFilters>();
  const int64_t filters = w.dim(0), group_filters = filters / group;
  const int64_t depth = filters > 0 ? w.numel() / filters : 0;
  packed->groups.resize(group);
  for (int64_t g = 0; g < group; ++g) {
    const int64_t offset = g * group_filters * depth;
    packed->groups[g] = w.type() == DataType::kInt8
                            ? PackFilters(w.data<int8_t>() + offset, group_filters, depth)
                            : PackFilters(w.data<uint8_t>() + offset, group_filters, depth);
  }
  return packed;
}

namespace {

template <typename X, typename W>
void Run(const Tensor& x, int32_t x_zero, const Tensor& w, const std::vector<int32_t>& w_zero,
         const SpatialGeometry& geometry, int64_t group, int32_t* y, ThreadPool* pool,
         const ConvRequantization* requantize, const VnniConvFilters* filters_packed) {
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
  std::shared_ptr<VnniConvFilters> own;
  if (filters_packed == nullptr) {
    own = PackVnniConvFilters(w, group);
    filters_packed = own.get();
  }
  const std::vector<PackedFilters>& packed = filters_packed->groups;
  const int64_t quads = (depth + 3) / 4;
  // With requantization: per filter, the bias and the constant zero-point term.
  std::vector<int32_t> offsets(requantize != nullptr ? filters : 0);
  for (int64_t f = 0; f < static_cast<int64_t>(offsets.size()); ++f) {
    const int64_t g = f / group_filters, m = f % group_filters;
    offsets[f] = (requantize->bias != nullptr ? requantize->bias[f] : 0) + depth * xz * wz[f] -
                 xz * packed[g].sums[m];
  }
  // Blocks of positions whose im2col rows and packed columns stay in the core's cache.
  const int64_t block = std::clamp<int64_t>(
      (int64_t{128} << 10) / std::max<int64_t>(1, quads * 4) / kNr * kNr, kNr, 64 * kNr);
  const int64_t blocks = (out_size + block - 1) / block;
  const int64_t row_panels = (group_filters + kMr - 1) / kMr;
  // One image at a time, so that the padded copy is one image's.
  for (int64_t n = 0; n < batch; ++n) {
    const PaddedImages padded = PadImages(x.data<X>() + n * channels * s.in_size(), channels, s,
                                          static_cast<uint8_t>(xz), pool);
    // Where tap k (of the group's channels) reads, relative to the first byte of a window.
    std::vector<int64_t> tap_offsets(depth);
    const int64_t kernel_size = s.kernel_size();
    for (int64_t k = 0; k < depth; ++k) {
      const int64_t channel = k / kernel_size, tap = k % kernel_size;
      const int64_t t0 = tap / (s.kernel[1] * s.kernel[2]), t1 = tap / s.kernel[2] % s.kernel[1],
                    t2 = tap % s.kernel[2];
      tap_offsets[k] =
          channel * padded.plane +
          ((t0 * s.dilation[0]) * padded.dims[1] + t1 * s.dilation[1]) * padded.dims[2] +
          t2 * s.dilation[2];
    }
    // The window's first byte of output position (o0, o1, o2).
    const auto window = [&](int64_t o0, int64_t o1, int64_t o2) {
      return (o0 * s.stride[0] * padded.dims[1] + o1 * s.stride[1]) * padded.dims[2] +
             o2 * s.stride[2];
    };
    ParallelFor(pool, group * blocks, 1, [&](int64_t begin, int64_t end) {
      // The interleaved panels of this block's columns.
      std::vector<uint8_t> columns(quads * 4 * block);
      // Rows gathered for a panel that does not lie in one output row (or strides along it).
      alignas(64) uint8_t gathered[4][kNr];
      std::array<int64_t, kNr> starts;
      std::vector<int32_t> sums(column_sums ? block : 0);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t g = item / blocks, b = item % blocks;
        const int64_t first = b * block, count = std::min(block, out_size - first);
        const uint8_t* image = padded.data.get() + g * group_channels * padded.plane;
        const int64_t panels = (count + kNr - 1) / kNr;
        for (int64_t p = 0; p < panels; ++p) {
          const int64_t j0 = first + p * kNr, width = std::min<int64_t>(kNr, count - p * kNr);
          const int64_t o2 = j0 % s.out[2], o1 = j0 / s.out[2] % s.out[1],
                        o0 = j0 / (s.out[1] * s.out[2]);
          uint8_t* panel = columns.data() + p * quads * kNr * 4;
          if (s.stride[2] == 1 && o2 + width <= s.out[2]) {
            PackPanelFromRows(image + window(o0, o1, o2), tap_offsets.data(), depth, panel);
            continue;
          }
          for (int64_t j = 0, a0 = o0, a1 = o1, a2 = o2; j < width; ++j) {
            starts[j] = window(a0, a1, a2);
            if (++a2 == s.out[2]) {
              a2 = 0;
              if (++a1 == s.out[1]) {
                a1 = 0;
                ++a0;
              }
            }
          }
          for (int64_t q = 0; q < quads; ++q) {
            for (int i = 0; i < 4; ++i) {
              const int64_t k = 4 * q + i;
              if (k >= depth) {
                std::memset(gathered[i], 0, kNr);
                continue;
              }
              const uint8_t* tap = image + tap_offsets[k];
              for (int64_t j = 0; j < width; ++j) gathered[i][j] = tap[starts[j]];
              std::fill(gathered[i] + width, gathered[i] + kNr, uint8_t{0});
            }
            InterleaveQuadRows(gathered[0], gathered[1], gathered[2], gathered[3],
                               panel + q * kNr * 4);
          }
        }
        if (column_sums) {
          // Bytes of the panels; those past depth are zero.
          for (int64_t j = 0; j < count; ++j) {
            const uint8_t* column = columns.data() + (j / kNr) * quads * kNr * 4 + (j % kNr) * 4;
            int32_t sum = 0;
            for (int64_t q = 0; q < quads; ++q) {
              const uint8_t* v = column + q * kNr * 4;
              sum += v[0] + v[1] + v[2] + v[3];
            }
            sums[j] = sum;
          }
        }
        if (requantize != nullptr) {
          const int64_t f0 = g * group_filters;
          uint8_t* out = requantize->y + (n * filters + f0) * out_size + first;
          for (int64_t p = 0; p < panels; ++p) {
            const int cols = static_cast<int>(std::min<int64_t>(kNr, count - p * kNr));
            for (int64_t r = 0; r < row_panels; ++r) {
              const int rows_here =
                  static_cast<int>(std::min<int64_t>(kMr, group_filters - r * kMr));
              const int64_t f = f0 + r * kMr;
              const vnni::TileRequantization tile = {offsets.data() + f,
                                                     column_sums ? wz.data() + f : nullptr,
                                                     column_sums ? sums.data() + p * kNr : nullptr,
                                                     requantize->multipliers + f,
                                                     requantize->low,
                                                     requantize->high,
                                                     requantize->zero};
              DotTileRequantize(quads, packed[g].panel(r), columns.data() + p * quads * kNr * 4,
                                tile, out + r * kMr * out_size + p * kNr, out_size, rows_here,
                                cols);
            }
          }
          continue;
        }
        int32_t* out = y + (n * filters + g * group_filters) * out_size + first;
        for (int64_t p = 0; p < panels; ++p) {
          const int cols = static_cast<int>(std::min<int64_t>(kNr, count - p * kNr));
          for (int64_t r = 0; r < row_panels; ++r) {
            const int rows_here = static_cast<int>(std::min<int64_t>(kMr, group_filters - r * kMr));
            DotTile(quads, packed[g].panel(r), columns.data() + p * quads * kNr * 4,
                    out + r * kMr * out_size + p * kNr, out_size, rows_here, cols);
          }
        }
        // The zero point terms.
        for (int64_t m = 0; m < group_filters; ++m) {
          const int32_t filter_zero = wz[g * group_filters + m];
          const int32_t constant = depth * xz * filter_zero - xz * packed[g].sums[m];
          int32_t* row = out + m * out_size;
          if (filter_zero != 0) {
            for (int64_t j = 0; j < count; ++j) row[j] += constant - filter_zero * sums[j];
          } else if (constant != 0) {
            for (int64_t j = 0; j < count; ++j) row[j] += constant;
          }
        }
      }
    });
  }
}

template <typename X>
void RunX(const Tensor& x, int32_t x_zero, const Tensor& w, const std::vector<int32_t>& w_zero,
          const SpatialGeometry& g, int64_t group, int32_t* y, ThreadPool* pool,
          const ConvRequantization* requantize, const VnniConvFilters* filters_packed) {
  if (w.type() == DataType::kInt8) {
    Run<X, int8_t>(x, x_zero, w, w_zero, g, group, y, pool, requantize, filters_packed);
  } else {
    Run<X, uint8_t>(x, x_zero, w, w_zero, g, group, y, pool, requantize, filters_packed);
  }
}

}  // namespace

bool IntegerConvVnniAvailable() {
  return std::string(CurrentQuantGemmKernel().name) == "avx512vnni";
}

void IntegerConvVnni(const Tensor& x, int32_t x_zero, const Tensor& w,
                     const std::vector<int32_t>& w_zero, const SpatialGeometry& g, int64_t group,
                     int32_t* y, ThreadPool* pool, const ConvRequantization* requantize,
                     const VnniConvFilters* filters_packed) {
  if (x.type() == DataType::kInt8) {
    RunX<int8_t>(x, x_zero, w, w_zero, g, group, y, pool, requantize, filters_packed);
  } else {
    RunX<uint8_t>(x, x_zero, w, w_zero, g, group, y, pool, requantize, filters_packed);
  }
}

}  // namespace ovfix::exec
