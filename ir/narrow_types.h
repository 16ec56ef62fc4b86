// The storage formats of opsets 19-25 that ovfix converts to and from but never computes in:
// the 8-bit floats (float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0), the
// 4-bit float float4e2m1, and the packed integers int4/uint4/int2/uint2. Conversions follow the
// ONNX specification of Cast (opsets 19, 21, 23, 24, 25): round to nearest even, with
// `saturate` choosing between the format's largest finite value and its infinity or NaN.
#pragma once

#include <cstdint>
#include <string_view>

#include "ir/data_type.h"

namespace ovfix {

// How Cast-24 rounds to float8e8m0 (attribute `round_mode`).
enum class E8M0Rounding { kUp, kDown, kNearest };

// The value of one 8-bit or 4-bit float code (`code` holds the 4-bit code in its low bits).
float NarrowFloatToFloat(DataType type, uint8_t code);
// The code of the representable value nearest `value` (ties to the even code); out of range,
// the largest finite value (saturate) or the format's infinity or NaN (not saturate; formats
// without either saturate always). For float8e8m0, `e8m0` says how to round.
uint8_t FloatToNarrowFloat(DataType type, float value, bool saturate,
                           E8M0Rounding e8m0 = E8M0Rounding::kUp);

// Element i of packed data (int4, uint4, float4e2m1, int2, uint2): the integer value,
// sign-extended for int4/int2, or the 4-bit float's code.
int32_t GetPackedElement(DataType type, const void* data, int64_t i);
// Writes element i of packed data: integers are clamped to the type's range first; a
// float4e2m1 `value` is its code.
void SetPackedElement(DataType type, void* data, int64_t i, int32_t value);

// The range of a packed integer type: [-8, 7] for int4, [0, 15] uint4, [-2, 1] int2, [0, 3] uint2.
int32_t PackedIntegerMin(DataType type);
int32_t PackedIntegerMax(DataType type);

}  // namespace ovfix
