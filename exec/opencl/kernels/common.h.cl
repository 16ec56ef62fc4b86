// Prepended to every ovfix OpenCL program. Tensors are read and written through LOAD_X /
// STORE_X so one kernel source serves float storage and half storage (vload_half /
// vstore_half work on every device); arithmetic is real_t: float, or half when the program
// is built with USE_HALF_ARITHMETIC on a device with cl_khr_fp16.
#ifdef USE_HALF_ARITHMETIC
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
typedef half real_t;
#define REAL_MAX ((half)65504.0f)  // HALF_MAX, which only cl_khr_fp16 defines
// Vector conversions lane by lane (rounding to nearest even, as convert_halfN does): NVIDIA's
// compiler has half vectors but no convert_halfN / convert_floatN for them.
inline half8 half8_from(float8 v) {
  return (half8)((half)v.s0, (half)v.s1, (half)v.s2, (half)v.s3, (half)v.s4, (half)v.s5,
                 (half)v.s6, (half)v.s7);
}
inline float8 float8_from(half8 v) {
  return (float8)((float)v.s0, (float)v.s1, (float)v.s2, (float)v.s3, (float)v.s4, (float)v.s5,
                  (float)v.s6, (float)v.s7);
}
inline half16 half16_from(float16 v) { return (half16)(half8_from(v.lo), half8_from(v.hi)); }
inline float16 float16_from(half16 v) { return (float16)(float8_from(v.lo), float8_from(v.hi)); }
#else
typedef float real_t;
#define REAL_MAX FLT_MAX
#endif


#ifdef A_HALF
#define A_T half
#define LOAD_A(p, i) ((real_t)vload_half((i), (p)))
#else
#define A_T float
#define LOAD_A(p, i) ((real_t)(p)[(i)])
#endif

#ifdef B_HALF
#define B_T half
#define LOAD_B(p, i) ((real_t)vload_half((i), (p)))
#else
#define B_T float
#define LOAD_B(p, i) ((real_t)(p)[(i)])
#endif

#ifdef C_HALF
#define C_T half
#define LOAD_C(p, i) ((real_t)vload_half((i), (p)))
#else
#define C_T float
#define LOAD_C(p, i) ((real_t)(p)[(i)])
#endif

#ifdef W_HALF
#define W_T half
#define LOAD_W(p, i) ((real_t)vload_half((i), (p)))
#else
#define W_T float
#define LOAD_W(p, i) ((real_t)(p)[(i)])
#endif

#ifdef Y_HALF
#define Y_T half
#define STORE_Y(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
#define Y_T float
#define STORE_Y(p, i, v) ((p)[(i)] = (float)(v))
#endif

// Math built-ins on real_t, evaluated in float and rounded to real_t once. In half arithmetic
// that is what a device's half built-ins give (within their ulp), and it also builds where
// the compiler has half arithmetic but no half overloads of the math built-ins (NVIDIA's,
// which does not advertise cl_khr_fp16 either). In float it is the built-in itself.
#define REAL_MATH1(name) \
  inline real_t r_##name(real_t x) { return (real_t)name((float)x); }
REAL_MATH1(exp)
REAL_MATH1(log)
REAL_MATH1(sqrt)
REAL_MATH1(tanh)
REAL_MATH1(fabs)
REAL_MATH1(floor)
REAL_MATH1(ceil)
REAL_MATH1(erf)
inline real_t r_pow(real_t a, real_t b) { return (real_t)pow((float)a, (float)b); }
inline real_t r_fmax(real_t a, real_t b) { return (real_t)fmax((float)a, (float)b); }
inline int r_isinf(real_t x) { return isinf((float)x); }

// Max and min that propagate NaN, as ONNX's reference (numpy maximum/minimum) and the CPU
// executor do; fmax/fmin return the other operand, which would hide the NaN an fp16 overflow
// produced from `ovfix compare`.
inline real_t max_nan(real_t a, real_t b) { return a != a || a > b ? a : b; }
inline real_t min_nan(real_t a, real_t b) { return a != a || a < b ? a : b; }

// Gather along an axis: where output element i of y [outer, count, inner] reads x [outer,
// axis_size, inner], with indices already checked and made non-negative on the host.
inline long GatherSource(long i, __global const long* indices, long count, long axis_size,
                         long inner) {
  const long in = i % inner;
  const long j = (i / inner) % count;
  const long outer = i / (inner * count);
  return (outer * axis_size + indices[j]) * inner + in;
}

// Broadcasting: an output index is split into coordinates over `dims` (rank <= 8, padded
// with leading 1s) and recombined with an operand's strides (0 along broadcast dims).
inline long BroadcastOffset(long index, int8 dims, int8 strides) {
  long offset = 0;
  long rest = index;
  int d[8] = {dims.s0, dims.s1, dims.s2, dims.s3, dims.s4, dims.s5, dims.s6, dims.s7};
  int s[8] = {strides.s0, strides.s1, strides.s2, strides.s3,
              strides.s4, strides.s5, strides.s6, strides.s7};
  for (int k = 7; k >= 0; --k) {
    const long c = rest % d[k];
    rest /= d[k];
    offset += c * s[k];
  }
  return offset;
}
