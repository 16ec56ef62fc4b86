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
  // IR 9 onwards: 8-bit floats, one byte per element.
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  // IR 10 onwards: 4-bit integers, two per byte (element 2i in the low nibble of byte i),
  // in files as in memory.
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,  // IR 11: 4-bit float (1 sign, 2 exponent, 1 mantissa bits), packed
  kFloat8E8M0 = 24,  // IR 12: a power of two (the scale of microscaling formats)
  kUint2 = 25,       // IR 13: 2-bit integers, four per byte, element 4i in the low bits
  kInt2 = 26,
};

constexpr int32_t kLastDataType = 26;

// Bytes per element; 0 for kUndefined and kString (strings are not stored as bytes) and for
// the packed sub-byte types (kInt4, kUint4, kFloat4E2M1, kInt2, kUint2: see StorageBytes).
size_t ElementSize(DataType type);
// Bits per element: 8 * ElementSize, 4 or 2 for the packed types, 0 for string/undefined.
int BitsPerElement(DataType type);
// Bytes that `n` elements take in memory and in files: packed types round up to whole bytes.
size_t StorageBytes(DataType type, int64_t n);
// Several elements per byte (kInt4, kUint4, kFloat4E2M1, kInt2, kUint2).
bool IsPacked(DataType type);
// The 8-bit and 4-bit float formats of opsets 19-24 (float8e4m3fn, float8e4m3fnuz, float8e5m2,
// float8e5m2fnuz, float8e8m0, float4e2m1): storage formats that ovfix converts to and from,
// never computes in and never takes for float16 conversion (IsFloatingPoint is false).
bool IsNarrowFloat(DataType type);
// onnx's spelling in text form: "float", "float16", "int64", ...
std::string_view DataTypeName(DataType type);
bool IsFloatingPoint(DataType type);   // float, float16, double, bfloat16
bool IsInteger(DataType type);         // signed and unsigned, 8 to 64 bits (not bool)
bool IsSubByteInteger(DataType type);  // int4, uint4, int2, uint2
bool IsKnownDataType(int32_t value);

}  // namespace ovfix
