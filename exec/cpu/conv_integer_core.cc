#include "exec/cpu/conv_integer_core.h"

#include <algorithm>
#include <array>

#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/conv_integer_vnni.h"
#include "exec/cpu/gemm_int8.h"

namespace ovfix::exec {
namespace {

// Writes the im2col columns of output positions [first, first + count) of one group's
// image into packed B (zero point taken off), which holds zeros: positions outside the image
// (padding) are left as they are.
// `slots[j]` is where column j of step 0 goes (QuantPackedBIndex(pairs, nr, 0, j)).
template <typename T>
void PackColumns(const T* image, int32_t x_zero, const Spatial3& s, int64_t depth, int64_t first,
                 int64_t count, const std::vector<int64_t>& slots, int nr, int16_t* packed) {
  const int64_t stride = s.stride[2], width = s.in[2];
  for (int64_t k = 0; k < depth; ++k) {
    int16_t* step = packed + (k / 2) * nr * 2 + (k & 1);
    auto write_run = [&](int64_t j, int64_t run, const T* row, int64_t i2_first) {
      if (row == nullptr) return;
      // The positions r whose column i2_first + r * stride lies inside [0, width): the
      // range is found once, so the copy has no test per element (the pad is the exception).
      const int64_t lo = i2_first >= 0 ? 0 : (-i2_first + stride - 1) / stride;
      const int64_t hi = i2_first >= width ? 0 : std::min(run, (width - 1 - i2_first) / stride + 1);
      const int64_t* slot = slots.data() + j;
      for (int64_t r = lo; r < hi; ++r) {
        step[slot[r]] = static_cast<int16_t>(int32_t{row[i2_first + r * stride]} - x_zero);
      }
    };
    ForEachIm2colRun(image, s, k, first, count, write_run);
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
    std::vector<int64_t> slots(block);
    for (int64_t j = 0; j < block; ++j) slots[j] = QuantPackedBIndex(pairs, nr, 0, j);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (group * blocks), g = item / blocks % group, b = item % blocks;
      const int64_t first = b * block, count = std::min(block, out_size - first);
      std::fill(packed.begin(), packed.end(), int16_t{0});
      const X* image = x.data<X>() + (n * channels + g * group_channels) * s.in_size();
      PackColumns(image, x_zero, s, depth, first, count, slots, nr, packed.data());
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
