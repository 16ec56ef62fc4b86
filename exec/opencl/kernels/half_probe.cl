// Whether a device that does not advertise cl_khr_fp16 still does half arithmetic (NVIDIA's
// driver compiles `half` code without listing the extension): built with
// -DUSE_HALF_ARITHMETIC like the fp16 kernels, using what they use (common.h.cl's r_* math
// wrappers and vector conversions), and run on inputs passed at run time so nothing is folded
// by the compiler. Runtime::HalfArithmetic checks the results on the host.
__kernel void half_probe(__global const float* in, __global float* out) {
  const real_t one = (real_t)in[0];   // 1
  const real_t tiny = (real_t)in[1];  // 2^-12: lost when added to 1 in half, kept in float
  const real_t x = (real_t)in[2];     // 0.5
  out[0] = (float)(one + tiny);
  out[1] = (float)(x / (one + one + one));
  out[2] = (float)r_exp(x);
  out[3] = (float)r_log(x);
  out[4] = (float)r_sqrt(x);
  out[5] = (float)r_tanh(x);
  out[6] = (float)r_pow(x, one + one);
  out[7] = (float)r_fabs(-x);
  out[8] = (float)r_floor(x + one);
  out[9] = (float)r_ceil(x);
  out[10] = (float)max_nan(x, one);
  out[11] = (float)r_erf(x);
  const float8 row = vload8(0, in + 3);  // eight copies of 0.5
#ifdef USE_HALF_ARITHMETIC
  const half8 h = half8_from(row);
  out[12] = float8_from(h + h).s5;
#else
  out[12] = (row + row).s5;
#endif
}
