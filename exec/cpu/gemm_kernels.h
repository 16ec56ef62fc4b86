// The instruction-set specific parts of the GEMM (gemm.h): register-tiled micro-kernels
// for AVX-512, AVX2+FMA and portable C++, and the matrix-vector products used when one side
// of a product is a single row or column. Internal to gemm.cc.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cpu/gemm.h"
#include "exec/fused_activation.h"
#include "exec/thread_pool.h"

namespace ovfix::exec {

// One register tile: C[rows x cols] = alpha * A_panel * B_panel + beta * C + bias[row],
// clamped when asked.
// a: kc steps of mr floats; b: kc steps of nr floats; rows <= mr, cols <= nr.
struct TileArgs {
  int64_t kc = 0;
  // A packed (kc steps of mr floats), or with `lda` set its rows in place: row r of the tile
  // at a + r * lda, kc floats from there (GemmKernel::reads_rows_in_place).
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  float* c = nullptr;
  int64_t ldc = 0;
  int rows = 0;
  int cols = 0;
  float alpha = 1.0f;
  float beta = 0.0f;  // 0: C is not read
  // Per row, or null: added after alpha * A * B and beta * C, so only on the last depth block
  // of a product (beta 0 on a product of one block).
  const float* bias = nullptr;
  // Per column (the tile's first), added once the product is complete, after alpha, beta and
  // the row bias, then `residual` (C's layout, ldc), before the activation (only on the last
  // depth block, for a kernel that GemmKernel::finishes_columns).
  const float* column_bias = nullptr;
  const float* residual = nullptr;
  // Then the fused activation (set on the last depth block of a product that has one).
  FusedActivation activation;
};

struct GemmKernel {
  GemmGeometry geometry;  // name and register tile (mr x nr)
  void (*tile)(const TileArgs&);
  // Whether `tile` also reads A's rows in place (TileArgs::lda): a product with a row-major A
  // then packs only B.
  bool reads_rows_in_place = false;
  // Whether `tile` adds TileArgs::column_bias and residual (otherwise the product adds them
  // to each finished tile in a pass of its own, FinishColumns).
  bool finishes_columns = false;
};

// Kernels this CPU supports, best first; the portable one is always last.
const std::vector<const GemmKernel*>& SupportedGemmKernels();
const GemmKernel& BestGemmKernel();

// C = alpha * op(A) * op(B) + beta * C where m == 1 or n == 1 (memory-bound products that
// are not worth packing).
void GemvProduct(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, ThreadPool* pool);

}  // namespace ovfix::exec
