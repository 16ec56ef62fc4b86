// Element-wise ops. OP selects the function at build time (-DOP=n, numbered as in
// exec/opencl/ops_elementwise.cc); the compiler folds the switch away.

inline real_t unary_op(real_t x, float alpha, float beta) {
  switch (OP) {
    case 0: return x < 0 ? (real_t)0 : x;                                // Relu
    case 1: return x >= 0 ? x : x * (real_t)alpha;                       // LeakyRelu
    case 2: return min_nan(max_nan((real_t)alpha * x + (real_t)beta, 0), 1);  // HardSigmoid
    case 3: return x * min_nan(max_nan(x / (real_t)6 + (real_t)0.5, 0), 1);   // HardSwish
    case 4: return (real_t)1 / ((real_t)1 + r_exp(-x));                    // Sigmoid
    case 5: return r_tanh(x);                                              // Tanh
    case 6: return r_sqrt(x);                                              // Sqrt
    case 7: return r_exp(x);                                               // Exp
    case 8: return r_erf(x);                                        // Erf
    case 9: return r_fabs(x);                                              // Abs
    case 10: return -x;                                                  // Neg
    case 11: return min_nan(max_nan(x, (real_t)alpha), (real_t)beta);    // Clip
    case 12: return r_log(x);                                              // Log
    case 13: return (real_t)1 / x;                                       // Reciprocal
    case 14: return x;                                                   // Identity / Cast float<->half
    case 15: return x > 0 ? x : (real_t)alpha * (r_exp(x) - (real_t)1);    // Elu
    case 16: return r_log((real_t)1 + r_exp(x));                             // Softplus
    case 17: return r_floor(x);                                            // Floor
    case 18: return r_ceil(x);                                             // Ceil
    default: return x;
  }
}

__kernel void unary(__global const A_T* a, __global Y_T* y, float alpha, float beta) {
  const long i = get_global_id(0);
  STORE_Y(y, i, unary_op(LOAD_A(a, i), alpha, beta));
}

// Operands shaped like the output (-DA_DIRECT, -DB_DIRECT, -DC_DIRECT) are read at the
// output index: the broadcast index arithmetic (a division per dim) is the costly part.
#ifdef A_DIRECT
#define A_OFFSET(i, dims, strides) (i)
#else
#define A_OFFSET(i, dims, strides) BroadcastOffset(i, dims, strides)
#endif
#ifdef B_DIRECT
#define B_OFFSET(i, dims, strides) (i)
#else
#define B_OFFSET(i, dims, strides) BroadcastOffset(i, dims, strides)
#endif
#ifdef C_DIRECT
#define C_OFFSET(i, dims, strides) (i)
#else
#define C_OFFSET(i, dims, strides) BroadcastOffset(i, dims, strides)
#endif

inline real_t binary_op(real_t a, real_t b) {
  switch (OP) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return r_pow(a, b);
    case 5: return max_nan(a, b);
    case 6: return min_nan(a, b);
    case 7: return a >= 0 ? a : a * b;  // PRelu (b is the slope)
    default: return a;
  }
}

__kernel void binary(__global const A_T* a, __global const B_T* b, __global Y_T* y,
                     int8 dims, int8 a_strides, int8 b_strides) {
  const long i = get_global_id(0);
  const real_t x = LOAD_A(a, A_OFFSET(i, dims, a_strides));
  const real_t z = LOAD_B(b, B_OFFSET(i, dims, b_strides));
  STORE_Y(y, i, binary_op(x, z));
}

inline uchar compare_op(real_t a, real_t b) {
  switch (OP) {
    case 0: return a > b;
    case 1: return a < b;
    case 2: return a == b;
    case 3: return a >= b;
    case 4: return a <= b;
    default: return 0;
  }
}

__kernel void compare(__global const A_T* a, __global const B_T* b, __global uchar* y,
                      int8 dims, int8 a_strides, int8 b_strides) {
  const long i = get_global_id(0);
  y[i] = compare_op(LOAD_A(a, A_OFFSET(i, dims, a_strides)),
                    LOAD_B(b, B_OFFSET(i, dims, b_strides)));
}

__kernel void where(__global const uchar* condition, __global const A_T* a,
                    __global const B_T* b, __global Y_T* y, int8 dims, int8 c_strides,
                    int8 a_strides, int8 b_strides) {
  const long i = get_global_id(0);
  const real_t v = condition[C_OFFSET(i, dims, c_strides)]
                       ? LOAD_A(a, A_OFFSET(i, dims, a_strides))
                       : LOAD_B(b, B_OFFSET(i, dims, b_strides));
  STORE_Y(y, i, v);
}

// Copies a block of `inner` elements per outer index into the output at an axis offset.
__kernel void concat_part(__global const A_T* a, __global Y_T* y, long inner, long out_inner,
                          long offset) {
  const long i = get_global_id(0);
  const long outer = i / inner;
  STORE_Y(y, outer * out_inner + offset + i % inner, LOAD_A(a, i));
}
