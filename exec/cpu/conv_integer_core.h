// The integer convolution shared by ConvInteger and QLinearConv: int32 accumulators of
// (x - x_zero) * (w - w_zero[filter]) over each window, exactly, on the int16 GEMM
// (gemm_int8.h). Padding stands for x_zero (it contributes nothing), as the spec says.
//
// The output positions are cut into blocks; each block's im2col columns are written straight
// into the packed-B layout on the thread that multiplies them, so no column matrix of the
// whole image is ever built and every thread of the pool has blocks to do. Where the CPU has
// AVX-512 VNNI (and the quant GEMM kernel is its), conv_integer_vnni.h's uint8 x int8 path
// does the product instead.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/thread_pool.h"
#include "ir/tensor.h"

namespace ovfix::exec {

// x: [N, C, spatial...] uint8 or int8; w: [M, C / group, kernel...] uint8 or int8;
// w_zero: one value per filter (M). Writes y: [N, M, output...] int32.
void IntegerConv(const Tensor& x, int32_t x_zero, const Tensor& w,
                 const std::vector<int32_t>& w_zero, const SpatialGeometry& g, int64_t group,
                 int32_t* y, ThreadPool* pool);

}  // namespace ovfix::exec
