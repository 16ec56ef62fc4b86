// ovfix.fused.Attention(Q, K, V, [bias], [viewed_bias]): softmax attention as exporters write
// it, MatMul(Softmax(Add(Add(Mul(MatMul(Q, K^T), scale), bias), viewed_bias)), V), as one node
// (rules/builtin/session_attention_fusion.rules puts it in place of the pattern):
//   Q [..., S, D], K [..., T, D] (transB = 1, the default; transB = 0: K^T given, [..., D, T]),
//   V [..., T, Dv], batch dims broadcast as MatMul's; Y [..., S, Dv];
//   scores = Q K^T, then * scale (attribute `scale`) or / divisor (attribute `divisor`);
//   + bias, broadcast to the scores' shape without widening it (an additive mask, a relative
//   position bias);
//   + viewed_bias, broadcast to the scores seen as the shape `view` (same elements, same last
//   dim T: Swin's window mask, added between a Reshape to [batch, windows, heads, S, T] and one
//   back), or to the scores' shape when `view` is absent;
//   softmax over the last axis, times V.
// Each (batch, head) is computed a block of query rows at a time: the block's scores, their
// softmax and their product with V, so the [batch, heads, S, T] scores are never held whole.
// Every step rounds as the unfused nodes do (the same GEMM, the scale and each bias added one
// after the other, the Softmax kernel's max-shifted exponentials summed in double), so the
// result differs from the graph as written at most by the order of the products' sums.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "exec/cpu/broadcast.h"
#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/vector_math.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// Scores a block of query rows holds (512 KiB): they stay in the core's L2 cache between the
// softmax and the product with V, and blocks of many rows pack K and V fewer times.
constexpr int64_t kBlockScores = 1 << 17;

// An additive input read as if broadcast to `target` (which it must not widen): the element
// (row r of the target's rows, column t) is at r's unravelled index . row_strides + t * col.
struct BroadcastReader {
  const float* data = nullptr;
  std::vector<int64_t> row_dims, row_strides;  // the target's dims but the last, and strides
  int64_t column_stride = 0;

  static absl::StatusOr<BroadcastReader> Make(const Tensor& t, std::span<const int64_t> target) {
    if (t.type() != DataType::kFloat) return absl::InvalidArgumentError("expects float biases");
    const int64_t rank = static_cast<int64_t>(target.size());
    if (t.rank() > static_cast<size_t>(rank)) {
      return absl::InvalidArgumentError(absl::StrCat("bias ", ShapeToString(t.dims()),
                                                     " widens the scores ", ShapeToString(target)));
    }
    BroadcastReader r;
    r.data = t.data<float>();
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
};

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
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2) {
    return ctx.Error("expects Q, K and V of rank 2 or more");
  }
  const bool trans_b = ctx.node.GetInt("transB", 1) != 0;
  const bool has_scale = ctx.node.HasAttribute("scale");
  const bool has_divisor = ctx.node.HasAttribute("divisor");
  if (has_scale && has_divisor) return ctx.Error("takes a scale or a divisor, not both");
  const float scale = ctx.node.GetFloat("scale", 1.0f);
  const float divisor = ctx.node.GetFloat("divisor", 1.0f);

  const std::vector<int64_t>& qd = q.dims();
  const std::vector<int64_t>& kd = k.dims();
  const std::vector<int64_t>& vd = v.dims();
  const int64_t s = qd[qd.size() - 2], depth = qd.back();
  const int64_t t = trans_b ? kd[kd.size() - 2] : kd.back();
  if ((trans_b ? kd.back() : kd[kd.size() - 2]) != depth) {
    return ctx.Error("Q ", ShapeToString(qd), " and K ", ShapeToString(kd), " differ in depth");
  }
  if (vd[vd.size() - 2] != t) {
    return ctx.Error("V ", ShapeToString(vd), " does not have the ", t, " rows of K");
  }
  const int64_t dv = vd.back();
  const std::vector<int64_t> q_batch(qd.begin(), qd.end() - 2), k_batch(kd.begin(), kd.end() - 2);
  const std::vector<int64_t> v_batch(vd.begin(), vd.end() - 2);
  auto scores_batch = BroadcastShape(q_batch, k_batch);
  if (!scores_batch.ok()) return ctx.Error(scores_batch.status().message());
  const std::vector<std::vector<int64_t>> batch_dims = {q_batch, k_batch, v_batch};
  auto plan = BroadcastPlan::Make(batch_dims);
  if (!plan.ok()) return ctx.Error(plan.status().message());
  std::vector<int64_t> dims = plan->output_dims();
  dims.push_back(s);
  dims.push_back(dv);
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  Tensor& y = ctx.OutputToOverwrite(0, DataType::kFloat, dims);
  if (y.numel() == 0) return absl::OkStatus();
  const std::vector<int64_t> q_offsets = plan->OperandOffsets(0);
  const std::vector<int64_t> k_offsets = plan->OperandOffsets(1);
  const std::vector<int64_t> v_offsets = plan->OperandOffsets(2);
  // Which batch of the scores each output batch reads (V may broadcast over more batches).
  std::vector<int64_t> score_offsets(q_offsets.size(), 0);
  if (!scores_batch->empty() || !v_batch.empty()) {
    auto to_scores = BroadcastPlan::Make(*scores_batch, v_batch);
    if (!to_scores.ok()) return ctx.Error(to_scores.status().message());
    score_offsets = to_scores->OperandOffsets(0);
  }

  std::vector<int64_t> scores_dims = *scores_batch;
  scores_dims.push_back(s);
  scores_dims.push_back(t);
  std::optional<BroadcastReader> bias, viewed_bias;
  if (ctx.has_input(3)) {
    auto reader = BroadcastReader::Make(ctx.input(3), scores_dims);
    if (!reader.ok()) return ctx.Error(reader.status().message());
    bias = *std::move(reader);
  }
  if (ctx.has_input(4)) {
    std::vector<int64_t> view = scores_dims;
    if (ctx.node.HasAttribute("view")) {
      view = ctx.node.GetInts("view");
      if (view.empty() || view.back() != t ||
          Tensor::NumElements(view) != Tensor::NumElements(scores_dims)) {
        return ctx.Error("view ", ShapeToString(view), " is not a view of the scores ",
                         ShapeToString(scores_dims), " with the same last dim");
      }
    }
    auto reader = BroadcastReader::Make(ctx.input(4), view);
    if (!reader.ok()) return ctx.Error(reader.status().message());
    viewed_bias = *std::move(reader);
  }

  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  float* out = y.data<float>();
  const int64_t batches = static_cast<int64_t>(q_offsets.size());
  int64_t rows_per_block = std::clamp<int64_t>(kBlockScores / std::max<int64_t>(t, 1), 1, s);
  // Few heads: smaller blocks (of 16 rows at least), so that every thread has two or more.
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  const int64_t wanted_blocks = (2 * threads + batches - 1) / batches;
  if (wanted_blocks > 1) {
    rows_per_block =
        std::min(rows_per_block, std::max<int64_t>(16, (s + wanted_blocks - 1) / wanted_blocks));
  }
  const int64_t blocks_per_batch = (s + rows_per_block - 1) / rows_per_block;
  const int64_t tasks = batches * blocks_per_batch;
  ParallelForEach(ctx.pool, tasks, [&](int64_t task) {
    thread_local std::vector<float> scores;
    const int64_t b = task / blocks_per_batch;
    const int64_t row0 = (task % blocks_per_batch) * rows_per_block;
    const int64_t rows = std::min(rows_per_block, s - row0);
    scores.resize(rows * t);
    const float* qb = qp + (q_offsets[b] * s + row0) * depth;
    const float* kb = kp + k_offsets[b] * t * depth;
    Sgemm(false, trans_b, rows, t, depth, 1.0f, qb, depth, kb, trans_b ? depth : t, 0.0f,
          scores.data(), t, nullptr);
    const int64_t first_row = score_offsets[b] * s + row0;  // of the scores' rows
    for (int64_t r = 0; r < rows; ++r) {
      float* row = scores.data() + r * t;
      if (has_scale) {
        for (int64_t j = 0; j < t; ++j) row[j] *= scale;
      } else if (has_divisor) {
        for (int64_t j = 0; j < t; ++j) row[j] /= divisor;
      }
      if (bias) bias->AddRow(first_row + r, row, t);
      if (viewed_bias) viewed_bias->AddRow(first_row + r, row, t);
      SoftmaxRow(row, t);
    }
    Sgemm(false, false, rows, dv, t, 1.0f, scores.data(), t, vp + v_offsets[b] * t * dv, dv, 0.0f,
          out + (b * s + row0) * dv, dv, nullptr);
  });
  return absl::OkStatus();
}

}  // namespace

void AddFusedAttentionKernels(std::vector<KernelDef>& table) {
  table.push_back({"ovfix.fused", "Attention", 1, 1, &AttentionKernel});
}

}  // namespace ovfix::exec
