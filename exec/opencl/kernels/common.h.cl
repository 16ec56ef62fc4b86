// Prepended to every ovfix OpenCL program. Tensors are read and written through LOAD_X /
// STORE_X so one kernel source serves float storage and half storage (vload_half /
// vstore_half work on every device); arithmetic is real_t: float, or half when the program
// is built with USE_HALF_ARITHMETIC on a device with cl_khr_fp16.
#ifdef USE_HALF_ARITHMETIC
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
typedef half real_t;
#define REAL_MAX HALF_MAX
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

// Max and min that propagate NaN, as ONNX's reference (numpy maximum/minimum) and the CPU
// executor do; fmax/fmin return the other operand, which would hide the NaN an fp16 overflow
// produced from `ovfix compare`.
inline real_t max_nan(real_t a, real_t b) { return a != a || a > b ? a : b; }
inline real_t min_nan(real_t a, real_t b) { return a != a || a < b ? a : b; }

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
