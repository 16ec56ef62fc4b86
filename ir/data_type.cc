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
      return 0;
  }
  return 0;
}

std::string_view DataTypeName(DataType type) {
  // Indexed by the enum's values, which are onnx's (0 to 16, every one used).
  static constexpr std::string_view kNames[] = {
      "undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
      "int32",     "int64",  "string",    "bool",       "float16", "double",
      "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
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

bool IsKnownDataType(int32_t value) { return value >= 1 && value <= 16; }

}  // namespace ovfix
