// Kernels that rearrange whole tensors: Transpose, Concat, Split, Tile, Expand. Also the home of
// CopyByOffsets, the strided copy that Slice, Pad, DepthToSpace and SpaceToDepth build on.
// Every kernel here moves elements by their bytes (or as std::string for string tensors), so
// one instantiation per element size covers all element types, float16 included.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/avx512_transpose.h"
#include "exec/cpu/data_movement.h"
#include "exec/cpu/native_kernels.h"
#include "exec/cpu/slice_pad_geometry.h"
#include "exec/cpu/split_sizes.h"
#include "exec/kernel.h"
#include "ir/float16.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {

namespace {

using namespace data_movement;  // NOLINT: the group's shared vocabulary

// Adds a row's per-dim offsets; kFill wins over everything.
int64_t SumOffsets(int64_t a, int64_t b) { return a == kFill || b == kFill ? kFill : a + b; }

template <typename T>
void CopyByOffsetsTyped(const Tensor& source, const std::vector<std::vector<int64_t>>& offsets,
                        const T& fill, Tensor& out, ThreadPool* pool) {
  const T* src = Elements<T>(source);
  T* dst = MutableElements<T>(out);
  const std::vector<int64_t>& inner = offsets.back();
  const int64_t inner_n = static_cast<int64_t>(inner.size());
  bool contiguous = true, constant = true;
  for (int64_t j = 0; j < inner_n; ++j) {
    if (inner[j] == kFill || inner[j] != inner[0] + j) contiguous = false;
    if (inner[j] == kFill || inner[j] != inner[0]) constant = false;
  }
  const size_t outer_rank = offsets.size() - 1;
  int64_t rows = 1;
  for (size_t d = 0; d < outer_rank; ++d) rows *= static_cast<int64_t>(offsets[d].size());

  auto copy_rows = [&](int64_t begin, int64_t end) {
    // Odometer over the outer dims, started at row `begin`.
    std::vector<int64_t> index(outer_rank);
    int64_t rest = begin;
    for (size_t d = outer_rank; d-- > 0;) {
      const int64_t n = static_cast<int64_t>(offsets[d].size());
      index[d] = rest % n;
      rest /= n;
    }
    for (int64_t row = begin; row < end; ++row) {
      int64_t base = 0;
      for (size_t d = 0; d < outer_rank; ++d) base = SumOffsets(base, offsets[d][index[d]]);
      T* out_row = dst + row * inner_n;
      if (base == kFill) {
        std::fill(out_row, out_row + inner_n, fill);
      } else if (contiguous) {
        std::copy(src + base + inner[0], src + base + inner[0] + inner_n, out_row);
      } else if (constant) {
        std::fill(out_row, out_row + inner_n, src[base + inner[0]]);
      } else {
        for (int64_t j = 0; j < inner_n; ++j) {
          out_row[j] = inner[j] == kFill ? fill : src[base + inner[j]];
        }
      }
      for (size_t d = outer_rank; d-- > 0;) {
        if (++index[d] < static_cast<int64_t>(offsets[d].size())) break;
        index[d] = 0;
      }
    }
  };
  ParallelFor(pool, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner_n, 1)), copy_rows);
}

// The trailing tables of `offsets` that together read one contiguous run of the source (each
// an arithmetic sequence whose step is the length of the run inside it, no fill) come off
// `offsets`: returns the run's length and adds its first offset to `first`.
int64_t TakeContiguousRun(std::vector<std::vector<int64_t>>& offsets, int64_t& first) {
  int64_t length = 1;
  while (!offsets.empty()) {
    const std::vector<int64_t>& t = offsets.back();
    for (size_t j = 0; j < t.size(); ++j) {
      if (t[j] == kFill || t[j] != t[0] + static_cast<int64_t>(j) * length) return length;
    }
    first += t[0];
    length *= static_cast<int64_t>(t.size());
    offsets.pop_back();
  }
  return length;
}

// CopyByOffsets where each output row is one run of `run` source elements from `first` on
// (plus the row's outer offsets): one std::copy per row, long runs cut into pieces for the
// threads (Slice along an outer axis, torch.roll's halves: memcpy speed; a Transpose that keeps
// a last axis of 32, as attention's head split does: a copy per 32 instead of a gather per
// element). Rows are walked by an odometer over the outer tables.
template <typename T>
void CopyRuns(const Tensor& source, const std::vector<std::vector<int64_t>>& outer, int64_t first,
              int64_t run, const T& fill, Tensor& out, ThreadPool* pool) {
  const T* src = Elements<T>(source);
  T* dst = MutableElements<T>(out);
  int64_t rows = 1;
  for (const std::vector<int64_t>& t : outer) rows *= static_cast<int64_t>(t.size());
  constexpr int64_t kPiece = 16384;  // elements: a piece's copy outweighs handing it out
  const int64_t pieces_per_row = std::max<int64_t>(1, run / kPiece);
  const int64_t piece = (run + pieces_per_row - 1) / pieces_per_row;
  ParallelFor(pool, rows * pieces_per_row, std::max<int64_t>(1, kPiece / run),
              [&](int64_t begin, int64_t end) {
                int64_t row = begin / pieces_per_row, part = begin % pieces_per_row;
                std::vector<int64_t> index(outer.size());
                for (int64_t d = static_cast<int64_t>(outer.size()), rest = row; d-- > 0;) {
                  const int64_t n = static_cast<int64_t>(outer[d].size());
                  index[d] = rest % n;
                  rest /= n;
                }
                auto base_of_row = [&] {
                  int64_t base = first;
                  for (size_t d = 0; d < outer.size(); ++d) {
                    base = SumOffsets(base, outer[d][index[d]]);
                  }
                  return base;
                };
                int64_t base = base_of_row();
                for (int64_t p = begin; p < end; ++p) {
                  const int64_t from = part * piece;
                  const int64_t count = std::min(piece, run - from);
                  T* to = dst + row * run + from;
                  if (base == kFill) {
                    std::fill(to, to + count, fill);
                  } else {
                    std::copy(src + base + from, src + base + from + count, to);
                  }
                  if (++part < pieces_per_row) continue;
                  part = 0;
                  ++row;
                  for (size_t d = outer.size(); d-- > 0;) {
                    if (++index[d] < static_cast<int64_t>(outer[d].size())) break;
                    index[d] = 0;
                  }
                  base = base_of_row();
                }
              });
}

}  // namespace

namespace data_movement {

void MergeShortTrailingTables(std::vector<std::vector<int64_t>>& tables, int64_t fill) {
  while (tables.size() > 1 && tables.back().size() < 64 &&
         tables.back().size() * tables[tables.size() - 2].size() <= 4096) {
    std::vector<int64_t> inner = std::move(tables.back());
    tables.pop_back();
    std::vector<int64_t> merged;
    merged.reserve(tables.back().size() * inner.size());
    for (int64_t a : tables.back()) {
      for (int64_t b : inner) merged.push_back(a == fill || b == fill ? fill : a + b);
    }
    tables.back() = std::move(merged);
  }
}

// out[i_0, ..., i_r-1] = source[sum_d offsets[d][i_d]], or *fill where any offset is kFill
// (zero / empty string when fill is null). `out` is allocated with dims = the table sizes.
// Transpose, Expand, Tile, Slice, Pad and the space/depth shuffles are all this copy with
// different tables; the caller guarantees every non-fill sum is inside `source`.
void CopyByOffsets(const Tensor& source, std::vector<std::vector<int64_t>> offsets,
                   const Tensor* fill, Tensor& out, ThreadPool* pool) {
  if (out.numel() == 0) return;
  if (offsets.empty()) offsets.push_back({0});
  // Rows that are contiguous runs of 16 elements or more: copied whole.
  constexpr int64_t kMinRun = 16;
  std::vector<std::vector<int64_t>> outer = offsets;
  int64_t first = 0;
  const int64_t run = TakeContiguousRun(outer, first);
  // Short inner rows make the per-row work dominate: fold trailing dims into one table.
  if (run < kMinRun) MergeShortTrailingTables(offsets);
  VisitStorage(source.type(), [&]<typename T>() {
    T fill_value{};
    if (fill != nullptr && fill->numel() > 0) fill_value = Elements<T>(*fill)[0];
    if (run >= kMinRun) {
      CopyRuns<T>(source, outer, first, run, fill_value, out, pool);
    } else {
      CopyByOffsetsTyped<T>(source, offsets, fill_value, out, pool);
    }
  });
}

// Rejects negative dims and outputs too large to allocate (the limit is far above any real
// model; it keeps a bad shape input from aborting the process with bad_alloc).
bool IsAllocatable(const std::vector<int64_t>& dims, DataType type) {
  constexpr int64_t kMaxBytes = int64_t{1} << 40;
  const int64_t element = std::max<int64_t>(static_cast<int64_t>(ElementSize(type)), 1);
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) return false;
    if (d == 0) empty = true;
  }
  if (empty) return true;
  for (int64_t d : dims) {
    if (d > kMaxBytes / element / n) return false;
    n *= d;
  }
  return true;
}

// A scalar of `type` holding `value` (float16 rounded to nearest even, bool is value != 0).
// Undefined for types that have no numeric value (complex).
Tensor ScalarOfType(DataType type, double value) {
  if (type == DataType::kString) return Tensor(type, {});  // the empty string
  if (!Contains(kStoredTypes, type)) return Tensor();
  Tensor t(type, {});
  t.SetFromDouble(0, value);
  return t;
}

}  // namespace data_movement

namespace {

// Rows [r0, r1) and columns [c0, c1) of a rows x cols matrix of 4-byte elements into its
// transpose, 16 x 16 blocks at a time through registers.
__attribute__((target("avx512f"))) void TransposeTile4Avx512(const float* in, float* out,
                                                             int64_t rows, int64_t cols, int64_t r0,
                                                             int64_t r1, int64_t c0, int64_t c1) {
  for (int64_t r = r0; r < r1; r += 16) {
    const __mmask16 row_mask = avx512::FirstLanes(r1 - r);
    for (int64_t c = c0; c < c1; c += 16) {
      const int64_t nc = std::min<int64_t>(16, c1 - c);
      __m512 v[16];
      avx512::LoadTransposed(in + r * cols + c, cols, r1 - r, nc, v);
      for (int64_t j = 0; j < nc; ++j)
        _mm512_mask_storeu_ps(out + (c + j) * rows + r, row_mask, v[j]);
    }
  }
}

// The same tile through AVX2: 8 x 8 blocks transposed in registers (pairs, then pairs of pairs,
// then 128-bit halves), the edges element by element.
__attribute__((target("avx2"))) void TransposeTile4Avx2(const float* in, float* out, int64_t rows,
                                                        int64_t cols, int64_t r0, int64_t r1,
                                                        int64_t c0, int64_t c1) {
  int64_t r = r0;
  for (; r + 8 <= r1; r += 8) {
    int64_t c = c0;
    for (; c + 8 <= c1; c += 8) {
      __m256 v[8], t[8];
      for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(in + (r + i) * cols + c);
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
      }
      for (int i = 0; i < 8; i += 4) {
        v[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        v[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        v[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        v[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
      }
      for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(out + (c + i) * rows + r, _mm256_permute2f128_ps(v[i], v[i + 4], 0x20));
        _mm256_storeu_ps(out + (c + i + 4) * rows + r,
                         _mm256_permute2f128_ps(v[i], v[i + 4], 0x31));
      }
    }
    for (; c < c1; ++c) {
      for (int64_t i = r; i < r + 8; ++i) out[c * rows + i] = in[i * cols + c];
    }
  }
  for (; r < r1; ++r) {
    for (int64_t c = c0; c < c1; ++c) out[c * rows + r] = in[r * cols + c];
  }
}

// out[b, c, r] = in[b, r, c], in tiles so that both sides stay in cache.
template <typename T>
void BatchedTranspose2D(const T* in, T* out, int64_t batch, int64_t rows, int64_t cols,
                        ThreadPool* pool) {
  constexpr int64_t kTile = 32;
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2");
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  ParallelFor(pool, batch * row_tiles * col_tiles, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / (row_tiles * col_tiles);
      const int64_t r0 = (t / col_tiles % row_tiles) * kTile, c0 = (t % col_tiles) * kTile;
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      const T* in_b = in + b * rows * cols;
      T* out_b = out + b * rows * cols;
      if constexpr (sizeof(T) == 4 && std::is_trivially_copyable_v<T>) {
        if (avx512) {
          TransposeTile4Avx512(reinterpret_cast<const float*>(in_b),
                               reinterpret_cast<float*>(out_b), rows, cols, r0, r1, c0, c1);
          continue;
        }
        if (avx2) {
          TransposeTile4Avx2(reinterpret_cast<const float*>(in_b), reinterpret_cast<float*>(out_b),
                             rows, cols, r0, r1, c0, c1);
          continue;
        }
      }
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) out_b[c * rows + r] = in_b[r * cols + c];
      }
    }
  });
}

absl::Status Transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t rank = x.rank();
  std::vector<int64_t> perm = ctx.node.GetInts("perm");
  if (!ctx.node.HasAttribute("perm")) {
    perm.resize(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  }
  if (perm.size() != rank) {
    return ctx.Error("perm has ", perm.size(), " entries for a rank ", rank, " input");
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
      return ctx.Error("perm is not a permutation of 0..", rank - 1);
    }
    seen[p] = true;
  }
  OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, x.type()));
  std::vector<int64_t> out_dims(rank);
  for (size_t i = 0; i < rank; ++i) out_dims[i] = x.dim(perm[i]);

  // Unit dims move freely; adjacent input axes that stay adjacent move as one. What is left
  // is the real permutation, usually of rank 2 or 3.
  std::vector<int64_t> kept_perm;  // perm over the input axes with dim != 1
  for (int64_t p : perm) {
    if (x.dim(p) != 1) kept_perm.push_back(p);
  }
  std::vector<std::vector<int64_t>> groups;  // runs of consecutive input axes, in output order
  for (int64_t p : kept_perm) {
    if (!groups.empty() && groups.back().back() + 1 == p) {
      groups.back().push_back(p);
    } else {
      groups.push_back({p});
    }
  }
  std::vector<size_t> by_input(groups.size());  // group indices in input order
  std::iota(by_input.begin(), by_input.end(), 0);
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  if (std::is_sorted(by_input.begin(), by_input.end())) {
    ctx.outputs[0] = x.Reshaped(out_dims);  // only unit dims move: same element order
    return absl::OkStatus();
  }
  std::vector<int64_t> in_dims(groups.size()), merged_perm(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    int64_t n = 1;
    for (int64_t axis : groups[by_input[i]]) n *= x.dim(axis);
    in_dims[i] = n;
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    merged_perm[by_input[i]] = static_cast<int64_t>(i);
  }
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), out_dims);
  const size_t merged_rank = in_dims.size();
  bool batched_swap = merged_rank >= 2 && merged_perm[merged_rank - 2] == merged_rank - 1 &&
                      merged_perm[merged_rank - 1] == merged_rank - 2;
  for (size_t i = 0; i + 2 < merged_rank; ++i) batched_swap &= merged_perm[i] == i;
  if (batched_swap) {
    const int64_t rows = in_dims[merged_rank - 2], cols = in_dims[merged_rank - 1];
    const int64_t batch = Product(in_dims, 0, merged_rank - 2);
    VisitStorage(x.type(), [&]<typename T>() {
      BatchedTranspose2D(Elements<T>(x), MutableElements<T>(y), batch, rows, cols, ctx.pool);
    });
    return absl::OkStatus();
  }
  const std::vector<int64_t> strides = Strides(in_dims);
  std::vector<std::vector<int64_t>> offsets(merged_rank);
  for (size_t d = 0; d < merged_rank; ++d) {
    const int64_t axis = merged_perm[d];
    offsets[d].resize(in_dims[axis]);
    for (int64_t i = 0; i < in_dims[axis]; ++i) offsets[d][i] = i * strides[axis];
  }
  CopyByOffsets(x, std::move(offsets), nullptr, y, ctx.pool);
  return absl::OkStatus();
}

absl::Status Concat(KernelContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Error("no inputs");
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
  }
  const Tensor& first = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(first.rank());
  if (ctx.opset >= 4 && !ctx.node.HasAttribute("axis")) return ctx.Error("axis is required");
  int64_t axis = ctx.node.GetInt("axis", 1);  // opset 1-3 defaults to 1
  if (rank == 0) return ctx.Error("cannot concatenate scalars");
  if (axis < -rank || axis >= rank) return ctx.Error("axis ", axis, " out of range");
  if (axis < 0) axis += rank;
  OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, first.type()));
  std::vector<int64_t> out_dims = first.dims();
  out_dims[axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.type() != first.type()) return ctx.Error("inputs have different element types");
    if (static_cast<int64_t>(t.rank()) != rank) return ctx.Error("inputs have different ranks");
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && t.dim(d) != first.dim(d)) {
        return ctx.Error("input ", i, " is ", DescribeTensor(t), ", expected dims like ",
                         DescribeTensor(first), " except on axis ", axis);
      }
    }
    out_dims[axis] += t.dim(axis);
  }
  Tensor& y = ctx.OutputToOverwrite(0, first.type(), out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  const int64_t outer = Product(out_dims, 0, axis);
  const int64_t inner = Product(out_dims, axis + 1, out_dims.size());
  const int64_t out_block = out_dims[axis] * inner;
  VisitStorage(first.type(), [&]<typename T>() {
    T* dst = MutableElements<T>(y);
    if (outer >= 4 * (ctx.pool != nullptr ? ctx.pool->size() : 1)) {
      ParallelFor(ctx.pool, outer, std::max<int64_t>(1, 16384 / out_block),
                  [&](int64_t b, int64_t e) {
                    for (int64_t o = b; o < e; ++o) {
                      T* out_row = dst + o * out_block;
                      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
                        const Tensor& t = ctx.input(i);
                        const int64_t block = t.dim(axis) * inner;
                        const T* src = Elements<T>(t) + o * block;
                        std::copy(src, src + block, out_row);
                        out_row += block;
                      }
                    }
                  });
      return;
    }
    // Few outer blocks (e.g. channels of one image): the copies themselves are cut into
    // pieces for the threads.
    constexpr int64_t kPiece = int64_t{1} << 16;  // elements
    struct Piece {
      const T* src;
      T* dst;
      int64_t count;
    };
    std::vector<Piece> pieces;
    for (int64_t o = 0; o < outer; ++o) {
      T* out_row = dst + o * out_block;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor& t = ctx.input(i);
        const int64_t block = t.dim(axis) * inner;
        const T* src = Elements<T>(t) + o * block;
        for (int64_t at = 0; at < block; at += kPiece) {
          pieces.push_back({src + at, out_row + at, std::min(kPiece, block - at)});
        }
        out_row += block;
      }
    }
    const int64_t total = static_cast<int64_t>(pieces.size());
    ParallelForEach(y.numel() >= kPiece ? ctx.pool : nullptr, total, [&](int64_t p) {
      std::copy(pieces[p].src, pieces[p].src + pieces[p].count, pieces[p].dst);
    });
  });
  return absl::OkStatus();
}

absl::Status Split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.node.GetInt("axis", 0);
  if (axis < -rank || axis >= rank) return ctx.Error("axis ", axis, " out of range");
  if (axis < 0) axis += rank;
  OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, x.type()));
  const int64_t n_out = static_cast<int64_t>(ctx.outputs.size());
  if (n_out == 0) return ctx.Error("no outputs");
  const int64_t dim = x.dim(axis);
  std::optional<std::vector<int64_t>> given;
  if (ctx.has_input(1)) {
    given = ToInt64s(ctx.input(1));
  } else if (ctx.node.HasAttribute("split")) {
    given = ctx.node.GetInts("split");
  }
  OVFIX_ASSIGN_OR_RETURN(const std::vector<int64_t> sizes,
                         SplitSizes(ctx, dim, n_out, std::move(given)));
  const int64_t outer = Product(x.dims(), 0, axis);
  const int64_t inner = Product(x.dims(), axis + 1, x.rank());
  int64_t offset = 0;
  for (int64_t k = 0; k < n_out; ++k) {
    std::vector<int64_t> dims = x.dims();
    dims[axis] = sizes[k];
    Tensor& y = ctx.OutputToOverwrite(k, x.type(), dims);
    const int64_t block = sizes[k] * inner;
    if (y.numel() > 0) {
      VisitStorage(x.type(), [&]<typename T>() {
        const T* src = Elements<T>(x) + offset * inner;
        T* dst = MutableElements<T>(y);
        for (int64_t o = 0; o < outer; ++o) {
          std::copy(src + o * dim * inner, src + o * dim * inner + block, dst + o * block);
        }
      });
    }
    offset += sizes[k];
  }
  return absl::OkStatus();
}

absl::Status Tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return ctx.Error("repeats is required");
  const std::vector<int64_t> repeats = ToInt64s(ctx.input(1));
  if (repeats.size() != x.rank()) {
    return ctx.Error("repeats has ", repeats.size(), " entries for a rank ", x.rank(), " input");
  }
  OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, x.type()));
  std::vector<int64_t> out_dims(x.rank());
  for (size_t d = 0; d < x.rank(); ++d) {
    if (repeats[d] < 0) return ctx.Error("negative repeat ", repeats[d]);
    if (x.dim(d) > 0 && repeats[d] > std::numeric_limits<int64_t>::max() / x.dim(d)) {
      return ctx.Error("output too large");
    }
    out_dims[d] = x.dim(d) * repeats[d];
  }
  if (!IsAllocatable(out_dims, x.type())) return ctx.Error("output too large");
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  const std::vector<int64_t> strides = Strides(x.dims());
  std::vector<std::vector<int64_t>> offsets(x.rank());
  for (size_t d = 0; d < x.rank(); ++d) {
    offsets[d].resize(out_dims[d]);
    for (int64_t i = 0; i < out_dims[d]; ++i) offsets[d][i] = (i % x.dim(d)) * strides[d];
  }
  CopyByOffsets(x, std::move(offsets), nullptr, y, ctx.pool);
  return absl::OkStatus();
}

absl::Status Expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return ctx.Error("shape is required");
  const std::vector<int64_t> shape = ToInt64s(ctx.input(1));
  OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, x.type()));
  OVFIX_ASSIGN_OR_RETURN(const ExpandGeometry g, PlanExpand(ctx, x.dims(), shape));
  const std::vector<int64_t>& in_dims = g.input_dims;
  const std::vector<int64_t>& out_dims = g.dims;
  const size_t rank = out_dims.size();
  if (!IsAllocatable(out_dims, x.type())) return ctx.Error("output too large");
  if (out_dims == in_dims) {
    ctx.outputs[0] = x.Reshaped(out_dims);
    return absl::OkStatus();
  }
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  const std::vector<int64_t> strides = Strides(in_dims);
  std::vector<std::vector<int64_t>> offsets(rank);
  for (size_t d = 0; d < rank; ++d) {
    offsets[d].resize(out_dims[d]);
    for (int64_t i = 0; i < out_dims[d]; ++i) offsets[d][i] = in_dims[d] == 1 ? 0 : i * strides[d];
  }
  CopyByOffsets(x, std::move(offsets), nullptr, y, ctx.pool);
  return absl::OkStatus();
}

}  // namespace

void AddTransposeConcatKernels(std::vector<KernelDef>& table) {
  AddNativeKernels(table, {{"Transpose", 1, Transpose},
                           {"Concat", 1, Concat},
                           {"Split", 1, Split},
                           {"Tile", 6, Tile},
                           {"Expand", 8, Expand}});
}

}  // namespace ovfix::exec
