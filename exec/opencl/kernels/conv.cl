// Convolution, Gemm, pooling and batch normalization. Spatial dims are always three
// (d, h, w): 1-D and 2-D ops pass 1 for the missing ones. One work item per output element.

__kernel void conv(__global const A_T* x, __global const W_T* w, __global const C_T* bias,
                   int has_bias, __global Y_T* y, int C, int M, int group, int4 in_size,
                   int4 out_size, int4 kernel_size, int4 stride, int4 pad, int4 dilation) {
  const long index = get_global_id(0);
  const int ow = index % out_size.z;
  const int oh = (index / out_size.z) % out_size.y;
  const int od = (index / ((long)out_size.z * out_size.y)) % out_size.x;
  const long nm = index / ((long)out_size.z * out_size.y * out_size.x);
  const int m = nm % M;
  const long n = nm / M;
  const int channels = C / group;
  const int g = m / (M / group);
  real_t acc = has_bias ? LOAD_C(bias, m) : (real_t)0;
  const long in_plane = (long)in_size.x * in_size.y * in_size.z;
  const long k_plane = (long)kernel_size.x * kernel_size.y * kernel_size.z;
  for (int c = 0; c < channels; ++c) {
    const long x_base = (n * C + (long)g * channels + c) * in_plane;
    const long w_base = ((long)m * channels + c) * k_plane;
    for (int kd = 0; kd < kernel_size.x; ++kd) {
      const int id = od * stride.x - pad.x + kd * dilation.x;
      if (id < 0 || id >= in_size.x) continue;
      for (int kh = 0; kh < kernel_size.y; ++kh) {
        const int ih = oh * stride.y - pad.y + kh * dilation.y;
        if (ih < 0 || ih >= in_size.y) continue;
        for (int kw = 0; kw < kernel_size.z; ++kw) {
          const int iw = ow * stride.z - pad.z + kw * dilation.z;
          if (iw < 0 || iw >= in_size.z) continue;
          acc += LOAD_A(x, x_base + ((long)id * in_size.y + ih) * in_size.z + iw) *
                 LOAD_W(w, w_base + ((long)kd * kernel_size.y + kh) * kernel_size.z + kw);
        }
      }
    }
  }
  STORE_Y(y, index, acc);
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

// MODE 0: max; 1: average excluding pads; 2: average including pads.
__kernel void pool(__global const A_T* x, __global Y_T* y, int4 in_size, int4 out_size,
                   int4 kernel_size, int4 stride, int4 pad, int4 dilation) {
  const long index = get_global_id(0);
  const int ow = index % out_size.z;
  const int oh = (index / out_size.z) % out_size.y;
  const int od = (index / ((long)out_size.z * out_size.y)) % out_size.x;
  const long nc = index / ((long)out_size.z * out_size.y * out_size.x);
  const long base = nc * in_size.x * in_size.y * in_size.z;
  real_t acc = MODE == 0 ? -REAL_MAX : (real_t)0;
  int count = 0;
  for (int kd = 0; kd < kernel_size.x; ++kd) {
    const int id = od * stride.x - pad.x + kd * dilation.x;
    for (int kh = 0; kh < kernel_size.y; ++kh) {
      const int ih = oh * stride.y - pad.y + kh * dilation.y;
      for (int kw = 0; kw < kernel_size.z; ++kw) {
        const int iw = ow * stride.z - pad.z + kw * dilation.z;
        const bool inside = id >= 0 && id < in_size.x && ih >= 0 && ih < in_size.y &&
                            iw >= 0 && iw < in_size.z;
        if (MODE == 2 && (id < in_size.x + pad.x && ih < in_size.y + pad.y &&
                          iw < in_size.z + pad.z)) {
          ++count;  // pads count; positions past the end pad do not
        }
        if (!inside) continue;
        const real_t v = LOAD_A(x, base + ((long)id * in_size.y + ih) * in_size.z + iw);
        if (MODE == 0) {
          acc = fmax(acc, v);
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
  float acc = MODE == 0 ? -FLT_MAX : 0.0f;
  for (long i = 0; i < size; ++i) {
    const float v = (float)LOAD_A(x, p * size + i);
    acc = MODE == 0 ? fmax(acc, v) : acc + v;
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
  const real_t v = (LOAD_A(x, i) - LOAD_C(mean, c)) / sqrt(LOAD_C(var, c) + (real_t)epsilon);
  STORE_Y(y, i, v * LOAD_W(scale, c) + LOAD_B(bias, c));
}
