// Shared pieces of the element-wise kernels: element-type dispatch, tight loops the compiler
// vectorizes, parallel splitting, and the per-file kernel lists that AddElementwiseKernels
// (elementwise_common.cc) gathers.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "exec/cpu/broadcast.h"
#include "exec/cpu/dispatch.h"
#include "exec/kernel.h"
#include "ir/data_type.h"
#include "ir/float16.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace elementwise {

// Per-file kernel lists.
void AddUnaryMathKernels(std::vector<KernelDef>& table);     // elementwise_unary.cc
void AddActivationKernels(std::vector<KernelDef>& table);    // activations.cc
void AddBinaryKernels(std::vector<KernelDef>& table);        // elementwise_binary.cc
void AddVariadicKernels(std::vector<KernelDef>& table);      // elementwise_variadic.cc
void AddCastKernels(std::vector<KernelDef>& table);          // cast.cc
void AddDataMovementKernels(std::vector<KernelDef>& table);  // elementwise_identity.cc

// Splits [0, n) over the pool when the loop is big enough to pay for the threads. Expensive
// per-element work (exp, tanh, pow) pays sooner than a plain add.
enum class Cost { kCheap, kExpensive };
template <typename Fn>
void ParallelElements(ThreadPool* pool, int64_t n, Cost cost, Fn&& fn) {
  const int64_t threshold = cost == Cost::kCheap ? (int64_t{1} << 16) : (int64_t{1} << 13);
  if (pool == nullptr || n < threshold) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  ParallelFor(pool, n, threshold / 2, [&fn](int64_t begin, int64_t end) { fn(begin, end); });
}

// Converts a float16/bfloat16 tensor to float (other types are returned unchanged), and
// back. Kernels registered kAsFloat never see float16, but bfloat16 reaches them as is.
Tensor ToFloat(const Tensor& t);
Tensor FromFloat(const Tensor& t, DataType type);
inline bool IsLowPrecisionFloat(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBfloat16;
}
// Runs `fn` with every float16/bfloat16 input converted to float, then converts float outputs
// to input 0's type when that is float16/bfloat16. For math kernels handed bfloat16 tensors.
absl::Status RunInFloat(KernelContext& ctx, KernelFn fn);
bool HasLowPrecisionFloatInput(const KernelContext& ctx);

// The two-operand plan of a binary op. Before opset 7 binary ops had explicit broadcasting:
// with broadcast=1, B matches a contiguous run of A's dims starting at `axis` (default: the
// trailing dims); numpy broadcasting covers the rest.
absl::StatusOr<BroadcastPlan> BinaryPlan(const KernelContext& ctx);

// Inputs of a fixed-arity op: checks the required ones are present.
absl::Status RequireInputs(const KernelContext& ctx, size_t count);

// Loops in blocks of a fixed count so that g++ -O2 (whose cheap vectorizer cost model only
// takes loops with a known trip count) vectorizes them; the tail runs scalar.
inline constexpr int64_t kBlock = 16;

template <typename In, typename Out, typename Op>
inline void MapUnary(const In* __restrict in, Out* __restrict out, int64_t n, Op op) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = op(in[i + j]);
  }
  for (; i < n; ++i) out[i] = op(in[i]);
}

template <typename A, typename B, typename Out, typename Op>
inline void MapBinary(const A* __restrict a, const B* __restrict b, Out* __restrict out, int64_t n,
                      Op op) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = op(a[i + j], b[i + j]);
  }
  for (; i < n; ++i) out[i] = op(a[i], b[i]);
}

template <typename A, typename B, typename Out, typename Op>
inline void MapScalarRight(const A* __restrict a, B b, Out* __restrict out, int64_t n, Op op) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = op(a[i + j], b);
  }
  for (; i < n; ++i) out[i] = op(a[i], b);
}

template <typename A, typename B, typename Out, typename Op>
inline void MapScalarLeft(A a, const B* __restrict b, Out* __restrict out, int64_t n, Op op) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = op(a, b[i + j]);
  }
  for (; i < n; ++i) out[i] = op(a, b[i]);
}

// out[i] = op(out[i], b[i]) (accumulating variadic ops).
template <typename T, typename B, typename Op>
inline void MapInPlace(T* __restrict out, const B* __restrict b, int64_t n, Op op) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = op(out[i + j], b[i + j]);
  }
  for (; i < n; ++i) out[i] = op(out[i], b[i]);
}

template <typename T, typename B, typename Op>
inline void MapInPlaceScalar(T* __restrict out, B b, int64_t n, Op op) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = op(out[i + j], b);
  }
  for (; i < n; ++i) out[i] = op(out[i], b);
}

// out = op(a, b) over a two-operand plan, runs split over the pool.
template <typename A, typename B, typename Out, typename Op>
void BroadcastBinary(const BroadcastPlan& plan, const A* a, const B* b, Out* out, ThreadPool* pool,
                     Cost cost, Op op) {
  const bool a_steps = plan.run_stride(0) != 0, b_steps = plan.run_stride(1) != 0;
  ParallelElements(pool, plan.output_size(), cost, [&](int64_t begin, int64_t end) {
    plan.ForEachRun(begin, end, [&](int64_t o, const int64_t* offsets, int64_t count) {
      const A* pa = a + offsets[0];
      const B* pb = b + offsets[1];
      if (a_steps && b_steps) {
        MapBinary(pa, pb, out + o, count, op);
      } else if (a_steps) {
        MapScalarRight(pa, *pb, out + o, count, op);
      } else if (b_steps) {
        MapScalarLeft(*pa, pb, out + o, count, op);
      } else {
        for (int64_t i = 0; i < count; ++i) out[o + i] = op(*pa, *pb);
      }
    });
  });
}

// out[i] = op(out[i], b[...]) where the plan's operand 0 has the output's shape.
template <typename T, typename B, typename Op>
void BroadcastInPlace(const BroadcastPlan& plan, T* out, const B* b, ThreadPool* pool, Cost cost,
                      Op op) {
  const bool b_steps = plan.run_stride(1) != 0;
  ParallelElements(pool, plan.output_size(), cost, [&](int64_t begin, int64_t end) {
    plan.ForEachRun(begin, end, [&](int64_t o, const int64_t* offsets, int64_t count) {
      if (b_steps) {
        MapInPlace(out + o, b + offsets[1], count, op);
      } else {
        MapInPlaceScalar(out + o, b[offsets[1]], count, op);
      }
    });
  });
}

// The common shape of a one-input kernel: y = op(x) element by element, y of type Out (or
// x's type when Out is void). float16/bfloat16 inputs are computed in float when the list
// takes float. `float_runs`, when set, computes op for float over whole runs at once (a
// vectorized form of op).
using FloatRunsFn = void (*)(const float* x, float* y, int64_t n);
template <typename Out = void, typename... Ts, typename Op>
absl::Status UnaryKernel(KernelContext& ctx, TypeList<Ts...> types, Cost cost, Op op,
                         FloatRunsFn float_runs = nullptr) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor* x = &ctx.input(0);
  Tensor converted;
  DataType low = DataType::kUndefined;
  if (IsLowPrecisionFloat(x->type()) && Contains(types, DataType::kFloat)) {
    low = x->type();
    converted = ToFloat(*x);
    x = &converted;
  }
  absl::Status status = Dispatch(ctx, x->type(), types, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<std::is_void_v<Out>, T, Out>;
    Tensor& y = ctx.OutputToOverwrite(0, DataTypeOf<O>(), x->dims());
    const T* in = x->data<T>();
    O* out = y.data<O>();
    if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float>) {
      if (float_runs != nullptr) {
        ParallelElements(ctx.pool, x->numel(), cost, [&](int64_t begin, int64_t end) {
          float_runs(in + begin, out + begin, end - begin);
        });
        return absl::OkStatus();
      }
    }
    ParallelElements(ctx.pool, x->numel(), cost, [&](int64_t begin, int64_t end) {
      MapUnary(in + begin, out + begin, end - begin, [&op](T v) { return static_cast<O>(op(v)); });
    });
    return absl::OkStatus();
  });
  if (status.ok() && low != DataType::kUndefined) ctx.outputs[0] = FromFloat(ctx.outputs[0], low);
  return status;
}

// The common shape of a two-input kernel with broadcasting: y = op(a, b), both inputs of one
// type, y of type Out (or the inputs' type when Out is void).
template <typename Out = void, typename... Ts, typename Op>
absl::Status BinaryKernel(KernelContext& ctx, TypeList<Ts...> types, Cost cost, Op op) {
  OVFIX_ASSIGN_OR_RETURN(auto plan, BinaryPlan(ctx));
  const Tensor* a = &ctx.input(0);
  const Tensor* b = &ctx.input(1);
  if (a->type() != b->type()) {
    return ctx.Error("inputs have different element types ", std::string(DataTypeName(a->type())),
                     " and ", std::string(DataTypeName(b->type())));
  }
  Tensor converted_a, converted_b;
  DataType low = DataType::kUndefined;
  if (IsLowPrecisionFloat(a->type()) && Contains(types, DataType::kFloat)) {
    low = a->type();
    converted_a = ToFloat(*a);
    converted_b = ToFloat(*b);
    a = &converted_a;
    b = &converted_b;
  }
  absl::Status status = Dispatch(ctx, a->type(), types, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<std::is_void_v<Out>, T, Out>;
    Tensor& y = ctx.OutputToOverwrite(0, DataTypeOf<O>(), plan.output_dims());
    BroadcastBinary(plan, a->data<T>(), b->data<T>(), y.data<O>(), ctx.pool, cost,
                    [&op](T u, T v) { return static_cast<O>(op(u, v)); });
    return absl::OkStatus();
  });
  if (status.ok() && low != DataType::kUndefined) ctx.outputs[0] = FromFloat(ctx.outputs[0], low);
  return status;
}

// Integer arithmetic that wraps instead of overflowing (signed overflow is undefined in C++;
// onnxruntime and numpy wrap). Narrow types widen to 32 bits so uint16 * uint16 does not
// overflow int after promotion.
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <typename T>
constexpr T WrapAdd(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <typename T>
constexpr T WrapSub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
}
template <typename T>
constexpr T WrapMul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}
template <typename T>
constexpr T WrapNeg(T a) {
  return static_cast<T>(WrapType<T>{0} - static_cast<WrapType<T>>(a));
}

// a + b as Add and Sum compute it: floats as they are, integers wrapping.
struct NumericAdd {
  template <typename T>
  constexpr T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return a + b;
    } else {
      return WrapAdd(a, b);
    }
  }
};

// A float converted to an integer type without undefined behaviour: NaN becomes 0, values
// beyond the 64-bit range saturate, and narrower types wrap from 64 bits (what x86 code and
// numpy do for the in-range cases).
template <typename T, typename F>
constexpr T FloatToInt(F value) {
  static_assert(std::is_integral_v<T> && std::is_floating_point_v<F>);
  if (value != value) return T(0);
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    if (value >= F(18446744073709551616.0)) return ~uint64_t{0};
    if (value >= F(0)) return static_cast<uint64_t>(value);
    if (value <= F(-9223372036854775808.0)) return uint64_t{1} << 63;
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  } else {
    int64_t wide;
    if (value >= F(9223372036854775808.0)) {
      wide = std::numeric_limits<int64_t>::max();
    } else if (value <= F(-9223372036854775808.0)) {
      wide = std::numeric_limits<int64_t>::min();
    } else {
      wide = static_cast<int64_t>(value);
    }
    return static_cast<T>(wide);
  }
}

}  // namespace elementwise
}  // namespace ovfix::exec
