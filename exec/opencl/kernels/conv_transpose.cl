// ConvTranspose, one work item per output element: the sum over the taps that reach it (an
// input position id with id * stride - pad + k * dilation = od on every axis) and over the
// group's input channels. Spatial dims are three (d, h, w), 1 for the missing ones.
// W is [C, M / group, kd, kh, kw].
__kernel void conv_transpose(__global const A_T* x, __global const W_T* w,
                             __global const C_T* bias, int has_bias, __global Y_T* y, int C,
                             int M, int group, int4 in_size, int4 out_size, int4 kernel_size,
                             int4 stride, int4 dilation, int4 pad) {
  const long index = get_global_id(0);
  const int ow = index % out_size.z;
  const int oh = (index / out_size.z) % out_size.y;
  const int od = (index / ((long)out_size.z * out_size.y)) % out_size.x;
  const long nm = index / ((long)out_size.z * out_size.y * out_size.x);
  const int m = nm % M;
  const long n = nm / M;
  const int maps = M / group, channels = C / group;
  const int g = m / maps, map = m % maps;
  const long in_plane = (long)in_size.x * in_size.y * in_size.z;
  const int taps = kernel_size.x * kernel_size.y * kernel_size.z;
  real_t acc = has_bias ? LOAD_C(bias, m) : (real_t)0;
  for (int kd = 0; kd < kernel_size.x; ++kd) {
    const int td = od + pad.x - kd * dilation.x;
    if (td < 0 || td % stride.x != 0 || td / stride.x >= in_size.x) continue;
    const int id = td / stride.x;
    for (int kh = 0; kh < kernel_size.y; ++kh) {
      const int th = oh + pad.y - kh * dilation.y;
      if (th < 0 || th % stride.y != 0 || th / stride.y >= in_size.y) continue;
      const int ih = th / stride.y;
      for (int kw = 0; kw < kernel_size.z; ++kw) {
        const int tw = ow + pad.z - kw * dilation.z;
        if (tw < 0 || tw % stride.z != 0 || tw / stride.z >= in_size.z) continue;
        const int iw = tw / stride.z;
        const long x_at = (n * C + (long)g * channels) * in_plane +
                          ((long)id * in_size.y + ih) * in_size.z + iw;
        const long w_at = ((long)g * channels * maps + map) * taps +
                          (kd * kernel_size.y + kh) * kernel_size.z + kw;
        for (int c = 0; c < channels; ++c) {
          acc += LOAD_A(x, x_at + c * in_plane) * LOAD_W(w, w_at + (long)c * maps * taps);
        }
      }
    }
  }
  STORE_Y(y, index, acc);
}
