// Exact integer matrix products for the quantized ops (ConvInteger, MatMulInteger,
// QLinearConv, QLinearMatMul): C (int32) = (A - a_zero) * (B - b_zero) for 8-bit A and B.
//
// Both operands are widened to int16 with their zero points taken off (values in
// [-255, 255]) and K is taken two steps at a time: one multiply-add of int16 pairs
// (pmaddwd) gives a(k) * b(k) + a(k+1) * b(k+1) in an int32 lane without saturation, unlike
// the uint8 x int8 pair instruction (pmaddubsw) that saturates at 16 bits. The register-tiled
// micro-kernel (AVX-512BW with or without VNNI, AVX2, portable C++) is chosen once from the CPU.
//
// Layouts: A is packed in panels of mr rows, each panel K/2 steps of mr int32-sized pairs;
// B in panels of nr columns, each K/2 steps of nr pairs. K and the last panels are padded with
// zeros.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/thread_pool.h"

namespace ovfix::exec {

struct QuantGemmKernel {
  const char* name;  // "avx512vnni", "avx512bw", "avx2", "portable"
  int mr;
  int nr;
  // C[rows x cols] (row stride ldc) = A panel * B panel over `pairs` pairs of K.
  void (*tile)(int64_t pairs, const int16_t* a, const int16_t* b, int32_t* c, int64_t ldc, int rows,
               int cols);
};

const QuantGemmKernel& CurrentQuantGemmKernel();
// The micro-kernels this CPU can run, best first (for tests and benchmarks).
std::vector<std::string> AvailableQuantGemmKernels();
// Switches the micro-kernel for the whole process; only for tests and benchmarks, while no
// product runs and with nothing packed before it in use. False for an unknown name.
bool SelectQuantGemmKernelForTesting(const std::string& name);

// A (rows x depth) packed for the current micro-kernel.
class PackedQuantA {
 public:
  // value(m, k) gives A(m, k) with its zero point taken off.
  template <typename ValueFn>
  void Pack(int64_t rows, int64_t depth, ValueFn value) {
    Reset(rows, depth);
    for (int64_t m = 0; m < rows; ++m) {
      int16_t* row = data_.data() + (m / mr_) * panel_size() + (m % mr_) * 2;
      for (int64_t k = 0; k < depth; ++k) row[(k / 2) * mr_ * 2 + (k & 1)] = value(m, k);
    }
  }
  int64_t rows() const { return rows_; }
  int64_t pairs() const { return pairs_; }
  int64_t panel_size() const { return pairs_ * mr_ * 2; }
  const int16_t* panel(int64_t p) const { return data_.data() + p * panel_size(); }

 private:
  void Reset(int64_t rows, int64_t depth);
  int64_t rows_ = 0, pairs_ = 0;
  int mr_ = 1;
  std::vector<int16_t> data_;
};

// Where B(k, n) goes in a packed B of `pairs` pairs of K: panel n / nr.
inline int64_t QuantPackedBIndex(int64_t pairs, int nr, int64_t k, int64_t n) {
  return (n / nr) * pairs * nr * 2 + (k / 2) * nr * 2 + (n % nr) * 2 + (k & 1);
}
// int16 elements of a packed B of `pairs` pairs and `columns` columns (panels padded).
inline int64_t QuantPackedBSize(int64_t pairs, int nr, int64_t columns) {
  return (columns + nr - 1) / nr * pairs * nr * 2;
}

// C (a.rows() x columns, row stride ldc) = A * B, B packed (QuantPackedBIndex) for the
// current kernel. Runs on the calling thread.
void QuantGemmBlock(const PackedQuantA& a, const int16_t* b, int64_t columns, int32_t* c,
                    int64_t ldc);
// The same, split into tiles over the pool.
void QuantGemm(const PackedQuantA& a, const int16_t* b, int64_t columns, int32_t* c, int64_t ldc,
               ThreadPool* pool);

}  // namespace ovfix::exec
