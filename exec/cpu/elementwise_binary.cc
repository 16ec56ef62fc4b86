// Two-input kernels with broadcasting: arithmetic, Pow, Mod, shifts, bitwise and logical ops,
// comparisons.
#include <cmath>
#include <string>
#include <type_traits>

#include "exec/cpu/elementwise.h"
#include "ir/status_macros.h"

namespace ovfix::exec::elementwise {
namespace {

constexpr Cost kCheap = Cost::kCheap;
constexpr Cost kExpensive = Cost::kExpensive;

// Integer division and remainder trap on a zero divisor; refuse the node instead.
absl::Status CheckNoIntegerZero(const KernelContext& ctx, const Tensor& divisor) {
  if (!Contains(kIntTypes, divisor.type())) return absl::OkStatus();
  return Dispatch(ctx, divisor.type(), kIntTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T v : divisor.values<T>()) {
      if (v == T(0)) return ctx.Error("integer division by zero");
    }
    return absl::OkStatus();
  });
}

absl::Status Add(KernelContext& ctx) {
  return BinaryKernel(ctx, kNumericTypes, kCheap, NumericAdd{});
}

absl::Status Sub(KernelContext& ctx) {
  return BinaryKernel(ctx, kNumericTypes, kCheap, [](auto a, auto b) {
    if constexpr (std::is_floating_point_v<decltype(a)>) {
      return a - b;
    } else {
      return WrapSub(a, b);
    }
  });
}

absl::Status Mul(KernelContext& ctx) {
  return BinaryKernel(ctx, kNumericTypes, kCheap, [](auto a, auto b) {
    if constexpr (std::is_floating_point_v<decltype(a)>) {
      return a * b;
    } else {
      return WrapMul(a, b);
    }
  });
}

absl::Status Div(KernelContext& ctx) {
  if (ctx.has_input(1)) {
    OVFIX_RETURN_IF_ERROR(CheckNoIntegerZero(ctx, ctx.input(1)));
  }
  // Integer division truncates toward zero, as in C.
  return BinaryKernel(ctx, kNumericTypes, kCheap, [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) {
      return b == T(-1) ? WrapNeg(a) : static_cast<T>(a / b);  // INT_MIN / -1 wraps
    } else {
      return static_cast<T>(a / b);
    }
  });
}

// fmod=0: the result takes the divisor's sign (Python's %); fmod=1: the dividend's (C's fmod).
absl::Status Mod(KernelContext& ctx) {
  if (ctx.has_input(1)) {
    OVFIX_RETURN_IF_ERROR(CheckNoIntegerZero(ctx, ctx.input(1)));
  }
  const bool fmod = ctx.node.GetInt("fmod", 0) != 0;
  return BinaryKernel(ctx, kNumericTypes, kExpensive, [fmod](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>) {
      T r = std::fmod(a, b);
      if (!fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
      return r;
    } else if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(a % b);
    } else {
      if (b == T(-1)) return T(0);  // INT_MIN % -1 traps
      T r = static_cast<T>(a % b);
      if (!fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
      return r;
    }
  });
}

// Integer power by squaring, wrapping like repeated multiplication would. A negative exponent
// gives 1 / base^-e truncated: 0 unless |base| == 1.
template <typename A, typename B>
A IntegerPower(A base, B exponent) {
  if constexpr (std::is_signed_v<B>) {
    if (exponent < 0) {
      if (base == A(1)) return A(1);
      if constexpr (std::is_signed_v<A>) {
        if (base == A(-1)) return (exponent % 2 == 0) ? A(1) : A(-1);
      }
      return A(0);
    }
  }
  uint64_t e = static_cast<uint64_t>(exponent);
  A result = 1;
  while (e != 0) {
    if (e & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    e >>= 1;
  }
  return result;
}

template <typename A, typename B>
A PowerOf(A base, B exponent) {
  if constexpr (std::is_floating_point_v<A>) {
    if constexpr (std::is_same_v<A, B>) {
      return std::pow(base, exponent);
    } else {
      return static_cast<A>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    }
  } else if constexpr (std::is_integral_v<B>) {
    return IntegerPower(base, exponent);
  } else {
    return FloatToInt<A>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
}

// A float base raised to one float exponent that has a cheap form: x^2, x^1, x^0.5 (sqrt) and
// x^-1 are the exact power rounded once (powf itself can be an ulp off), x^3 and x^-0.5 within
// an ulp of it; pow's answers at -0 and -inf are kept. Exporters
// write LayerNorm's variance as Pow(d, 2), and pow's general path costs many multiplications.
// Returns false when the exponent is none of these.
bool PowBySpecialExponent(KernelContext& ctx, const Tensor& x, float exponent) {
  const int64_t n = x.numel();
  const float* in = x.data<float>();
  auto map = [&](auto op) {
    float* out = ctx.OutputToOverwrite(0, DataType::kFloat, x.dims()).data<float>();
    ParallelElements(ctx.pool, n, kCheap, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = op(in[i]);
    });
  };
  if (exponent == 2.0f) {
    map([](float v) { return v * v; });
  } else if (exponent == 1.0f) {
    map([](float v) { return v; });
  } else if (exponent == 0.5f) {
    map([](float v) { return v == 0.0f ? 0.0f : v == -INFINITY ? INFINITY : std::sqrt(v); });
  } else if (exponent == 3.0f) {
    map([](float v) { return v * v * v; });
  } else if (exponent == -1.0f) {
    map([](float v) { return 1.0f / v; });
  } else if (exponent == -0.5f) {
    map([](float v) { return v == 0.0f ? INFINITY : v == -INFINITY ? 0.0f : 1.0f / std::sqrt(v); });
  } else {
    return false;
  }
  return true;
}

// Pow-12 on: the exponent may have another type than the base; the result has the base's.
absl::Status Pow(KernelContext& ctx) {
  if (HasLowPrecisionFloatInput(ctx)) return RunInFloat(ctx, Pow);
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (x.type() == DataType::kFloat && y.type() == DataType::kFloat && y.numel() == 1 &&
      y.rank() <= x.rank() && PowBySpecialExponent(ctx, x, y.data<float>()[0])) {
    return absl::OkStatus();
  }
  OVFIX_ASSIGN_OR_RETURN(auto plan, BinaryPlan(ctx));
  constexpr TypeList<float, double, int32_t, int64_t> kBaseTypes;
  return Dispatch(ctx, x.type(), kBaseTypes, [&](auto base_tag) {
    using A = typename decltype(base_tag)::type;
    return Dispatch(ctx, y.type(), kNumericTypes, [&](auto exponent_tag) {
      using B = typename decltype(exponent_tag)::type;
      Tensor& z = ctx.Output(0, x.type(), plan.output_dims());
      BroadcastBinary(plan, x.data<A>(), y.data<B>(), z.data<A>(), ctx.pool, kExpensive,
                      [](A a, B b) { return PowerOf(a, b); });
      return absl::OkStatus();
    });
  });
}

absl::Status BitShift(KernelContext& ctx) {
  const std::string direction = ctx.node.GetString("direction");
  if (direction != "LEFT" && direction != "RIGHT") {
    return ctx.Error("direction must be LEFT or RIGHT, not '", direction, "'");
  }
  const bool left = direction == "LEFT";
  return BinaryKernel(ctx, kUnsignedIntTypes, kCheap, [left](auto x, auto shift) {
    using T = decltype(x);
    // Shifting by the width or more is undefined in C++; every bit is shifted out.
    if (shift >= sizeof(T) * 8) return T(0);
    return left ? static_cast<T>(static_cast<WrapType<T>>(x) << shift) : static_cast<T>(x >> shift);
  });
}

absl::Status BitwiseAnd(KernelContext& ctx) {
  return BinaryKernel(ctx, kIntTypes, kCheap,
                      [](auto a, auto b) { return static_cast<decltype(a)>(a & b); });
}
absl::Status BitwiseOr(KernelContext& ctx) {
  return BinaryKernel(ctx, kIntTypes, kCheap,
                      [](auto a, auto b) { return static_cast<decltype(a)>(a | b); });
}
absl::Status BitwiseXor(KernelContext& ctx) {
  return BinaryKernel(ctx, kIntTypes, kCheap,
                      [](auto a, auto b) { return static_cast<decltype(a)>(a ^ b); });
}

absl::Status And(KernelContext& ctx) {
  return BinaryKernel(ctx, kBoolTypes, kCheap, [](bool a, bool b) { return a && b; });
}
absl::Status Or(KernelContext& ctx) {
  return BinaryKernel(ctx, kBoolTypes, kCheap, [](bool a, bool b) { return a || b; });
}
absl::Status Xor(KernelContext& ctx) {
  return BinaryKernel(ctx, kBoolTypes, kCheap, [](bool a, bool b) { return a != b; });
}

absl::Status Equal(KernelContext& ctx) {
  // Equal-19 also compares strings, which have no element type in the lists.
  if (ctx.has_input(0) && ctx.has_input(1) && ctx.input(0).type() == DataType::kString &&
      ctx.input(1).type() == DataType::kString) {
    OVFIX_ASSIGN_OR_RETURN(auto plan, BinaryPlan(ctx));
    Tensor& y = ctx.OutputToOverwrite(0, DataType::kBool, plan.output_dims());
    BroadcastBinary(plan, ctx.input(0).strings().data(), ctx.input(1).strings().data(),
                    y.data<bool>(), ctx.pool, kCheap,
                    [](const std::string& u, const std::string& v) { return u == v; });
    return absl::OkStatus();
  }
  return BinaryKernel<bool>(ctx, kNumericTypes + kBoolTypes, kCheap,
                            [](auto a, auto b) { return a == b; });
}
absl::Status Less(KernelContext& ctx) {
  return BinaryKernel<bool>(ctx, kNumericTypes, kCheap, [](auto a, auto b) { return a < b; });
}
absl::Status LessOrEqual(KernelContext& ctx) {
  return BinaryKernel<bool>(ctx, kNumericTypes, kCheap, [](auto a, auto b) { return a <= b; });
}
absl::Status Greater(KernelContext& ctx) {
  return BinaryKernel<bool>(ctx, kNumericTypes, kCheap, [](auto a, auto b) { return a > b; });
}
absl::Status GreaterOrEqual(KernelContext& ctx) {
  return BinaryKernel<bool>(ctx, kNumericTypes, kCheap, [](auto a, auto b) { return a >= b; });
}

}  // namespace

void AddBinaryKernels(std::vector<KernelDef>& table) {
  // Versions before 7 broadcast only when asked (broadcast/axis attributes); BinaryPlan reads
  // those, so one kernel covers every version. Later versions only added types.
  static constexpr KernelDef kKernels[] = {
      {"", "Add", 1, kLatestOpset, Add},
      {"", "Sub", 1, kLatestOpset, Sub},
      {"", "Mul", 1, kLatestOpset, Mul},
      {"", "Div", 1, kLatestOpset, Div},
      {"", "Pow", 1, kLatestOpset, Pow},
      {"", "Mod", 10, kLatestOpset, Mod},
      {"", "BitShift", 11, kLatestOpset, BitShift},
      {"", "BitwiseAnd", 18, kLatestOpset, BitwiseAnd},
      {"", "BitwiseOr", 18, kLatestOpset, BitwiseOr},
      {"", "BitwiseXor", 18, kLatestOpset, BitwiseXor},
      {"", "And", 1, kLatestOpset, And},
      {"", "Or", 1, kLatestOpset, Or},
      {"", "Xor", 1, kLatestOpset, Xor},
      {"", "Equal", 1, kLatestOpset, Equal},
      {"", "Less", 1, kLatestOpset, Less},
      {"", "LessOrEqual", 12, kLatestOpset, LessOrEqual},
      {"", "Greater", 1, kLatestOpset, Greater},
      {"", "GreaterOrEqual", 12, kLatestOpset, GreaterOrEqual},
  };
  table.insert(table.end(), std::begin(kKernels), std::end(kKernels));
}

}  // namespace ovfix::exec::elementwise
