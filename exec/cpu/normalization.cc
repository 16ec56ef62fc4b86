// LayerNormalization, InstanceNormalization, GroupNormalization, LRN and
// MeanVarianceNormalization. Statistics are computed in double with two passes (mean, then
// the mean squared deviation), which never gives a negative variance; a float LayerNorm row
// runs vector_math's LayerNormRow (double sums, a float normalization pass).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "exec/cpu/broadcast_parameter.h"
#include "exec/cpu/vector_math.h"
#include "exec/kernel.h"
#include "ir/node_check.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

struct Moments {
  double mean = 0;
  double variance = 0;
};

template <typename T>
Moments ComputeMoments(const T* x, int64_t n) {
  Moments m;
  if (n == 0) return m;
  for (int64_t i = 0; i < n; ++i) m.mean += static_cast<double>(x[i]);
  m.mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - m.mean;
    m.variance += d * d;
  }
  m.variance /= static_cast<double>(n);
  return m;
}

// Calls fn(T{}) for float or double (float16 arrives as float: Float16Mode::kAsFloat).
template <typename Fn>
absl::Status DispatchFloat(const KernelContext& ctx, DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat:
      return fn(float{});
    case DataType::kDouble:
      return fn(double{});
    default:
      return ctx.Error("unsupported element type ", std::string(DataTypeName(type)));
  }
}

absl::Status LayerNormalizationKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects inputs X and Scale");
  const Tensor& input = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(input.rank());
  OVFIX_ASSIGN_OR_RETURN(int64_t found,
                         NormalizedAxis(ctx.node, ctx.node.GetInt("axis", -1), rank));
  const int64_t axis = found;
  const std::vector<int64_t> normalized(input.dims().begin() + axis, input.dims().end());
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> scale,
                         BroadcastParameter(ctx, ctx.input(1), normalized, "Scale"));
  std::vector<double> bias;
  if (ctx.has_input(2)) {
    OVFIX_ASSIGN_OR_RETURN(std::vector<double> b,
                           BroadcastParameter(ctx, ctx.input(2), normalized, "B"));
    bias = std::move(b);
  }
  const int64_t n = Tensor::NumElements(normalized);
  const int64_t rows = axis == 0 ? 1 : input.numel() / std::max<int64_t>(n, 1);
  std::vector<int64_t> stats_dims = input.dims();
  std::fill(stats_dims.begin() + axis, stats_dims.end(), 1);
  // Mean and InvStdDev have the stash type (float unless the model asks for double).
  const DataType stash =
      ctx.node.GetInt("stash_type", 1) == 11 ? DataType::kDouble : DataType::kFloat;
  const float epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  return DispatchFloat(ctx, input.type(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = input.data<T>();
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).data<T>();
    Tensor* mean_out = ctx.outputs.size() > 1 ? &ctx.Output(1, stash, stats_dims) : nullptr;
    Tensor* inv_out = ctx.outputs.size() > 2 ? &ctx.Output(2, stash, stats_dims) : nullptr;
    auto store = [stash](Tensor* t, int64_t i, double v) {
      if (t == nullptr) return;
      if (stash == DataType::kDouble) {
        t->data<double>()[i] = v;
      } else {
        t->data<float>()[i] = static_cast<float>(v);
      }
    };
    if (n == 0) return absl::OkStatus();
    // Float rows: the vectorized row with float copies of the parameters.
    std::vector<float> scale_floats, bias_floats;
    if constexpr (std::is_same_v<T, float>) {
      scale_floats.assign(scale.begin(), scale.end());
      bias_floats.assign(bias.begin(), bias.end());
    }
    ParallelFor(ctx.pool, rows, std::max<int64_t>(1, 16384 / n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if constexpr (std::is_same_v<T, float>) {
          const LayerNormStatistics stats =
              LayerNormRow(x + r * n, y + r * n, n, scale_floats.data(),
                           bias_floats.empty() ? nullptr : bias_floats.data(), epsilon);
          store(mean_out, r, stats.mean);
          store(inv_out, r, stats.inv_std);
          continue;
        }
        const Moments m = ComputeMoments(x + r * n, n);
        const double inv_std = 1.0 / std::sqrt(m.variance + epsilon);
        for (int64_t i = 0; i < n; ++i) {
          const double normal = (static_cast<double>(x[r * n + i]) - m.mean) * inv_std;
          y[r * n + i] = static_cast<T>(normal * scale[i] + (bias.empty() ? 0.0 : bias[i]));
        }
        store(mean_out, r, m.mean);
        store(inv_out, r, inv_std);
      }
    });
    return absl::OkStatus();
  });
}

// ovfix.fused.AddLayerNormalization (rules/builtin/session_fusion.rules): LayerNormalization
// over the last axis of a + b (same shapes), optionally also returning a + b: a residual add
// and the LayerNorm after it in one pass over the rows (onnxruntime's SkipLayerNormalization).
// Each row's sum is the float sum the Add computes, normalized by LayerNormRow while in cache,
// so the outputs are those of the two nodes.
absl::Status AddLayerNormalizationKernel(KernelContext& ctx) {
  for (size_t i = 0; i < 4; ++i) {
    if (!ctx.has_input(i)) return ctx.Error("expects inputs A, B, Scale and Bias");
  }
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  const Tensor& bias = ctx.input(3);
  for (const Tensor* t : {&a, &b, &scale, &bias}) {
    if (t->type() != DataType::kFloat) return ctx.Error("expects float inputs");
  }
  if (a.rank() < 1 || a.dims() != b.dims()) {
    return ctx.Error("A and B must have one shape of rank 1 or more, are ", DescribeTensor(a),
                     " and ", DescribeTensor(b));
  }
  const int64_t n = a.dim(a.rank() - 1);
  if (scale.numel() != n || bias.numel() != n) {
    return ctx.Error("Scale and Bias must hold one value per element of the last axis");
  }
  const float epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  const int64_t rows = n == 0 ? 0 : a.numel() / n;
  const float* x0 = a.data<float>();
  const float* x1 = b.data<float>();
  float* y = ctx.OutputToOverwrite(0, DataType::kFloat, a.dims()).data<float>();
  float* sum = ctx.outputs.size() > 1 && ctx.node.output(1) != nullptr
                   ? ctx.OutputToOverwrite(1, DataType::kFloat, a.dims()).data<float>()
                   : nullptr;
  if (rows == 0) return absl::OkStatus();
  ParallelFor(ctx.pool, rows, std::max<int64_t>(1, 16384 / n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = (sum != nullptr ? sum : y) + r * n;
      for (int64_t i = 0; i < n; ++i) row[i] = x0[r * n + i] + x1[r * n + i];
      LayerNormRow(row, y + r * n, n, scale.data<float>(), bias.data<float>(), epsilon);
    }
  });
  return absl::OkStatus();
}

// One block of `count` positions of ovfix.fused.ChannelLayerNormalization: channel c of the
// block at x + c * stride (and y + c * stride). The statistics as LayerNormRow takes them (double
// sums of x and of the deviations from a float shift, corrected for the shift's rounding), with
// every loop along the contiguous positions, which vectorizes. `sums` holds 3 * count doubles,
// `factors` 3 * count floats.
__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
NormalizeChannelsBlock(const float* x, float* y, int64_t channels, int64_t stride, int64_t count,
                       const float* scale, const float* bias, float epsilon, double* sums,
                       float* factors) {
  double* sum = sums;
  double* deviation_sum = sums + count;
  double* square_sum = sums + 2 * count;
  float* shift = factors;
  float* correction = factors + count;
  float* inv_std = factors + 2 * count;
  std::fill(sums, sums + 3 * count, 0.0);
  for (int64_t c = 0; c < channels; ++c) {
    const float* in = x + c * stride;
    for (int64_t s = 0; s < count; ++s) sum[s] += in[s];
  }
  const double n = static_cast<double>(channels);
  for (int64_t s = 0; s < count; ++s) shift[s] = static_cast<float>(sum[s] / n);
  for (int64_t c = 0; c < channels; ++c) {
    const float* in = x + c * stride;
    for (int64_t s = 0; s < count; ++s) {
      const double d = static_cast<double>(in[s]) - static_cast<double>(shift[s]);
      deviation_sum[s] += d;
      square_sum[s] += d * d;
    }
  }
  for (int64_t s = 0; s < count; ++s) {
    const double mean_error = deviation_sum[s] / n;
    const double variance = std::max(0.0, square_sum[s] / n - mean_error * mean_error);
    correction[s] = static_cast<float>(mean_error);
    inv_std[s] = static_cast<float>(1.0 / std::sqrt(variance + static_cast<double>(epsilon)));
  }
  for (int64_t c = 0; c < channels; ++c) {
    const float* in = x + c * stride;
    float* out = y + c * stride;
    const float a = scale[c], b = bias[c];
    for (int64_t s = 0; s < count; ++s) {
      out[s] = ((in[s] - shift[s]) - correction[s]) * inv_std[s] * a + b;
    }
  }
}

// ovfix.fused.ChannelLayerNormalization (rules/builtin/session_fusion.rules): x [N, C, ...]
// normalized over its channels at each position, then scaled and shifted per channel: the
// LayerNorm over NCHW channels that ConvNeXt writes as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/
// Div/Mul/Add, in three passes over blocks of positions that stay in cache.
absl::Status ChannelLayerNormalizationKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) {
    return ctx.Error("expects inputs X, Scale and B");
  }
  const Tensor& input = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  if (input.type() != DataType::kFloat || input.rank() < 2 || scale.type() != DataType::kFloat ||
      bias.type() != DataType::kFloat) {
    return ctx.Error("expects float inputs, X of rank 2 or more");
  }
  const int64_t batch = input.dim(0), channels = input.dim(1);
  if (scale.numel() != channels || bias.numel() != channels) {
    return ctx.Error("Scale and B must hold one value per channel of ", DescribeTensor(input));
  }
  const int64_t positions = batch * channels == 0 ? 0 : input.numel() / (batch * channels);
  const float epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  const float* x = input.data<float>();
  float* y = ctx.OutputToOverwrite(0, DataType::kFloat, input.dims()).data<float>();
  if (positions == 0) return absl::OkStatus();
  constexpr int64_t kBlock = 256;  // positions: C * 256 floats and their statistics in cache
  const int64_t blocks = (positions + kBlock - 1) / kBlock;
  ParallelFor(ctx.pool, batch * blocks,
              std::max<int64_t>(1, 16384 / (channels * std::min(kBlock, positions))),
              [&](int64_t begin, int64_t end) {
                double sums[3 * kBlock];
                float factors[3 * kBlock];
                for (int64_t item = begin; item < end; ++item) {
                  const int64_t n = item / blocks, first = item % blocks * kBlock;
                  const int64_t offset = n * channels * positions + first;
                  NormalizeChannelsBlock(x + offset, y + offset, channels, positions,
                                         std::min(kBlock, positions - first), scale.data<float>(),
                                         bias.data<float>(), epsilon, sums, factors);
                }
              });
  return absl::OkStatus();
}

// Normalizes each of `groups` contiguous runs of `n` elements; run g uses channel
// parameters scale[channel_of(g)] and bias[...] via `param_index`.
template <typename T, typename ParamIndex>
void NormalizeRuns(ThreadPool* pool, const T* x, T* y, int64_t groups, int64_t n, double epsilon,
                   const std::vector<double>& scale, const std::vector<double>& bias,
                   ParamIndex param_index) {
  ParallelFor(pool, groups, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t g = begin; g < end; ++g) {
                  const Moments m = ComputeMoments(x + g * n, n);
                  const double inv_std = 1.0 / std::sqrt(m.variance + epsilon);
                  const int64_t p = param_index(g);
                  for (int64_t i = 0; i < n; ++i) {
                    const double normal = (static_cast<double>(x[g * n + i]) - m.mean) * inv_std;
                    y[g * n + i] = static_cast<T>(normal * scale[p] + bias[p]);
                  }
                }
              });
}

absl::StatusOr<std::vector<double>> ReadVector(const KernelContext& ctx, size_t input, int64_t size,
                                               const char* what) {
  if (!ctx.has_input(input)) return ctx.Error("missing input ", what);
  const Tensor& t = ctx.input(input);
  if (t.numel() != size) {
    return ctx.Error(what, " ", DescribeTensor(t), " must hold ", size, " values");
  }
  std::vector<double> v(size);
  for (int64_t i = 0; i < size; ++i) v[i] = t.GetAsDouble(i);
  return v;
}

// Each of `groups` runs of input 0 per batch entry normalized to zero mean and unit variance,
// then scaled and shifted by the group's entries of inputs 1 and 2 (named `bias_name`).
absl::Status NormalizeGroups(KernelContext& ctx, int64_t groups, const char* bias_name) {
  const Tensor& input = ctx.input(0);
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> scale, ReadVector(ctx, 1, groups, "scale"));
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> bias, ReadVector(ctx, 2, groups, bias_name));
  const int64_t runs = input.dim(0) * groups;
  const int64_t n = runs == 0 ? 0 : input.numel() / runs;
  const double epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  return DispatchFloat(ctx, input.type(), [&](auto zero) {
    using T = decltype(zero);
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).data<T>();
    NormalizeRuns(ctx.pool, input.data<T>(), y, runs, n, epsilon, scale, bias,
                  [groups](int64_t g) { return g % groups; });
    return absl::OkStatus();
  });
}

absl::Status InstanceNormalizationKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const Tensor& input = ctx.input(0);
  if (input.rank() < 2) return ctx.Error("input must be at least 2-D (N, C, ...)");
  return NormalizeGroups(ctx, input.dim(1), "B");
}

// Opset 18: scale and bias hold one value per group (opset 21 moved them to one per
// channel; a per-channel pair is accepted too when the sizes say so).
absl::Status GroupNormalizationKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const Tensor& input = ctx.input(0);
  if (input.rank() < 2) return ctx.Error("input must be at least 2-D (N, C, ...)");
  const int64_t channels = input.dim(1);
  const int64_t groups = ctx.node.GetInt("num_groups", 0);
  if (groups <= 0 || channels % groups != 0) {
    return ctx.Error("num_groups ", groups, " must divide the ", channels, " channels");
  }
  const bool per_channel = ctx.has_input(1) && ctx.input(1).numel() == channels;
  if (per_channel && groups != channels) {
    return ctx.Error("per-channel scale needs opset 21 semantics, not supported");
  }
  return NormalizeGroups(ctx, groups, "bias");
}

// y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta, the window
// reaching floor((size-1)/2) channels back and ceil((size-1)/2) forward.
absl::Status LrnKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const Tensor& input = ctx.input(0);
  if (input.rank() < 2) return ctx.Error("input must be at least 2-D (N, C, ...)");
  const int64_t size = ctx.node.GetInt("size", 0);
  if (size <= 0) return ctx.Error("attribute size must be positive, got ", size);
  const double alpha = ctx.node.GetFloat("alpha", 1e-4f);
  const double beta = ctx.node.GetFloat("beta", 0.75f);
  const double bias = ctx.node.GetFloat("bias", 1.0f);
  const int64_t batch = input.dim(0), channels = input.dim(1);
  const int64_t spatial = batch * channels == 0 ? 0 : input.numel() / (batch * channels);
  const int64_t back = (size - 1) / 2, forward = size / 2;
  return DispatchFloat(ctx, input.type(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = input.data<T>();
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).data<T>();
    ParallelFor(ctx.pool, batch * channels,
                std::max<int64_t>(1, 4096 / std::max<int64_t>(spatial * size, 1)),
                [&](int64_t begin, int64_t end) {
                  std::vector<double> square_sum(spatial);
                  for (int64_t nc = begin; nc < end; ++nc) {
                    const int64_t n = nc / channels, c = nc % channels;
                    std::fill(square_sum.begin(), square_sum.end(), 0.0);
                    const int64_t first = std::max<int64_t>(0, c - back);
                    const int64_t last = std::min(channels - 1, c + forward);
                    for (int64_t other = first; other <= last; ++other) {
                      const T* plane = x + (n * channels + other) * spatial;
                      for (int64_t s = 0; s < spatial; ++s) {
                        square_sum[s] += static_cast<double>(plane[s]) * plane[s];
                      }
                    }
                    const T* in = x + nc * spatial;
                    T* out = y + nc * spatial;
                    for (int64_t s = 0; s < spatial; ++s) {
                      const double scale = bias + alpha / size * square_sum[s];
                      out[s] = static_cast<T>(in[s] / std::pow(scale, beta));
                    }
                  }
                });
    return absl::OkStatus();
  });
}

// The spec's function: (x - mean) / (sqrt(variance) + 1e-9) over `axes` (default 0, 2, 3).
absl::Status MeanVarianceNormalizationKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const Tensor& input = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(input.rank());
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : ctx.node.GetInts("axes", {0, 2, 3})) {
    if (axis < -rank || axis >= rank) {
      return ctx.Error("axis ", axis, " is out of range for rank ", rank);
    }
    reduced[axis < 0 ? axis + rank : axis] = true;
  }
  // Strides into the per-group statistics: 0 along reduced axes.
  std::vector<int64_t> group_strides(rank, 0);
  int64_t groups = 1;
  for (int64_t d = rank; d-- > 0;) {
    if (reduced[d]) continue;
    group_strides[d] = groups;
    groups *= input.dim(d);
  }
  const int64_t numel = input.numel();
  const int64_t per_group = groups == 0 ? 0 : numel / groups;
  // group_of[i]: the statistics slot of element i, walked once in row-major order.
  std::vector<int64_t> group_of(numel);
  std::vector<int64_t> index(rank, 0);
  int64_t group = 0;
  for (int64_t i = 0; i < numel; ++i) {
    group_of[i] = group;
    for (int64_t d = rank; d-- > 0;) {
      group += group_strides[d];
      if (++index[d] < input.dim(d)) break;
      group -= group_strides[d] * input.dim(d);
      index[d] = 0;
    }
  }
  return DispatchFloat(ctx, input.type(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = input.data<T>();
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).data<T>();
    std::vector<double> mean(groups, 0.0), variance(groups, 0.0);
    for (int64_t i = 0; i < numel; ++i) mean[group_of[i]] += static_cast<double>(x[i]);
    for (double& m : mean) m /= static_cast<double>(per_group);
    for (int64_t i = 0; i < numel; ++i) {
      const double d = static_cast<double>(x[i]) - mean[group_of[i]];
      variance[group_of[i]] += d * d;
    }
    for (int64_t i = 0; i < numel; ++i) {
      const int64_t g = group_of[i];
      const double std_dev = std::sqrt(variance[g] / static_cast<double>(per_group));
      y[i] = static_cast<T>((static_cast<double>(x[i]) - mean[g]) / (std_dev + 1e-9));
    }
    return absl::OkStatus();
  });
}

}  // namespace

void AddNormalizationKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "LayerNormalization", 17, kLatestOpset, &LayerNormalizationKernel});
  // The session graph's fused LayerNorm (exec/cpu/fused_ops.cc), at any opset of the model.
  table.push_back({"ovfix.fused", "LayerNormalization", 1, 1, &LayerNormalizationKernel});
  table.push_back(
      {"ovfix.fused", "ChannelLayerNormalization", 1, 1, &ChannelLayerNormalizationKernel});
  table.push_back({"ovfix.fused", "AddLayerNormalization", 1, 1, &AddLayerNormalizationKernel});
  table.push_back({"", "InstanceNormalization", 1, kLatestOpset, &InstanceNormalizationKernel});
  table.push_back({"", "GroupNormalization", 18, 20, &GroupNormalizationKernel});
  table.push_back({"", "LRN", 1, kLatestOpset, &LrnKernel});
  table.push_back(
      {"", "MeanVarianceNormalization", 9, kLatestOpset, &MeanVarianceNormalizationKernel});
}

}  // namespace ovfix::exec
