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
#include <functional>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/thread_pool.h"
#include "ir/tensor.h"

namespace ovfix::exec {

// Whether IntegerConvVnni runs on this CPU with the current quant GEMM kernel (tests that
// select another kernel with SelectQuantGemmKernelForTesting get the int16 path).
bool IntegerConvVnniAvailable();

// Takes the int32 results of filters [filter, filter + count_filters) of image n at output
// positions [first, first + count), as rows of `ld` values, on the thread that computed them
// (while they are in its cache).
using IntegerConvSink =
    std::function<void(int64_t n, int64_t filter, int64_t count_filters, int64_t first,
                       int64_t count, const int32_t* rows, int64_t ld)>;

// As IntegerConv (conv_integer_core.h); only where IntegerConvVnniAvailable(). With a sink,
// the results go to it block by block instead of to y (which may then be null).
void IntegerConvVnni(const Tensor& x, int32_t x_zero, const Tensor& w,
                     const std::vector<int32_t>& w_zero, const SpatialGeometry& g, int64_t group,
                     int32_t* y, ThreadPool* pool, const IntegerConvSink* sink = nullptr);

}  // namespace ovfix::exec
