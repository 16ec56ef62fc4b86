// Resize and Upsample. The host works out every axis's taps (exec/cpu/resize_plan.h, as the
// CPU kernel does): nearest gathers each output element through per-axis offset tables;
// linear and cubic interpolate one axis per launch, innermost first, with float values
// between the launches (the CPU keeps doubles there; only the stored tensors round).

#ifndef WORD
#define WORD uint
#endif

// resize_bilinear rounds every product and sum as onnxruntime does: no multiply-adds.
#pragma OPENCL FP_CONTRACT OFF

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

// Bilinear resize of the last two axes as onnxruntime computes it in float (the CPU kernel's
// ResizeBilinearFloat, exec/cpu/resize_bilinear.h): the tables are the CPU's own, and each
// output is (dx2 * dy2) * x11 + (dx1 * dy2) * x21 + (dx2 * dy1) * x12 + (dx1 * dy1) * x22
// summed left to right, every step rounded, so fp32 results are bit-identical to the CPU's.
// taps: first y [out_h], second y [out_h], first x [out_w], second x [out_w]; weights: d1 y,
// d2 y, d1 x, d2 x likewise.
__kernel void resize_bilinear(__global const A_T* x, __global Y_T* y, __global const int* taps,
                              __global const float* weights, long in_h, long in_w, long out_h,
                              long out_w) {
  const long i = get_global_id(0);
  const long ox = i % out_w;
  const long oy = (i / out_w) % out_h;
  const long plane = i / (out_w * out_h);
  const long image = plane * in_h * in_w;
  const long row1 = image + taps[oy] * in_w, row2 = image + taps[out_h + oy] * in_w;
  const long x1 = taps[2 * out_h + ox], x2 = taps[2 * out_h + out_w + ox];
  const float dy1 = weights[oy], dy2 = weights[out_h + oy];
  const float dx1 = weights[2 * out_h + ox], dx2 = weights[2 * out_h + out_w + ox];
  const real_t t11 = (real_t)(dx2 * dy2) * LOAD_A(x, row1 + x1);
  const real_t t21 = (real_t)(dx1 * dy2) * LOAD_A(x, row1 + x2);
  const real_t t12 = (real_t)(dx2 * dy1) * LOAD_A(x, row2 + x1);
  const real_t t22 = (real_t)(dx1 * dy1) * LOAD_A(x, row2 + x2);
  STORE_Y(y, i, ((t11 + t21) + t12) + t22);
}
