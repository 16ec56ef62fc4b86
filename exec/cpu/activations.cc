// Activation kernels: Relu and its relatives, Sigmoid, Tanh, Softplus, Clip, PRelu, Shrink.
#include <cmath>
#include <limits>
#include <type_traits>

#include "exec/cpu/elementwise.h"
#include "ir/status_macros.h"

namespace ovfix::exec::elementwise {
namespace {

constexpr Cost kCheap = Cost::kCheap;
constexpr Cost kExpensive = Cost::kExpensive;

// log(1 + exp(x)) without overflow for large x.
template <typename T>
T Softplus(T x) {
  return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

absl::Status Relu(KernelContext& ctx) {
  // Relu-14 added the signed integer types. NaN stays NaN.
  return UnaryKernel(ctx, kSignedTypes, kCheap, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;
  });
}

absl::Status LeakyRelu(KernelContext& ctx) {
  const float alpha = ctx.node.GetFloat("alpha", 0.01f);
  // Selecting the factor rather than the product keeps the loop free of a conditional
  // multiply, which g++ would not vectorize.
  return UnaryKernel(ctx, kFloatTypes, kCheap, [alpha](auto x) {
    using T = decltype(x);
    return x * (x < T(0) ? static_cast<T>(alpha) : T(1));
  });
}

absl::Status ThresholdedRelu(KernelContext& ctx) {
  const float alpha = ctx.node.GetFloat("alpha", 1.0f);
  return UnaryKernel(ctx, kFloatTypes, kCheap, [alpha](auto x) {
    using T = decltype(x);
    return x > static_cast<T>(alpha) ? x : T(0);
  });
}

absl::Status Sigmoid(KernelContext& ctx) {
  // exp(-x) overflowing to inf for very negative x still gives the right 0.
  return UnaryKernel(ctx, kFloatTypes, kExpensive, [](auto x) {
    using T = decltype(x);
    return T(1) / (T(1) + std::exp(-x));
  });
}

absl::Status HardSigmoid(KernelContext& ctx) {
  const float alpha = ctx.node.GetFloat("alpha", 0.2f);
  const float beta = ctx.node.GetFloat("beta", 0.5f);
  return UnaryKernel(ctx, kFloatTypes, kCheap, [alpha, beta](auto x) {
    using T = decltype(x);
    return std::max(T(0), std::min(T(1), static_cast<T>(alpha) * x + static_cast<T>(beta)));
  });
}

absl::Status HardSwish(KernelContext& ctx) {
  // x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
  return UnaryKernel(ctx, kFloatTypes, kCheap, [](auto x) {
    using T = decltype(x);
    const T alpha = static_cast<T>(1.0f / 6.0f);
    return x * std::max(T(0), std::min(T(1), alpha * x + T(0.5)));
  });
}

absl::Status Tanh(KernelContext& ctx) {
  return UnaryKernel(ctx, kFloatTypes, kExpensive, [](auto x) { return std::tanh(x); });
}

absl::Status SoftplusKernel(KernelContext& ctx) {
  return UnaryKernel(ctx, kFloatTypes, kExpensive, [](auto x) { return Softplus(x); });
}

absl::Status Softsign(KernelContext& ctx) {
  return UnaryKernel(ctx, kFloatTypes, kCheap, [](auto x) {
    using T = decltype(x);
    return x / (T(1) + std::abs(x));
  });
}

absl::Status Elu(KernelContext& ctx) {
  const float alpha = ctx.node.GetFloat("alpha", 1.0f);
  return UnaryKernel(ctx, kFloatTypes, kExpensive, [alpha](auto x) {
    using T = decltype(x);
    return x < T(0) ? static_cast<T>(alpha) * std::expm1(x) : x;
  });
}

absl::Status Selu(KernelContext& ctx) {
  const float alpha = ctx.node.GetFloat("alpha", 1.67326319217681884765625f);
  const float gamma = ctx.node.GetFloat("gamma", 1.05070102214813232421875f);
  return UnaryKernel(ctx, kFloatTypes, kExpensive, [alpha, gamma](auto x) {
    using T = decltype(x);
    const T a = static_cast<T>(alpha), g = static_cast<T>(gamma);
    return x <= T(0) ? g * (a * std::exp(x) - a) : g * x;
  });
}

absl::Status Celu(KernelContext& ctx) {
  const float alpha = ctx.node.GetFloat("alpha", 1.0f);
  if (alpha == 0.0f) return ctx.Error("alpha must not be 0");
  return UnaryKernel(ctx, kFloatTypes, kExpensive, [alpha](auto x) {
    using T = decltype(x);
    const T a = static_cast<T>(alpha);
    return std::max(T(0), x) + std::min(T(0), a * std::expm1(x / a));
  });
}

absl::Status Mish(KernelContext& ctx) {
  return UnaryKernel(ctx, kFloatTypes, kExpensive,
                     [](auto x) { return x * std::tanh(Softplus(x)); });
}

absl::Status Shrink(KernelContext& ctx) {
  const float lambd = ctx.node.GetFloat("lambd", 0.5f);
  const float bias = ctx.node.GetFloat("bias", 0.0f);
  return UnaryKernel(ctx, kNumericTypes, kCheap, [lambd, bias](auto x) {
    using T = decltype(x);
    if constexpr (std::is_floating_point_v<T>) {
      const T l = static_cast<T>(lambd), b = static_cast<T>(bias);
      return x < -l ? x + b : (x > l ? x - b : T(0));
    } else {
      const double v = static_cast<double>(x);
      const double y = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
      return FloatToInt<T>(y);
    }
  });
}

// Clip-1 and Clip-6: bounds are float attributes, by default the float range (so infinities
// clip to it).
absl::Status ClipAttributes(KernelContext& ctx) {
  const float low = ctx.node.GetFloat("min", std::numeric_limits<float>::lowest());
  const float high = ctx.node.GetFloat("max", std::numeric_limits<float>::max());
  return UnaryKernel(ctx, kFloatTypes, kCheap, [low, high](auto x) {
    using T = decltype(x);
    const T clipped = x < static_cast<T>(low) ? static_cast<T>(low) : x;
    return clipped > static_cast<T>(high) ? static_cast<T>(high) : clipped;
  });
}

// Clip-11 on: bounds are optional scalar inputs of x's type; Clip-12 added integer types.
absl::Status ClipInputs(KernelContext& ctx) {
  if (HasLowPrecisionFloatInput(ctx)) return RunInFloat(ctx, ClipInputs);
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& x = ctx.input(0);
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.input(i).type() != x.type()) return ctx.Error("bound ", i, " has another type");
    if (ctx.input(i).numel() != 1) return ctx.Error("bound ", i, " is not a scalar");
  }
  return Dispatch(ctx, x.type(), kNumericTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T low = ctx.has_input(1) ? ctx.input(1).data<T>()[0] : std::numeric_limits<T>::lowest();
    const T high = ctx.has_input(2) ? ctx.input(2).data<T>()[0] : std::numeric_limits<T>::max();
    Tensor& y = ctx.OutputToOverwrite(0, x.type(), x.dims());
    const T* in = x.data<T>();
    T* out = y.data<T>();
    ParallelElements(ctx.pool, x.numel(), kCheap, [&](int64_t begin, int64_t end) {
      // min(max(x, low), high), so high wins when low > high (as numpy.clip).
      MapUnary(in + begin, out + begin, end - begin, [low, high](T v) {
        const T clipped = v < low ? low : v;
        return clipped > high ? high : clipped;
      });
    });
    return absl::OkStatus();
  });
}

absl::Status PRelu(KernelContext& ctx) {
  if (HasLowPrecisionFloatInput(ctx)) return RunInFloat(ctx, PRelu);
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  if (slope.type() != x.type()) return ctx.Error("slope and input have different types");
  auto plan = BroadcastPlan::Make(x.dims(), slope.dims());
  if (!plan.ok()) return ctx.Error(plan.status().message());
  // The slope broadcasts to X, never the other way.
  if (plan->output_dims() != x.dims()) {
    return ctx.Error("slope ", ShapeToString(slope.dims()), " does not broadcast to input ",
                     ShapeToString(x.dims()));
  }
  return Dispatch(ctx, x.type(), kNumericTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.OutputToOverwrite(0, x.type(), x.dims());
    BroadcastBinary(*plan, x.data<T>(), slope.data<T>(), y.data<T>(), ctx.pool, kCheap,
                    [](T v, T s) {
                      if constexpr (std::is_unsigned_v<T>) {
                        return v;
                      } else if constexpr (std::is_floating_point_v<T>) {
                        return v * (v < T(0) ? s : T(1));  // vectorizes, see LeakyRelu
                      } else {
                        return v < T(0) ? WrapMul(s, v) : v;
                      }
                    });
    return absl::OkStatus();
  });
}

}  // namespace

void AddActivationKernels(std::vector<KernelDef>& table) {
  // Later versions of these ops only dropped consumed_inputs or added types (bfloat16,
  // integers for Relu-14): one kernel covers every version.
  static constexpr KernelDef kKernels[] = {
      {"", "Relu", 1, kLatestOpset, Relu},
      {"", "LeakyRelu", 1, kLatestOpset, LeakyRelu},
      {"", "PRelu", 1, kLatestOpset, PRelu},
      {"", "ThresholdedRelu", 10, kLatestOpset, ThresholdedRelu},
      {"", "Sigmoid", 1, kLatestOpset, Sigmoid},
      {"", "HardSigmoid", 1, kLatestOpset, HardSigmoid},
      {"", "HardSwish", 14, kLatestOpset, HardSwish},
      {"", "Tanh", 1, kLatestOpset, Tanh},
      {"", "Softplus", 1, kLatestOpset, SoftplusKernel},
      {"", "Softsign", 1, kLatestOpset, Softsign},
      {"", "Elu", 1, kLatestOpset, Elu},
      {"", "Selu", 1, kLatestOpset, Selu},
      {"", "Celu", 12, kLatestOpset, Celu},
      {"", "Mish", 18, kLatestOpset, Mish},
      {"", "Shrink", 9, kLatestOpset, Shrink},
      {"", "Clip", 1, 10, ClipAttributes},
      {"", "Clip", 11, kLatestOpset, ClipInputs},
  };
  table.insert(table.end(), std::begin(kKernels), std::end(kKernels));
}

}  // namespace ovfix::exec::elementwise
