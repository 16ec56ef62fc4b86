// ovfix.fused.Attention(Q, K, V, [bias], [viewed_bias], [fill_condition]): softmax attention as
// exporters write it, MatMul(Softmax(Add(Add(Where(c, fill, Mul(MatMul(Q, K^T), scale)), bias),
// viewed_bias)), V), as one node (rules/builtin/session_attention_fusion.rules puts it in place
// of the pattern):
//   Q [..., S, D], K [..., T, D] (transB = 1, the default; transB = 0: K^T given, [..., D, T]),
//   V [..., T, Dv], batch dims broadcast as MatMul's; Y [..., S, Dv];
//   scores = Q K^T, then * scale (attribute `scale`) or / divisor (attribute `divisor`);
//   where fill_condition (bool, input 5, broadcast to the scores) holds (`fill_when` = 1, the
//   default: masked_fill(mask, fill)) or does not (`fill_when` = 0: torch.where(causal, scores,
//   fill)), the scaled score is replaced by the attribute `fill`;
//   + bias, broadcast to the scores' shape without widening it (an additive mask, a relative
//   position bias);
//   + viewed_bias, broadcast to the scores seen as the shape `view` (same elements, same last
//   dim T: Swin's window mask, added between a Reshape to [batch, windows, heads, S, T] and one
//   back), or to the scores' shape when `view` is absent;
//   softmax over the last axis, times V.
// The data movement exporters write around attention is read in place
// (converter/session_attention_layouts.h puts it into the node): an input X of Q, K or V with
// `q_perm` / `k_perm` / `v_perm` stands for Transpose(X, perm), with `q_index` / `k_index` /
// `v_index` for Gather(that, index, axis = 0) (a qkv projection split into heads by
// Reshape-Transpose-Gather); `q_scale` multiplies Q's elements first (Mul(Q, q_scale), rounded
// as the Mul rounds: Swin scales q before the product); `output_perm` writes
// Transpose(Y, output_perm) (the heads merged back) instead of Y.
// Each (batch, head) is computed a block of query rows at a time: the block's scores, their
// softmax and their product with V, so the [batch, heads, S, T] scores are never held whole.
// The heads are small (exporters' D is 32 to 128, S and T from 49 up), so the products are not
// the GEMM's (which packs Q, K and V per call): K, V and the block's Q are copied once into
// panels of the kernel's own layout, whatever the strides they are read with, and a
// register-tiled loop of 4 rows multiplies them. Every step rounds as the unfused nodes
// do (products summed in depth order with fused multiply-adds, as the GEMM's micro-kernels
// do; the scale, the fill and each bias applied one after the other; the Softmax kernel's
// max-shifted exponentials summed in double), so the result differs from the graph as written at
// most by the order of the products' sums.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exec/cpu/broadcast.h"
#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/vector_math.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// Scores a block of query rows holds (512 KiB): they stay in the core's L2 cache between the
// softmax and the product with V.
constexpr int64_t kBlockScores = 1 << 17;
// The product's register tile: 4 rows by 16 columns (two AVX2 vectors, four SSE ones), or by 8
// at the end of a row.
constexpr int64_t kTileRows = 4, kTileColumns = 16;

int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// An input read as if broadcast to `target` (which it must not widen): the element (row r of
// the target's rows, column t) is at r's unravelled index . row_strides + t * col. Float (an
// additive bias) or bool (the fill condition).
struct BroadcastReader {
  const float* data = nullptr;
  const bool* condition = nullptr;
  std::vector<int64_t> row_dims, row_strides;  // the target's dims but the last, and strides
  int64_t column_stride = 0;

  static absl::StatusOr<BroadcastReader> Make(const Tensor& t, std::span<const int64_t> target,
                                              DataType type = DataType::kFloat) {
    if (t.type() != type) {
      return absl::InvalidArgumentError(type == DataType::kFloat ? "expects float biases"
                                                                 : "expects a bool fill_condition");
    }
    const int64_t rank = static_cast<int64_t>(target.size());
    if (t.rank() > static_cast<size_t>(rank)) {
      return absl::InvalidArgumentError(absl::StrCat("bias ", ShapeToString(t.dims()),
                                                     " widens the scores ", ShapeToString(target)));
    }
    BroadcastReader r;
    if (type == DataType::kFloat) {
      r.data = t.data<float>();
    } else {
      r.condition = t.data<bool>();
    }
    std::vector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    for (int64_t d = rank - 1, e = static_cast<int64_t>(t.rank()) - 1; e >= 0; --d, --e) {
      const int64_t size = t.dim(e);
      if (size != 1 && size != target[d]) {
        return absl::InvalidArgumentError(absl::StrCat("bias ", ShapeToString(t.dims()),
                                                       " does not broadcast to the scores ",
                                                       ShapeToString(target)));
      }
      strides[d] = size == 1 ? 0 : stride;
      stride *= size;
    }
    r.row_dims.assign(target.begin(), target.end() - 1);
    r.row_strides.assign(strides.begin(), strides.end() - 1);
    r.column_stride = strides.back();
    return r;
  }

  // Offset of element 0 of row `row` (rows counted over the target's dims but the last).
  int64_t RowOffset(int64_t row) const {
    int64_t offset = 0;
    for (int64_t d = static_cast<int64_t>(row_dims.size()) - 1; d >= 0; --d) {
      offset += (row % row_dims[d]) * row_strides[d];
      row /= row_dims[d];
    }
    return offset;
  }

  void AddRow(int64_t row, float* scores, int64_t n) const {
    const float* b = data + RowOffset(row);
    if (column_stride == 0) {
      const float v = b[0];
      for (int64_t t = 0; t < n; ++t) scores[t] += v;
    } else {
      for (int64_t t = 0; t < n; ++t) scores[t] += b[t];
    }
  }

  // scores[t] = fill where the condition is `when`, as Where(condition, fill, scores) does for
  // `when` true and Where(condition, scores, fill) for false.
  void FillRow(int64_t row, float* scores, int64_t n, float fill, bool when) const {
    const bool* c = condition + RowOffset(row);
    if (column_stride == 0) {
      if (c[0] == when) std::fill(scores, scores + n, fill);
    } else {
      for (int64_t t = 0; t < n; ++t) scores[t] = c[t] == when ? fill : scores[t];
    }
  }
};

// Q, K or V as the node reads it: Transpose(input, `<name>_perm`), then the slice at
// `<name>_index` of its first axis, as dims and element strides into the input's data.
struct OperandView {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;

  static absl::StatusOr<OperandView> Make(const Tensor& t, const Node& node, const char* name) {
    OperandView v;
    v.dims = t.dims();
    const int64_t rank = static_cast<int64_t>(v.dims.size());
    v.strides.assign(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d) v.strides[d] = v.strides[d + 1] * v.dims[d + 1];
    const std::string perm_name = absl::StrCat(name, "_perm");
    if (node.HasAttribute(perm_name)) {
      const std::vector<int64_t> perm = node.GetInts(perm_name);
      std::vector<bool> seen(rank, false);
      bool valid = static_cast<int64_t>(perm.size()) == rank;
      for (int64_t p : perm) {
        valid = valid && p >= 0 && p < rank && !seen[p];
        if (valid) seen[p] = true;
      }
      if (!valid) {
        return absl::InvalidArgumentError(
            absl::StrCat(perm_name, " is not a permutation of the ", rank, " axes of ", name));
      }
      std::vector<int64_t> dims(rank), strides(rank);
      for (int64_t d = 0; d < rank; ++d) {
        dims[d] = v.dims[perm[d]];
        strides[d] = v.strides[perm[d]];
      }
      v.dims = std::move(dims);
      v.strides = std::move(strides);
    }
    const std::string index_name = absl::StrCat(name, "_index");
    if (node.HasAttribute(index_name)) {
      int64_t index = node.GetInt(index_name, 0);
      if (rank < 3) return absl::InvalidArgumentError(absl::StrCat(index_name, " on rank ", rank));
      if (index < 0) index += v.dims[0];
      if (index < 0 || index >= v.dims[0]) {
        return absl::InvalidArgumentError(
            absl::StrCat(index_name, " ", node.GetInt(index_name, 0), " is out of ", v.dims[0]));
      }
      v.offset = index * v.strides[0];
      v.dims.erase(v.dims.begin());
      v.strides.erase(v.strides.begin());
    }
    return v;
  }

  std::vector<int64_t> batch_dims() const { return {dims.begin(), dims.end() - 2}; }

  // The element offset of the matrix at `batch`, a flat index over the batch dims.
  int64_t MatrixOffset(int64_t batch) const {
    int64_t o = offset;
    for (int64_t d = static_cast<int64_t>(dims.size()) - 3; d >= 0; --d) {
      o += (batch % dims[d]) * strides[d];
      batch /= dims[d];
    }
    return o;
  }
  int64_t row_stride() const { return strides[strides.size() - 2]; }
  int64_t column_stride() const { return strides.back(); }
};

// c[r * ldc + j] = sum over k < depth of a[r * lda + k] * b[k * ldb + j], for r < rows (a
// multiple of kTileRows) and j < columns (a multiple of kTileColumns / 2), each sum in order of k.
using ProductFn = void (*)(const float* a, int64_t lda, int64_t rows, const float* b, int64_t ldb,
                           int64_t columns, int64_t depth, float* c, int64_t ldc);

// One tile of 4 rows by V vectors of 8 columns.
template <int V>
__attribute__((target("avx2,fma"), always_inline)) inline void TileAvx2(const float* a, int64_t lda,
                                                                        const float* b, int64_t ldb,
                                                                        int64_t depth, float* c,
                                                                        int64_t ldc) {
  __m256 acc[kTileRows][V];
  for (int r = 0; r < kTileRows; ++r) {
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < depth; ++k) {
    __m256 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm256_loadu_ps(b + k * ldb + 8 * v);
    for (int r = 0; r < kTileRows; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * lda + k);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(x, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < kTileRows; ++r) {
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
  }
}

__attribute__((target("avx2,fma"))) void ProductAvx2(const float* a, int64_t lda, int64_t rows,
                                                     const float* b, int64_t ldb, int64_t columns,
                                                     int64_t depth, float* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; r += kTileRows) {
    int64_t j = 0;
    for (; j + kTileColumns <= columns; j += kTileColumns) {
      TileAvx2<2>(a + r * lda, lda, b + j, ldb, depth, c + r * ldc + j, ldc);
    }
    if (j < columns) TileAvx2<1>(a + r * lda, lda, b + j, ldb, depth, c + r * ldc + j, ldc);
  }
}

// The portable tile: one row of up to 16 columns at a time, in vectors the compiler picks
// (each product rounded before it is added, as the portable GEMM kernel does).
void ProductPortable(const float* a, int64_t lda, int64_t rows, const float* b, int64_t ldb,
                     int64_t columns, int64_t depth, float* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < columns; j += kTileColumns) {
      const int64_t width = std::min(kTileColumns, columns - j);
      float sums[kTileColumns] = {};
      for (int64_t k = 0; k < depth; ++k) {
        const float x = a[r * lda + k];
        const float* bk = b + k * ldb + j;
        for (int64_t l = 0; l < kTileColumns; ++l) sums[l] += x * (l < width ? bk[l] : 0.0f);
      }
      std::memcpy(c + r * ldc + j, sums, width * sizeof(float));
    }
  }
}

// The AVX2 tile wherever the GEMM runs AVX2 or AVX-512 (which has AVX2), else the portable one.
ProductFn CurrentProduct() {
  const std::string_view isa = CurrentGemmGeometry().name;
  return isa == "avx2" || isa == "avx512" ? &ProductAvx2 : &ProductPortable;
}

// Softmax of one row in place, as the Softmax kernel computes a contiguous line.
void SoftmaxRow(float* row, int64_t n) {
  const float max = MaxFloats(row, n);
  if (max != max) {  // a NaN anywhere: the whole line is NaN, as unfused
    std::fill(row, row + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const double sum = ExpShiftedSum(row, max, row, n);
  ScaleInDouble(row, n, 1.0 / sum);
}

// Everything a task needs to compute blocks of query rows.
struct Problem {
  int64_t s = 0, t = 0, depth = 0, dv = 0;
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  float* y = nullptr;
  // Element strides: Q's rows and depths, K's keys and depths, V's keys and columns, Y's.
  int64_t q_row = 0, q_col = 0, k_row = 0, k_col = 0, v_row = 0, v_col = 0, y_row = 0, y_col = 0;
  // Per output batch: where its Q, K, V and Y matrices start, and its scores' batch.
  std::vector<int64_t> q_at, k_at, v_at, y_at, scores_batch;
  bool has_scale = false, has_divisor = false, has_q_scale = false;
  float scale = 1, divisor = 1, q_scale = 1;
  const BroadcastReader* bias = nullptr;
  const BroadcastReader* viewed_bias = nullptr;
  const BroadcastReader* fill_condition = nullptr;
  float fill = 0;
  bool fill_when = true;
  int64_t rows_per_block = 1, blocks_per_batch = 1;
  ProductFn product = nullptr;
};

// A thread's panels: K^T (depth x padded keys), V (keys x padded columns), the block's Q,
// its scores and its output, and which K and V the panels hold: their offsets in the inputs
// of the kernel call `call` (another call's inputs may be other tensors at the same address).
struct Panels {
  std::vector<float> keys, values, queries, scores, out;
  int64_t keys_at = -1, values_at = -1;
  uint64_t call = 0;
};

// Numbers the kernel calls, for Panels::call.
std::atomic<uint64_t> next_call{1};

void PackKeys(const Problem& p, int64_t at, int64_t t_pad, Panels& w) {
  if (w.keys_at == at) return;
  w.keys.assign(p.depth * t_pad, 0.0f);
  for (int64_t j = 0; j < p.t; ++j) {
    const float* key = p.k + at + j * p.k_row;
    for (int64_t d = 0; d < p.depth; ++d) w.keys[d * t_pad + j] = key[d * p.k_col];
  }
  w.keys_at = at;
}

void PackValues(const Problem& p, int64_t at, int64_t dv_pad, Panels& w) {
  if (w.values_at == at) return;
  w.values.resize(p.t * dv_pad);
  for (int64_t j = 0; j < p.t; ++j) {
    const float* value = p.v + at + j * p.v_row;
    float* dst = w.values.data() + j * dv_pad;
    if (p.v_col == 1) {
      std::memcpy(dst, value, p.dv * sizeof(float));
    } else {
      for (int64_t c = 0; c < p.dv; ++c) dst[c] = value[c * p.v_col];
    }
    std::fill(dst + p.dv, dst + dv_pad, 0.0f);
  }
  w.values_at = at;
}

// Rows [row0, row0 + rows) of output batch b.
void ComputeBlock(const Problem& p, int64_t b, int64_t row0, int64_t rows, Panels& w) {
  const int64_t t_pad = RoundUp(p.t, kTileColumns / 2), dv_pad = RoundUp(p.dv, kTileColumns / 2);
  const int64_t rows_pad = RoundUp(rows, kTileRows);
  PackKeys(p, p.k_at[b], t_pad, w);
  PackValues(p, p.v_at[b], dv_pad, w);
  w.queries.assign(rows_pad * p.depth, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* query = p.q + p.q_at[b] + (row0 + r) * p.q_row;
    float* dst = w.queries.data() + r * p.depth;
    for (int64_t d = 0; d < p.depth; ++d) dst[d] = query[d * p.q_col];
    if (p.has_q_scale) {
      for (int64_t d = 0; d < p.depth; ++d) dst[d] *= p.q_scale;
    }
  }
  w.scores.resize(rows_pad * t_pad);
  p.product(w.queries.data(), p.depth, rows_pad, w.keys.data(), t_pad, t_pad, p.depth,
            w.scores.data(), t_pad);
  const int64_t first_row = p.scores_batch[b] * p.s + row0;  // of the scores' rows
  for (int64_t r = 0; r < rows; ++r) {
    float* row = w.scores.data() + r * t_pad;
    if (p.has_scale) {
      for (int64_t j = 0; j < p.t; ++j) row[j] *= p.scale;
    } else if (p.has_divisor) {
      for (int64_t j = 0; j < p.t; ++j) row[j] /= p.divisor;
    }
    if (p.fill_condition != nullptr) {
      p.fill_condition->FillRow(first_row + r, row, p.t, p.fill, p.fill_when);
    }
    if (p.bias != nullptr) p.bias->AddRow(first_row + r, row, p.t);
    if (p.viewed_bias != nullptr) p.viewed_bias->AddRow(first_row + r, row, p.t);
    SoftmaxRow(row, p.t);
  }
  // The padding rows (products of zero queries) are computed with the others and dropped.
  w.out.resize(rows_pad * dv_pad);
  p.product(w.scores.data(), t_pad, rows_pad, w.values.data(), dv_pad, dv_pad, p.t, w.out.data(),
            dv_pad);
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = w.out.data() + r * dv_pad;
    float* dst = p.y + p.y_at[b] + (row0 + r) * p.y_row;
    if (p.y_col == 1) {
      std::memcpy(dst, src, p.dv * sizeof(float));
    } else {
      for (int64_t c = 0; c < p.dv; ++c) dst[c * p.y_col] = src[c];
    }
  }
}

absl::Status AttentionKernel(KernelContext& ctx) {
  if (ctx.num_inputs() < 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) {
    return ctx.Error("needs inputs Q, K and V");
  }
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  if (q.type() != DataType::kFloat || k.type() != DataType::kFloat ||
      v.type() != DataType::kFloat) {
    return ctx.Error("expects float Q, K and V");
  }
  auto q_view = OperandView::Make(q, ctx.node, "q");
  auto k_view = OperandView::Make(k, ctx.node, "k");
  auto v_view = OperandView::Make(v, ctx.node, "v");
  for (const auto* view : {&q_view, &k_view, &v_view}) {
    if (!view->ok()) return ctx.Error(view->status().message());
  }
  if (q_view->dims.size() < 2 || k_view->dims.size() < 2 || v_view->dims.size() < 2) {
    return ctx.Error("expects Q, K and V of rank 2 or more");
  }
  const bool trans_b = ctx.node.GetInt("transB", 1) != 0;
  Problem p;
  p.has_scale = ctx.node.HasAttribute("scale");
  p.has_divisor = ctx.node.HasAttribute("divisor");
  if (p.has_scale && p.has_divisor) return ctx.Error("takes a scale or a divisor, not both");
  p.scale = ctx.node.GetFloat("scale", 1.0f);
  p.divisor = ctx.node.GetFloat("divisor", 1.0f);
  p.has_q_scale = ctx.node.HasAttribute("q_scale");
  p.q_scale = ctx.node.GetFloat("q_scale", 1.0f);
  if (!trans_b) {  // K^T given: the keys are its columns
    std::vector<int64_t>& dims = k_view->dims;
    std::vector<int64_t>& strides = k_view->strides;
    std::swap(dims[dims.size() - 2], dims.back());
    std::swap(strides[strides.size() - 2], strides.back());
  }

  const std::vector<int64_t>& qd = q_view->dims;
  const std::vector<int64_t>& kd = k_view->dims;
  const std::vector<int64_t>& vd = v_view->dims;
  p.s = qd[qd.size() - 2];
  p.depth = qd.back();
  p.t = kd[kd.size() - 2];
  if (kd.back() != p.depth) {
    return ctx.Error("Q ", ShapeToString(qd), " and K ", ShapeToString(kd), " differ in depth");
  }
  if (vd[vd.size() - 2] != p.t) {
    return ctx.Error("V ", ShapeToString(vd), " does not have the ", p.t, " rows of K");
  }
  p.dv = vd.back();
  const std::vector<int64_t> q_batch = q_view->batch_dims(), k_batch = k_view->batch_dims();
  const std::vector<int64_t> v_batch = v_view->batch_dims();
  auto scores_batch = BroadcastShape(q_batch, k_batch);
  if (!scores_batch.ok()) return ctx.Error(scores_batch.status().message());
  const std::vector<std::vector<int64_t>> batch_dims = {q_batch, k_batch, v_batch};
  auto plan = BroadcastPlan::Make(batch_dims);
  if (!plan.ok()) return ctx.Error(plan.status().message());
  std::vector<int64_t> y_dims = plan->output_dims();
  y_dims.push_back(p.s);
  y_dims.push_back(p.dv);
  // The output tensor: Y, or Transpose(Y, output_perm); Y's strides within it.
  const int64_t y_rank = static_cast<int64_t>(y_dims.size());
  std::vector<int64_t> out_dims = y_dims, y_strides(y_rank);
  std::vector<int64_t> perm(y_rank);
  for (int64_t d = 0; d < y_rank; ++d) perm[d] = d;
  if (ctx.node.HasAttribute("output_perm")) {
    perm = ctx.node.GetInts("output_perm");
    std::vector<bool> seen(y_rank, false);
    bool valid = static_cast<int64_t>(perm.size()) == y_rank;
    for (int64_t a : perm) {
      valid = valid && a >= 0 && a < y_rank && !seen[a];
      if (valid) seen[a] = true;
    }
    if (!valid) return ctx.Error("output_perm is not a permutation of the output's axes");
    for (int64_t d = 0; d < y_rank; ++d) out_dims[d] = y_dims[perm[d]];
  }
  for (int64_t d = y_rank - 1, stride = 1; d >= 0; --d) {
    y_strides[perm[d]] = stride;
    stride *= out_dims[d];
  }
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, out_dims));
  Tensor& y = ctx.OutputToOverwrite(0, DataType::kFloat, out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  if (p.t == 0) {  // no keys: products over nothing, as MatMul gives them
    std::fill(y.data<float>(), y.data<float>() + y.numel(), 0.0f);
    return absl::OkStatus();
  }

  const std::vector<int64_t> q_offsets = plan->OperandOffsets(0);
  const std::vector<int64_t> k_offsets = plan->OperandOffsets(1);
  const std::vector<int64_t> v_offsets = plan->OperandOffsets(2);
  const int64_t batches = static_cast<int64_t>(q_offsets.size());
  // Which batch of the scores each output batch reads (V may broadcast over more batches).
  p.scores_batch.assign(batches, 0);
  if (!scores_batch->empty() || !v_batch.empty()) {
    auto to_scores = BroadcastPlan::Make(*scores_batch, v_batch);
    if (!to_scores.ok()) return ctx.Error(to_scores.status().message());
    p.scores_batch = to_scores->OperandOffsets(0);
  }
  OperandView y_view{y_dims, y_strides, 0};
  for (int64_t b = 0; b < batches; ++b) {
    p.q_at.push_back(q_view->MatrixOffset(q_offsets[b]));
    p.k_at.push_back(k_view->MatrixOffset(k_offsets[b]));
    p.v_at.push_back(v_view->MatrixOffset(v_offsets[b]));
    p.y_at.push_back(y_view.MatrixOffset(b));
  }
  p.q_row = q_view->row_stride();
  p.q_col = q_view->column_stride();
  p.k_row = k_view->row_stride();
  p.k_col = k_view->column_stride();
  p.v_row = v_view->row_stride();
  p.v_col = v_view->column_stride();
  p.y_row = y_view.row_stride();
  p.y_col = y_view.column_stride();

  std::vector<int64_t> scores_dims = *scores_batch;
  scores_dims.push_back(p.s);
  scores_dims.push_back(p.t);
  std::optional<BroadcastReader> bias, viewed_bias, fill_condition;
  if (ctx.has_input(3)) {
    auto reader = BroadcastReader::Make(ctx.input(3), scores_dims);
    if (!reader.ok()) return ctx.Error(reader.status().message());
    bias = *std::move(reader);
    p.bias = &*bias;
  }
  if (ctx.has_input(4)) {
    std::vector<int64_t> view = scores_dims;
    if (ctx.node.HasAttribute("view")) {
      view = ctx.node.GetInts("view");
      if (view.empty() || view.back() != p.t ||
          Tensor::NumElements(view) != Tensor::NumElements(scores_dims)) {
        return ctx.Error("view ", ShapeToString(view), " is not a view of the scores ",
                         ShapeToString(scores_dims), " with the same last dim");
      }
    }
    auto reader = BroadcastReader::Make(ctx.input(4), view);
    if (!reader.ok()) return ctx.Error(reader.status().message());
    viewed_bias = *std::move(reader);
    p.viewed_bias = &*viewed_bias;
  }
  if (ctx.has_input(5)) {
    auto reader = BroadcastReader::Make(ctx.input(5), scores_dims, DataType::kBool);
    if (!reader.ok()) return ctx.Error(reader.status().message());
    fill_condition = *std::move(reader);
    p.fill_condition = &*fill_condition;
    p.fill = ctx.node.GetFloat("fill", 0.0f);
    p.fill_when = ctx.node.GetInt("fill_when", 1) != 0;
  }
  p.q = q.data<float>();
  p.k = k.data<float>();
  p.v = v.data<float>();
  p.y = y.data<float>();
  p.product = CurrentProduct();

  p.rows_per_block = std::clamp<int64_t>(kBlockScores / std::max<int64_t>(p.t, 1), 1, p.s);
  // Few heads: smaller blocks (of 16 rows at least), so that every thread has two or more.
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  const int64_t wanted_blocks = (2 * threads + batches - 1) / batches;
  if (wanted_blocks > 1) {
    p.rows_per_block = std::min(p.rows_per_block,
                                std::max<int64_t>(16, (p.s + wanted_blocks - 1) / wanted_blocks));
  }
  p.blocks_per_batch = (p.s + p.rows_per_block - 1) / p.rows_per_block;
  // One task per block, in order of batch: ParallelForEach gives each thread a run of them
  // (consecutive blocks of one head share its K and V panels) and lets idle threads take the
  // rest one at a time, for the price of an atomic increment each.
  const int64_t blocks = batches * p.blocks_per_batch;
  const uint64_t call = next_call++;
  ParallelForEach(ctx.pool, blocks, [&](int64_t block) {
    thread_local Panels panels;
    if (panels.call != call) {
      panels.call = call;
      panels.keys_at = panels.values_at = -1;
    }
    const int64_t b = block / p.blocks_per_batch;
    const int64_t row0 = (block % p.blocks_per_batch) * p.rows_per_block;
    ComputeBlock(p, b, row0, std::min(p.rows_per_block, p.s - row0), panels);
  });
  return absl::OkStatus();
}

}  // namespace

void AddFusedAttentionKernels(std::vector<KernelDef>& table) {
  table.push_back({"ovfix.fused", "Attention", 1, 1, &AttentionKernel});
}

}  // namespace ovfix::exec
