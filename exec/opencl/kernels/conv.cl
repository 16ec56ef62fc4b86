// Convolution, Gemm, pooling and batch normalization. Spatial dims are always three
// (d, h, w): 1-D and 2-D ops pass 1 for the missing ones. One work item per output element,
// except for the convolution (a tile of them).

// Direct convolution in tiles: a work item computes MT output channels (-DMT=1, 2, 4, 8 or
// 16) by TW neighbouring output positions along w (-DTW=8 or 16), so each input vector loaded
// serves MT channels and each weight TW positions; the explicit vectors map onto SIMD on CPU
// devices. The kernel reads float input and weights: the input is copied beforehand into a
// float buffer padded wide enough for the last tile (pad_input), so no tap needs a bounds
// check, and half weights are widened once (widen_weights) rather than at every tap.
// -DSTRIDE_W is the stride along w (1 and 2 load whole vectors).
#ifndef MT  // the other kernels of this file are built without the conv's defines
#define MT 1
#endif
#ifndef TW
#define TW 8
#endif
#ifndef STRIDE_W
#define STRIDE_W 1
#endif

#define CONCAT_(a, b) a##b
#define CONCAT(a, b) CONCAT_(a, b)
typedef CONCAT(float, TW) float_tw;
#ifdef USE_HALF_ARITHMETIC
typedef CONCAT(half, TW) real_tw;
#define TO_REAL_TW(v) CONCAT(CONCAT(half, TW), _from)(v)
#define TO_FLOAT_TW(v) CONCAT(CONCAT(float, TW), _from)(v)
#else
typedef float_tw real_tw;
#define TO_REAL_TW(v) (v)
#define TO_FLOAT_TW(v) (v)
#endif

#ifdef A_HALF
#define LOAD_A_FLOAT(p, i) vload_half((i), (p))
#else
#define LOAD_A_FLOAT(p, i) ((p)[(i)])
#endif
#ifdef W_HALF
#define LOAD_W_FLOAT(p, i) vload_half((i), (p))
#else
#define LOAD_W_FLOAT(p, i) ((p)[(i)])
#endif
#ifdef Y_HALF
#define STORE_Y_TW(p, i, v) CONCAT(CONCAT(vstore_half, TW), _rte)(v, 0, (p) + (i))
#else
#define STORE_Y_TW(p, i, v) CONCAT(vstore, TW)(v, 0, (p) + (i))
#endif

// TW inputs STRIDE_W apart from p[i].
inline float_tw load_row(__global const float* p, long i) {
#if STRIDE_W == 1
  return CONCAT(vload, TW)(0, p + i);
#elif STRIDE_W == 2 && TW == 8
  return vload16(0, p + i).even;
#elif STRIDE_W == 2 && TW == 16
  return (float16)(vload16(0, p + i).even, vload16(0, p + i + 16).even);
#else
  float values[TW];
  for (int j = 0; j < TW; ++j) values[j] = p[i + j * STRIDE_W];
  return CONCAT(vload, TW)(0, values);
#endif
}

// x [planes, d, h, w] into float xp [planes, pd, ph, pw] at offset `pad`, zeros elsewhere.
// One work item per padded row: the index arithmetic is paid once per row.
__kernel void pad_input(__global const A_T* x, __global float* xp, int4 in_size, int4 padded,
                        int4 pad) {
  const long row = get_global_id(0);
  const int ph = row % padded.y;
  const int pd = (row / padded.y) % padded.x;
  const long plane = row / ((long)padded.y * padded.x);
  const int ih = ph - pad.y, id = pd - pad.x;
  __global float* out = xp + row * padded.z;
  if (ih < 0 || ih >= in_size.y || id < 0 || id >= in_size.x) {
    for (int i = 0; i < padded.z; ++i) out[i] = 0.0f;
    return;
  }
  const long in = ((plane * in_size.x + id) * in_size.y + ih) * in_size.z - pad.z;
  const int end = min(pad.z + in_size.z, padded.z);
  for (int i = 0; i < pad.z; ++i) out[i] = 0.0f;
  for (int i = pad.z; i < end; ++i) out[i] = LOAD_A_FLOAT(x, in + i);
  for (int i = end; i < padded.z; ++i) out[i] = 0.0f;
}

__kernel void widen_weights(__global const W_T* w, __global float* out) {
  const long i = get_global_id(0);
  out[i] = LOAD_W_FLOAT(w, i);
}

// Global range: (w tiles * out h * out d, M / MT, N). `in_size` is the padded input's.
__kernel void conv(__global const float* x, __global const float* w, __global const C_T* bias,
                   int has_bias, __global Y_T* y, int C, int M, int group, int4 in_size,
                   int4 out_size, int4 kernel_size, int4 stride, int4 dilation, int tiles_w) {
  const int t = get_global_id(0);
  const int m0 = get_global_id(1) * MT;
  const long n = get_global_id(2);
  const int ow0 = (t % tiles_w) * TW;
  const int oh = (t / tiles_w) % out_size.y;
  const int od = t / (tiles_w * out_size.y);
  const int channels = C / group;
  const int g = m0 / (M / group);
  const long in_plane = (long)in_size.x * in_size.y * in_size.z;
  const int k_plane = kernel_size.x * kernel_size.y * kernel_size.z;
  real_tw acc[MT];
  for (int i = 0; i < MT; ++i) acc[i] = has_bias ? (real_tw)(LOAD_C(bias, m0 + i)) : (real_tw)(0);
  const long x_group = (n * C + (long)g * channels) * in_plane;
  const long w_channel_stride = (long)channels * k_plane;
  for (int c = 0; c < channels; ++c) {
    const long x_c = x_group + c * in_plane;
    const long w_c = (long)m0 * w_channel_stride + (long)c * k_plane;
    for (int kd = 0; kd < kernel_size.x; ++kd) {
      const long x_d = x_c + (long)(od * stride.x + kd * dilation.x) * in_size.y * in_size.z;
      for (int kh = 0; kh < kernel_size.y; ++kh) {
        const long x_h = x_d + (long)(oh * stride.y + kh * dilation.y) * in_size.z +
                         (long)ow0 * STRIDE_W;
        const long w_h = w_c + (kd * kernel_size.y + kh) * kernel_size.z;
        for (int kw = 0; kw < kernel_size.z; ++kw) {
          const real_tw v = TO_REAL_TW(load_row(x, x_h + kw * dilation.z));
          for (int i = 0; i < MT; ++i) acc[i] += v * (real_t)w[w_h + i * w_channel_stride + kw];
        }
      }
    }
  }
  const long out_plane = (long)out_size.x * out_size.y * out_size.z;
  const long y_pos = ((long)od * out_size.y + oh) * out_size.z + ow0;
  const int valid = min(TW, out_size.z - ow0);
  for (int i = 0; i < MT; ++i) {
    const long y_i = (n * M + m0 + i) * out_plane + y_pos;
    const float_tw out = TO_FLOAT_TW(acc[i]);
    if (valid == TW) {
      STORE_Y_TW(y, y_i, out);
    } else {
      float values[TW];
      CONCAT(vstore, TW)(out, 0, values);
      for (int j = 0; j < valid; ++j) STORE_Y(y, y_i + j, values[j]);
    }
  }
}

// Y[i, j] = alpha * sum_k A'[i, k] B'[k, j] + beta * C[i or 0, j or 0].
__kernel void gemm(__global const A_T* a, __global const B_T* b, __global const C_T* c,
                   int has_c, __global Y_T* y, int M, int N, int K, int trans_a, int trans_b,
                   float alpha, float beta, int c_rows, int c_cols) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  real_t acc = 0;
  for (int k = 0; k < K; ++k) {
    const real_t av = LOAD_A(a, trans_a ? (long)k * M + i : (long)i * K + k);
    const real_t bv = LOAD_B(b, trans_b ? (long)j * K + k : (long)k * N + j);
    acc += av * bv;
  }
  real_t out = (real_t)alpha * acc;
  if (has_c) {
    out += (real_t)beta * LOAD_C(c, (long)(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j));
  }
  STORE_Y(y, (long)i * N + j, out);
}

// Batched matrix product with numpy broadcasting of the batch dims: Y[t] = A[t] B[t], A[t]
// [M, K] and B[t] [K, N], where t indexes the broadcast batch `batch` and each operand's
// matrix is found through its strides over it (in matrices, 0 where it is broadcast).
// Global range: (N, M, batch count).
__kernel void matmul(__global const A_T* a, __global const B_T* b, __global Y_T* y, int M,
                     int N, int K, int8 batch, int8 a_strides, int8 b_strides) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const long t = get_global_id(2);
  const long a0 = BroadcastOffset(t, batch, a_strides) * M * K + (long)i * K;
  const long b0 = BroadcastOffset(t, batch, b_strides) * K * N + j;
  real_t acc = 0;
  for (int k = 0; k < K; ++k) acc += LOAD_A(a, a0 + k) * LOAD_B(b, b0 + (long)k * N);
  STORE_Y(y, (t * M + i) * N + j, acc);
}

// MODE 0: max; 1: average excluding pads; 2: average including pads (those at the end
// counted up to pad_end, which may differ from the begin pads).
__kernel void pool(__global const A_T* x, __global Y_T* y, int4 in_size, int4 out_size,
                   int4 kernel_size, int4 stride, int4 pad, int4 pad_end, int4 dilation) {
  const long index = get_global_id(0);
  const int ow = index % out_size.z;
  const int oh = (index / out_size.z) % out_size.y;
  const int od = (index / ((long)out_size.z * out_size.y)) % out_size.x;
  const long nc = index / ((long)out_size.z * out_size.y * out_size.x);
  const long base = nc * in_size.x * in_size.y * in_size.z;
  real_t acc = MODE == 0 ? -INFINITY : (real_t)0;
  int count = 0;
  for (int kd = 0; kd < kernel_size.x; ++kd) {
    const int id = od * stride.x - pad.x + kd * dilation.x;
    for (int kh = 0; kh < kernel_size.y; ++kh) {
      const int ih = oh * stride.y - pad.y + kh * dilation.y;
      for (int kw = 0; kw < kernel_size.z; ++kw) {
        const int iw = ow * stride.z - pad.z + kw * dilation.z;
        const bool inside = id >= 0 && id < in_size.x && ih >= 0 && ih < in_size.y &&
                            iw >= 0 && iw < in_size.z;
        if (MODE == 2 && (id < in_size.x + pad_end.x && ih < in_size.y + pad_end.y &&
                          iw < in_size.z + pad_end.z)) {
          ++count;  // pads count; positions past the end pad do not
        }
        if (!inside) continue;
        const real_t v = LOAD_A(x, base + ((long)id * in_size.y + ih) * in_size.z + iw);
        if (MODE == 0) {
          acc = max_nan(acc, v);
        } else {
          acc += v;
          if (MODE == 1) ++count;
        }
      }
    }
  }
  if (MODE != 0) acc = count > 0 ? acc / (real_t)count : (real_t)0;
  STORE_Y(y, index, acc);
}

// One work item per (n, c) plane: mean (MODE 1) or max (MODE 0) over `size` elements.
__kernel void global_pool(__global const A_T* x, __global Y_T* y, long size) {
  const long p = get_global_id(0);
  float acc = MODE == 0 ? -INFINITY : 0.0f;
  for (long i = 0; i < size; ++i) {
    const float v = (float)LOAD_A(x, p * size + i);
    acc = MODE == 0 ? (acc != acc || acc > v ? acc : v) : acc + v;  // max_nan in float
  }
  STORE_Y(y, p, MODE == 0 ? acc : acc / (float)size);
}

// y = (x - mean) / sqrt(var + eps) * scale + bias, per channel of [N, C, spatial].
__kernel void batch_norm(__global const A_T* x, __global const W_T* scale,
                         __global const B_T* bias, __global const C_T* mean,
                         __global const C_T* var, __global Y_T* y, int C, long spatial,
                         float epsilon) {
  const long i = get_global_id(0);
  const int c = (i / spatial) % C;
  const real_t v = (LOAD_A(x, i) - LOAD_C(mean, c)) / r_sqrt(LOAD_C(var, c) + (real_t)epsilon);
  STORE_Y(y, i, v * LOAD_W(scale, c) + LOAD_B(bias, c));
}
