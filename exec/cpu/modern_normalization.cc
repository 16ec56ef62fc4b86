// RMSNormalization-23 and GroupNormalization-21.
//   RMSNormalization: y = x / sqrt(mean(x^2 over axes [axis, rank)) + epsilon) * scale, with
//     scale broadcast (numpy-style, aligned at the right) over the normalized dims.
//   GroupNormalization-21: statistics per (batch entry, group of C / num_groups channels),
//     then scale and bias per CHANNEL (version 18, in normalization.cc, has them per group).
// Statistics are accumulated in double whatever stash_type asks: at least the precision of
// either stash type, and the same result for float and double stash to within float rounding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/cpu/broadcast_parameter.h"
#include "exec/cpu/dispatch.h"
#include "exec/cpu/modern_ops.h"
#include "ir/node_check.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

absl::Status RmsNormalizationKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects inputs X and scale");
  const Tensor& input = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(input.rank());
  OVFIX_ASSIGN_OR_RETURN(const int64_t axis,
                         NormalizedAxis(ctx.node, ctx.node.GetInt("axis", -1), rank));
  const std::vector<int64_t> normalized(input.dims().begin() + axis, input.dims().end());
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> scale,
                         BroadcastParameter(ctx, ctx.input(1), normalized, "scale"));
  const double epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  const int64_t n = Tensor::NumElements(normalized);
  const int64_t rows = n == 0 ? 0 : input.numel() / n;
  // Y has the type of scale (V), which may differ from X's (T).
  const DataType out_type = ctx.input(1).type();
  return Dispatch(ctx, input.type(), kFloatTypes, [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    return Dispatch(ctx, out_type, kFloatTypes, [&](auto out_tag) {
      using V = typename decltype(out_tag)::type;
      const T* x = input.data<T>();
      V* y = ctx.OutputToOverwrite(0, out_type, input.dims()).template data<V>();
      ParallelFor(
          ctx.pool, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
          [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              const T* row = x + r * n;
              double sum = 0;
              for (int64_t i = 0; i < n; ++i) {
                sum += static_cast<double>(row[i]) * static_cast<double>(row[i]);
              }
              const double inv_rms = 1.0 / std::sqrt(sum / static_cast<double>(n) + epsilon);
              for (int64_t i = 0; i < n; ++i) {
                y[r * n + i] = static_cast<V>(static_cast<double>(row[i]) * inv_rms * scale[i]);
              }
            }
          });
      return absl::OkStatus();
    });
  });
}

absl::StatusOr<std::vector<double>> ChannelVector(const KernelContext& ctx, size_t input,
                                                  int64_t channels, const char* what) {
  if (!ctx.has_input(input)) return ctx.Error("missing input ", what);
  const Tensor& t = ctx.input(input);
  if (t.numel() != channels) {
    return ctx.Error(what, " ", DescribeTensor(t), " must hold one value per channel (", channels,
                     ")");
  }
  std::vector<double> v(channels);
  for (int64_t i = 0; i < channels; ++i) v[i] = t.GetAsDouble(i);
  return v;
}

absl::Status GroupNormalizationKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("expects input X");
  const Tensor& input = ctx.input(0);
  if (input.rank() < 2) return ctx.Error("X must have rank 2 or more, got ", DescribeTensor(input));
  const int64_t groups = ctx.node.GetInt("num_groups", 0);
  const int64_t channels = input.dim(1);
  if (groups <= 0 || channels % groups != 0) {
    return ctx.Error("num_groups (", groups, ") must be positive and divide the channels (",
                     channels, ")");
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> scale, ChannelVector(ctx, 1, channels, "scale"));
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> bias, ChannelVector(ctx, 2, channels, "bias"));
  const double epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  const int64_t spatial =
      Tensor::NumElements(std::vector<int64_t>(input.dims().begin() + 2, input.dims().end()));
  const int64_t per_group = channels / groups;
  const int64_t n = per_group * spatial;  // elements of one group
  const int64_t runs = input.dim(0) * groups;
  return Dispatch(ctx, input.type(), kFloatTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = input.data<T>();
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).template data<T>();
    if (n == 0) return absl::OkStatus();
    ParallelFor(ctx.pool, runs, std::max<int64_t>(1, 16384 / n), [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const T* in = x + g * n;
        // Two passes (mean, then mean squared deviation): never a negative variance.
        double mean = 0;
        for (int64_t i = 0; i < n; ++i) mean += static_cast<double>(in[i]);
        mean /= static_cast<double>(n);
        double variance = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double d = static_cast<double>(in[i]) - mean;
          variance += d * d;
        }
        variance /= static_cast<double>(n);
        const double inv_std = 1.0 / std::sqrt(variance + epsilon);
        const int64_t first_channel = (g % groups) * per_group;
        for (int64_t c = 0; c < per_group; ++c) {
          const double s = scale[first_channel + c], b = bias[first_channel + c];
          const int64_t offset = c * spatial;
          for (int64_t i = offset; i < offset + spatial; ++i) {
            y[g * n + i] = static_cast<T>((static_cast<double>(in[i]) - mean) * inv_std * s + b);
          }
        }
      }
    });
    return absl::OkStatus();
  });
}

}  // namespace

void AddModernNormalizationKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "RMSNormalization", 23, kLatestOpset, &RmsNormalizationKernel});
  table.push_back({"", "GroupNormalization", 21, kLatestOpset, &GroupNormalizationKernel});
}

}  // namespace ovfix::exec
