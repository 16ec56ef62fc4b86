// Gelu-20 and Swish-24: element-wise activations that opsets 20 and 24 made standard ops.
//   Gelu: y = 0.5 x (1 + erf(x / sqrt 2)); approximate "tanh":
//         y = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)));
//   Swish: y = x sigmoid(alpha x).
// float16 and bfloat16 arrive as float (Float16Mode::kAsFloat); double is computed in double.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "exec/cpu/dispatch.h"
#include "exec/cpu/modern_ops.h"
#include "exec/cpu/vector_math.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

constexpr int64_t kChunk = 4096;  // elements per task: enough to amortize a task's cost

// Calls fn(first, count) over [0, n) in chunks spread over the pool.
template <typename Fn>
void ForChunks(ThreadPool* pool, int64_t n, Fn&& fn) {
  ParallelFor(pool, (n + kChunk - 1) / kChunk, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * kChunk;
      fn(first, std::min(kChunk, n - first));
    }
  });
}

template <typename T>
T GeluTanh(T x) {
  const T kSqrt2OverPi = T(0.7978845608028654);
  return T(0.5) * x * (T(1) + std::tanh(kSqrt2OverPi * (x + T(0.044715) * x * x * x)));
}

absl::Status GeluKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("expects input X");
  const std::string approximate = ctx.node.GetString("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return ctx.Error("approximate must be none or tanh, not '", approximate, "'");
  }
  const bool tanh_form = approximate == "tanh";
  const Tensor& input = ctx.input(0);
  return Dispatch(ctx, input.type(), kFloatTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = input.data<T>();
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).template data<T>();
    ForChunks(ctx.pool, input.numel(), [&](int64_t first, int64_t count) {
      const T* in = x + first;
      T* out = y + first;
      if (tanh_form) {
        for (int64_t i = 0; i < count; ++i) out[i] = GeluTanh(in[i]);
      } else if constexpr (std::is_same_v<T, float>) {
        // The vectorized erf in one pass: most of the time of an exact Gelu is in the erf.
        GeluFloats(in, out, count);
      } else {
        for (int64_t i = 0; i < count; ++i) {
          out[i] = T(0.5) * in[i] * (T(1) + std::erf(in[i] * T(0.7071067811865476)));
        }
      }
    });
    return absl::OkStatus();
  });
}

absl::Status SwishKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("expects input X");
  const double alpha = ctx.node.GetFloat("alpha", 1.0f);
  const Tensor& input = ctx.input(0);
  return Dispatch(ctx, input.type(), kFloatTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = input.data<T>();
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).template data<T>();
    const T a = static_cast<T>(alpha);
    ForChunks(ctx.pool, input.numel(), [&](int64_t first, int64_t count) {
      // x / (1 + exp(-a x)): exp overflows to inf for very negative a x, which gives the
      // right limit 0 (-0 for negative x), never NaN.
      for (int64_t i = first; i < first + count; ++i) y[i] = x[i] / (T(1) + std::exp(-a * x[i]));
    });
    return absl::OkStatus();
  });
}

}  // namespace

void AddModernActivationKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "Gelu", 20, kLatestOpset, &GeluKernel});
  table.push_back({"", "Swish", 24, kLatestOpset, &SwishKernel});
}

}  // namespace ovfix::exec
