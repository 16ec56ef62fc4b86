#include "exec/cpu/gemm.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "exec/cpu/gemm_kernels.h"

namespace ovfix::exec {
namespace {

// Cache blocking: a packed B block (kc x kNc) lives in L2 while the micro-kernel streams it
// past an A panel (kc x mr) held in L1. Blocks of 384 rather than 256 (a B panel of the AVX2
// tile is then 24 KiB of the 32 KiB L1) go back to C a third less often: 768 -> 3072 -> 768
// and 384 -> 1536 -> 384 products 1-3 % faster on one thread.
constexpr int64_t kMaxDepthBlock = 384;
constexpr int64_t kNc = 384;
// Below this many multiply-adds a product runs on the calling thread: waking the pool costs
// more than it saves.
constexpr int64_t kMinParallelMacs = int64_t{1} << 19;
// Below this many elements A is packed on the calling thread.
constexpr int64_t kMinParallelPack = int64_t{1} << 15;
// Parts of a product per thread (ParallelForEach).
constexpr int64_t kPartsPerThread = 4;
// A part of at most this many A panels streams packed weights from memory panel by panel
// (RunBlock).
constexpr int64_t kFewPanels = 16;

const GemmKernel* g_kernel = nullptr;

const GemmKernel& Kernel() {
  if (g_kernel == nullptr) g_kernel = &BestGemmKernel();
  return *g_kernel;
}

float* AllocateFloats(int64_t count) {
  const size_t bytes = (static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float) + 63) &
                       ~static_cast<size_t>(63);
  return static_cast<float*>(std::aligned_alloc(64, bytes));
}

// Per-thread packing buffer for B blocks, grown on demand and kept for the next product.
float* ThreadScratch(int64_t count) {
  struct Scratch {
    float* data = nullptr;
    int64_t size = 0;
    ~Scratch() { std::free(data); }
  };
  thread_local Scratch scratch;
  if (scratch.size < count) {
    std::free(scratch.data);
    scratch.data = AllocateFloats(count);
    scratch.size = count;
  }
  return scratch.data;
}

// A as RunBlock reads it: packed panels, or (lda set) its rows in place, lda floats apart.
struct ASource {
  const PackedA* packed = nullptr;
  const float* rows = nullptr;
  int64_t lda = 0;
  int64_t m = 0, k = 0, depth_block = 1;

  explicit ASource(const PackedA& a)
      : packed(&a), m(a.rows()), k(a.depth()), depth_block(a.depth_block()) {}
  ASource(const float* a, int64_t row_stride, int64_t rows_, int64_t depth)
      : rows(a), lda(row_stride), m(rows_), k(depth), depth_block(GemmDepthBlock(depth)) {}
  // The first row of panel p and its rows. Packed panels are mr rows each (the last fewer).
  // Rows read in place end in panels of 4 or 5 rows where the last would have 1, 2 or 3: a
  // tile of fewer than 4 rows has too few sums to keep both multiply-add units busy, while 4
  // or 5 rows run at the full rate (49 rows: 5 x 6 + 5 + 5 + 5 + 4, not 8 x 6 + 1).
  int64_t panel_row(int64_t p, int mr) const {
    const int64_t full = m / mr, rest = m % mr;
    if (packed != nullptr || rest == 0 || rest >= 4 || mr != 6) return p * mr;
    const int64_t shared = rest == 1 ? 3 : 2;  // the last panels sharing 6 (shared - 1) + rest
    if (full + 1 < shared || p < full + 1 - shared) return p * mr;
    const int64_t first = (full + 1 - shared) * mr, rows_left = m - first,
                  q = p - (full + 1 - shared);
    return first + rows_left * q / shared;
  }
  int panel_rows(int64_t p, int mr) const {
    return static_cast<int>(panel_row(p + 1, mr) < m ? panel_row(p + 1, mr) - panel_row(p, mr)
                                                     : m - panel_row(p, mr));
  }
  // Panel p's rows of the depth block that starts at k0, kc deep.
  const float* panel(int64_t k0, int64_t kc, int64_t p, int mr) const {
    return packed != nullptr ? packed->panel(k0, kc, p) : rows + panel_row(p, mr) * lda + k0;
  }
};

// Runs the kernel over C rows of A panels [p0, p1) and columns [n0, n1).
void RunBlock(const ASource& a, const BSource& b, float* c, int64_t ldc,
              const GemmEpilogue& epilogue, int64_t p0, int64_t p1, int64_t n0, int64_t n1) {
  const GemmKernel& kernel = Kernel();
  const int mr = kernel.geometry.mr, nr = kernel.geometry.nr;
  const int64_t k = a.k, kcb = a.depth_block;
  // B packed here is read from L2 once per A panel: its block is kept to half the L2 (160
  // columns of a 384-deep block on a 512 KiB L2).
  const int64_t max_nc =
      b.prepacked() ? kNc
                    : std::clamp<int64_t>(L2CacheBytes() / 2 /
                                              (kcb * static_cast<int64_t>(sizeof(float))) / nr * nr,
                                          nr, kNc);
  float* packed_b = ThreadScratch(kcb * max_nc);
  for (int64_t nb = n0; nb < n1; nb += max_nc) {
    const int64_t nc = std::min(max_nc, n1 - nb);
    for (int64_t k0 = 0; k0 < k; k0 += kcb) {
      const int64_t kc = std::min(kcb, k - k0);
      const float* block = b.Pack(k0, kc, nb, nc, nr, packed_b);
      TileArgs tile;
      tile.kc = kc;
      tile.lda = a.lda;
      tile.ldc = ldc;
      tile.alpha = epilogue.alpha;
      tile.beta = k0 == 0 ? epilogue.beta : 1.0f;
      const bool last = k0 + kc >= k;
      // The column bias, residual and activation in the tile, or in a pass over each finished
      // tile.
      const bool finish_pass = last &&
                               (epilogue.column_bias != nullptr || epilogue.residual != nullptr) &&
                               !kernel.finishes_columns;
      if (last && !finish_pass) tile.activation = epilogue;
      auto run_tile = [&](int64_t p, int64_t j) {
        tile.a = a.panel(k0, kc, p, mr);
        const int64_t row = a.panel_row(p, mr);
        tile.rows = a.panel_rows(p, mr);
        tile.bias = last && epilogue.row_bias != nullptr ? epilogue.row_bias + row : nullptr;
        tile.b = block + j * kc * nr;
        const int64_t offset = row * ldc + nb + j * nr;  // of the tile in C (and residual)
        tile.c = c + offset;
        tile.cols = static_cast<int>(std::min<int64_t>(nr, nc - j * nr));
        const float* column_bias =
            last && epilogue.column_bias != nullptr ? epilogue.column_bias + nb + j * nr : nullptr;
        const float* residual =
            last && epilogue.residual != nullptr ? epilogue.residual + offset : nullptr;
        tile.column_bias = finish_pass ? nullptr : column_bias;
        tile.residual = finish_pass ? nullptr : residual;
        kernel.tile(tile);
        if (finish_pass) {
          FinishColumns(tile.c, ldc, tile.rows, tile.cols, column_bias, residual, epilogue);
        }
      };
      const int64_t panels_n = (nc + nr - 1) / nr;
      // B's block fits in half the L2 with room to spare for C (a layer's weights up to 256 x
      // 256 on a 512 KiB L2): each A panel stays in L1 across the whole block, which is read
      // from L2, and C is written a row of tiles at a time, a few lines after the last in each
      // row, which the hardware prefetcher follows. Column by column (below), C's lines are
      // written a strip of rows at a time, ldc apart: on a 512 KiB L2 the 3136 x 256 x 64
      // product of a ResNet's first stage ran at 0.20 of the core's multiply-add rate that way,
      // 0.36 this way (two threads, a residual added; 0.34 -> 0.42 for 3136 x 64 x 256).
      const bool block_in_l2 = kc * nc * static_cast<int64_t>(sizeof(float)) <= L2CacheBytes() / 2;
      // Weights packed once come from memory. A block that fits in L2 is read from there by
      // every A panel but the first, which waits on memory for each of its lines; over a few
      // A panels (ResNet-50's last stage, 49 positions: 9) that first pass is most of the
      // time, and the weights are streamed as below, prefetched (sixteen 1x1 convolutions of
      // 7x7 maps, 512 <-> 2048 channels, two threads: a median 17.9 -> 16.6 ms over eight
      // alternating rounds).
      if (b.prepacked() && (!block_in_l2 || p1 - p0 <= kFewPanels)) {
        // B comes from memory (weights packed once): each of its panels is read once and
        // kept in L1 across the A panels, which stay in L2.
        // The next panel (or the next block's first) is fetched into the cache a part before
        // each tile: read from memory by its first tile alone, a panel of a deep layer's
        // weights would hold that tile up on every line (two stacked 768 -> 3072 -> 768
        // products on one thread: 14.2 -> 12.7 ms).
        const int64_t panel_lines = kc * nr * static_cast<int64_t>(sizeof(float)) / 64;
        const int64_t tiles_here = p1 - p0;
        for (int64_t j = 0; j < panels_n; ++j) {
          const char* next = nullptr;
          if (j + 1 < panels_n) {
            next = reinterpret_cast<const char*>(block + (j + 1) * kc * nr);
          } else if (k0 + kc < k) {
            next = reinterpret_cast<const char*>(
                b.Pack(k0 + kc, std::min(kcb, k - k0 - kc), nb, nc, nr, packed_b));
          }
          for (int64_t p = p0; p < p1; ++p) {
            if (next != nullptr) {
              for (int64_t line = panel_lines * (p - p0) / tiles_here,
                           end = panel_lines * (p - p0 + 1) / tiles_here;
                   line < end; ++line) {
                __builtin_prefetch(next + line * 64, 0, 2);
              }
            }
            run_tile(p, j);
          }
        }
      } else {
        // B's block is in L2 (packed into this thread's block, or weights packed once that
        // fit): each A panel stays in L1 across it.
        for (int64_t p = p0; p < p1; ++p) {
          for (int64_t j = 0; j < panels_n; ++j) run_tile(p, j);
        }
      }
    }
  }
}

// Splits `count` items into `parts` nearly equal contiguous ranges; range i is returned.
std::pair<int64_t, int64_t> Share(int64_t count, int64_t parts, int64_t i) {
  return {count * i / parts, count * (i + 1) / parts};
}

// Rows of a product with few rows of A, columns [j0, j1) of B: B's rows are read once, in
// order, each added into every row of the result (held in `acc`, m x (j1 - j0), in cache).
__attribute__((target_clones("avx512f", "avx2", "default"))) void FewRowsAccumulate(
    int64_t m, int64_t j0, int64_t j1, int64_t k, const float* a, int64_t lda, bool trans_a,
    const float* b, int64_t ldb, float* acc) {
  const int64_t width = j1 - j0;
  auto at = [&](int64_t i, int64_t p) { return trans_a ? a[p * lda + i] : a[i * lda + p]; };
  int64_t p = 0;
  // Four rows of B per pass: each row of the result is read and written a quarter as often.
  for (; p + 4 <= k; p += 4) {
    const float* b0 = b + p * ldb + j0;
    const float* b1 = b0 + ldb;
    const float* b2 = b1 + ldb;
    const float* b3 = b2 + ldb;
    for (int64_t i = 0; i < m; ++i) {
      const float x0 = at(i, p), x1 = at(i, p + 1), x2 = at(i, p + 2), x3 = at(i, p + 3);
      float* row = acc + i * width;
      for (int64_t j = 0; j < width; ++j) {
        row[j] += x0 * b0[j] + x1 * b1[j] + x2 * b2[j] + x3 * b3[j];
      }
    }
  }
  for (; p < k; ++p) {
    const float* b_row = b + p * ldb + j0;
    for (int64_t i = 0; i < m; ++i) {
      const float x = at(i, p);
      float* row = acc + i * width;
      for (int64_t j = 0; j < width; ++j) row[j] += x * b_row[j];
    }
  }
}

// A product with few rows of A (a few tokens, a small batch of vectors): packing B would
// read it, write a copy and read the copy, which so few rows do not repay; B is streamed
// once instead, a block of columns per task.
void FewRowsGemm(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                 ThreadPool* pool) {
  constexpr int64_t kColumnBlock = 512;
  const int64_t blocks = (n + kColumnBlock - 1) / kColumnBlock;
  ParallelForEach(m * n * k >= kMinParallelMacs ? pool : nullptr, blocks, [&](int64_t block) {
    const int64_t j0 = block * kColumnBlock, j1 = std::min(n, j0 + kColumnBlock);
    std::array<float, kFewRows * kColumnBlock> acc{};
    FewRowsAccumulate(m, j0, j1, k, a, lda, trans_a, b, ldb, acc.data());
    for (int64_t i = 0; i < m; ++i) {
      float* out = c + i * ldc;
      const float* row = acc.data() + i * (j1 - j0);
      for (int64_t j = j0; j < j1; ++j) {
        out[j] = alpha * row[j - j0] + (beta == 0.0f ? 0.0f : beta * out[j]);
      }
    }
  });
}

}  // namespace

const GemmGeometry& CurrentGemmGeometry() { return Kernel().geometry; }

std::vector<std::string> AvailableGemmKernels() {
  std::vector<std::string> names;
  for (const GemmKernel* kernel : SupportedGemmKernels()) names.push_back(kernel->geometry.name);
  return names;
}

bool SelectGemmKernelForTesting(const std::string& name) {
  for (const GemmKernel* kernel : SupportedGemmKernels()) {
    if (name == kernel->geometry.name) {
      g_kernel = kernel;
      return true;
    }
  }
  return false;
}

// sysconf's; 512 KiB, the smaller of the x86 cores this runs on, where it does not say.
int64_t L2CacheBytes() {
  static const int64_t bytes = [] {
    const long size = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return size >= (64 << 10) ? static_cast<int64_t>(size) : int64_t{512} << 10;
  }();
  return bytes;
}

int64_t GemmDepthBlock(int64_t k) {
  if (k <= kMaxDepthBlock + kMaxDepthBlock / 4) return std::max<int64_t>(k, 1);
  const int64_t blocks = (k + kMaxDepthBlock - 1) / kMaxDepthBlock;
  return (k + blocks - 1) / blocks;
}

bool GemmResidualMayBeC(int64_t k) { return GemmDepthBlock(k) >= k && Kernel().finishes_columns; }

void PackedA::Free::operator()(float* p) const { std::free(p); }

void PackedA::Reset(int64_t m, int64_t k, int64_t depth_block) {
  rows_ = m;
  depth_ = k;
  depth_block_ =
      depth_block > 0 ? std::min(depth_block, std::max<int64_t>(k, 1)) : GemmDepthBlock(k);
  mr_ = Kernel().geometry.mr;
  padded_rows_ = (m + mr_ - 1) / mr_ * mr_;
  if (capacity_ < padded_rows_ * k || data_ == nullptr) {
    data_.reset(AllocateFloats(padded_rows_ * k));
    capacity_ = padded_rows_ * k;
  }
}

void PackedA::Pack(const float* a, int64_t lda, bool trans, int64_t m, int64_t k, ThreadPool* pool,
                   int64_t depth_block) {
  if (trans) {  // A^T is a plain K x M matrix: its rows are A's columns, copied whole
    PackTransposed(MatrixB(a, lda, false), m, k, pool);
    return;
  }
  Reset(m, k, depth_block);
  const int64_t panels = padded_rows_ / mr_;
  const int64_t blocks = (k + depth_block_ - 1) / depth_block_;
  // One item per depth block and panel.
  ParallelForEach(m * k >= kMinParallelPack ? pool : nullptr, blocks * panels, [&](int64_t item) {
    const int64_t k0 = item / panels * depth_block_, p = item % panels;
    const int64_t kc = std::min(depth_block_, k - k0);
    const int rows = static_cast<int>(std::min<int64_t>(mr_, m - p * mr_));
    PackRowsIntoPanel(a + p * mr_ * lda + k0, lda, rows, mr_, kc,
                      data_.get() + k0 * padded_rows_ + p * kc * mr_);
  });
}

void PackedA::PackTransposed(const BSource& a_t, int64_t m, int64_t k, ThreadPool* pool) {
  Reset(m, k);
  const int64_t blocks = (k + depth_block_ - 1) / depth_block_;
  // A block of A^T packed with nr = mr is a block of A packed: panel p holds rows p*mr ..
  // as kc rows of mr floats.
  ParallelForEach(m * k >= kMinParallelPack ? pool : nullptr, blocks, [&](int64_t block) {
    const int64_t k0 = block * depth_block_;
    const int64_t kc = std::min(depth_block_, k - k0);
    float* dst = data_.get() + k0 * padded_rows_;
    const float* packed = a_t.Pack(k0, kc, 0, m, mr_, dst);
    if (packed != dst) std::memcpy(dst, packed, kc * padded_rows_ * sizeof(float));
  });
}

const float* MatrixB::Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                           float* dst) const {
  if (!trans_) {
    for (int64_t kk = 0; kk < kc; ++kk) {
      PackRowIntoPanels(b_ + (k0 + kk) * ldb_ + n0, nc, nr, kc * nr, dst + kk * nr);
    }
    return dst;
  }
  for (int64_t j = 0; j < nc; j += nr) {
    const int64_t cols = std::min<int64_t>(nr, nc - j);
    float* panel = dst + (j / nr) * kc * nr;
    for (int64_t col = 0; col < nr; ++col) {
      if (col >= cols) {
        for (int64_t kk = 0; kk < kc; ++kk) panel[kk * nr + col] = 0.0f;
        continue;
      }
      const float* src = b_ + (n0 + j + col) * ldb_ + k0;
      for (int64_t kk = 0; kk < kc; ++kk) panel[kk * nr + col] = src[kk];
    }
  }
  return dst;
}

void PackedB::Free::operator()(float* p) const { std::free(p); }

PackedB::PackedB(const float* b, int64_t ldb, bool trans, int64_t k, int64_t n)
    : depth_(k), columns_(n), nr_(Kernel().geometry.nr) {
  padded_columns_ = (n + nr_ - 1) / nr_ * nr_;
  data_.reset(AllocateFloats(padded_columns_ * k));
  const MatrixB source(b, ldb, trans);
  const int64_t kcb = GemmDepthBlock(k);
  for (int64_t k0 = 0; k0 < k; k0 += kcb) {
    const int64_t kc = std::min(kcb, k - k0);
    source.Pack(k0, kc, 0, n, nr_, data_.get() + k0 * padded_columns_);
  }
}

const float* PackedB::Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                           float* scratch) const {
  // Blocks are stored whole (all columns of a depth block, panel after panel).
  return data_.get() + k0 * padded_columns_ + n0 * kc;
}

__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
FinishColumns(float* c, int64_t ldc, int64_t rows, int64_t cols, const float* bias,
              const float* residual, const FusedActivation& activation) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    if (bias != nullptr) {
      for (int64_t j = 0; j < cols; ++j) row[j] += bias[j];
    }
    if (residual != nullptr) {
      const float* r = residual + i * ldc;
      for (int64_t j = 0; j < cols; ++j) row[j] += r[j];
    }
    if (activation.any()) {
      for (int64_t j = 0; j < cols; ++j) row[j] = activation.Activate(row[j]);
    }
  }
}

void GemmEmptyDepth(int64_t m, int64_t n, float* c, int64_t ldc, const GemmEpilogue& epilogue) {
  for (int64_t i = 0; i < m; ++i) {
    const float bias = epilogue.row_bias != nullptr ? epilogue.row_bias[i] : 0.0f;
    float* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      float value = epilogue.beta == 0.0f ? bias : epilogue.beta * row[j] + bias;
      if (epilogue.column_bias != nullptr) value += epilogue.column_bias[j];
      row[j] = epilogue.Activate(value);
    }
  }
}

namespace {

void GemmFrom(const ASource& a, const BSource& b, int64_t n, float* c, int64_t ldc,
              const GemmEpilogue& epilogue, ThreadPool* pool) {
  const int64_t m = a.m, k = a.k;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    GemmEmptyDepth(m, n, c, ldc, epilogue);
    return;
  }
  const GemmKernel& kernel = Kernel();
  const int64_t m_panels = (m + kernel.geometry.mr - 1) / kernel.geometry.mr;
  const int64_t n_panels = (n + kernel.geometry.nr - 1) / kernel.geometry.nr;
  int64_t threads = pool != nullptr ? pool->size() : 1;
  threads = std::min<int64_t>(threads, std::max<int64_t>(1, m * n * k / kMinParallelMacs));
  // Several parts per thread, so that a thread held up leaves little to wait for at the end.
  // Every part reads the rows of A it covers for each of its column ranges, and packs (or
  // reads) its columns of B for each of its row ranges: the split that reads least is taken.
  const int64_t target = threads > 1 ? threads * kPartsPerThread : 1;
  const double a_cost = static_cast<double>(m) * k;
  const double b_cost = static_cast<double>(n) * k * (b.prepacked() ? 1 : 3);
  int64_t n_parts = 1, m_parts = 1;
  double best = -1;
  for (int64_t np = 1; np <= std::min(target, n_panels); ++np) {
    const int64_t mp = std::min(m_panels, (target + np - 1) / np);
    const double cost = a_cost * np + b_cost * mp;
    // Fewer parts than wanted only when the product has no more tiles.
    const bool enough = np * mp >= std::min(target, m_panels * n_panels);
    if (enough && (best < 0 || cost < best)) {
      best = cost;
      n_parts = np;
      m_parts = mp;
    }
  }
  const int64_t parts = n_parts * m_parts;
  ParallelForEach(parts > 1 ? pool : nullptr, parts, [&](int64_t part) {
    const auto [p0, p1] = Share(m_panels, m_parts, part % m_parts);
    const auto [j0, j1] = Share(n_panels, n_parts, part / m_parts);
    if (p0 == p1 || j0 == j1) return;
    RunBlock(a, b, c, ldc, epilogue, p0, p1, j0 * kernel.geometry.nr,
             std::min(n, j1 * kernel.geometry.nr));
  });
}

}  // namespace

void GemmPacked(const PackedA& a, const BSource& b, int64_t n, float* c, int64_t ldc,
                const GemmEpilogue& epilogue, ThreadPool* pool) {
  GemmFrom(ASource(a), b, n, c, ldc, epilogue, pool);
}

void GemmRowsInPlace(const float* a, int64_t lda, int64_t m, int64_t k, const BSource& b, int64_t n,
                     float* c, int64_t ldc, const GemmEpilogue& epilogue, ThreadPool* pool) {
  if (Kernel().reads_rows_in_place) {
    GemmFrom(ASource(a, lda, m, k), b, n, c, ldc, epilogue, pool);
    return;
  }
  thread_local PackedA packed;  // stays with the thread for the next product
  packed.Pack(a, lda, false, m, k, pool);
  GemmPacked(packed, b, n, c, ldc, epilogue, pool);
}

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
           ThreadPool* pool) {
  if (m <= 0 || n <= 0) return;
  GemmEpilogue epilogue{{}, alpha, beta, nullptr};
  if (k <= 0) {
    GemmEmptyDepth(m, n, c, ldc, epilogue);
    return;
  }
  if (m == 1 || n == 1) {
    GemvProduct(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pool);
    return;
  }
  if (m <= kFewRows && !trans_b) {
    FewRowsGemm(trans_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, pool);
    return;
  }
  if (!trans_a) {
    GemmRowsInPlace(a, lda, m, k, MatrixB(b, ldb, trans_b), n, c, ldc, epilogue, pool);
    return;
  }
  // The packing buffer stays with the thread for the next product.
  thread_local PackedA packed;
  packed.Pack(a, lda, trans_a, m, k, pool);
  GemmPacked(packed, MatrixB(b, ldb, trans_b), n, c, ldc, epilogue, pool);
}

void Dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc, ThreadPool* pool) {
  if (m <= 0 || n <= 0) return;
  const int64_t macs = m * n * std::max<int64_t>(k, 1);
  ParallelFor(macs >= kMinParallelMacs ? pool : nullptr, m, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> row(n);
    for (int64_t i = begin; i < end; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        const double x = trans_a ? a[p * lda + i] : a[i * lda + p];
        if (!trans_b) {
          const double* src = b + p * ldb;
          for (int64_t j = 0; j < n; ++j) row[j] += x * src[j];
        } else {
          for (int64_t j = 0; j < n; ++j) row[j] += x * b[j * ldb + p];
        }
      }
      double* out = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) {
        out[j] = beta == 0.0 ? alpha * row[j] : alpha * row[j] + beta * out[j];
      }
    }
  });
}

}  // namespace ovfix::exec
