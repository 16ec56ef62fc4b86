#include "ir/data_type.h"

#include <iterator>

namespace ovfix {

size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kInt32:
    case DataType::kUint32:
      return 4;
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kBool:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
      return 1;
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return 2;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kDouble:
    case DataType::kComplex64:
      return 8;
    case DataType::kComplex128:
      return 16;
    case DataType::kUndefined:
    case DataType::kString:
    case DataType::kUint4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
    case DataType::kUint2:
    case DataType::kInt2:
      return 0;
  }
  return 0;
}

int BitsPerElement(DataType type) {
  switch (type) {
    case DataType::kUint4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
      return 4;
    case DataType::kUint2:
    case DataType::kInt2:
      return 2;
    default:
      return static_cast<int>(ElementSize(type)) * 8;
  }
}

size_t StorageBytes(DataType type, int64_t n) {
  const int bits = BitsPerElement(type);
  return (static_cast<size_t>(n) * static_cast<size_t>(bits) + 7) / 8;
}

bool IsPacked(DataType type) {
  const int bits = BitsPerElement(type);
  return bits > 0 && bits < 8;
}

bool IsNarrowFloat(DataType type) {
  switch (type) {
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
    case DataType::kFloat4E2M1:
      return true;
    default:
      return false;
  }
}

bool IsSubByteInteger(DataType type) {
  return type == DataType::kInt4 || type == DataType::kUint4 || type == DataType::kInt2 ||
         type == DataType::kUint2;
}

std::string_view DataTypeName(DataType type) {
  // Indexed by the enum's values, which are onnx's (0 to 26, every one used).
  static constexpr std::string_view kNames[] = {
      "undefined",      "float",    "uint8",        "int8",           "uint16",
      "int16",          "int32",    "int64",        "string",         "bool",
      "float16",        "double",   "uint32",       "uint64",         "complex64",
      "complex128",     "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
      "float8e5m2fnuz", "uint4",    "int4",         "float4e2m1",     "float8e8m0",
      "uint2",          "int2"};
  const auto index = static_cast<size_t>(type);
  return index < std::size(kNames) ? kNames[index] : "unknown";
}

bool IsFloatingPoint(DataType type) {
  return type == DataType::kFloat || type == DataType::kFloat16 || type == DataType::kDouble ||
         type == DataType::kBfloat16;
}

bool IsInteger(DataType type) {
  switch (type) {
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUint32:
    case DataType::kUint64:
      return true;
    default:
      return false;
  }
}

bool IsKnownDataType(int32_t value) { return value >= 1 && value <= kLastDataType; }

}  // namespace ovfix
