// ConvInteger (opset 10): Conv over 8-bit integers with zero points, accumulated in int32.
// The inputs are widened with their zero points taken off (so the padding, zero after that,
// stands for the zero point as the spec says) and then go through im2col and a plain product.
#include <cstdint>
#include <string>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/math_kernels.h"
#include "exec/kernel.h"

namespace ovfix::exec {
namespace {

bool IsByte(DataType type) { return type == DataType::kInt8 || type == DataType::kUint8; }

// The tensor's elements minus zero_point[i / per_zero_point] (zero_point may be absent).
absl::StatusOr<std::vector<int32_t>> Widen(const KernelContext& ctx, const Tensor& t,
                                           const Tensor* zero_point, int64_t groups,
                                           const char* name) {
  std::vector<int32_t> values(t.numel());
  std::vector<int32_t> zero(1, 0);
  if (zero_point != nullptr) {
    if (zero_point->type() != t.type() ||
        (zero_point->numel() != 1 && zero_point->numel() != groups)) {
      return ctx.Error(name, " zero point must be one value or ", groups, " of the same type, is ",
                       DescribeTensor(*zero_point));
    }
    zero.resize(zero_point->numel());
    for (size_t i = 0; i < zero.size(); ++i) zero[i] = zero_point->GetAsInt64(i);
  }
  const int64_t per_group = groups == 0 ? 0 : t.numel() / groups;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int32_t z = zero.size() == 1 ? zero[0] : zero[i / per_group];
    const int32_t v = t.type() == DataType::kInt8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
    values[i] = v - z;
  }
  return values;
}

absl::Status ConvInteger(KernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs x and w");
  }
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (!IsByte(x.type()) || !IsByte(w.type())) {
    return ctx.Error("x and w must be int8 or uint8, are ", DescribeTensor(x), " and ",
                     DescribeTensor(w));
  }
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) {
    return ctx.Error("x and w must have the same rank with 1 to 3 spatial dims, are ",
                     DescribeTensor(x), " and ", DescribeTensor(w));
  }
  const int64_t group = ctx.node.GetInt("group", 1);
  const int64_t batch = x.dim(0), channels = x.dim(1), maps = w.dim(0);
  if (group <= 0 || channels % group != 0 || maps % group != 0 || w.dim(1) != channels / group) {
    return ctx.Error("group ", group, " does not fit ", channels, " input channels and W ",
                     DescribeTensor(w));
  }
  auto kernel = KernelShape(ctx, std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()));
  if (!kernel.ok()) return kernel.status();
  auto geometry = ReadSpatialAttributes(
      ctx, std::vector<int64_t>(x.dims().begin() + 2, x.dims().end()), *kernel);
  if (!geometry.ok()) return geometry.status();
  if (absl::Status s = ComputeConvOutput(ctx, *geometry); !s.ok()) return s;
  auto xs = Widen(ctx, x, ctx.has_input(2) ? &ctx.input(2) : nullptr, 1, "x");
  if (!xs.ok()) return xs.status();
  auto ws = Widen(ctx, w, ctx.has_input(3) ? &ctx.input(3) : nullptr, maps, "w");
  if (!ws.ok()) return ws.status();
  std::vector<int64_t> dims = {batch, maps};
  dims.insert(dims.end(), geometry->output.begin(), geometry->output.end());
  if (absl::Status s = CheckOutputSize(ctx, dims); !s.ok()) return s;
  Tensor& y = ctx.Output(0, DataType::kInt32, dims);
  if (y.numel() == 0) return absl::OkStatus();

  const Spatial3 s(*geometry);
  const ColumnLayout layout(s);
  const int64_t in_size = s.in_size(), out_size = s.out_size();
  const int64_t group_channels = channels / group, group_maps = maps / group;
  const int64_t depth = group_channels * s.kernel_size();
  std::vector<int32_t> columns(depth * out_size), phases;
  std::vector<int64_t> sums(out_size);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t g = 0; g < group; ++g) {
      const int32_t* image = xs->data() + (n * channels + g * group_channels) * in_size;
      const int32_t* prepared = PrepareImage(image, group_channels, s, layout, phases);
      Tap tap(s, 0);
      for (int64_t k = 0; k < depth; ++k, tap.Next(s)) {
        Im2colRow(prepared, s, layout, tap, Position(s, 0), out_size,
                  columns.data() + k * out_size);
      }
      for (int64_t m = 0; m < group_maps; ++m) {
        const int32_t* weights = ws->data() + (g * group_maps + m) * depth;
        std::fill(sums.begin(), sums.end(), 0);
        for (int64_t k = 0; k < depth; ++k) {
          const int64_t wk = weights[k];
          const int32_t* column = columns.data() + k * out_size;
          for (int64_t i = 0; i < out_size; ++i) sums[i] += wk * column[i];
        }
        int32_t* out = y.data<int32_t>() + (n * maps + g * group_maps + m) * out_size;
        for (int64_t i = 0; i < out_size; ++i) out[i] = static_cast<int32_t>(sums[i]);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddConvIntegerKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "ConvInteger", 10, kLatestOpset, &ConvInteger, Float16Mode::kNative});
}

}  // namespace ovfix::exec
