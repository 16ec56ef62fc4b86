// Cast and CastLike between every numeric type, bool, float16, bfloat16 and string.
// Conversions to float16/bfloat16 round to nearest even exactly, also from double (no double
// rounding through float).
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "exec/cpu/elementwise.h"
#include "ir/status_macros.h"

namespace ovfix::exec::elementwise {
namespace {

// double -> float rounding to odd: when inexact, the last mantissa bit is forced to 1. Rounding
// that float again to 8 or 11 significant bits then gives the correctly rounded result of the
// double, which plain float rounding (nearest even, twice) does not always.
float ToFloatRoundToOdd(double value) {
  float f = static_cast<float>(value);
  if (std::isfinite(f) && static_cast<double>(f) != value) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    if ((bits & 1u) == 0) {
      // Step one ulp back toward `value` (magnitudes: bits grow with |f|).
      bits = std::fabs(static_cast<double>(f)) > std::fabs(value) ? bits - 1 : bits + 1;
      std::memcpy(&f, &bits, sizeof(bits));
    }
  }
  return f;
}

template <typename From>
float ToFloatForLowPrecision(From value) {
  if constexpr (std::is_same_v<From, float>) {
    return value;
  } else if constexpr (std::is_same_v<From, bool>) {
    return value ? 1.0f : 0.0f;
  } else {
    return ToFloatRoundToOdd(static_cast<double>(value));
  }
}

template <typename To, typename From>
To Convert(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<From, Half>) {
    return Convert<To>(HalfBitsToFloat(value.bits));
  } else if constexpr (std::is_same_v<From, BFloat16>) {
    return Convert<To>(Bfloat16BitsToFloat(value.bits));
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half{FloatToHalfBits(ToFloatForLowPrecision(value))};
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16{FloatToBfloat16Bits(ToFloatForLowPrecision(value))};
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);  // NaN is true
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(value ? 1 : 0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return FloatToInt<To>(value);
  } else {
    return static_cast<To>(value);  // integers wrap (defined in C++20)
  }
}

// Floats print in the shortest form that reads back to the same value; NaN and infinities in
// the spelling Cast's string parsing takes ("NaN", "INF", "-INF").
template <typename From>
std::string ToString(From value) {
  if constexpr (std::is_same_v<From, bool>) {
    return value ? "1" : "0";
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return ToString(Convert<float>(value));
  } else {
    if constexpr (std::is_floating_point_v<From>) {
      if (std::isnan(value)) return "NaN";
      if (std::isinf(value)) return value > 0 ? "INF" : "-INF";
    }
    char buffer[64];
    auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
    return error == std::errc() ? std::string(buffer, end) : std::string();
  }
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

template <typename F>
bool ParseFloat(std::string_view text, F& value) {
  text = Trim(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return false;
  if (negative) value = -value;
  return true;
}

// Numbers in plain or scientific notation ("3.14", "1e-5", "NaN", "+INF"); integers also
// from a float spelling; bool also from "true"/"false".
template <typename To>
bool FromString(const std::string& text, To& value) {
  if constexpr (std::is_same_v<To, float> || std::is_same_v<To, double>) {
    return ParseFloat(text, value);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    double wide;
    if (!ParseFloat(text, wide)) return false;
    value = Convert<To>(wide);
    return true;
  } else {
    if constexpr (std::is_same_v<To, bool>) {
      std::string lower(Trim(text));
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "true" || lower == "false") {
        value = lower == "true";
        return true;
      }
    } else {
      std::string_view trimmed = Trim(text);
      if (!trimmed.empty() && trimmed.front() == '+') trimmed.remove_prefix(1);
      auto [end, error] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), value);
      if (error == std::errc() && end == trimmed.data() + trimmed.size()) return true;
    }
    double wide;
    if (!ParseFloat(text, wide)) return false;
    value = Convert<To>(wide);
    return true;
  }
}

absl::Status CastTo(KernelContext& ctx, DataType to) {
  const Tensor& x = ctx.input(0);
  if (x.type() == to) {
    ctx.outputs[0] = x;  // nothing to convert; outputs never write into inputs
    return absl::OkStatus();
  }
  const int64_t n = x.numel();
  if (to == DataType::kString) {
    return Dispatch(ctx, x.type(), kStoredTypes, [&](auto tag) {
      using From = typename decltype(tag)::type;
      std::vector<std::string> strings(static_cast<size_t>(n));
      const From* in = x.data<From>();
      for (int64_t i = 0; i < n; ++i) strings[i] = ToString(in[i]);
      ctx.outputs[0] = Tensor(x.dims(), std::move(strings));
      return absl::OkStatus();
    });
  }
  if (x.type() == DataType::kString) {
    return Dispatch(ctx, to, kStoredTypes, [&](auto tag) {
      using To = typename decltype(tag)::type;
      if (x.strings().size() != static_cast<size_t>(n)) return ctx.Error("malformed string input");
      Tensor& y = ctx.Output(0, to, x.dims());
      To* out = y.data<To>();
      for (int64_t i = 0; i < n; ++i) {
        if (!FromString(x.strings()[i], out[i])) {
          return ctx.Error("cannot read '", x.strings()[i], "' as ", std::string(DataTypeName(to)));
        }
      }
      return absl::OkStatus();
    });
  }
  return Dispatch(ctx, x.type(), kStoredTypes, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    return Dispatch(ctx, to, kStoredTypes, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      Tensor& y = ctx.Output(0, to, x.dims());
      const From* in = x.data<From>();
      To* out = y.data<To>();
      ParallelElements(ctx.pool, n, Cost::kCheap, [&](int64_t begin, int64_t end) {
        MapUnary(in + begin, out + begin, end - begin, [](From v) { return Convert<To>(v); });
      });
      return absl::OkStatus();
    });
  });
}

// Cast-1 named the target type as a string ("FLOAT"); Cast-6 on uses the enum value.
absl::StatusOr<DataType> TargetType(const KernelContext& ctx) {
  const onnx::AttributeProto* to = ctx.node.FindAttribute("to");
  if (to == nullptr) return ctx.Error("attribute 'to' is missing");
  if (to->type() == onnx::AttributeProto::STRING) {
    onnx::TensorProto::DataType value;
    if (!onnx::TensorProto::DataType_Parse(to->s(), &value)) {
      return ctx.Error("unknown type '", to->s(), "' in attribute 'to'");
    }
    return static_cast<DataType>(value);
  }
  if (to->i() < 0 || to->i() > INT32_MAX || !IsKnownDataType(static_cast<int32_t>(to->i()))) {
    return ctx.Error("unknown type ", to->i(), " in attribute 'to'");
  }
  return static_cast<DataType>(to->i());
}

absl::Status Cast(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  OVFIX_ASSIGN_OR_RETURN(auto to, TargetType(ctx));
  return CastTo(ctx, to);
}

absl::Status CastLike(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  return CastTo(ctx, ctx.input(1).type());
}

}  // namespace

void AddCastKernels(std::vector<KernelDef>& table) {
  // Cast-1 takes the type by name, 6 by number, 9 and 13 add string and bfloat16; 19 adds
  // saturate (not covered).
  static constexpr KernelDef kKernels[] = {
      {"", "Cast", 1, 18, Cast, Float16Mode::kNative},
      {"", "CastLike", 15, 18, CastLike, Float16Mode::kNative},
  };
  table.insert(table.end(), std::begin(kKernels), std::end(kKernels));
}

}  // namespace ovfix::exec::elementwise
