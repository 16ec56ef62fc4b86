// The integer convolution of conv_integer_core.h on AVX-512 VNNI's uint8 x int8 dot product
// (vpdpbusd: four byte products summed into each int32 lane, exact, no saturation), twice the
// multiply-adds per instruction of the int16 pairs path and a quarter of its packing bytes.
//
// Any 8-bit operands fit it: int8 x is shifted to uint8 (x + 128, its zero point too) and
// uint8 w to int8 (w - 128, likewise), which leaves every difference (x - x_zero) and
// (w - w_zero) as it was. The product of the raw bytes is then corrected for the zero points:
//   sum (x - xz)(w - wz) = sum x*w - wz * sum x - xz * sum w + K * xz * wz,
// with padding standing for xz as the spec says (so it contributes nothing).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/thread_pool.h"
#include "ir/tensor.h"

namespace ovfix::exec {

// Whether IntegerConvVnni runs on this CPU with the current quant GEMM kernel (tests that
// select another kernel with SelectQuantGemmKernelForTesting get the int16 path).
bool IntegerConvVnniAvailable();

// QLinearConv's requantization of the int32 results, done on each tile of results in
// registers (gemm_vnni.h's DotTileRequantize), so no int32 result reaches memory:
//   y[n, f, position] = round_half_even(clamp(float(result + bias[f]) * multipliers[f],
//                                             low, high)) + zero,
// stored as a byte (uint8 or int8 alike, low and high being the type's bounds less zero).
struct ConvRequantization {
  const int32_t* bias;       // per filter, or null
  const float* multipliers;  // per filter
  float low, high;
  int32_t zero;
  uint8_t* y;  // [N, M, output...]
};

// w's filters packed for IntegerConvVnni, all groups. Where w is constant across runs,
// QLinearConv packs them once per session (in its node state).
struct VnniConvFilters;
std::shared_ptr<VnniConvFilters> PackVnniConvFilters(const Tensor& w, int64_t group);

// As IntegerConv (conv_integer_core.h); only where IntegerConvVnniAvailable(). With
// `requantize`, the results are requantized into its y instead of written to y (which may then
// be null). `filters`, where given, is PackVnniConvFilters(w, group).
void IntegerConvVnni(const Tensor& x, int32_t x_zero, const Tensor& w,
                     const std::vector<int32_t>& w_zero, const SpatialGeometry& g, int64_t group,
                     int32_t* y, ThreadPool* pool, const ConvRequantization* requantize = nullptr,
                     const VnniConvFilters* filters = nullptr);

}  // namespace ovfix::exec
