// Kernels of the ops that opsets 17-24 added (exec/opencl/ops_modern.cc): the activations Mish,
// Gelu and Swish; LayerNormalization, RMSNormalization and GroupNormalization; RotaryEmbedding;
// Attention. Storage macros beyond common.h.cl's A/B/C/W/Y are defined here for the operands
// only these kernels have.

#ifdef Q_HALF
#define Q_T half
#define LOAD_Q(p, i) ((real_t)vload_half((i), (p)))
#else
#define Q_T float
#define LOAD_Q(p, i) ((real_t)(p)[(i)])
#endif

#ifdef K_HALF
#define K_T half
#define LOAD_K(p, i) ((real_t)vload_half((i), (p)))
#else
#define K_T float
#define LOAD_K(p, i) ((real_t)(p)[(i)])
#endif

#ifdef V_HALF
#define V_T half
#define LOAD_V(p, i) ((real_t)vload_half((i), (p)))
#else
#define V_T float
#define LOAD_V(p, i) ((real_t)(p)[(i)])
#endif

// A float attention mask (a bool one is read as uchar). Read as float: it is added to scores
// that are kept in float.
#ifdef MASK_HALF
#define MASK_T half
#define LOAD_MASK(p, i) vload_half((i), (p))
#else
#define MASK_T float
#define LOAD_MASK(p, i) ((p)[(i)])
#endif

#ifdef QK_HALF
#define QK_T half
#define STORE_QK(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
#define QK_T float
#define STORE_QK(p, i, v) ((p)[(i)] = (float)(v))
#endif

#ifdef MEAN_HALF
#define MEAN_T half
#define STORE_MEAN(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
#define MEAN_T float
#define STORE_MEAN(p, i, v) ((p)[(i)] = (float)(v))
#endif

#ifdef ISTD_HALF
#define ISTD_T half
#define STORE_ISTD(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
#define ISTD_T float
#define STORE_ISTD(p, i, v) ((p)[(i)] = (float)(v))
#endif

// Every kernel of this file is built with the options of one; the selectors the others read
// get defaults.
#ifndef OP
#define OP 0
#endif
#ifndef MODE
#define MODE 0
#endif
#ifndef MASK
#define MASK 0
#endif
#ifndef QK_MODE
#define QK_MODE -1
#endif

// ---- activations ----

// softplus(x) = log(1 + e^x), in float: log1p keeps the small values of large negative x that
// log(1 + e^x) rounds to 0, and large x returns x before e^x overflows.
inline float softplus_f(float x) { return x > 20.0f ? x : log1p(exp(x)); }

// OP: 0 Mish, 1 Gelu (erf), 2 Gelu (tanh), 3 Swish.
inline real_t activation_op(real_t x, float alpha) {
  switch (OP) {
    case 0: return x * (real_t)tanh(softplus_f((float)x));
    case 1: return (real_t)0.5 * x * ((real_t)1 + r_erf(x * (real_t)0.70710678118654752f));
    case 2: {
      // sqrt(2 / pi) (x + 0.044715 x^3), with x^3 in float: in half it overflows from x = 40,
      // where the tanh has long been saturated anyway.
      const float f = (float)x;
      const float inner = 0.79788456080286536f * (f + 0.044715f * f * f * f);
      return (real_t)0.5 * x * ((real_t)1 + (real_t)tanh(inner));
    }
    case 3: return x / ((real_t)1 + r_exp(-(real_t)alpha * x));
    default: return x;
  }
}

__kernel void activation(__global const A_T* a, __global Y_T* y, float alpha) {
  const long i = get_global_id(0);
  STORE_Y(y, i, activation_op(LOAD_A(a, i), alpha));
}

// ---- normalizations ----

// One work item per row of `n` contiguous elements (the normalized axes of Layer/RMS
// normalization, one group of channels of GroupNormalization). The statistics are taken in
// float whatever the storage and arithmetic (stash_type 1, the default and what exporters
// write); the normalized value is then scaled and shifted in real_t. Scale and bias are read
// through broadcast strides over `dims` (X's dims, or the view of them the host chose).
// MODE 0: (x - mean) / sqrt(var + eps); 1: x / sqrt(mean(x^2) + eps).
// HAS_BIAS, HAS_MEAN, HAS_ISTD: the optional operands.
__kernel void normalize_rows(__global const A_T* x, __global const W_T* scale,
                        __global const B_T* bias, __global Y_T* y, __global MEAN_T* mean_out,
                        __global ISTD_T* istd_out, long n, float epsilon, int8 dims,
                        int8 scale_strides, int8 bias_strides) {
  const long row = get_global_id(0);
  const long base = row * n;
  float mean = 0;
  if (MODE == 0) {
    float sum = 0;
    for (long j = 0; j < n; ++j) sum += (float)LOAD_A(x, base + j);
    mean = sum / (float)n;
  }
  float squares = 0;
  for (long j = 0; j < n; ++j) {
    const float d = (float)LOAD_A(x, base + j) - mean;
    squares += d * d;
  }
  const float inv = 1.0f / sqrt(squares / (float)n + epsilon);
#ifdef HAS_MEAN
  STORE_MEAN(mean_out, row, mean);
#endif
#ifdef HAS_ISTD
  STORE_ISTD(istd_out, row, inv);
#endif
  for (long j = 0; j < n; ++j) {
    const long i = base + j;
    const real_t normalized = (real_t)(((float)LOAD_A(x, i) - mean) * inv);
    real_t v = normalized * LOAD_W(scale, BroadcastOffset(i, dims, scale_strides));
#ifdef HAS_BIAS
    v += LOAD_B(bias, BroadcastOffset(i, dims, bias_strides));
#endif
    STORE_Y(y, i, v);
  }
}

// ---- RotaryEmbedding ----

// One work item per element of X: [batch, heads, seq, head_size] (4-D) or [batch, seq,
// heads * head_size] (THREE_D). The first `rotary` elements of each head are rotated in pairs
// (d, d + rotary / 2), or (2j, 2j + 1) with INTERLEAVED; the rest are copied. cos/sin rows are
// picked by position_ids (HAS_POSITIONS, range-checked on the host) or by (batch, seq).
__kernel void rotary(__global const A_T* x, __global const B_T* cos_cache,
                     __global const C_T* sin_cache, __global const long* positions,
                     __global Y_T* y, long heads, long seq, long head_size, long rotary) {
  const long i = get_global_id(0);
  const long d = i % head_size;
  long b, s;
#ifdef THREE_D
  s = (i / (head_size * heads)) % seq;
  b = i / (head_size * heads * seq);
#else
  s = (i / head_size) % seq;
  b = i / (head_size * seq * heads);
#endif
  if (d >= rotary) {
    STORE_Y(y, i, LOAD_A(x, i));
    return;
  }
  const long half_dim = rotary / 2;
  const long head_start = i - d;
  long j, first, second;
  bool is_second;
#ifdef INTERLEAVED
  j = d / 2;
  first = head_start + 2 * j;
  second = first + 1;
  is_second = (d & 1) != 0;
#else
  is_second = d >= half_dim;
  j = is_second ? d - half_dim : d;
  first = head_start + j;
  second = first + half_dim;
#endif
#ifdef HAS_POSITIONS
  const long cache_row = positions[b * seq + s];
#else
  const long cache_row = b * seq + s;
#endif
  const real_t c = LOAD_B(cos_cache, cache_row * half_dim + j);
  const real_t sn = LOAD_C(sin_cache, cache_row * half_dim + j);
  const real_t x1 = LOAD_A(x, first);
  const real_t x2 = LOAD_A(x, second);
  STORE_Y(y, i, is_second ? sn * x1 + c * x2 : c * x1 - sn * x2);
}

// ---- Attention ----

// Offset of element (b, h, s, d) of a [batch, heads, seq, depth] tensor, or of one stored as
// [batch, seq, heads * depth] when `three_d`.
inline long head_offset(long b, long h, long s, long d, long heads, long seq, long depth,
                        int three_d) {
  return three_d ? ((b * seq + s) * heads + h) * depth + d
                 : ((b * heads + h) * seq + s) * depth + d;
}

// present[b, h, t, d] = past[b, h, t, d] for t < past_len, else the new K (or V) at t - past_len.
__kernel void kv_concat(__global const A_T* past, __global const B_T* fresh, __global Y_T* present,
                        long heads, long past_len, long new_len, long depth, int fresh_3d) {
  const long i = get_global_id(0);
  const long total = past_len + new_len;
  const long d = i % depth;
  const long t = (i / depth) % total;
  const long h = (i / (depth * total)) % heads;
  const long b = i / (depth * total * heads);
  if (t < past_len) {
    STORE_Y(present, i, LOAD_A(past, ((b * heads + h) * past_len + t) * depth + d));
  } else {
    STORE_Y(present, i, LOAD_B(fresh, head_offset(b, h, t - past_len, d, heads, new_len, depth,
                                                  fresh_3d)));
  }
}

// One work item per query row (b, h, s): the scores of its `total` keys into `scores` (float
// scratch, `total` per row), softcap, the additive bias of the mask, causality and padding, a
// softmax in float, then the weighted sum of the values. A row whose every key is masked out
// gives zeros. Keys and values are [batch, kv_heads, total, depth] or 3-D (K_3D, V_3D);
// query rows of head h read kv head h / group.
// MASK: 0 none, 1 bool (uchar), 2 float. The mask is read at
// b * mask_strides.s0 + h * .s1 + s * .s2 + t * .s3 for t < mask_len; keys past mask_len are
// masked out (opset 24's short masks).
// QK_MODE: -1 no qk output, else what it holds (0 raw, 1 softcapped, 2 masked, 3 softmax).
__kernel void attention(__global const Q_T* q, __global const K_T* k, __global const V_T* v,
                        __global const MASK_T* mask_float, __global const uchar* mask_bool,
                        __global const long* nonpad, __global Y_T* y, __global QK_T* qk,
                        __global float* scores, long q_heads, long kv_heads, long q_seq,
                        long total, long depth, long v_depth, float sqrt_scale, float softcap,
                        long causal_offset, long4 mask_strides, long mask_len, int q_3d,
                        int k_3d, int v_3d, int y_3d) {
  const long row = get_global_id(0);
  const long s = row % q_seq;
  const long h = (row / q_seq) % q_heads;
  const long b = row / (q_seq * q_heads);
  const long kh = h / (q_heads / kv_heads);
  __global float* score = scores + row * total;
  const long qk_row = row * total;  // an index, not a pointer: half pointers take no arithmetic

  // Keys at or past `limit` are padding (opset 24's nonpad_kv_seqlen).
  long limit = total;
  long offset = causal_offset;
#ifdef HAS_NONPAD
  limit = min(nonpad[b], total);
#ifndef HAS_PAST
  offset = nonpad[b] - q_seq;
#endif
#endif
  float peak = -INFINITY;
  for (long t = 0; t < total; ++t) {
    real_t dot = 0;
    for (long d = 0; d < depth; ++d) {
      // Q and K each scaled by sqrt(scale), as the spec has it: their product is what
      // overflows in half arithmetic otherwise.
      const real_t qv = LOAD_Q(q, head_offset(b, h, s, d, q_heads, q_seq, depth, q_3d)) *
                        (real_t)sqrt_scale;
      const real_t kv = LOAD_K(k, head_offset(b, kh, t, d, kv_heads, total, depth, k_3d)) *
                        (real_t)sqrt_scale;
      dot += qv * kv;
    }
    float value = (float)dot;
#if QK_MODE == 0
    STORE_QK(qk, qk_row + t, value);
#endif
    if (softcap > 0) value = softcap * tanh(value / softcap);
#if QK_MODE == 1
    STORE_QK(qk, qk_row + t, value);
#endif
#if MASK != 0
    if (t < mask_len) {
      const long m = b * mask_strides.s0 + h * mask_strides.s1 + s * mask_strides.s2 +
                     t * mask_strides.s3;
#if MASK == 1
      if (!mask_bool[m]) value = -INFINITY;
#else
      value += (float)LOAD_MASK(mask_float, m);
#endif
    } else {
      value = -INFINITY;
    }
#endif
#ifdef IS_CAUSAL
    if (t > s + offset) value = -INFINITY;
#endif
    if (t >= limit) value = -INFINITY;
#if QK_MODE == 2
    STORE_QK(qk, qk_row + t, value);
#endif
    score[t] = value;
    peak = fmax(peak, value);
  }
  if (peak == -INFINITY) {
    // Fully masked: zeros, not the NaN that exp(-inf - -inf) would give.
    for (long d = 0; d < v_depth; ++d) {
      STORE_Y(y, head_offset(b, h, s, d, q_heads, q_seq, v_depth, y_3d), 0);
    }
#if QK_MODE == 3
    for (long t = 0; t < total; ++t) STORE_QK(qk, qk_row + t, 0);
#endif
    return;
  }
  float sum = 0;
  for (long t = 0; t < total; ++t) {
    const float e = exp(score[t] - peak);
    score[t] = e;
    sum += e;
  }
  const float inv_sum = 1.0f / sum;
  for (long t = 0; t < total; ++t) {
    score[t] *= inv_sum;
#if QK_MODE == 3
    STORE_QK(qk, qk_row + t, score[t]);
#endif
  }
  for (long d = 0; d < v_depth; ++d) {
    float acc = 0;
    // Padding keys are skipped (their values may be anything); masked keys inside the valid
    // range weigh 0 as in the spec's MatMul.
    for (long t = 0; t < limit; ++t) {
      acc += score[t] *
             (float)LOAD_V(v, head_offset(b, kh, t, d, kv_heads, total, v_depth, v_3d));
    }
    STORE_Y(y, head_offset(b, h, s, d, q_heads, q_seq, v_depth, y_3d), acc);
  }
}
