// One-input math kernels: Abs, Neg, Exp, Log, ..., IsNaN, IsInf, Not, BitwiseNot.
#include <cmath>
#include <limits>
#include <type_traits>

#include "exec/cpu/elementwise.h"
#include "exec/cpu/vector_math.h"

namespace ovfix::exec::elementwise {
namespace {

constexpr Cost kCheap = Cost::kCheap;
constexpr Cost kExpensive = Cost::kExpensive;

absl::Status Abs(KernelContext& ctx) {
  return UnaryKernel(ctx, kNumericTypes, kCheap, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_floating_point_v<T>) {
      return std::abs(x);
    } else if constexpr (std::is_signed_v<T>) {
      return x < 0 ? WrapNeg(x) : x;
    } else {
      return x;
    }
  });
}

absl::Status Neg(KernelContext& ctx) {
  return UnaryKernel(ctx, kSignedTypes, kCheap, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return -x;
    } else {
      return WrapNeg(x);
    }
  });
}

absl::Status Sign(KernelContext& ctx) {
  return UnaryKernel(ctx, kNumericTypes, kCheap, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) {
      return x > 0 ? T(1) : T(0);
    } else {
      // NaN and zero map to themselves, as numpy's sign does.
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
    }
  });
}

// Float math over a float-only op.
#define OVFIX_FLOAT_UNARY(Name, cost, expression)                                  \
  absl::Status Name(KernelContext& ctx) {                                          \
    return UnaryKernel(ctx, kFloatTypes, cost, [](auto x) { return expression; }); \
  }

OVFIX_FLOAT_UNARY(Log, kExpensive, std::log(x))
OVFIX_FLOAT_UNARY(Sqrt, kCheap, std::sqrt(x))
OVFIX_FLOAT_UNARY(Reciprocal, kCheap, decltype(x)(1) / x)
OVFIX_FLOAT_UNARY(Floor, kCheap, std::floor(x))
OVFIX_FLOAT_UNARY(Ceil, kCheap, std::ceil(x))
// Halfway cases go to even: nearbyint under the default rounding mode.
OVFIX_FLOAT_UNARY(Round, kCheap, std::nearbyint(x))
OVFIX_FLOAT_UNARY(Sin, kExpensive, std::sin(x))
OVFIX_FLOAT_UNARY(Cos, kExpensive, std::cos(x))
OVFIX_FLOAT_UNARY(Tan, kExpensive, std::tan(x))
OVFIX_FLOAT_UNARY(Asin, kExpensive, std::asin(x))
OVFIX_FLOAT_UNARY(Acos, kExpensive, std::acos(x))
OVFIX_FLOAT_UNARY(Atan, kExpensive, std::atan(x))
OVFIX_FLOAT_UNARY(Sinh, kExpensive, std::sinh(x))
OVFIX_FLOAT_UNARY(Cosh, kExpensive, std::cosh(x))
OVFIX_FLOAT_UNARY(Asinh, kExpensive, std::asinh(x))
OVFIX_FLOAT_UNARY(Acosh, kExpensive, std::acosh(x))
OVFIX_FLOAT_UNARY(Atanh, kExpensive, std::atanh(x))

#undef OVFIX_FLOAT_UNARY

// Exp and Erf compute float with the vectorized polynomials of vector_math.h (GELU spends
// most of its time in erf).
absl::Status Exp(KernelContext& ctx) {
  return UnaryKernel(
      ctx, kFloatTypes, kExpensive, [](auto x) { return std::exp(x); }, &ExpFloats);
}

absl::Status Erf(KernelContext& ctx) {
  // Erf-9 also takes integer tensors; erf(x) is truncated to the integer type.
  return UnaryKernel(
      ctx, kNumericTypes, kExpensive,
      [](auto x) {
        using T = decltype(x);
        if constexpr (std::is_floating_point_v<T>) {
          return std::erf(x);
        } else {
          return static_cast<T>(std::erf(static_cast<double>(x)));
        }
      },
      &ErfFloats);
}

absl::Status IsNaN(KernelContext& ctx) {
  return UnaryKernel<bool>(ctx, kFloatTypes, kCheap, [](auto x) { return x != x; });
}

absl::Status IsInf(KernelContext& ctx) {
  const bool positive = ctx.node.GetInt("detect_positive", 1) != 0;
  const bool negative = ctx.node.GetInt("detect_negative", 1) != 0;
  return UnaryKernel<bool>(ctx, kFloatTypes, kCheap, [positive, negative](auto x) {
    using T = decltype(x);
    constexpr T kInfinity = std::numeric_limits<T>::infinity();
    return (positive && x == kInfinity) || (negative && x == -kInfinity);
  });
}

absl::Status Not(KernelContext& ctx) {
  return UnaryKernel(ctx, kBoolTypes, kCheap, [](bool x) { return !x; });
}

absl::Status BitwiseNot(KernelContext& ctx) {
  return UnaryKernel(ctx, kIntTypes, kCheap, [](auto x) { return static_cast<decltype(x)>(~x); });
}

}  // namespace

void AddUnaryMathKernels(std::vector<KernelDef>& table) {
  // Versions 1 and 6 differ only in the removed consumed_inputs attribute, 13 adds bfloat16:
  // one kernel covers them all.
  static constexpr KernelDef kKernels[] = {
      {"", "Abs", 1, kLatestOpset, Abs},      {"", "Neg", 1, kLatestOpset, Neg},
      {"", "Exp", 1, kLatestOpset, Exp},      {"", "Log", 1, kLatestOpset, Log},
      {"", "Sqrt", 1, kLatestOpset, Sqrt},    {"", "Reciprocal", 1, kLatestOpset, Reciprocal},
      {"", "Floor", 1, kLatestOpset, Floor},  {"", "Ceil", 1, kLatestOpset, Ceil},
      {"", "Round", 11, kLatestOpset, Round}, {"", "Sign", 9, kLatestOpset, Sign},
      {"", "Sin", 7, kLatestOpset, Sin},      {"", "Cos", 7, kLatestOpset, Cos},
      {"", "Tan", 7, kLatestOpset, Tan},      {"", "Asin", 7, kLatestOpset, Asin},
      {"", "Acos", 7, kLatestOpset, Acos},    {"", "Atan", 7, kLatestOpset, Atan},
      {"", "Sinh", 9, kLatestOpset, Sinh},    {"", "Cosh", 9, kLatestOpset, Cosh},
      {"", "Asinh", 9, kLatestOpset, Asinh},  {"", "Acosh", 9, kLatestOpset, Acosh},
      {"", "Atanh", 9, kLatestOpset, Atanh},  {"", "Erf", 9, kLatestOpset, Erf},
      {"", "IsNaN", 9, kLatestOpset, IsNaN},  {"", "IsInf", 10, kLatestOpset, IsInf},
      {"", "Not", 1, kLatestOpset, Not},      {"", "BitwiseNot", 18, kLatestOpset, BitwiseNot},
  };
  table.insert(table.end(), std::begin(kKernels), std::end(kKernels));
}

}  // namespace ovfix::exec::elementwise
