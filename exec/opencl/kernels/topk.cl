// TopK along one axis: ordered as the CPU kernel orders (exec/cpu/arg_topk.cc).

#ifndef WORD
#define WORD uint
#endif
#ifndef LARGEST
#define LARGEST 1
#endif

// A float element read as float whatever its storage (comparisons see exactly the stored
// value): KEY reads the data as words of its storage, LOAD_A as the common header does.
#ifdef A_HALF
#define KEY(p, i) vload_half((i), (__global const half*)(p))
#else
#define KEY(p, i) as_float((p)[(i)])
#endif

// A strict weak order with NaN above every number, as numpy (the spec's reference) sorts.
inline int nan_less(float a, float b) {
  if (isnan(a)) return 0;
  if (isnan(b)) return 1;
  return a < b;
}

// Whether element (a, ia) comes before (b, ib) in the output: larger (LARGEST=1) or smaller
// first, equal values by lower index.
inline int topk_before(float a, long ia, float b, long ib) {
  const int a_first = LARGEST ? nan_less(b, a) : nan_less(a, b);
  const int b_first = LARGEST ? nan_less(a, b) : nan_less(b, a);
  return a_first || (!b_first && ia < ib);
}

// Global range (n, lines): element i of line `line` ([outer, n, inner] around the axis) counts
// the elements that come before it; with fewer than k it is output at that rank. The order is
// total, so the ranks below k are taken once each. An element stops counting at k, which most
// do early on a large axis. Every work item visits the line in the same order (all read the
// same element at a time), from both ends inwards (0, n - 1, 1, n - 2, ...): on sorted input
// the elements ahead of any element lie at one end, so it stops as early as on random input.
__kernel void topk(__global const WORD* x, __global WORD* values, __global long* indices,
                   long n, long inner, long k) {
  const long i = get_global_id(0);
  const long line = get_global_id(1);
  const long start = (line / inner) * n * inner + line % inner;
  const float v = KEY(x, start + i * inner);
  long rank = 0;
  for (long t = 0; t < n; ++t) {
    const long j = (t & 1) ? n - 1 - (t >> 1) : (t >> 1);
    if (j != i && topk_before(KEY(x, start + j * inner), j, v, i) && ++rank >= k) return;
  }
  const long out = (line / inner) * k * inner + line % inner + rank * inner;
  values[out] = x[start + i * inner];
  indices[out] = i;
}
