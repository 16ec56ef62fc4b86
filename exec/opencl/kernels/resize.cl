// Resize and Upsample. The host works out every axis's taps (exec/cpu/resize_plan.h, as the
// CPU kernel does): nearest gathers each output element through per-axis offset tables;
// linear and cubic interpolate one axis per launch, innermost first, with float values
// between the launches (the CPU keeps doubles there; only the stored tensors round).

#ifndef WORD
#define WORD uint
#endif

// Coordinates over rank-8 dims (leading 1s), from the last axis.
inline void Coordinates(long index, int8 dims, int* coordinates) {
  int d[8] = {dims.s0, dims.s1, dims.s2, dims.s3, dims.s4, dims.s5, dims.s6, dims.s7};
  for (int k = 7; k >= 0; --k) {
    coordinates[k] = index % d[k];
    index /= d[k];
  }
}

inline void Unpack8(int8 v, int* a) {
  a[0] = v.s0; a[1] = v.s1; a[2] = v.s2; a[3] = v.s3;
  a[4] = v.s4; a[5] = v.s5; a[6] = v.s6; a[7] = v.s7;
}

// y[i] = x[sum over axes k of offsets[starts[k] + c_k]], c = i's coordinates over out_dims:
// each table holds an axis's input index times its stride. Elements move as storage words.
__kernel void resize_nearest(__global const WORD* x, __global WORD* y,
                             __global const long* offsets, int8 out_dims, int8 starts) {
  const long i = get_global_id(0);
  int c[8], s[8];
  Coordinates(i, out_dims, c);
  Unpack8(starts, s);
  long offset = 0;
  for (int k = 0; k < 8; ++k) offset += offsets[s[k] + c[k]];
  y[i] = x[offset];
}

// One axis: x [outer, in_size, inner] -> y [outer, out_size, inner], output position j
// reading input positions index[j * taps + t] with weight[j * taps + t]. A zero weight is
// skipped, not multiplied (0 * inf would be NaN), as the CPU kernel skips it.
__kernel void resize_axis(__global const A_T* x, __global Y_T* y, __global const int* index,
                          __global const float* weight, int taps, long in_size, long out_size,
                          long inner) {
  const long i = get_global_id(0);
  const long in = i % inner;
  const long j = (i / inner) % out_size;
  const long o = i / (inner * out_size);
  const long base = o * in_size * inner + in;
  real_t acc = 0;
  for (int t = 0; t < taps; ++t) {
    const float w = weight[j * taps + t];
    if (w != 0.0f) acc += (real_t)w * LOAD_A(x, base + (long)index[j * taps + t] * inner);
  }
  STORE_Y(y, i, acc);
}

// tf_crop_and_resize: an element any of whose coordinates maps outside the input takes
// `value` (outside[starts[k] + c_k] marks those positions of axis k).
__kernel void resize_extrapolate(__global Y_T* y, __global const uchar* outside, int8 out_dims,
                                 int8 starts, float value) {
  const long i = get_global_id(0);
  int c[8], s[8];
  Coordinates(i, out_dims, c);
  Unpack8(starts, s);
  for (int k = 0; k < 8; ++k) {
    if (outside[s[k] + c[k]]) {
      STORE_Y(y, i, value);
      return;
    }
  }
}
