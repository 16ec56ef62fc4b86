// GCC vectors of W floats (16 for AVX-512, 8 for AVX2, 4 for the baseline) and the
// N-vector multiply-add that the portable matrix-vector product (gemm_kernels.cc) and the
// depthwise convolution (conv_depthwise.cc) both run: four accumulators, kept in registers
// when the caller is compiled for W's instruction set, summed over a list of weighted rows.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

namespace ovfix::exec {

template <int W>
using FloatVec __attribute__((vector_size(W * sizeof(float)))) = float;

// N vectors of W floats, as the kernels hold N * W consecutive outputs (N accumulators: enough
// of them hide the multiply-add's latency).
template <int W, int N = 4>
struct VecRun {
  FloatVec<W> v[N];
};

// sums.v[U] += weight * row[U * W ...] for each (row, weight) = row_of(s), s in [0, steps).
template <int W, int N, typename RowOf>
__attribute__((always_inline)) inline void MultiplyAddRows(VecRun<W, N>& sums, int64_t steps,
                                                           RowOf row_of) {
  using Vec = FloatVec<W>;
  for (int64_t s = 0; s < steps; ++s) {
    const std::pair<const float*, float> step = row_of(s);
    const float* row = step.first;
    const float weight = step.second;
#pragma GCC unroll 16
    for (int u = 0; u < N; ++u) {
      Vec v;
      std::memcpy(&v, row + u * W, sizeof(Vec));
      sums.v[u] += v * weight;
    }
  }
}

// The N * W floats of `sums` to `out`.
template <int W, int N>
__attribute__((always_inline)) inline void StoreRun(const VecRun<W, N>& sums, float* out) {
#pragma GCC unroll 16
  for (int u = 0; u < N; ++u) std::memcpy(out + u * W, &sums.v[u], sizeof(FloatVec<W>));
}

}  // namespace ovfix::exec
