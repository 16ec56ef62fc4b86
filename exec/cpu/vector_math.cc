#include "exec/cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

#include "exec/cpu/gemm.h"

namespace ovfix::exec {
namespace {

// W floats in one register: 16 for AVX-512, 8 for AVX2, 4 for the baseline. The templates
// below are inlined into functions compiled for each instruction set.
template <int W>
using Floats __attribute__((vector_size(W * sizeof(float)))) = float;
template <int W>
using Ints __attribute__((vector_size(W * sizeof(float)))) = int32_t;
template <int W>
using Doubles __attribute__((vector_size(W * sizeof(double)))) = double;

#define OVFIX_INLINE __attribute__((always_inline)) inline

// The bits of `v` as another type of the same size.
template <typename To, typename From>
OVFIX_INLINE To Bits(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To r;
  std::memcpy(&r, &v, sizeof(r));
  return r;
}

template <int W>
OVFIX_INLINE Floats<W> Splat(float v) {
  return Floats<W>{} + v;
}

template <int W>
OVFIX_INLINE Floats<W> Load(const float* p) {
  Floats<W> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <int W>
OVFIX_INLINE void Store(float* p, Floats<W> v) {
  std::memcpy(p, &v, sizeof(v));
}

// Coefficients, highest power first, of minimax-like (Chebyshev) fits made with mpmath:
// erf(a) / a as a polynomial in a * a on [0, 0.875] (error 2e-10), erfc(a) around 1.5625 on
// [0.875, 2.25] (4e-9) and around 3.085 on [2.25, 3.92] (1.3e-9), exp(r) on
// [-ln2 / 2, ln2 / 2] (relative error 2e-9).
constexpr float kErfSmall[] = {8.690368907e-5f, -0.0008214570887f, 0.005207048911f, -0.02686170583f,
                               0.1128373521f,   -0.3761263621f,    1.128379167f};
constexpr float kErfcNear[] = {0.0001462526149f, -0.001359684846f, 0.001472468738f, 0.005574892393f,
                               -0.01703657432f,  0.008060337041f,  0.04815580159f,  -0.1271152470f,
                               0.1534566706f,    -0.09821223461f,  0.02712538618f};
constexpr float kErfcFar[] = {-1.191422894e-5f,  -8.120862065e-6f,  0.0001233749681f,
                              -0.0003141519271f, 0.0005310639012f,  -0.0006916286905f,
                              0.0006845603107f,  -0.0004994712248f, 0.0002561089679f,
                              -8.300474650e-5f,  1.283796500e-5f};
constexpr float kExp[] = {0.001394110843f, 0.008375126398f, 0.04166635290f, 0.1666641551f,
                          0.5000000047f,   1.000000038f,    1.000000000f};

// Whether any lane of a comparison's result is set.
template <int W>
OVFIX_INLINE bool AnyLane(const Ints<W>& mask) {
  uint64_t words[W / 2];
  std::memcpy(words, &mask, sizeof(mask));
  uint64_t any = 0;
  for (int i = 0; i < W / 2; ++i) any |= words[i];
  return any != 0;
}

template <int W>
OVFIX_INLINE Floats<W> Erf(const Floats<W>& x) {
  using F = Floats<W>;
  using I = Ints<W>;
  const I sign = Bits<I>(x) & std::numeric_limits<int32_t>::min();
  const F a = Bits<F>(Bits<I>(x) & std::numeric_limits<int32_t>::max());
  // |x| < 0.875: a * P(a^2).
  const F t = a * a;
  F small = Splat<W>(kErfSmall[0]);
  for (int i = 1; i < 7; ++i) small = small * t + kErfSmall[i];
  small = small * a;
  // Beyond: 1 - erfc(a), erfc from one of two pieces; from 3.92 on erf(a) rounds to 1. The
  // pieces a vector does not need are skipped (GELU's inputs are mostly small): every lane
  // gets the same arithmetic on each branch.
  const I beyond = !(a < 0.875f);  // NaN too: the result is x then
  F magnitude = small;
  if (AnyLane<W>(beyond)) {
    const I far = a >= 2.25f;
    F erfc;
    if (AnyLane<W>(far)) {
      const F clamped = a < 3.92f ? a : Splat<W>(3.92f);
      const F u = clamped - (far ? Splat<W>(3.085f) : Splat<W>(1.5625f));
      erfc = far ? Splat<W>(kErfcFar[0]) : Splat<W>(kErfcNear[0]);
      for (int i = 1; i < 11; ++i) {
        erfc = erfc * u + (far ? Splat<W>(kErfcFar[i]) : Splat<W>(kErfcNear[i]));
      }
    } else {
      const F u = a - 1.5625f;  // no lane beyond 2.25: a is its own clamp (NaN gives x)
      erfc = Splat<W>(kErfcNear[0]);
      for (int i = 1; i < 11; ++i) erfc = erfc * u + kErfcNear[i];
    }
    magnitude = beyond ? 1.0f - erfc : small;
  }
  const F y = Bits<F>(Bits<I>(magnitude) | sign);
  return x == x ? y : x;  // NaN stays NaN
}

template <int W>
OVFIX_INLINE Floats<W> Exp(const Floats<W>& input) {
  using F = Floats<W>;
  using I = Ints<W>;
  // Below -104 exp rounds to 0, above 89 to infinity; NaN passes the clamps.
  F x = input < -104.0f ? Splat<W>(-104.0f) : input;
  x = x > 89.0f ? Splat<W>(89.0f) : x;
  // x = n ln2 + r, |r| <= ln2 / 2; n rounded by the 1.5 * 2^23 trick, ln2 in two parts so
  // that n * ln2_hi is exact.
  constexpr float kMagic = 12582912.0f;
  const F shifted = x * 1.44269504089f + kMagic;
  const F n = shifted - kMagic;
  F r = x - n * 0.693115234375f;
  r = r - n * 3.19461849453e-5f;
  F p = Splat<W>(kExp[0]);
  for (int i = 1; i < 7; ++i) p = p * r + kExp[i];
  // 2^n in two factors, each a normal float, so that results near the ends of the range
  // (infinity, subnormals) are rounded once.
  const I k = Bits<I>(shifted) - 0x4B400000;
  const I k1 = k >> 1;
  const I scale1 = (k1 + 127) << 23;
  const I scale2 = (k - k1 + 127) << 23;
  return p * Bits<F>(scale1) * Bits<F>(scale2);
}

// Applies fn to whole vectors, and to the tail through a padded copy.
template <int W, Floats<W> (*fn)(const Floats<W>&)>
OVFIX_INLINE void MapFloats(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Store<W>(y + i, fn(Load<W>(x + i)));
  if (i < n) {
    float tail[W] = {};
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    Store<W>(tail, fn(Load<W>(tail)));
    std::memcpy(y + i, tail, (n - i) * sizeof(float));
  }
}

template <int W>
OVFIX_INLINE void ErfImpl(const float* x, float* y, int64_t n) {
  MapFloats<W, &Erf<W>>(x, y, n);
}

template <int W>
OVFIX_INLINE void ExpImpl(const float* x, float* y, int64_t n) {
  MapFloats<W, &Exp<W>>(x, y, n);
}

template <int W>
OVFIX_INLINE float MaxImpl(const float* x, int64_t n) {
  using F = Floats<W>;
  using I = Ints<W>;
  F best = Splat<W>(x[0]);
  I nan = I{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const F v = Load<W>(x + i);
    best = v > best ? v : best;
    nan |= v != v;
  }
  float result = x[0];
  bool any_nan = false;
  for (int l = 0; l < W; ++l) {
    result = best[l] > result ? best[l] : result;
    any_nan |= nan[l] != 0;
  }
  for (; i < n; ++i) {
    result = x[i] > result ? x[i] : result;
    any_nan |= x[i] != x[i];
  }
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : result;
}

template <int W>
OVFIX_INLINE double ExpShiftedSumImpl(const float* x, float shift, float* y, int64_t n) {
  constexpr int H = W / 2;
  Doubles<H> low = {}, high = {};
  Floats<H> half[2];
  auto accumulate = [&] {
    low += __builtin_convertvector(half[0], Doubles<H>);
    high += __builtin_convertvector(half[1], Doubles<H>);
  };
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const Floats<W> e = Exp<W>(Load<W>(x + i) - shift);
    Store<W>(y + i, e);
    std::memcpy(half, &e, sizeof(e));
    accumulate();
  }
  if (i < n && n >= W && y != x) {
    // The last W elements again (the same values where they overlap), summing the new ones
    // (not in place: x there would already hold exps).
    const int64_t start = n - W;
    const Floats<W> e = Exp<W>(Load<W>(x + start) - shift);
    Store<W>(y + start, e);
    Ints<W> lane;
    for (int l = 0; l < W; ++l) lane[l] = l;
    const Floats<W> fresh = lane >= static_cast<int32_t>(i - start) ? e : Floats<W>{};
    std::memcpy(half, &fresh, sizeof(fresh));
    accumulate();
  } else if (i < n) {
    float tail[W];
    for (int l = 0; l < W; ++l)
      tail[l] = i + l < n ? x[i + l] : -std::numeric_limits<float>::infinity();
    const Floats<W> e = Exp<W>(Load<W>(tail) - shift);
    Store<W>(tail, e);
    std::memcpy(y + i, tail, (n - i) * sizeof(float));
    std::memcpy(half, &e, sizeof(e));
    accumulate();
  }
  double sum = 0;
  const Doubles<H> both = low + high;
  for (int l = 0; l < H; ++l) sum += both[l];
  return sum;
}

// y[k] = float(double(y[k]) * factor).
template <int W>
OVFIX_INLINE void ScaleInDoubleImpl(float* y, int64_t n, double factor) {
  constexpr int H = W / 2;
  int64_t i = 0;
  for (; i + H <= n; i += H) {
    Floats<H> v;
    std::memcpy(&v, y + i, sizeof(v));
    const Doubles<H> scaled = __builtin_convertvector(v, Doubles<H>) * factor;
    v = __builtin_convertvector(scaled, Floats<H>);
    std::memcpy(y + i, &v, sizeof(v));
  }
  for (; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(y[i]) * factor);
}

// y = 0.5 x (1 + erf(x / sqrt 2)), in one pass.
template <int W>
OVFIX_INLINE Floats<W> Gelu(const Floats<W>& x) {
  return 0.5f * x * (1.0f + Erf<W>(x * 0.70710678f));
}

template <int W>
OVFIX_INLINE void GeluImpl(const float* x, float* y, int64_t n) {
  MapFloats<W, &Gelu<W>>(x, y, n);
}

// The sums of the lanes of `v`, in double: the low and high halves converted.
template <int W>
OVFIX_INLINE void AddAsDoubles(const Floats<W>& v, Doubles<W / 2>& low, Doubles<W / 2>& high) {
  Floats<W / 2> half[2];
  std::memcpy(half, &v, sizeof(v));
  low += __builtin_convertvector(half[0], Doubles<W / 2>);
  high += __builtin_convertvector(half[1], Doubles<W / 2>);
}

template <int W>
OVFIX_INLINE double SumLanes(const Doubles<W / 2>& low, const Doubles<W / 2>& high) {
  const Doubles<W / 2> both = low + high;
  double sum = 0;
  for (int l = 0; l < W / 2; ++l) sum += both[l];
  return sum;
}

// One row of a float LayerNormalization. The sums are taken in double, the last pass in float:
// pass 1 sums x for a float shift (the mean rounded); pass 2 sums d = x - shift and d * d in
// double, where sum(d) / n is the shift's rounding error (the corrected two-pass algorithm: no
// cancellation however large the mean), and pass 3 computes
// ((x - shift) - correction) * (inv_std * scale) + bias, a few float roundings of the result.
template <int W>
OVFIX_INLINE LayerNormStatistics LayerNormRowImpl(const float* x, float* y, int64_t n,
                                                  const float* scale, const float* bias,
                                                  float epsilon) {
  using F = Floats<W>;
  using D = Doubles<W / 2>;
  D low = {}, high = {};
  int64_t i = 0;
  for (; i + W <= n; i += W) AddAsDoubles<W>(Load<W>(x + i), low, high);
  double sum = SumLanes<W>(low, high);
  for (; i < n; ++i) sum += static_cast<double>(x[i]);
  const float shift = static_cast<float>(sum / static_cast<double>(n));
  const double shift_double = shift;
  D d_low = {}, d_high = {}, q_low = {}, q_high = {};
  for (i = 0; i + W <= n; i += W) {
    const F v = Load<W>(x + i);
    Floats<W / 2> half[2];
    std::memcpy(half, &v, sizeof(v));
    const D a = __builtin_convertvector(half[0], D) - shift_double;
    const D b = __builtin_convertvector(half[1], D) - shift_double;
    d_low += a;
    d_high += b;
    q_low += a * a;
    q_high += b * b;
  }
  double d_sum = SumLanes<W>(d_low, d_high), q_sum = SumLanes<W>(q_low, q_high);
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - shift_double;
    d_sum += d;
    q_sum += d * d;
  }
  const double correction = d_sum / static_cast<double>(n);
  const double variance = std::max(0.0, q_sum / static_cast<double>(n) - correction * correction);
  LayerNormStatistics stats;
  stats.mean = static_cast<double>(shift) + correction;
  stats.inv_std = 1.0 / std::sqrt(variance + static_cast<double>(epsilon));
  const float c = static_cast<float>(correction), inv_std = static_cast<float>(stats.inv_std);
  for (i = 0; i + W <= n; i += W) {
    const F normal = (Load<W>(x + i) - shift) - c;
    F v = normal * (inv_std * Load<W>(scale + i));
    if (bias != nullptr) v += Load<W>(bias + i);
    Store<W>(y + i, v);
  }
  for (; i < n; ++i) {
    const float normal = (x[i] - shift) - c;
    y[i] = normal * (inv_std * scale[i]) + (bias != nullptr ? bias[i] : 0.0f);
  }
  return stats;
}

#undef OVFIX_INLINE

struct VectorFunctions {
  void (*erf)(const float*, float*, int64_t);
  void (*exp)(const float*, float*, int64_t);
  float (*max)(const float*, int64_t);
  double (*exp_shifted_sum)(const float*, float, float*, int64_t);
  void (*scale_in_double)(float*, int64_t, double);
  void (*gelu)(const float*, float*, int64_t);
  LayerNormStatistics (*layer_norm_row)(const float*, float*, int64_t, const float*, const float*,
                                        float);
};

#define OVFIX_VECTOR_FUNCTIONS(Suffix, W, ...)                                                     \
  __VA_ARGS__ void Erf##Suffix(const float* x, float* y, int64_t n) { ErfImpl<W>(x, y, n); }       \
  __VA_ARGS__ void Exp##Suffix(const float* x, float* y, int64_t n) { ExpImpl<W>(x, y, n); }       \
  __VA_ARGS__ float Max##Suffix(const float* x, int64_t n) { return MaxImpl<W>(x, n); }            \
  __VA_ARGS__ double ExpShiftedSum##Suffix(const float* x, float shift, float* y, int64_t n) {     \
    return ExpShiftedSumImpl<W>(x, shift, y, n);                                                   \
  }                                                                                                \
  __VA_ARGS__ void ScaleInDouble##Suffix(float* y, int64_t n, double factor) {                     \
    ScaleInDoubleImpl<W>(y, n, factor);                                                            \
  }                                                                                                \
  __VA_ARGS__ void Gelu##Suffix(const float* x, float* y, int64_t n) { GeluImpl<W>(x, y, n); }     \
  __VA_ARGS__ LayerNormStatistics LayerNormRow##Suffix(                                            \
      const float* x, float* y, int64_t n, const float* scale, const float* bias, float epsilon) { \
    return LayerNormRowImpl<W>(x, y, n, scale, bias, epsilon);                                     \
  }                                                                                                \
  constexpr VectorFunctions k##Suffix = {                                                          \
      &Erf##Suffix,           &Exp##Suffix,  &Max##Suffix,         &ExpShiftedSum##Suffix,         \
      &ScaleInDouble##Suffix, &Gelu##Suffix, &LayerNormRow##Suffix};

OVFIX_VECTOR_FUNCTIONS(Avx512, 16, __attribute__((target("avx512f,fma"))))
OVFIX_VECTOR_FUNCTIONS(Avx2, 8, __attribute__((target("avx2,fma"))))
OVFIX_VECTOR_FUNCTIONS(Baseline, 4, )

#undef OVFIX_VECTOR_FUNCTIONS

// The instruction set follows the GEMM micro-kernel in use (see gemm.h).
const VectorFunctions& Functions() {
  const std::string_view isa = CurrentGemmGeometry().name;
  if (isa == "avx512") return kAvx512;
  if (isa == "avx2") return kAvx2;
  return kBaseline;
}

}  // namespace

void ErfFloats(const float* x, float* y, int64_t n) { Functions().erf(x, y, n); }

void ExpFloats(const float* x, float* y, int64_t n) { Functions().exp(x, y, n); }

float MaxFloats(const float* x, int64_t n) { return Functions().max(x, n); }

double ExpShiftedSum(const float* x, float shift, float* y, int64_t n) {
  return Functions().exp_shifted_sum(x, shift, y, n);
}

void ScaleInDouble(float* y, int64_t n, double factor) {
  Functions().scale_in_double(y, n, factor);
}

void GeluFloats(const float* x, float* y, int64_t n) { Functions().gelu(x, y, n); }

LayerNormStatistics LayerNormRow(const float* x, float* y, int64_t n, const float* scale,
                                 const float* bias, float epsilon) {
  return Functions().layer_norm_row(x, y, n, scale, bias, epsilon);
}

}  // namespace ovfix::exec
