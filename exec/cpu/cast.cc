// Cast and CastLike between every numeric type, bool, float16, bfloat16 and string.
// Conversions to float16/bfloat16 round to nearest even exactly, also from double (no double
// rounding through float).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "exec/cpu/elementwise.h"
#include "ir/narrow_types.h"
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

// The types of opsets 19-25 that have no C++ element type here: the 8- and 4-bit floats and
// the packed integers. Cast goes through float / int32 (exact for all of them) on their side.
bool IsNarrow(DataType type) { return IsNarrowFloat(type) || IsPacked(type); }

// Cast-19's `saturate` and Cast-24's `round_mode`, which only conversions into narrow floats
// read.
struct NarrowCastOptions {
  bool saturate = true;
  E8M0Rounding e8m0 = E8M0Rounding::kUp;
};

absl::StatusOr<NarrowCastOptions> ReadNarrowCastOptions(const KernelContext& ctx) {
  NarrowCastOptions options;
  options.saturate = ctx.node.GetInt("saturate", 1) != 0;
  const std::string mode = ctx.node.GetString("round_mode", "up");
  if (mode == "up") {
    options.e8m0 = E8M0Rounding::kUp;
  } else if (mode == "down") {
    options.e8m0 = E8M0Rounding::kDown;
  } else if (mode == "nearest") {
    options.e8m0 = E8M0Rounding::kNearest;
  } else {
    return ctx.Error("round_mode '", mode, "' is not one of up, down, nearest");
  }
  return options;
}

// A narrow tensor decoded to float (the narrow floats) or int32 (the packed integers): every
// value is exact, so casting onwards from it is casting from the narrow type.
Tensor Widen(const Tensor& x) {
  const bool is_float = IsNarrowFloat(x.type());
  Tensor wide = Tensor::Uninitialized(is_float ? DataType::kFloat : DataType::kInt32, x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_float) {
      wide.data<float>()[i] = static_cast<float>(x.GetAsDouble(i));
    } else {
      wide.data<int32_t>()[i] = GetPackedElement(x.type(), x.raw(), i);
    }
  }
  return wide;
}

// A value as the float that the narrow float encoders round from: exact for the 16-bit floats,
// rounded to odd from wider types so that the second rounding is correct.
template <typename From>
float ToFloatForNarrow(From value) {
  if constexpr (std::is_same_v<From, Half>) {
    return HalfBitsToFloat(value.bits);
  } else if constexpr (std::is_same_v<From, BFloat16>) {
    return Bfloat16BitsToFloat(value.bits);
  } else {
    return ToFloatForLowPrecision(value);
  }
}

// A value as a packed integer (Cast's "discard higher bits" between integer types): floats
// round to the nearest integer first, ties away from zero as onnxruntime casts (onnx's int4
// notes say ties to even; the files ovfix writes run on onnxruntime), NaN and infinities give
// 0; then the low bits are kept and read back in two's complement for int4/int2.
template <typename From>
int32_t ToPackedInteger(From value, DataType to) {
  int64_t whole = 0;
  if constexpr (std::is_same_v<From, bool>) {
    whole = value ? 1 : 0;
  } else if constexpr (std::is_integral_v<From>) {
    whole = static_cast<int64_t>(value);  // modular for uint64 (C++20)
  } else {
    const double wide = static_cast<double>(ToFloatForNarrow(value));
    // fmod by 256 is exact and keeps the low bits of any integer-valued double.
    if (std::isfinite(wide)) whole = static_cast<int64_t>(std::fmod(std::round(wide), 256.0));
  }
  const int bits = BitsPerElement(to);
  int32_t field = static_cast<int32_t>(whole & ((int64_t{1} << bits) - 1));
  if (PackedIntegerMin(to) < 0 && field >= (1 << (bits - 1))) field -= 1 << bits;
  return field;
}

// Casts a tensor of a type with a C++ element type into a narrow type.
absl::Status CastIntoNarrow(KernelContext& ctx, const Tensor& x, DataType to,
                            const NarrowCastOptions& options) {
  return Dispatch(ctx, x.type(), kStoredTypes, [&](auto tag) {
    using From = typename decltype(tag)::type;
    const int64_t n = x.numel();
    const From* in = x.data<From>();
    Tensor& y = ctx.Output(0, to, x.dims());  // zeroed: packed elements are or-ed in
    if (!IsPacked(to)) {
      uint8_t* out = y.data<uint8_t>();
      ParallelElements(ctx.pool, n, Cost::kCheap, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          out[i] = FloatToNarrowFloat(to, ToFloatForNarrow(in[i]), options.saturate, options.e8m0);
        }
      });
      return absl::OkStatus();
    }
    // Packed: one thread, since neighbours share bytes.
    for (int64_t i = 0; i < n; ++i) {
      const int32_t element =
          to == DataType::kFloat4E2M1
              ? FloatToNarrowFloat(to, ToFloatForNarrow(in[i]), options.saturate)
              : ToPackedInteger(in[i], to);
      SetPackedElement(to, y.raw(), i, element);
    }
    return absl::OkStatus();
  });
}

absl::Status CastTo(KernelContext& ctx, DataType to) {
  const Tensor& input = ctx.input(0);
  if (input.type() == to) {
    ctx.outputs[0] = input;  // nothing to convert; outputs never write into inputs
    return absl::OkStatus();
  }
  // A narrow source is widened first, then cast as float or int32 (to anything, narrow too).
  Tensor widened;
  if (IsNarrow(input.type())) widened = Widen(input);
  const Tensor& x = widened.defined() ? widened : input;
  if (x.type() == to) {
    ctx.outputs[0] = std::move(widened);
    return absl::OkStatus();
  }
  const int64_t n = x.numel();
  if (IsNarrow(to)) {
    OVFIX_ASSIGN_OR_RETURN(const NarrowCastOptions options, ReadNarrowCastOptions(ctx));
    if (x.type() != DataType::kString) return CastIntoNarrow(ctx, x, to, options);
    // Strings are read as double first, then rounded once from there.
    if (x.strings().size() != static_cast<size_t>(n)) return ctx.Error("malformed string input");
    Tensor numbers = Tensor::Uninitialized(DataType::kDouble, x.dims());
    for (int64_t i = 0; i < n; ++i) {
      if (!FromString(x.strings()[i], numbers.data<double>()[i])) {
        return ctx.Error("cannot read '", x.strings()[i], "' as ", std::string(DataTypeName(to)));
      }
    }
    return CastIntoNarrow(ctx, numbers, to, options);
  }
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
  // Cast-1 takes the type by name, 6 by number, 9 and 13 add string and bfloat16; 19 adds the
  // float8 types and `saturate`, 21 int4/uint4, 23 float4e2m1, 24 float8e8m0 and `round_mode`,
  // 25 int2/uint2: the types only exist in models of those opsets, so one kernel serves all.
  static constexpr KernelDef kKernels[] = {
      {"", "Cast", 1, kLatestOpset, Cast, Float16Mode::kNative},
      {"", "CastLike", 15, kLatestOpset, CastLike, Float16Mode::kNative},
  };
  table.insert(table.end(), std::begin(kKernels), std::end(kKernels));
}

}  // namespace ovfix::exec::elementwise
