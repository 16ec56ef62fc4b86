// Single-precision matrix multiplication for the CPU kernels (MatMul, Gemm, Conv,
// ConvTranspose): C = alpha * op(A) * op(B) + beta * C (+ a bias per row of C).
//
// The float path packs A into panels of `mr` rows and B into panels of `nr` columns and runs a
// register-tiled micro-kernel over them (AVX-512, AVX2+FMA or portable C++, picked once from
// the CPU at startup). A can be packed once and reused (constant weights); B is handed over as
// a BSource that packs blocks on demand, so convolution can write its im2col blocks straight
// into the packed layout without building the whole column matrix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/fused_activation.h"
#include "exec/thread_pool.h"

namespace ovfix::exec {

// The register tile of the micro-kernel in use: C is computed mr rows by nr columns at a time.
struct GemmGeometry {
  const char* name;  // "avx512", "avx2", "portable"
  int mr;
  int nr;
};
const GemmGeometry& CurrentGemmGeometry();
// The micro-kernels this CPU can run, best first (for tests and benchmarks).
std::vector<std::string> AvailableGemmKernels();
// Switches the micro-kernel for the whole process. Only for tests and benchmarks: call it
// while no GEMM runs, and repack any PackedA made before. Returns false for an unknown name.
bool SelectGemmKernelForTesting(const std::string& name);

// How K is cut into blocks: A's packing and B's packing must agree on it.
int64_t GemmDepthBlock(int64_t k);
// Whether a product of depth k by the micro-kernel in use may have C over its residual
// (GemmEpilogue::residual == c): one depth block (no partial sums in C), and the kernel adds
// the residual in its tile, reading each element of it just before writing that element of C.
bool GemmResidualMayBeC(int64_t k);
// The core's L2 cache in bytes, which the blocking is sized for.
int64_t L2CacheBytes();

class BSource;

// A (M x K) packed for the micro-kernel; a(m, k) = trans ? a[k * lda + m] : a[m * lda + k].
class PackedA {
 public:
  PackedA() = default;
  // depth_block > 0 asks for depth blocks that deep instead of the GEMM's (a convolution that
  // reads its columns in place keeps a whole panel in L1 and wants fewer, deeper blocks).
  PackedA(const float* a, int64_t lda, bool trans, int64_t m, int64_t k, int64_t depth_block = 0) {
    Pack(a, lda, trans, m, k, nullptr, depth_block);
  }
  // (Re)packs, reusing the storage when it is large enough; a large A is packed in parallel
  // over the pool.
  void Pack(const float* a, int64_t lda, bool trans, int64_t m, int64_t k,
            ThreadPool* pool = nullptr, int64_t depth_block = 0);
  // A given as its transpose, a K x M matrix whose blocks `a_t` packs (the transposed
  // product of a convolution: A^T is the im2col matrix); depth blocks are packed in parallel
  // over the pool.
  void PackTransposed(const BSource& a_t, int64_t m, int64_t k, ThreadPool* pool);

  int64_t rows() const { return rows_; }
  int64_t depth() const { return depth_; }
  int64_t depth_block() const { return depth_block_; }
  // Panel `p` (rows p*mr ..) of the depth block that starts at k0, kc deep.
  const float* panel(int64_t k0, int64_t kc, int64_t p) const {
    return data_.get() + k0 * padded_rows_ + p * kc * mr_;
  }
  int mr() const { return mr_; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  void Reset(int64_t m, int64_t k, int64_t depth_block = 0);
  int64_t rows_ = 0, depth_ = 0, depth_block_ = 1, padded_rows_ = 0, capacity_ = 0;
  int mr_ = 1;
  std::unique_ptr<float[], Free> data_;
};

// B (K x N) as the GEMM reads it: blocks packed on demand.
class BSource {
 public:
  virtual ~BSource() = default;
  // B[k0 .. k0+kc, n0 .. n0+nc] as ceil(nc / nr) panels, each kc rows of nr floats (row k of
  // panel p at p * kc * nr + k * nr), zero past column nc: written into `scratch` (room for
  // kc * nc rounded up to panels) or found already packed. n0 is a multiple of nr.
  virtual const float* Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                            float* scratch) const = 0;
  // Whether Pack only finds blocks packed before (then several parts of a product may read
  // the same columns of B at no cost but the reading).
  virtual bool prepacked() const { return false; }
};

// Copies `count` floats of one row of B into consecutive packed panels: panel p starts
// p * panel_stride floats after dst (dst is this row's place in panel 0); zero past count.
void PackRowIntoPanels(const float* row, int64_t count, int nr, int64_t panel_stride, float* dst);

// One panel of A: dst[kk * mr + r] = a[r * lda + kk] for r < rows, 0 for rows <= r < mr, over
// depths kk < kc (rows of A are read contiguously and transposed in registers).
void PackRowsIntoPanel(const float* a, int64_t lda, int rows, int mr, int64_t kc, float* dst);

// A plain matrix: b(k, n) = trans ? b[n * ldb + k] : b[k * ldb + n].
class MatrixB : public BSource {
 public:
  MatrixB(const float* b, int64_t ldb, bool trans) : b_(b), ldb_(ldb), trans_(trans) {}
  const float* Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                    float* scratch) const override;

 private:
  const float* b_;
  int64_t ldb_;
  bool trans_;
};

// B packed once for the current micro-kernel (constant weights on the B side).
class PackedB : public BSource {
 public:
  PackedB() = default;
  PackedB(const float* b, int64_t ldb, bool trans, int64_t k, int64_t n);
  const float* Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                    float* scratch) const override;
  bool prepacked() const override { return true; }
  int64_t depth() const { return depth_; }
  int64_t columns() const { return columns_; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  int64_t depth_ = 0, columns_ = 0, padded_columns_ = 0;
  int nr_ = 1;
  std::unique_ptr<float[], Free> data_;
};

// Then the fused activation (FusedActivation, the base) over every element.
struct GemmEpilogue : FusedActivation {
  float alpha = 1.0f;
  float beta = 0.0f;  // 0: C is not read (it may hold anything)
  // Added to every element of row m once the product is complete (after beta * C, then the
  // column bias and the activation): row_bias[m].
  const float* row_bias = nullptr;
  // Added to every element of column n once the product is complete (then the activation):
  // column_bias[n], n counted from the first column of C.
  const float* column_bias = nullptr;
  // Added to every element once the biases are (then the activation): residual[i * ldc + j] for
  // element (i, j) of C, a tensor laid out as C is (a residual connection's other operand).
  const float* residual = nullptr;
};

// c[i * ldc + j] = activation(c[i * ldc + j] + bias[j] + residual[i * ldc + j]) over rows x
// cols (bias or residual may be null).
void FinishColumns(float* c, int64_t ldc, int64_t rows, int64_t cols, const float* bias,
                   const float* residual, const FusedActivation& activation);

// C (a.rows() x n, row stride ldc) = clamp(alpha * A * B + beta * C + row_bias).
// Multithreaded over blocks of C when pool is set and the product is big enough.
void GemmPacked(const PackedA& a, const BSource& b, int64_t n, float* c, int64_t ldc,
                const GemmEpilogue& epilogue, ThreadPool* pool);

// GemmPacked with A (m x k) as it lies, row-major with rows lda floats apart: the micro-kernel
// reads its rows in place where it can (the AVX2 one), else A is packed first. The same
// products in the same order either way, so the same result bit for bit.
void GemmRowsInPlace(const float* a, int64_t lda, int64_t m, int64_t k, const BSource& b, int64_t n,
                     float* c, int64_t ldc, const GemmEpilogue& epilogue, ThreadPool* pool);

// Up to this many rows of op(A) (and B not transposed), Sgemm streams B once instead of
// packing it: a product over so few rows does not repay a packed copy of B.
inline constexpr int64_t kFewRows = 8;

// The BLAS-like entry point, row-major: op(A) is M x K, op(B) is K x N.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
           ThreadPool* pool);

// Double precision: a plain loop (no model needs it fast).
void Dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc, ThreadPool* pool);

// Fills `c` (m x n, row stride ldc) row m with row_bias[m] (or 0 without bias) scaled as the
// epilogue says: the result of a product with K == 0.
void GemmEmptyDepth(int64_t m, int64_t n, float* c, int64_t ldc, const GemmEpilogue& epilogue);

}  // namespace ovfix::exec
