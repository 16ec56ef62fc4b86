#include "exec/cpu/matmul_integer_vnni.h"

#include <algorithm>
#include <type_traits>

#include "exec/cpu/gemm_vnni.h"

namespace ovfix::exec {
namespace {

using vnni::kMr;
using vnni::kNr;

inline int8_t ToSigned(uint8_t v) { return static_cast<int8_t>(v ^ 0x80); }
inline int8_t ToSigned(int8_t v) { return v; }
inline uint8_t ToUnsigned(int8_t v) { return static_cast<uint8_t>(v) ^ 0x80; }
inline uint8_t ToUnsigned(uint8_t v) { return v; }

struct Packed {
  std::vector<int8_t> a;      // A: panels of kMr rows
  std::vector<uint8_t> b;     // B: panels of kNr columns
  std::vector<int32_t> sums;  // per row of A / column of B
};

template <typename A>
Packed PackA(const A* a, int64_t m, int64_t k, int64_t quads) {
  Packed p;
  p.a.assign((m + kMr - 1) / kMr * quads * kMr * 4, 0);
  p.sums.assign(m, 0);
  for (int64_t r = 0; r < m; ++r) {
    int8_t* panel = p.a.data() + (r / kMr) * quads * kMr * 4 + (r % kMr) * 4;
    for (int64_t i = 0; i < k; ++i) {
      const int8_t v = ToSigned(a[r * k + i]);
      panel[(i / 4) * kMr * 4 + i % 4] = v;
      p.sums[r] += v;
    }
  }
  return p;
}

template <typename B>
Packed PackB(const B* b, int64_t k, int64_t n, int64_t quads) {
  Packed p;
  const int64_t panels = (n + kNr - 1) / kNr, width = panels * kNr;
  std::vector<uint8_t> rows(quads * 4 * width, 0);
  p.sums.assign(n, 0);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t c = 0; c < n; ++c) {
      const uint8_t v = ToUnsigned(b[i * n + c]);
      rows[i * width + c] = v;
      p.sums[c] += v;
    }
  }
  p.b.resize(panels * quads * kNr * 4);
  for (int64_t q = 0; q < quads; ++q) {
    vnni::InterleaveQuad(rows.data() + q * 4 * width, width, panels, quads * kNr * 4,
                         p.b.data() + q * kNr * 4);
  }
  return p;
}

template <typename A, typename B>
void Run(const Tensor& a, const Tensor& b, const std::vector<int32_t>& a_zeros_in,
         const std::vector<int32_t>& b_zeros_in, const IntegerMatMulShape& s, int32_t* acc,
         ThreadPool* pool) {
  const int64_t m = s.m, k = s.k, n = s.n, quads = (k + 3) / 4;
  // The zero points of the shifted operands.
  std::vector<int32_t> az(a_zeros_in), bz(b_zeros_in);
  if (std::is_same_v<A, uint8_t>) {
    for (int32_t& z : az) z -= 128;
  }
  if (std::is_same_v<B, int8_t>) {
    for (int32_t& z : bz) z += 128;
  }
  std::vector<Packed> as(s.a_batches), bs(s.b_batches);
  ParallelFor(pool, s.a_batches, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) as[i] = PackA(a.data<A>() + i * m * k, m, k, quads);
  });
  ParallelFor(pool, s.b_batches, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) bs[i] = PackB(b.data<B>() + i * k * n, k, n, quads);
  });
  const int64_t row_panels = (m + kMr - 1) / kMr, column_panels = (n + kNr - 1) / kNr;
  const int64_t batches = static_cast<int64_t>(s.a_batch_of.size());
  const int64_t tiles = row_panels * column_panels;
  const int64_t min_tiles = std::max<int64_t>(1, 256 / std::max<int64_t>(1, quads));
  ParallelFor(pool, batches * tiles, min_tiles, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t batch = item / tiles, r = item % tiles / column_panels,
                    p = item % column_panels;
      const int64_t ab = s.a_batch_of[batch], bb = s.b_batch_of[batch];
      const Packed& pa = as[ab];
      const Packed& pb = bs[bb];
      const int rows = static_cast<int>(std::min<int64_t>(kMr, m - r * kMr));
      const int cols = static_cast<int>(std::min<int64_t>(kNr, n - p * kNr));
      int32_t* out = acc + batch * m * n + r * kMr * n + p * kNr;
      vnni::DotTile(quads, pa.a.data() + r * quads * kMr * 4, pb.b.data() + p * quads * kNr * 4,
                    out, n, rows, cols);
      for (int i = 0; i < rows; ++i) {
        const int64_t row = r * kMr + i;
        const int64_t a_zero = az[ab * m + row], a_sum = pa.sums[row];
        int32_t* line = out + i * n;
        for (int j = 0; j < cols; ++j) {
          const int64_t col = p * kNr + j;
          const int64_t b_zero = bz[bb * n + col];
          // int32 wraps as the accumulation does.
          line[j] = static_cast<int32_t>(
              static_cast<uint32_t>(line[j]) +
              static_cast<uint32_t>(k * a_zero * b_zero - b_zero * a_sum - a_zero * pb.sums[col]));
        }
      }
    }
  });
}

}  // namespace

void IntegerMatMulVnni(const Tensor& a, const Tensor& b, const std::vector<int32_t>& a_zeros,
                       const std::vector<int32_t>& b_zeros, const IntegerMatMulShape& s,
                       int32_t* acc, ThreadPool* pool) {
  const bool a8 = a.type() == DataType::kInt8, b8 = b.type() == DataType::kInt8;
  if (a8 && b8) {
    Run<int8_t, int8_t>(a, b, a_zeros, b_zeros, s, acc, pool);
  } else if (a8) {
    Run<int8_t, uint8_t>(a, b, a_zeros, b_zeros, s, acc, pool);
  } else if (b8) {
    Run<uint8_t, int8_t>(a, b, a_zeros, b_zeros, s, acc, pool);
  } else {
    Run<uint8_t, uint8_t>(a, b, a_zeros, b_zeros, s, acc, pool);
  }
}

}  // namespace ovfix::exec
