// NonZero: counted per chunk, the host turns the counts into each chunk's first output
// column (and the output's size), then every chunk writes its coordinates.

#ifndef WORD
#define WORD uint
#endif
#ifndef MASK
#define MASK 0xffffffffffffffffUL
#endif

// MASK keeps the bits that make an element non-zero: all of them for integers and bool, all
// but the sign for floats (-0 is zero; NaN is not).
inline int is_nonzero(WORD v) { return (v & (WORD)(MASK)) != 0; }

// Elements [c * chunk, (c + 1) * chunk) of x: how many are non-zero.
__kernel void nonzero_count(__global const WORD* x, __global int* counts, long n, int chunk) {
  const long c = get_global_id(0);
  const long end = min(n, (c + 1) * chunk);
  int count = 0;
  for (long i = c * chunk; i < end; ++i) count += is_nonzero(x[i]);
  counts[c] = count;
}

// The chunk's non-zero elements, in order from column offsets[c] of y [rank, nnz]: their
// coordinates over dims (rank <= 8, padded with leading 1s).
__kernel void nonzero_write(__global const WORD* x, __global const long* offsets,
                            __global long* y, long n, int chunk, long nnz, int8 dims, int rank) {
  const long c = get_global_id(0);
  const long end = min(n, (c + 1) * chunk);
  int d[8] = {dims.s0, dims.s1, dims.s2, dims.s3, dims.s4, dims.s5, dims.s6, dims.s7};
  long column = offsets[c];
  for (long i = c * chunk; i < end; ++i) {
    if (!is_nonzero(x[i])) continue;
    long rest = i;
    for (int k = 7; k >= 8 - rank; --k) {
      y[(k - (8 - rank)) * nnz + column] = rest % d[k];
      rest /= d[k];
    }
    ++column;
  }
}
