// QLinearConv (opset 10): convolution of 8-bit quantized tensors, any number of spatial
// dims, groups, dilations, strides and padding (explicit or auto_pad). A direct loop with
// exact 32-bit accumulation: the reference, not a fast path.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/cpu/misc_kernels.h"
#include "exec/kernel.h"

namespace ovfix::exec {
namespace {

struct ConvGeometry {
  std::vector<int64_t> kernel, strides, dilations, pads_begin, out_spatial;
};

absl::StatusOr<ConvGeometry> MakeGeometry(const KernelContext& ctx, const Tensor& x,
                                          const Tensor& w) {
  const size_t spatial = x.rank() - 2;
  ConvGeometry g;
  g.kernel.assign(w.dims().begin() + 2, w.dims().end());
  if (ctx.node.HasAttribute("kernel_shape") && ctx.node.GetInts("kernel_shape") != g.kernel) {
    return ctx.Error("kernel_shape does not match the weights");
  }
  g.strides = ctx.node.GetInts("strides", std::vector<int64_t>(spatial, 1));
  g.dilations = ctx.node.GetInts("dilations", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = ctx.node.GetInts("pads", std::vector<int64_t>(2 * spatial, 0));
  if (g.strides.size() != spatial || g.dilations.size() != spatial || pads.size() != 2 * spatial) {
    return ctx.Error("strides, dilations or pads do not match the spatial rank ", spatial);
  }
  const std::string auto_pad = ctx.node.GetString("auto_pad", "NOTSET");
  for (size_t i = 0; i < spatial; ++i) {
    if (g.strides[i] < 1 || g.dilations[i] < 1 || pads[i] < 0 || pads[spatial + i] < 0) {
      return ctx.Error("strides and dilations must be positive and pads not negative");
    }
    const int64_t in = x.dim(2 + i);
    const int64_t extent = g.dilations[i] * (g.kernel[i] - 1) + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in + g.strides[i] - 1) / g.strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + extent - in);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[spatial + i] = total - pads[i];
    } else if (auto_pad == "VALID") {
      pads[i] = pads[spatial + i] = 0;
    } else if (auto_pad != "NOTSET") {
      return ctx.Error("unsupported auto_pad '", auto_pad, "'");
    }
    const int64_t padded = in + pads[i] + pads[spatial + i];
    if (padded < extent) return ctx.Error("kernel larger than the padded input");
    g.out_spatial.push_back((padded - extent) / g.strides[i] + 1);
  }
  g.pads_begin.assign(pads.begin(), pads.begin() + spatial);
  return g;
}

// Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, [B].
absl::Status QLinearConv(KernelContext& ctx) {
  for (size_t i = 0; i < 8; ++i) {
    if (!ctx.has_input(i)) return ctx.Error("missing input ", i);
  }
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  const Tensor& y_zero = ctx.input(7);
  const auto eight_bit = [](DataType t) { return t == DataType::kUint8 || t == DataType::kInt8; };
  if (!eight_bit(x.type()) || !eight_bit(w.type()) || !eight_bit(y_zero.type())) {
    return ctx.Error("x, w and y_zero_point must be int8 or uint8");
  }
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return ctx.Error("x and w must have the same rank >= 3");
  }
  const int64_t group = ctx.node.GetInt("group", 1);
  const int64_t batch = x.dim(0), channels = x.dim(1), filters = w.dim(0);
  if (group < 1 || channels % group != 0 || filters % group != 0 || w.dim(1) != channels / group) {
    return ctx.Error("channels ", channels, ", filters ", filters, " and group ", group,
                     " do not fit together");
  }
  const Tensor& w_scale = ctx.input(4);
  const Tensor& w_zero = ctx.input(5);
  const auto per_filter = [&](const Tensor& t) { return t.numel() == 1 || t.numel() == filters; };
  if (ctx.input(1).numel() != 1 || ctx.input(2).numel() != 1 || ctx.input(6).numel() != 1 ||
      y_zero.numel() != 1 || !per_filter(w_scale) || !per_filter(w_zero)) {
    return ctx.Error("scales and zero points must be scalars (w's may be per filter)");
  }
  const Tensor* bias = ctx.has_input(8) ? &ctx.input(8) : nullptr;
  if (bias && (bias->type() != DataType::kInt32 || bias->numel() != filters)) {
    return ctx.Error("B must be int32 with one value per filter");
  }
  absl::StatusOr<ConvGeometry> g = MakeGeometry(ctx, x, w);
  if (!g.ok()) return g.status();

  const size_t spatial = x.rank() - 2;
  std::vector<int64_t> out_dims = {batch, filters};
  out_dims.insert(out_dims.end(), g->out_spatial.begin(), g->out_spatial.end());
  Tensor& y = ctx.Output(0, y_zero.type(), out_dims);
  const int64_t out_size = Tensor::NumElements(g->out_spatial);
  const int64_t in_size =
      Tensor::NumElements(std::vector<int64_t>(x.dims().begin() + 2, x.dims().end()));
  const int64_t kernel_size = Tensor::NumElements(g->kernel);
  const int64_t group_channels = channels / group, group_filters = filters / group;
  const int64_t x_zero = ctx.input(2).GetAsInt64(0);
  const double x_scale = ctx.input(1).GetAsDouble(0), y_scale = ctx.input(6).GetAsDouble(0);
  const double y_offset = y_zero.GetAsDouble(0);
  if (!(y_scale != 0)) return ctx.Error("y_scale must not be zero");

  ParallelFor(ctx.pool, batch * filters, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> position(spatial), origin(spatial), tap(spatial);
    for (int64_t job = begin; job < end; ++job) {
      const int64_t n = job / filters, f = job % filters,
                    first = f / group_filters * group_channels;
      const int64_t f_zero = w_zero.GetAsInt64(w_zero.numel() == 1 ? 0 : f);
      const double multiplier =
          static_cast<float>(x_scale * w_scale.GetAsDouble(w_scale.numel() == 1 ? 0 : f) / y_scale);
      for (int64_t o = 0; o < out_size; ++o) {
        int64_t rest = o;
        for (int d = static_cast<int>(spatial) - 1; d >= 0; --d) {
          position[d] = rest % g->out_spatial[d];
          rest /= g->out_spatial[d];
          origin[d] = position[d] * g->strides[d] - g->pads_begin[d];
        }
        int64_t acc = bias ? bias->data<int32_t>()[f] : 0;
        for (int64_t k = 0; k < kernel_size; ++k) {
          int64_t rest_k = k, offset = 0;
          bool inside = true;
          for (int d = static_cast<int>(spatial) - 1; d >= 0; --d) {
            tap[d] = rest_k % g->kernel[d];
            rest_k /= g->kernel[d];
          }
          for (size_t d = 0; d < spatial; ++d) {
            const int64_t i = origin[d] + tap[d] * g->dilations[d];
            if (i < 0 || i >= x.dim(2 + d)) {
              inside = false;
              break;
            }
            offset = offset * x.dim(2 + d) + i;
          }
          if (!inside) continue;  // padding holds x_zero_point: contributes 0
          for (int64_t c = 0; c < group_channels; ++c) {
            const int64_t xi = (n * channels + first + c) * in_size + offset;
            const int64_t wi = (f * group_channels + c) * kernel_size + k;
            acc += (x.GetAsInt64(xi) - x_zero) * (w.GetAsInt64(wi) - f_zero);
          }
        }
        const double value = std::nearbyint(static_cast<double>(acc) * multiplier) + y_offset;
        const int64_t index = job * out_size + o;
        if (y.type() == DataType::kUint8) {
          y.data<uint8_t>()[index] = static_cast<uint8_t>(std::clamp(value, 0.0, 255.0));
        } else {
          y.data<int8_t>()[index] = static_cast<int8_t>(std::clamp(value, -128.0, 127.0));
        }
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace

void AddQLinearConvKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "QLinearConv", 10, 18, QLinearConv, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
