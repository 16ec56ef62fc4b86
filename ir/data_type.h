// Element types of tensors, numbered as onnx's TensorProto.DataType.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ovfix {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
};

// Bytes per element; 0 for kUndefined and kString (strings are not stored as bytes).
size_t ElementSize(DataType type);
// onnx's spelling in text form: "float", "float16", "int64", ...
std::string_view DataTypeName(DataType type);
bool IsFloatingPoint(DataType type);  // float, float16, double, bfloat16
bool IsInteger(DataType type);        // signed and unsigned, 8 to 64 bits (not bool)
bool IsKnownDataType(int32_t value);

}  // namespace ovfix
