// GCC vectors of W floats (16 for AVX-512, 8 for AVX2, 4 for the baseline) and the
// four-vector multiply-add that the portable matrix-vector product (gemm_kernels.cc) and the
// depthwise convolution (conv_depthwise.cc) both run: four accumulators, kept in registers
// when the caller is compiled for W's instruction set, summed over a list of weighted rows.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

namespace ovfix::exec {

template <int W>
using FloatVec __attribute__((vector_size(W * sizeof(float)))) = float;

// Four vectors of W floats, as the kernels hold 4 * W consecutive outputs.
template <int W>
struct FourVecs {
  FloatVec<W> v0, v1, v2, v3;
};

// sums.vU += weight * row[U * W ...] for each (row, weight) = row_of(s), s in [0, steps).
template <int W, typename RowOf>
__attribute__((always_inline)) inline void MultiplyAddRows(FourVecs<W>& sums, int64_t steps,
                                                           RowOf row_of) {
  using Vec = FloatVec<W>;
  for (int64_t s = 0; s < steps; ++s) {
    const std::pair<const float*, float> step = row_of(s);
    const float* row = step.first;
    const float weight = step.second;
    Vec v0, v1, v2, v3;
    std::memcpy(&v0, row, sizeof(Vec));
    std::memcpy(&v1, row + W, sizeof(Vec));
    std::memcpy(&v2, row + 2 * W, sizeof(Vec));
    std::memcpy(&v3, row + 3 * W, sizeof(Vec));
    sums.v0 += v0 * weight;
    sums.v1 += v1 * weight;
    sums.v2 += v2 * weight;
    sums.v3 += v3 * weight;
  }
}

// The 4 * W floats of `sums` to `out`.
template <int W>
__attribute__((always_inline)) inline void StoreFour(const FourVecs<W>& sums, float* out) {
  using Vec = FloatVec<W>;
  std::memcpy(out, &sums.v0, sizeof(Vec));
  std::memcpy(out + W, &sums.v1, sizeof(Vec));
  std::memcpy(out + 2 * W, &sums.v2, sizeof(Vec));
  std::memcpy(out + 3 * W, &sums.v3, sizeof(Vec));
}

}  // namespace ovfix::exec
