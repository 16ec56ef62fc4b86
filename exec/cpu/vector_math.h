// Vectorized float math for the element-wise kernels: erf and exp over arrays, the pieces
// of a softmax line, GELU and a LayerNormalization row. One polynomial form for every instruction
// set (AVX-512, AVX2+FMA and the SSE2 baseline, picked with the GEMM micro-kernel so that tests can
// force the portable one): results are within a few units in the last place of the correctly
// rounded values, where the scalar libm calls they replace took most of the time of GELU and
// Softmax.
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

// y[i] = 0.5 x[i] (1 + erf(x[i] / sqrt 2)) for i < n, one pass; y may be x. The same float
// steps as ErfFloats of x[i] * float(1 / sqrt 2) followed by the multiply-adds.
void GeluFloats(const float* x, float* y, int64_t n);

struct LayerNormStatistics {
  double mean = 0;
  double inv_std = 0;  // 1 / sqrt(variance + epsilon)
};

// y = (x - mean) / sqrt(variance + epsilon) * scale + bias over one row of n > 0 floats (bias
// may be null; y may be x). Sums are taken in double and corrected for the mean's
// rounding, so a large mean costs no accuracy; the normalization pass is float, within a few
// float roundings of the result (tests/kernels/vector_math_test.cc bounds it by 1e-6 of the
// output's range against a double reference).
LayerNormStatistics LayerNormRow(const float* x, float* y, int64_t n, const float* scale,
                                 const float* bias, float epsilon);

}  // namespace ovfix::exec
