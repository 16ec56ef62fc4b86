// RNN, GRU and LSTM on the device, the CPU kernel's equations (exec/cpu/recurrent.cc):
// input_projection computes every step's X·Wᵀ + Wb + Rb at once, then the host enqueues one
// step kernel per time step (both directions in one launch), each work item one hidden unit of
// one batch entry and direction: the recurrent product Ht-1·Rᵀ for its gates and the cell's
// equations. The state (h ping-ponging between two buffers, c in place) stays float between
// steps, as on the CPU; the arithmetic is real_t (half with -DUSE_HALF_ARITHMETIC).
// CELL: 0 RNN, 1 GRU, 2 LSTM. X is read through LOAD_A, W / R / B / P through LOAD_W, initial
// states through LOAD_C; Y, Y_h and Y_c are written through STORE_Y.

// Activations, numbered as in exec/opencl/ops_recurrent.cc (the CPU's ActivationKind).
inline real_t activate(int kind, real_t a, real_t b, real_t x) {
  switch (kind) {
    case 0: return x < (real_t)0 ? (real_t)0 : x;  // Relu
    case 1: return r_tanh(x);                      // Tanh
    case 2:                                        // Sigmoid, no overflow of exp
      return x >= (real_t)0 ? (real_t)1 / ((real_t)1 + r_exp(-x))
                            : r_exp(x) / ((real_t)1 + r_exp(x));
    case 3: return a * x + b;                          // Affine
    case 4: return x >= (real_t)0 ? x : a * x;         // LeakyRelu
    case 5: return x >= a ? x : (real_t)0;             // ThresholdedRelu
    case 6: return a * r_tanh(b * x);                  // ScaledTanh
    case 7: {                                          // HardSigmoid
      real_t v = a * x + b;
      v = v < (real_t)0 ? (real_t)0 : v;
      return (real_t)1 < v ? (real_t)1 : v;
    }
    case 8: return x >= (real_t)0 ? x : a * (real_t)expm1((float)x);  // Elu
    case 9: return x / ((real_t)1 + r_fabs(x));                       // Softsign
    case 10:                                                          // Softplus
      return x > (real_t)0 ? x + (real_t)log1p(exp(-(float)x)) : (real_t)log1p(exp((float)x));
    default: return x;
  }
}

// Activation k (0 f, 1 g, 2 h) of direction d: kinds / alphas / betas hold 3 per direction.
#define ACT(k, x)                                                                 \
  activate(kinds[d * 3 + (k)], (real_t)alphas[d * 3 + (k)], (real_t)betas[d * 3 + (k)], \
           (x))

inline real_t clip_to(real_t x, float clip) {
  const real_t c = (real_t)clip;
  return x < -c ? -c : (c < x ? c : x);
}

// x_parts[d][row][j] = X[row] · W[d][j] + Wb[d][j] + Rb[d][j] over the memory rows of X (GRU
// with linear_before_reset leaves Rbh, j >= 2 * hidden, for the reset product).
__kernel void input_projection(__global const A_T* x, __global const W_T* w,
                               __global const W_T* bias, int has_bias, __global float* x_parts,
                               int rows, int gh, int input_size, int reset_bias_from) {
  const int j = get_global_id(0);
  const int row = get_global_id(1);
  const int d = get_global_id(2);
  real_t acc = 0;
  if (has_bias) {
    acc = LOAD_W(bias, (long)d * 2 * gh + j);
    if (j < reset_bias_from) acc += LOAD_W(bias, (long)d * 2 * gh + gh + j);
  }
  const long x0 = (long)row * input_size, w0 = ((long)d * gh + j) * input_size;
  for (int k = 0; k < input_size; ++k) acc += LOAD_A(x, x0 + k) * LOAD_W(w, w0 + k);
  x_parts[((long)d * rows + row) * gh + j] = (float)acc;
}

// Offsets as in the CPU's Problem: layout 0 X/Y [seq, (dirs,) batch, ...], 1 [batch, seq, ...].
inline long x_row(int t, int b, int seq, int batch, int batch_first) {
  return batch_first ? (long)b * seq + t : (long)t * batch + b;
}
inline long y_offset(int t, int d, int b, int seq, int dirs, int batch, int hidden,
                     int batch_first) {
  return (batch_first ? ((long)b * seq + t) * dirs + d : ((long)t * dirs + d) * batch + b) *
         hidden;
}
inline long state_offset(int d, int b, int dirs, int batch, int hidden, int batch_first) {
  return (batch_first ? (long)b * dirs + d : (long)d * batch + b) * hidden;
}

// h, c [dirs][batch][hidden] from initial_h / initial_c (zeros when absent).
__kernel void init_state(__global const C_T* initial_h, int has_h, __global const C_T* initial_c,
                         int has_c, __global float* h, __global float* c, int dirs, int batch,
                         int batch_first) {
  const int j = get_global_id(0), b = get_global_id(1), d = get_global_id(2);
  const int hidden = get_global_size(0);
  const long state = state_offset(d, b, dirs, batch, hidden, batch_first) + j;
  const long own = ((long)d * batch + b) * hidden + j;
  h[own] = has_h ? (float)LOAD_C(initial_h, state) : 0.0f;
  c[own] = has_c ? (float)LOAD_C(initial_c, state) : 0.0f;
}

__kernel void fill_zero(__global Y_T* y) { STORE_Y(y, get_global_id(0), 0.0f); }

// sum_l h[l] * R[d][row][l]
inline real_t recurrent_dot(__global const float* h, __global const W_T* r, long r0, int hidden) {
  real_t acc = 0;
  for (int l = 0; l < hidden; ++l) acc += (real_t)h[l] * LOAD_W(r, r0 + l);
  return acc;
}

// One time step s: entry b of direction d reads X at t = s (reverse: length - 1 - s) while
// s < its length, else its state stays. PHASE 1 (GRU without linear_before_reset) computes
// z and r ⊙ Ht-1 into gru_z / gru_rh; PHASE 2 finishes that GRU from them; PHASE 0 is the
// whole step of the other cells.
__kernel void recurrent_step(__global const float* x_parts, __global const W_T* r,
                   __global const W_T* bias, int has_bias, __global const W_T* peephole,
                   int has_peephole, __global const float* h_in, __global float* h_out,
                   __global float* c, __global float* gru_z, __global float* gru_rh,
                   __global const int* lengths, __global Y_T* y, int has_y, int s, int seq,
                   int batch, int dirs, int reverse, int batch_first, float clip,
                   int input_forget, __global const int* kinds,
                   __global const float* alphas, __global const float* betas) {
  const int j = get_global_id(0), b = get_global_id(1), d = get_global_id(2);
  const int n = get_global_size(0);
  const int gates = CELL == 0 ? 1 : (CELL == 1 ? 3 : 4);
  const int gh = gates * n;
  const long own = ((long)d * batch + b) * n;
  const int length = lengths[b];
  if (s >= length) {
    if (PHASE != 1) h_out[own + j] = h_in[own + j];
    return;
  }
  const int t = (reverse || d == 1) ? length - 1 - s : s;
  __global const float* xp = x_parts + ((long)d * seq * batch + x_row(t, b, seq, batch,
                                                                        batch_first)) * gh;
  __global const float* h = h_in + own;
  const long r0 = (long)d * gh * n;
  real_t h_new;
#if CELL == 0
  h_new = ACT(0, clip_to((real_t)xp[j] + recurrent_dot(h, r, r0 + (long)j * n, n), clip));
#elif CELL == 1
#if PHASE == 1
  const real_t z = ACT(0, clip_to((real_t)xp[j] + recurrent_dot(h, r, r0 + (long)j * n, n), clip));
  const real_t reset =
      ACT(0, clip_to((real_t)xp[n + j] + recurrent_dot(h, r, r0 + (long)(n + j) * n, n), clip));
  gru_z[own + j] = (float)z;
  gru_rh[own + j] = (float)(reset * (real_t)h[j]);
  return;
#elif PHASE == 2
  const real_t z = (real_t)gru_z[own + j];
  const real_t product = recurrent_dot(gru_rh + own, r, r0 + (long)(2 * n + j) * n, n);
  const real_t candidate = ACT(1, clip_to((real_t)xp[2 * n + j] + product, clip));
  h_new = ((real_t)1 - z) * candidate + z * (real_t)h[j];
#else  // linear_before_reset
  const real_t z = ACT(0, clip_to((real_t)xp[j] + recurrent_dot(h, r, r0 + (long)j * n, n), clip));
  const real_t reset =
      ACT(0, clip_to((real_t)xp[n + j] + recurrent_dot(h, r, r0 + (long)(n + j) * n, n), clip));
  const real_t rbh = has_bias ? LOAD_W(bias, (long)d * 2 * gh + gh + 2 * n + j) : (real_t)0;
  const real_t product = recurrent_dot(h, r, r0 + (long)(2 * n + j) * n, n);
  const real_t candidate = ACT(1, clip_to((real_t)xp[2 * n + j] + reset * (product + rbh), clip));
  h_new = ((real_t)1 - z) * candidate + z * (real_t)h[j];
#endif
#else  // LSTM, gates i, o, f, c
  const real_t c_old = (real_t)c[own + j];
  const long p0 = (long)d * 3 * n;
  const real_t p_i = has_peephole ? LOAD_W(peephole, p0 + j) : (real_t)0;
  const real_t p_o = has_peephole ? LOAD_W(peephole, p0 + n + j) : (real_t)0;
  const real_t p_f = has_peephole ? LOAD_W(peephole, p0 + 2 * n + j) : (real_t)0;
  const real_t gate_i = (real_t)xp[j] + recurrent_dot(h, r, r0 + (long)j * n, n);
  const real_t gate_o = (real_t)xp[n + j] + recurrent_dot(h, r, r0 + (long)(n + j) * n, n);
  const real_t gate_f = (real_t)xp[2 * n + j] + recurrent_dot(h, r, r0 + (long)(2 * n + j) * n, n);
  const real_t gate_c = (real_t)xp[3 * n + j] + recurrent_dot(h, r, r0 + (long)(3 * n + j) * n, n);
  const real_t input = ACT(0, clip_to(gate_i + p_i * c_old, clip));
  const real_t forget =
      input_forget ? (real_t)1 - input : ACT(0, clip_to(gate_f + p_f * c_old, clip));
  const real_t cell = ACT(1, clip_to(gate_c, clip));
  const real_t c_new = forget * c_old + input * cell;
  const real_t output = ACT(0, clip_to(gate_o + p_o * c_new, clip));
  h_new = output * ACT(2, clip_to(c_new, clip));
  c[own + j] = (float)c_new;
#endif
  h_out[own + j] = (float)h_new;
  if (has_y) STORE_Y(y, y_offset(t, d, b, seq, dirs, batch, n, batch_first) + j, h_new);
}

// Y_h / Y_c from the final state; zero for entries of length 0.
__kernel void final_state(__global const float* h, __global const float* c,
                          __global const int* lengths, __global Y_T* y_h, int has_y_h,
                          __global Y_T* y_c, int has_y_c, int dirs, int batch, int batch_first) {
  const int j = get_global_id(0), b = get_global_id(1), d = get_global_id(2);
  const int n = get_global_size(0);
  const long own = ((long)d * batch + b) * n + j;
  const long state = state_offset(d, b, dirs, batch, n, batch_first) + j;
  const bool empty = lengths[b] == 0;
  if (has_y_h) STORE_Y(y_h, state, empty ? 0.0f : h[own]);
  if (has_y_c) STORE_Y(y_c, state, empty ? 0.0f : c[own]);
}
