// BatchNormalization, all opsets. Inference folds the four parameter vectors into one scale
// and one shift per channel; training mode (training_mode = 1 from opset 14, or extra outputs
// before it) normalizes with the batch statistics and also returns the updated running ones.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "exec/cpu/math_kernels.h"
#include "exec/kernel.h"

namespace ovfix::exec {

// (math_kernels.h) A product, then a sum, rounded alike on every CPU (no multiply-add). Compiled
// for AVX-512 and AVX2 as well: the generic loop runs 4 floats a step at most (DenseNet's
// BatchNormalization + Relu layers took 1.6x as long).
__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic", "fp-contract=off"))) void
ScaleShiftClampRange(const float* x, float* y, int64_t n, float a, float b, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] * a + b;
    v = v < lo ? lo : v;
    y[i] = v > hi ? hi : v;
  }
}

namespace {

// y[n, f, s] = x[n, f, s] * scale[f] + shift[f], for `features` groups of `inner` elements,
// then the activation the session fused into the node (a Relu after a pre-activation
// BatchNormalization, as in DenseNets: one pass over the tensor instead of two).
template <typename T>
void ScaleShift(const T* x, T* y, int64_t batch, int64_t features, int64_t inner,
                const std::vector<double>& scale, const std::vector<double>& shift,
                const FusedActivation& activation, ThreadPool* pool) {
  const int64_t planes = batch * features;
  ParallelFor(planes * inner >= (int64_t{1} << 16) ? pool : nullptr, planes,
              std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t plane = begin; plane < end; ++plane) {
                  const int64_t f = plane % features;
                  const T a = static_cast<T>(scale[f]), b = static_cast<T>(shift[f]);
                  const T* src = x + plane * inner;
                  T* dst = y + plane * inner;
                  if constexpr (std::is_same_v<T, float>) {
                    constexpr float kInfinity = std::numeric_limits<float>::infinity();
                    ScaleShiftClampRange(src, dst, inner, a, b,
                                         activation.clamp ? activation.clamp_min : -kInfinity,
                                         activation.clamp ? activation.clamp_max : kInfinity);
                    // The vectorized pass: Activate's barrier against contraction keeps a loop
                    // of it scalar (PP-OCR's hard-swish layers took 1.6x as long).
                    if (activation.hard_swish) {
                      HardSwishFloats(dst, inner, activation.hard_swish_alpha,
                                      activation.hard_swish_beta, nullptr);
                    }
                  } else {
                    for (int64_t i = 0; i < inner; ++i) dst[i] = src[i] * a + b;
                    if (activation.clamp) {
                      const T lo = static_cast<T>(activation.clamp_min);
                      const T hi = static_cast<T>(activation.clamp_max);
                      for (int64_t i = 0; i < inner; ++i) {
                        dst[i] = dst[i] < lo ? lo : dst[i];  // NaN stays NaN
                        dst[i] = dst[i] > hi ? hi : dst[i];
                      }
                    }
                  }
                }
              });
}

std::vector<double> ReadParameter(const Tensor& t) {
  std::vector<double> values(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) values[i] = t.GetAsDouble(i);
  return values;
}

template <typename T>
absl::Status Normalize(KernelContext& ctx, bool training) {
  const Tensor& x = ctx.input(0);
  const int64_t batch = x.dim(0), channels = x.rank() > 1 ? x.dim(1) : 1;
  const int64_t spatial_size = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
  // Before opset 9, spatial = 0 gives every (channel, position) its own parameters.
  const bool spatial = ctx.opset >= 9 || ctx.node.GetInt("spatial", 1) != 0;
  const int64_t features = spatial ? channels : channels * spatial_size;
  const int64_t inner = spatial ? spatial_size : 1;
  std::vector<double> params[4];
  static constexpr const char* kNames[4] = {"scale", "B", "mean", "var"};
  for (int i = 0; i < 4; ++i) {
    const Tensor& p = ctx.input(i + 1);
    if (!IsFloatingPoint(p.type()) || p.numel() != features) {
      return ctx.Error(kNames[i], " must hold ", features, " floating-point values, is ",
                       DescribeTensor(p));
    }
    params[i] = ReadParameter(p);
  }
  const double epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  const double momentum = ctx.node.GetFloat("momentum", 0.9f);
  std::vector<double> mean = params[2], var = params[3];
  const T* x_data = x.data<T>();
  if (training) {
    // Batch statistics per feature, over the batch and (for spatial) the positions.
    const double count = static_cast<double>(batch * inner);
    std::vector<double> sum(features, 0.0), squares(features, 0.0);
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t f = 0; f < features; ++f) {
        const T* src = x_data + (n * features + f) * inner;
        for (int64_t i = 0; i < inner; ++i) sum[f] += src[i];
      }
    }
    for (int64_t f = 0; f < features; ++f) mean[f] = count > 0 ? sum[f] / count : 0.0;
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t f = 0; f < features; ++f) {
        const T* src = x_data + (n * features + f) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const double d = src[i] - mean[f];
          squares[f] += d * d;
        }
      }
    }
    for (int64_t f = 0; f < features; ++f) var[f] = count > 0 ? squares[f] / count : 0.0;
  }
  std::vector<double> scale(features), shift(features);
  for (int64_t f = 0; f < features; ++f) {
    const BatchNormChannel channel(params[0][f], params[1][f], mean[f], var[f], epsilon);
    scale[f] = channel.scale;
    shift[f] = channel.shift;
  }
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), x.dims());
  ScaleShift(x_data, y.data<T>(), batch, features, inner, scale, shift, ctx.fused, ctx.pool);
  if (!training) return absl::OkStatus();
  // Opset 14+: running_mean, running_var. Earlier: mean, var, saved_mean, saved_var.
  const std::vector<int64_t> param_dims = ctx.input(3).dims();
  for (size_t out = 1; out < ctx.outputs.size() && out <= 4; ++out) {
    if (ctx.node.output(out) == nullptr) continue;
    Tensor& t = ctx.Output(out, x.type(), param_dims);
    T* data = t.data<T>();
    for (int64_t f = 0; f < features; ++f) {
      double value;
      if (out == 1) {
        value = params[2][f] * momentum + mean[f] * (1 - momentum);
      } else if (out == 2) {
        value = params[3][f] * momentum + var[f] * (1 - momentum);
      } else {
        value = out == 3 ? mean[f] : var[f];
      }
      data[f] = static_cast<T>(value);
    }
  }
  return absl::OkStatus();
}

absl::Status BatchNormalization(KernelContext& ctx) {
  if (ctx.num_inputs() < 5) return ctx.Error("needs inputs X, scale, B, mean and var");
  for (int i = 0; i < 5; ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
  }
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) return ctx.Error("X must be [N, C, ...], is ", DescribeTensor(x));
  bool training;
  if (ctx.opset >= 14) {
    training = ctx.node.GetInt("training_mode", 0) != 0;
  } else {
    training = false;
    for (size_t i = 1; i < ctx.node.num_outputs(); ++i) {
      training = training || ctx.node.output(i) != nullptr;
    }
  }
  switch (x.type()) {
    case DataType::kFloat:
      return Normalize<float>(ctx, training);
    case DataType::kDouble:
      return Normalize<double>(ctx, training);
    default:
      return ctx.Error("unsupported element type ", std::string(DataTypeName(x.type())));
  }
}

}  // namespace

void AddBatchNormKernels(std::vector<KernelDef>& table) {
  table.push_back(
      {"", "BatchNormalization", 1, kLatestOpset, &BatchNormalization, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
