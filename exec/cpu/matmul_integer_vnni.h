// MatMulInteger's and QLinearMatMul's exact integer product on AVX-512 VNNI (gemm_vnni.h):
// A's bytes shifted into int8 (uint8 - 128) and B's into uint8 (int8 + 128), zero points
// with them, and the zero-point terms added to the raw byte products afterwards:
//   sum (a - az)(b - bz) = sum a*b - bz * sum a - az * sum b + K * az * bz.
// Only where IntegerConvVnniAvailable() (conv_integer_vnni.h).
#pragma once

#include <cstdint>
#include <vector>

#include "exec/thread_pool.h"
#include "ir/tensor.h"

namespace ovfix::exec {

struct IntegerMatMulShape {
  int64_t m = 0, k = 0, n = 0;
  int64_t a_batches = 1, b_batches = 1;
  std::vector<int64_t> a_batch_of, b_batch_of;  // per output batch: the operand's batch
};

// acc[batch, m, n] = sum_k (a - a_zero) * (b - b_zero) for uint8/int8 a ([a_batches, m, k])
// and b ([b_batches, k, n]); a_zeros has one value per (a batch, row), b_zeros one per
// (b batch, column).
void IntegerMatMulVnni(const Tensor& a, const Tensor& b, const std::vector<int32_t>& a_zeros,
                       const std::vector<int32_t>& b_zeros, const IntegerMatMulShape& s,
                       int32_t* acc, ThreadPool* pool);

}  // namespace ovfix::exec
