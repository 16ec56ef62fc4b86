// QLinearConv (opset 10): convolution of 8-bit quantized tensors, any number of spatial
// dims (1 to 3), groups, dilations, strides and padding (explicit or auto_pad). The int32
// accumulators come from conv_integer_core.h (exact, threaded); the bias is added to them and
// the sum requantized as onnxruntime does (quantize_math.h). On the VNNI path each tile of
// accumulators is requantized in registers (no int32 result in memory).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/conv_integer_core.h"
#include "exec/cpu/conv_integer_vnni.h"
#include "exec/cpu/misc_kernels.h"
#include "exec/cpu/quantize_math.h"
#include "exec/cpu/required_inputs.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// out[j] = Quantize(float(in[j] + bias) * multiplier, zero) for n values, over restrict
// pointers so that the loop vectorizes.
template <typename T>
void RequantizeRow(const int32_t* __restrict in, int64_t n, int32_t bias, float multiplier,
                   int32_t zero, T* __restrict out) {
  for (int64_t j = 0; j < n; ++j) {
    out[j] = Quantize<T>(static_cast<float>(in[j] + bias) * multiplier, zero);
  }
}

template <typename T>
void Requantize(const std::vector<int32_t>& acc, const Tensor* bias,
                const std::vector<float>& multipliers, int32_t y_zero, int64_t filters,
                int64_t out_size, T* y, ThreadPool* pool) {
  ParallelFor(pool, static_cast<int64_t>(acc.size() / std::max<int64_t>(out_size, 1)), 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t plane = begin; plane < end; ++plane) {
                  const int64_t f = plane % filters;
                  const int32_t b = bias ? bias->data<int32_t>()[f] : 0;
                  const float multiplier = multipliers[f];
                  RequantizeRow(acc.data() + plane * out_size, out_size, b, multiplier, y_zero,
                                y + plane * out_size);
                }
              });
}

// The node state: w packed for the dot-product kernel (w an initializer).
struct PackedWeights {
  int64_t group = 0;
  std::shared_ptr<VnniConvFilters> filters;
};

// Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, [B].
absl::Status QLinearConv(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 8));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  const Tensor& y_zero = ctx.input(7);
  const auto eight_bit = [](DataType t) { return t == DataType::kUint8 || t == DataType::kInt8; };
  if (!eight_bit(x.type()) || !eight_bit(w.type()) || !eight_bit(y_zero.type())) {
    return ctx.Error("x, w and y_zero_point must be int8 or uint8");
  }
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) {
    return ctx.Error("x and w must have the same rank with 1 to 3 spatial dims");
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
  OVFIX_ASSIGN_OR_RETURN(SpatialGeometry geometry, ConvGeometry(ctx, x, w));
  const float x_scale = static_cast<float>(ctx.input(1).GetAsDouble(0));
  const float y_scale = static_cast<float>(ctx.input(6).GetAsDouble(0));
  if (!(y_scale != 0)) return ctx.Error("y_scale must not be zero");

  std::vector<int64_t> out_dims = {batch, filters};
  out_dims.insert(out_dims.end(), geometry.output.begin(), geometry.output.end());
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, out_dims));
  Tensor& y = ctx.Output(0, y_zero.type(), out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  std::vector<int32_t> w_zeros(filters);
  std::vector<float> multipliers(filters);
  for (int64_t f = 0; f < filters; ++f) {
    w_zeros[f] = static_cast<int32_t>(w_zero.GetAsInt64(w_zero.numel() == 1 ? 0 : f));
    multipliers[f] = RequantizeMultiplier(
        x_scale, static_cast<float>(w_scale.GetAsDouble(w_scale.numel() == 1 ? 0 : f)), y_scale);
  }
  const int64_t out_size = geometry.output_size();
  const int32_t zero = static_cast<int32_t>(y_zero.GetAsInt64(0));
  const int32_t x_zero = static_cast<int32_t>(ctx.input(2).GetAsInt64(0));
  if (IntegerConvVnniAvailable()) {
    // Each tile of accumulators is requantized in registers where it was computed.
    const bool is_unsigned = y.type() == DataType::kUint8;
    const int32_t type_low = is_unsigned ? 0 : -128, type_high = is_unsigned ? 255 : 127;
    const ConvRequantization requantize = {
        bias ? bias->data<int32_t>() : nullptr,
        multipliers.data(),
        static_cast<float>(type_low - zero),
        static_cast<float>(type_high - zero),
        zero,
        is_unsigned ? y.data<uint8_t>() : reinterpret_cast<uint8_t*>(y.data<int8_t>())};
    // Constant weights are packed on the session's first run and kept in the node state.
    std::shared_ptr<VnniConvFilters> packed;
    if (ctx.state != nullptr && ctx.input_is_constant(3)) {
      auto* cached = static_cast<PackedWeights*>(ctx.state->get());
      if (cached == nullptr || cached->group != group) {
        auto fresh = std::make_shared<PackedWeights>();
        fresh->group = group;
        fresh->filters = PackVnniConvFilters(w, group);
        *ctx.state = fresh;
        cached = fresh.get();
      }
      packed = cached->filters;
    }
    IntegerConvVnni(x, x_zero, w, w_zeros, geometry, group, nullptr, ctx.pool, &requantize,
                    packed.get());
    return absl::OkStatus();
  }
  std::vector<int32_t> acc(y.numel());
  IntegerConv(x, x_zero, w, w_zeros, geometry, group, acc.data(), ctx.pool);
  if (y.type() == DataType::kUint8) {
    Requantize(acc, bias, multipliers, zero, filters, out_size, y.data<uint8_t>(), ctx.pool);
  } else {
    Requantize(acc, bias, multipliers, zero, filters, out_size, y.data<int8_t>(), ctx.pool);
  }
  return absl::OkStatus();
}

}  // namespace

void AddQLinearConvKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "QLinearConv", 10, kLatestOpset, QLinearConv, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
