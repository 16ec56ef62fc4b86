// Vectorized float math for the element-wise kernels: erf and exp over arrays, and the pieces
// of a softmax line. One polynomial form for every instruction set (AVX-512, AVX2+FMA and the
// SSE2 baseline, picked with the GEMM micro-kernel so that tests can force the portable one):
// results are within a few units in the last place of the correctly rounded values, where the
// scalar libm calls they replace took most of the time of GELU and Softmax.
#pragma once

#include <cstdint>

namespace ovfix::exec {

// y[i] = erf(x[i]) for i < n; y may be x.
void ErfFloats(const float* x, float* y, int64_t n);

// y[i] = exp(x[i]) for i < n; y may be x.
void ExpFloats(const float* x, float* y, int64_t n);

// The largest of x[0 .. n) (n > 0), or NaN when one of them is NaN.
float MaxFloats(const float* x, int64_t n);

// y[i] = exp(x[i] - shift) for i < n; returns the sum of the y[i], accumulated in double.
// y may be x; otherwise the two must not overlap.
double ExpShiftedSum(const float* x, float shift, float* y, int64_t n);

// y[k] = float(double(y[k]) * factor): a softmax's normalization, rounded once.
void ScaleInDouble(float* y, int64_t n, double factor);

}  // namespace ovfix::exec
