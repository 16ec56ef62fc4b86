// Data movement (exec/opencl/ops_data.cc). Elements move as their bits: the program is built
// with -DT=uchar/ushort/uint/ulong for the element's size on the device, so one kernel serves
// every element type and both float storages, exactly. Scatter reductions compute: built with
// -DREDUCE=n and either the float macros of common.h.cl (A = updates, Y = output) or
// -DINT_T=int/long. Casts are built with -DCAST and their types. Each group is compiled
// only when its defines are given.

#ifdef T

// y[i] = x[base + sum_d table_d[c_d]] for the coordinates c_d of i over the table sizes, or
// `fill` where base or any table entry is negative (Pad's constant region). meta holds the
// sizes of the `rank` tables, then where each table starts in meta, then the tables.
__kernel void copy_tables(__global const T* x, __global T* y, __global const long* meta,
                          int rank, long base, ulong fill) {
  const long i = get_global_id(0);
  if (base < 0) {
    y[i] = (T)fill;
    return;
  }
  __global const long* sizes = meta;
  __global const long* starts = meta + rank;
  long rest = i;
  long offset = base;
  for (int d = rank - 1; d >= 0; --d) {
    const long n = sizes[d];
    const long c = rest % n;
    rest /= n;
    const long e = meta[starts[d] + c];
    if (e < 0) {
      y[i] = (T)fill;
      return;
    }
    offset += e;
  }
  y[i] = x[offset];
}

// y[i] = x[offsets[i / block] + i % block]: GatherND slices, GatherElements elements
// (block 1). Offsets were checked against x on the host.
__kernel void gather_blocks(__global const T* x, __global T* y, __global const long* offsets,
                            long block) {
  const long i = get_global_id(0);
  y[i] = x[offsets[i / block] + i % block];
}

// Gather of any element type: y[outer, j, inner] = x[outer, indices[j], inner], indices
// checked and made non-negative on the host (reduce.cl's gather for floats).
__kernel void gather_bits(__global const T* x, __global const long* indices, __global T* y,
                          long count, long axis_size, long inner) {
  const long i = get_global_id(0);
  y[i] = x[GatherSource(i, indices, count, axis_size, inner)];
}

// Scatter without reduction: block u of the output (at targets[u]) takes block sources[u] of
// the updates, the last update of that target in index order.
__kernel void scatter_copy(__global const T* updates, __global T* y,
                           __global const long* targets, __global const long* sources,
                           long block) {
  const long i = get_global_id(0);
  const long u = i / block, j = i % block;
  y[targets[u] + j] = updates[sources[u] * block + j];
}

// Trilu: zero (all bits clear, for every type) outside the kept triangle of each matrix.
__kernel void trilu(__global const T* x, __global T* y, long rows, long cols, long k,
                    int upper) {
  const long i = get_global_id(0);
  const long col = i % cols;
  const long row = (i / cols) % rows;
  const int keep = upper ? col - row >= k : col - row <= k;
  y[i] = keep ? x[i] : (T)0;
}

// Not on bool (one byte per element, 0 or 1).
__kernel void logical_not(__global const T* x, __global T* y) {
  const long i = get_global_id(0);
  y[i] = x[i] ? (T)0 : (T)1;
}

// Concat and Split pieces: x's `inner` elements of each outer index go to the output's
// row of `out_inner` elements at `offset` (Concat), or the other way round (Split).
__kernel void copy_part(__global const T* x, __global T* y, long inner, long out_inner,
                        long offset) {
  const long i = get_global_id(0);
  y[(i / inner) * out_inner + offset + i % inner] = x[i];
}

// Where on any element type, with numpy broadcasting (see BroadcastOffset).
__kernel void where_bits(__global const uchar* condition, __global const T* a,
                         __global const T* b, __global T* y, int8 dims, int8 c_strides,
                         int8 a_strides, int8 b_strides) {
  const long i = get_global_id(0);
  y[i] = condition[BroadcastOffset(i, dims, c_strides)] ? a[BroadcastOffset(i, dims, a_strides)]
                                                        : b[BroadcastOffset(i, dims, b_strides)];
}

// And (op 0), Or (1), Xor (2) on bools, with numpy broadcasting.
__kernel void logic(__global const uchar* a, __global const uchar* b, __global uchar* y,
                    int op, int8 dims, int8 a_strides, int8 b_strides) {
  const long i = get_global_id(0);
  const uchar p = a[BroadcastOffset(i, dims, a_strides)] != 0;
  const uchar q = b[BroadcastOffset(i, dims, b_strides)] != 0;
  y[i] = op == 0 ? (p & q) : op == 1 ? (p | q) : (p ^ q);
}

#endif  // T

// Range of floats: start + i * delta in float, one rounding per step as the CPU executor
// computes it (no fused multiply-add), stored as Y is.
#ifdef RANGE
#pragma OPENCL FP_CONTRACT OFF
__kernel void range(__global Y_T* y, float start, float delta) {
  const long i = get_global_id(0);
  const float step = (float)i * delta;
  STORE_Y(y, i, start + step);
}
#endif  // RANGE

// Scatter with a reduction (REDUCE 1 add, 2 mul, 3 max, 4 min; max and min as std::max and
// std::min, which keep the first operand when either is NaN): the updates of one target
// combine into it in index order. Block u of the output is targets[u]; its updates are blocks
// sources[begin[u]] .. sources[begin[u + 1] - 1].
#if defined(REDUCE) && defined(INT_T)
typedef INT_T val_t;
#define LOAD_UPDATE(p, i) ((p)[(i)])
#define LOAD_OUT(p, i) ((p)[(i)])
#define STORE_OUT(p, i, v) ((p)[(i)] = (v))
#define UPDATE_T INT_T
#define OUT_T INT_T
// Wraps around as the CPU executor does (through the unsigned type).
inline val_t combine(val_t a, val_t b) {
  switch (REDUCE) {
    case 1: return (val_t)((UINT_T)a + (UINT_T)b);
    case 2: return (val_t)((UINT_T)a * (UINT_T)b);
    case 3: return a < b ? b : a;
    default: return b < a ? b : a;
  }
}
#elif defined(REDUCE)
typedef real_t val_t;
#define LOAD_UPDATE(p, i) LOAD_A(p, i)
#ifdef Y_HALF
#define LOAD_OUT(p, i) ((real_t)vload_half((i), (p)))
#else
#define LOAD_OUT(p, i) ((real_t)(p)[(i)])
#endif
#define STORE_OUT(p, i, v) STORE_Y(p, i, v)
#define UPDATE_T A_T
#define OUT_T Y_T
inline val_t combine(val_t a, val_t b) {
  switch (REDUCE) {
    case 1: return a + b;
    case 2: return a * b;
    case 3: return a < b ? b : a;
    default: return b < a ? b : a;
  }
}
#endif

// Cast to or from integer and bool types, as the CPU executor converts: floats to integers
// truncate toward zero, NaN gives 0 and values past the 64-bit range saturate, narrower
// integers then wrap (as every integer-to-integer conversion does); to bool is `!= 0` (NaN
// is true); integers to float round to nearest. FROM_KIND / TO_KIND: 0 float (A_HALF /
// Y_HALF: half storage), 1 integer or bool (FROM_T / TO_T, UTO_T the unsigned of TO_T),
// 2 bool (TO only), 3 uint64 (TO only).
#ifdef CAST
#if FROM_KIND == 0
#define CAST_VALUE_T float
#ifdef A_HALF
#define CAST_FROM_T half
#define CAST_LOAD(p, i) vload_half((i), (p))
#else
#define CAST_FROM_T float
#define CAST_LOAD(p, i) ((p)[(i)])
#endif
#else
#define CAST_VALUE_T FROM_T
#define CAST_FROM_T FROM_T
#define CAST_LOAD(p, i) ((p)[(i)])
#endif
#if TO_KIND == 0
#ifdef Y_HALF
#define CAST_TO_T half
#define CAST_STORE(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
#define CAST_TO_T float
#define CAST_STORE(p, i, v) ((p)[(i)] = (float)(v))
#endif
#else
#define CAST_TO_T TO_T
#define CAST_STORE(p, i, v) ((p)[(i)] = (v))
#endif

__kernel void cast(__global const CAST_FROM_T* a, __global CAST_TO_T* y) {
  const long i = get_global_id(0);
  const CAST_VALUE_T v = CAST_LOAD(a, i);
#if TO_KIND == 0
  CAST_STORE(y, i, v);
#elif TO_KIND == 2
  CAST_STORE(y, i, (TO_T)(v != 0));
#elif TO_KIND == 3 && FROM_KIND == 0
  ulong r;
  if (v != v) {
    r = 0;
  } else if (v >= 18446744073709551616.0f) {
    r = ~0ul;
  } else if (v >= 0) {
    r = convert_ulong_rtz(v);
  } else if (v <= -9223372036854775808.0f) {
    r = 1ul << 63;
  } else {
    r = (ulong)convert_long_rtz(v);
  }
  CAST_STORE(y, i, r);
#elif FROM_KIND == 0
  // NaN gives 0 and values beyond the 64-bit range saturate, as on the CPU, spelt out:
  // NVIDIA's convert_long_sat_rtz gave 0 for some of them.
  long r;
  if (v != v) {
    r = 0;
  } else if (v >= 9223372036854775808.0f) {
    r = LONG_MAX;
  } else if (v <= -9223372036854775808.0f) {
    r = LONG_MIN;
  } else {
    r = convert_long_rtz(v);
  }
  CAST_STORE(y, i, (TO_T)(UTO_T)(ulong)r);
#else
  CAST_STORE(y, i, (TO_T)(UTO_T)(ulong)(long)v);
#endif
}
#endif  // CAST

#ifdef REDUCE
// A float16 tensor rounds after every step, as the CPU executor does; float storage rounds
// once when stored.
inline val_t round_step(val_t v) {
#ifdef ROUND_STEPS
  ushort bits;  // a half variable needs cl_khr_fp16; a pointer to half storage does not
  vstore_half_rte((float)v, 0, (__private half*)&bits);
  return (val_t)vload_half(0, (__private const half*)&bits);
#else
  return v;
#endif
}

__kernel void scatter_reduce(__global const UPDATE_T* updates, __global OUT_T* y,
                             __global const long* targets, __global const long* begin,
                             __global const long* sources, long block) {
  const long i = get_global_id(0);
  const long u = i / block, j = i % block;
  const long at = targets[u] + j;
  val_t v = LOAD_OUT(y, at);
  for (long k = begin[u]; k < begin[u + 1]; ++k) {
    v = round_step(combine(v, LOAD_UPDATE(updates, sources[k] * block + j)));
  }
  STORE_OUT(y, at, v);
}
#endif  // REDUCE
