// Linear quantization and the integer products on the device, step for step the CPU kernels'
// arithmetic (exec/cpu/quantize_ops.cc, conv_integer.cc), so integer results are the same
// bits: float division correctly rounded (the program is built with
// -cl-fp32-correctly-rounded-divide-sqrt), no contraction into fused multiply-adds, round half
// to even, saturation. Quantization computes in float in every precision (half arithmetic
// would move the rounding boundaries); a half-stored float input is widened on load.
//
// Each program holds one group of kernels (-DGROUP=n; PoCL compiles every kernel of a
// program): 1 QuantizeLinear, 2 DequantizeLinear, 3 DynamicQuantizeLinear, 4 MatMulInteger,
// 5 ConvInteger.
#pragma OPENCL FP_CONTRACT OFF

#ifdef A_HALF
#define LOADF_A(p, i) vload_half((i), (p))
#else
#define LOADF_A(p, i) ((p)[(i)])
#endif

// The quantized type of QuantizeLinear / DynamicQuantizeLinear's output.
#ifdef Q_SIGNED
#define Q_T char
#define Q_MIN (-128)
#define Q_MAX 127
#else
#define Q_T uchar
#define Q_MIN 0
#define Q_MAX 255
#endif

// saturate(round_half_even(v) + zero): v clamped to the representable range first (the same
// thing, as the bounds are whole); NaN gives the lowest value, as on the CPU.
inline int quantize(float v, int zero) {
  const float low = (float)(Q_MIN - zero);
  const float high = (float)(Q_MAX - zero);
  v = v > low ? v : low;
  v = v < high ? v : high;
  return (int)rint(v) + zero;
}

// Per-tensor (channels 1) or per-channel parameters: element i's channel.
inline int channel_of(long i, long inner, int channels) {
  return channels == 1 ? 0 : (int)((i / inner) % channels);
}

#if GROUP == 1
__kernel void quantize_linear(__global const A_T* x, __global const float* scales,
                              __global const int* zeros, __global Q_T* y, long inner,
                              int channels) {
  const long i = get_global_id(0);
  const int c = channel_of(i, inner, channels);
  y[i] = (Q_T)quantize(LOADF_A(x, i) / scales[c], zeros[c]);
}

#endif

#if GROUP == 2
// X_T: the quantized input type (uchar, char or int).
__kernel void dequantize_linear(__global const X_T* x, __global const float* scales,
                                __global const int* zeros, __global Y_T* y, long inner,
                                int channels) {
  const long i = get_global_id(0);
  const int c = channel_of(i, inner, channels);
  STORE_Y(y, i, (float)((long)x[i] - zeros[c]) * scales[c]);
}

#endif

#if GROUP == 3
// DynamicQuantizeLinear, pass 1: the range of each of get_global_size(0) slices, starting
// from 0 (the range always holds 0); NaNs are skipped (comparisons with them are false).
__kernel void range_partial(__global const A_T* x, long count, __global float* partial) {
  const long p = get_global_id(0), parts = get_global_size(0);
  const long begin = count * p / parts, end = count * (p + 1) / parts;
  float low = 0, high = 0;
  for (long i = begin; i < end; ++i) {
    const float v = LOADF_A(x, i);
    low = v < low ? v : low;
    high = v > high ? v : high;
  }
  partial[2 * p] = low;
  partial[2 * p + 1] = high;
}

// Pass 2 (one work item): scale and zero point from the whole range, into params (for pass
// 3) and the outputs y_scale (half-stored with -DS_HALF) and y_zero_point.
#ifdef S_HALF
#define STORE_S(p, v) vstore_half_rte((v), 0, (p))
#define S_T half
#else
#define STORE_S(p, v) ((p)[0] = (v))
#define S_T float
#endif
__kernel void range_final(__global const float* partial, int parts, __global float* params,
                          __global S_T* y_scale, __global uchar* y_zero) {
  float low = 0, high = 0;
  for (int p = 0; p < parts; ++p) {
    low = partial[2 * p] < low ? partial[2 * p] : low;
    high = partial[2 * p + 1] > high ? partial[2 * p + 1] : high;
  }
  // An all-zero input has no range: scale 1, as onnxruntime does.
  const float scale = high == low ? 1.0f : (high - low) / 255.0f;
  float zero = rint((0.0f - low) / scale);
  zero = zero < 0.0f ? 0.0f : (zero > 255.0f ? 255.0f : zero);
  params[0] = scale;
  params[1] = zero;
  STORE_S(y_scale, scale);
  y_zero[0] = (uchar)zero;
}

__kernel void dynamic_quantize(__global const A_T* x, __global const float* params,
                               __global uchar* y) {
  const long i = get_global_id(0);
  y[i] = (uchar)quantize(LOADF_A(x, i) / params[0], (int)params[1]);
}

#endif

// Integer products: int32 sums of (a - a_zero) * (b - b_zero), wrapping as the CPU's int32
// accumulators do (unsigned arithmetic, whose overflow is defined). A_Q / B_Q are the
// operand types (uchar or char).

#if GROUP == 4
// MatMulInteger: y[t, i, j] over batches broadcast like MatMul's; zero points one per
// (operand batch, row of A) and (operand batch, column of B).
__kernel void matmul_integer(__global const A_Q* a, __global const B_Q* b,
                             __global const int* a_zeros, __global const int* b_zeros,
                             __global int* y, int M, int N, int K, int8 batch, int8 a_strides,
                             int8 b_strides) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const long t = get_global_id(2);
  const long a_batch = BroadcastOffset(t, batch, a_strides);
  const long b_batch = BroadcastOffset(t, batch, b_strides);
  const int za = a_zeros[a_batch * M + i];
  const int zb = b_zeros[b_batch * N + j];
  const long a0 = a_batch * M * K + (long)i * K;
  const long b0 = b_batch * K * N + j;
  uint acc = 0;
  for (int k = 0; k < K; ++k) {
    acc += (uint)(((int)a[a0 + k] - za) * ((int)b[b0 + (long)k * N] - zb));
  }
  y[(t * M + i) * N + j] = (int)acc;
}

#endif

#if GROUP == 5
// ConvInteger: one output element per work item (position, filter, image); padding stands for
// x_zero (it adds nothing). Spatial sizes padded to three axes (d, h, w).
__kernel void conv_integer(__global const A_Q* x, __global const B_Q* w,
                           __global const int* w_zeros, int x_zero, __global int* y, int C,
                           int M, int group, int4 in_size, int4 out_size, int4 kernel_size,
                           int4 stride, int4 pad, int4 dilation) {
  const long position = get_global_id(0);
  const int m = get_global_id(1);
  const long n = get_global_id(2);
  const int ow = position % out_size.z;
  const int oh = (position / out_size.z) % out_size.y;
  const int od = position / ((long)out_size.z * out_size.y);
  const int group_channels = C / group;
  const int first_channel = m / (M / group) * group_channels;
  const int wz = w_zeros[m];
  const long plane = (long)in_size.x * in_size.y * in_size.z;
  const int taps = kernel_size.x * kernel_size.y * kernel_size.z;
  uint acc = 0;
  for (int c = 0; c < group_channels; ++c) {
    __global const A_Q* image = x + (n * C + first_channel + c) * plane;
    __global const B_Q* filter = w + ((long)m * group_channels + c) * taps;
    for (int kd = 0; kd < kernel_size.x; ++kd) {
      const int id = od * stride.x - pad.x + kd * dilation.x;
      if (id < 0 || id >= in_size.x) continue;
      for (int kh = 0; kh < kernel_size.y; ++kh) {
        const int ih = oh * stride.y - pad.y + kh * dilation.y;
        if (ih < 0 || ih >= in_size.y) continue;
        for (int kw = 0; kw < kernel_size.z; ++kw) {
          const int iw = ow * stride.z - pad.z + kw * dilation.z;
          if (iw < 0 || iw >= in_size.z) continue;
          const int tap = (kd * kernel_size.y + kh) * kernel_size.z + kw;
          acc += (uint)(((int)image[((long)id * in_size.y + ih) * in_size.z + iw] - x_zero) *
                        ((int)filter[tap] - wz));
        }
      }
    }
  }
  y[(n * M + m) * ((long)out_size.x * out_size.y * out_size.z) + position] = (int)acc;
}
#endif
