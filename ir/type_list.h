// C++ element types by DataType: compile-time lists of them, and a visit that calls a generic
// function with the C++ type of a run-time DataType (the one place a type switch is written).
#pragma once

#include <cstdint>
#include <type_traits>

#include "ir/data_type.h"

namespace ovfix {

// float16 / bfloat16 elements as bits, so they are distinct types from uint16_t in dispatch.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <typename T>
constexpr DataType DataTypeOf() {
  // clang-format off
  if constexpr (std::is_same_v<T, float>) return DataType::kFloat;
  else if constexpr (std::is_same_v<T, double>) return DataType::kDouble;
  else if constexpr (std::is_same_v<T, int8_t>) return DataType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DataType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DataType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DataType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DataType::kUint8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DataType::kUint16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DataType::kUint32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DataType::kUint64;
  else if constexpr (std::is_same_v<T, bool>) return DataType::kBool;
  else if constexpr (std::is_same_v<T, Half>) return DataType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DataType::kBfloat16;
  else static_assert(sizeof(T) == 0, "no DataType for this C++ type");
  // clang-format on
}

template <typename T>
struct TypeTag {
  using type = T;
};
template <typename... Ts>
struct TypeList {};

template <typename... A, typename... B>
constexpr TypeList<A..., B...> operator+(TypeList<A...>, TypeList<B...>) {
  return {};
}

inline constexpr TypeList<float, double> kFloatTypes;
inline constexpr TypeList<int8_t, int16_t, int32_t, int64_t> kSignedIntTypes;
inline constexpr TypeList<uint8_t, uint16_t, uint32_t, uint64_t> kUnsignedIntTypes;
inline constexpr auto kIntTypes = kSignedIntTypes + kUnsignedIntTypes;
inline constexpr auto kSignedTypes = kFloatTypes + kSignedIntTypes;
inline constexpr auto kNumericTypes = kFloatTypes + kIntTypes;
inline constexpr TypeList<bool> kBoolTypes;
// Every numeric or bool element type, float16/bfloat16 as their bits (Half, BFloat16).
inline constexpr auto kStoredTypes = kNumericTypes + kBoolTypes + TypeList<Half, BFloat16>();

template <typename... Ts>
constexpr bool Contains(TypeList<Ts...>, DataType type) {
  return ((DataTypeOf<Ts>() == type) || ...);
}

// Calls fn(TypeTag<T>{}) for the T in `types` whose DataType is `type`; false (and no call)
// when `type` is not in the list.
template <typename... Ts, typename Fn>
bool VisitType(DataType type, TypeList<Ts...>, Fn&& fn) {
  return ((DataTypeOf<Ts>() == type ? (fn(TypeTag<Ts>{}), true) : false) || ...);
}

}  // namespace ovfix
