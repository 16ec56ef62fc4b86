// Data ops of opsets 20-26:
//   TensorScatter-24: a copy of past_cache with `update` written along `axis` from
//     write_indices[batch] on (modulo the axis length in "circular" mode);
//   AffineGrid-20: theta [N, 2, 3] / [N, 3, 4] applied to the grid of normalized positions
//     of size [N, C, H, W] / [N, C, D, H, W], giving [N, H, W, 2] / [N, D, H, W, 3];
//   CumProd-26: CumSum's walk with a product (exclusive starts from 1);
//   BitCast-26: the same bytes under another type of the same bit width.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/dispatch.h"
#include "exec/cpu/modern_ops.h"
#include "ir/node_check.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

// Elements before, along and after one axis of a shape.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisSplit SplitAtAxis(const std::vector<int64_t>& dims, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (d < axis) s.outer *= dims[d];
    if (d > axis) s.inner *= dims[d];
  }
  s.n = dims[axis];
  return s;
}

absl::Status TensorScatterKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects past_cache and update");
  const Tensor& past = ctx.input(0);
  const Tensor& update = ctx.input(1);
  const int64_t rank = static_cast<int64_t>(past.rank());
  OVFIX_ASSIGN_OR_RETURN(const int64_t axis,
                         NormalizedAxis(ctx.node, ctx.node.GetInt("axis", -2), rank));
  if (axis == 0) return ctx.Error("axis cannot be the batch axis");
  const std::string mode = ctx.node.GetString("mode", "linear");
  if (mode != "linear" && mode != "circular") {
    return ctx.Error("mode must be linear or circular, not '", mode, "'");
  }
  bool same = update.rank() == past.rank() && update.type() == past.type();
  for (int64_t d = 0; same && d < rank; ++d) same = d == axis || update.dim(d) == past.dim(d);
  if (!same) {
    return ctx.Error("update ", DescribeTensor(update), " must match past_cache ",
                     DescribeTensor(past), " but along axis ", axis);
  }
  // Whole elements are moved as bytes; the packed types have no byte per element.
  const size_t element = ElementSize(past.type());
  if (element == 0) {
    return ctx.Error("element type ", std::string(DataTypeName(past.type())), " is not supported");
  }
  const int64_t batch = past.dim(0);
  std::vector<int64_t> write(batch, 0);
  if (ctx.has_input(2)) {
    const Tensor& indices = ctx.input(2);
    if (indices.numel() != batch) {
      return ctx.Error("write_indices ", DescribeTensor(indices), " must hold ", batch, " values");
    }
    for (int64_t b = 0; b < batch; ++b) write[b] = indices.GetAsInt64(b);
  }
  const AxisSplit cache = SplitAtAxis(past.dims(), axis);
  const AxisSplit incoming = SplitAtAxis(update.dims(), axis);
  const bool circular = mode == "circular";
  for (int64_t b = 0; b < batch; ++b) {
    if (write[b] < 0 || (!circular && write[b] + incoming.n > cache.n)) {
      return ctx.Error("write index ", write[b], " with ", incoming.n,
                       " updates does not fit the cache's ", cache.n, " positions");
    }
  }
  Tensor& out = ctx.OutputToOverwrite(0, past.type(), past.dims());
  if (past.numel() == 0) return absl::OkStatus();
  std::memcpy(out.raw(), past.raw(), past.nbytes());
  const size_t run = cache.inner * element;  // bytes of one position
  const int64_t per_batch = cache.outer / batch;
  auto* dst = static_cast<std::byte*>(out.raw());
  const auto* src = static_cast<const std::byte*>(update.raw());
  for (int64_t o = 0; o < cache.outer; ++o) {
    const int64_t b = o / per_batch;
    for (int64_t s = 0; s < incoming.n; ++s) {
      int64_t position = write[b] + s;
      if (circular) position %= cache.n;
      std::memcpy(dst + (o * cache.n + position) * run, src + (o * incoming.n + s) * run, run);
    }
  }
  return absl::OkStatus();
}

// The normalized positions of `count` pixels in [-1, 1]: their centers when align_corners,
// else the centers of `count` equal cells spanning [-1, 1].
std::vector<double> BasePositions(int64_t count, bool align_corners) {
  std::vector<double> p(count);
  for (int64_t i = 0; i < count; ++i) {
    if (align_corners) {
      p[i] =
          count == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(count - 1);
    } else {
      p[i] = (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(count) - 1.0;
    }
  }
  return p;
}

absl::Status AffineGridKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects theta and size");
  const Tensor& theta = ctx.input(0);
  const Tensor& size = ctx.input(1);
  if (size.rank() != 1 || (size.numel() != 4 && size.numel() != 5)) {
    return ctx.Error("size ", DescribeTensor(size), " must hold 4 (2-D) or 5 (3-D) values");
  }
  const int64_t spatial = size.numel() - 2;  // 2 or 3
  std::vector<int64_t> sizes(size.numel());
  for (int64_t i = 0; i < size.numel(); ++i) {
    sizes[i] = size.GetAsInt64(i);
    if (sizes[i] < 0) return ctx.Error("size ", sizes[i], " is negative");
  }
  const int64_t n = sizes[0];
  if (theta.dims() != std::vector<int64_t>{n, spatial, spatial + 1}) {
    return ctx.Error("theta ", DescribeTensor(theta), " must be [", n, ", ", spatial, ", ",
                     spatial + 1, "]");
  }
  const bool align = ctx.node.GetInt("align_corners", 0) != 0;
  // Positions along W (x), H (y) and, in 3-D, D (z); a missing D is one position at 0
  // (its theta column does not exist, so its value never enters).
  const std::vector<double> xs = BasePositions(sizes.back(), align);
  const std::vector<double> ys = BasePositions(sizes[sizes.size() - 2], align);
  const std::vector<double> zs =
      spatial == 3 ? BasePositions(sizes[2], align) : std::vector<double>{0.0};
  std::vector<int64_t> out_dims(sizes.begin() + 2, sizes.end());
  out_dims.insert(out_dims.begin(), n);
  out_dims.push_back(spatial);
  return Dispatch(ctx, theta.type(), kFloatTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* t = theta.data<T>();
    T* grid = ctx.OutputToOverwrite(0, theta.type(), out_dims).template data<T>();
    const int64_t cols = spatial + 1;
    for (int64_t b = 0; b < n; ++b) {
      const T* m = t + b * spatial * cols;
      for (double z : zs) {
        for (double y : ys) {
          for (double x : xs) {
            const double position[3] = {x, y, z};
            for (int64_t r = 0; r < spatial; ++r) {
              double value = static_cast<double>(m[r * cols + spatial]);  // translation
              for (int64_t c = 0; c < spatial; ++c) {
                value += static_cast<double>(m[r * cols + c]) * position[c];
              }
              *grid++ = static_cast<T>(value);
            }
          }
        }
      }
    }
    return absl::OkStatus();
  });
}

absl::Status CumProdKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects inputs x and axis");
  const Tensor& input = ctx.input(0);
  const Tensor& axis_tensor = ctx.input(1);
  if (axis_tensor.numel() != 1 ||
      (axis_tensor.type() != DataType::kInt64 && axis_tensor.type() != DataType::kInt32)) {
    return ctx.Error("axis must be one int32 or int64, got ", DescribeTensor(axis_tensor));
  }
  const int64_t rank = static_cast<int64_t>(input.rank());
  if (rank == 0) return ctx.Error("x must have rank 1 or more");
  OVFIX_ASSIGN_OR_RETURN(const int64_t axis,
                         NormalizedAxis(ctx.node, axis_tensor.GetAsInt64(0), rank));
  const AxisSplit lines = SplitAtAxis(input.dims(), axis);
  const bool exclusive = ctx.node.GetInt("exclusive", 0) != 0;
  const bool reverse = ctx.node.GetInt("reverse", 0) != 0;
  constexpr auto kTypes = kFloatTypes + TypeList<int32_t, int64_t, uint32_t, uint64_t>();
  return Dispatch(ctx, input.type(), kTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Floats multiply in double; integers in uint64, wrapping like the element type (the low
    // bits of a product do not depend on the high bits of its factors).
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    const T* x = input.data<T>();
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).template data<T>();
    const int64_t count = lines.outer * lines.inner;
    ParallelFor(ctx.pool, count, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, lines.n)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t line = begin; line < end; ++line) {
                    const int64_t start =
                        line / lines.inner * lines.n * lines.inner + line % lines.inner;
                    Acc product = 1;
                    for (int64_t step = 0; step < lines.n; ++step) {
                      const int64_t k = reverse ? lines.n - 1 - step : step;
                      const int64_t i = start + k * lines.inner;
                      Acc value;
                      if constexpr (std::is_floating_point_v<T>) {
                        value = static_cast<double>(x[i]);
                      } else {
                        value = static_cast<uint64_t>(static_cast<Wide>(x[i]));
                      }
                      if (!exclusive) product *= value;
                      y[i] = static_cast<T>(product);
                      if (exclusive) product *= value;
                    }
                  }
                });
    return absl::OkStatus();
  });
}

absl::Status BitCastKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("expects an input");
  const Tensor& input = ctx.input(0);
  const int64_t to = ctx.node.GetInt("to", 0);
  if (to <= 0 || to > kLastDataType || to == static_cast<int64_t>(DataType::kString)) {
    return ctx.Error("to ", to, " is not a non-string element type");
  }
  const DataType type = static_cast<DataType>(to);
  if (input.type() == DataType::kString || BitsPerElement(type) != BitsPerElement(input.type())) {
    return ctx.Error("cannot bitcast ", DescribeTensor(input), " to ",
                     std::string(DataTypeName(type)), ": the bit widths differ");
  }
  // The same bytes, shared: tensors are not written after their kernel returns.
  ctx.outputs[0] = Tensor(type, input.dims(), input.buffer());
  return absl::OkStatus();
}

}  // namespace

void AddModernDataKernels(std::vector<KernelDef>& table) {
  // TensorScatter and BitCast move bytes of any type, float16 included, unconverted.
  table.push_back(
      {"", "TensorScatter", 24, kLatestOpset, &TensorScatterKernel, Float16Mode::kNative});
  table.push_back({"", "AffineGrid", 20, kLatestOpset, &AffineGridKernel});
  table.push_back({"", "CumProd", 26, kLatestOpset, &CumProdKernel});
  table.push_back({"", "BitCast", 26, kLatestOpset, &BitCastKernel, Float16Mode::kNative});
}

}  // namespace ovfix::exec
