// Reductions, Softmax and Gather. One work item per output element (reductions) or per row
// (softmax).

// Offset of element `i` of the axes whose reduced flag is `of_reduced`, counted in row-major
// order over those axes, added to `start`.
long axes_offset(long i, long start, const int* d, const int* r, int of_reduced,
                 const long* stride) {
  for (int k = 7; k >= 0; --k) {
    if ((r[k] != 0) != of_reduced) continue;
    start += (i % d[k]) * stride[k];
    i /= d[k];
  }
  return start;
}

// The input is seen as `dims` (rank 8, leading 1s) with `reduced` marking reduced axes.
// MODE: 0 sum, 1 mean, 2 max, 3 min, 4 sum of squares, 5 L2, 6 L1, 7 prod, 8 log-sum,
// 9 log-sum-exp.
__kernel void reduce(__global const A_T* x, __global Y_T* y, int8 dims, int8 reduced,
                     long count) {
  const long index = get_global_id(0);
  int d[8] = {dims.s0, dims.s1, dims.s2, dims.s3, dims.s4, dims.s5, dims.s6, dims.s7};
  int r[8] = {reduced.s0, reduced.s1, reduced.s2, reduced.s3,
              reduced.s4, reduced.s5, reduced.s6, reduced.s7};
  long stride[8];
  long s = 1;
  for (int k = 7; k >= 0; --k) {
    stride[k] = s;
    s *= d[k];
  }
  // Base offset from the kept coordinates of this output element.
  const long base = axes_offset(index, 0, d, r, 0, stride);
  real_t peak = -INFINITY;
  if (MODE == 9) {
    for (long i = 0; i < count; ++i) {
      peak = max_nan(peak, LOAD_A(x, axes_offset(i, base, d, r, 1, stride)));
    }
  }
  real_t acc = MODE == 2 ? -INFINITY : (MODE == 3 ? INFINITY : (MODE == 7 ? (real_t)1 : (real_t)0));
  for (long i = 0; i < count; ++i) {
    const real_t v = LOAD_A(x, axes_offset(i, base, d, r, 1, stride));
    switch (MODE) {
      case 2: acc = max_nan(acc, v); break;
      case 3: acc = min_nan(acc, v); break;
      case 4: case 5: acc += v * v; break;
      case 6: acc += r_fabs(v); break;
      case 7: acc *= v; break;
      case 9: acc += r_exp(v - peak); break;
      default: acc += v; break;
    }
  }
  if (MODE == 1) acc /= (real_t)count;
  if (MODE == 5) acc = r_sqrt(acc);
  if (MODE == 8) acc = r_log(acc);
  // An infinite peak is the result (exp(peak - peak) would make it NaN).
  if (MODE == 9) acc = r_isinf(peak) ? peak : r_log(acc) + peak;
  STORE_Y(y, index, acc);
}

// Rows of `length` elements `stride` apart: row r starts at (r / stride) * length * stride
// + r % stride. MODE 0: softmax, 1: log-softmax.
__kernel void softmax(__global const A_T* x, __global Y_T* y, long length, long stride) {
  const long row = get_global_id(0);
  const long base = (row / stride) * length * stride + row % stride;
  real_t peak = -REAL_MAX;
  for (long i = 0; i < length; ++i) peak = r_fmax(peak, LOAD_A(x, base + i * stride));
  real_t sum = 0;
  for (long i = 0; i < length; ++i) sum += r_exp(LOAD_A(x, base + i * stride) - peak);
  for (long i = 0; i < length; ++i) {
    const real_t v = LOAD_A(x, base + i * stride) - peak;
    STORE_Y(y, base + i * stride, MODE == 0 ? r_exp(v) / sum : v - r_log(sum));
  }
}

// y[outer, j, inner] = x[outer, indices[j], inner]; indices already checked and made
// non-negative on the host.
__kernel void gather(__global const A_T* x, __global const long* indices, __global Y_T* y,
                     long count, long axis_size, long inner) {
  const long i = get_global_id(0);
  STORE_Y(y, i, LOAD_A(x, GatherSource(i, indices, count, axis_size, inner)));
}
