// Attention-23 and Attention-24: scaled dot-product attention over Q, K and V, per query row
//   scores[j] = scale * q . k_j                       (qk_matmul_output mode 0)
//   scores[j] = softcap * tanh(scores[j] / softcap)   when softcap > 0 (mode 1)
//   scores[j] += bias[j]                              (mode 2)
//   p = softmax(scores)                               (mode 3)
//   y = sum_j p[j] v_j
// The bias gathers attn_mask (bool: false gives -inf; float: added; a last dim shorter than the
// keys counts as -inf past its end), the causal frontier (key j is seen by query i iff
// j <= i + offset, offset the keys before the query block: past_sequence_length, or
// nonpad_kv_seqlen - q_sequence_length with Attention-24's external cache) and the padding of
// nonpad_kv_seqlen (keys from nonpad_kv_seqlen[b] on get -inf). A row whose every key is masked
// gives zeros (in Y and in mode 3), not NaN. Heads of K and V are shared by q_heads / kv_heads
// query heads (GQA, MQA). past_key / past_value are joined in front of K / V on the sequence
// axis into present_key / present_value. float only: float16 arrives as float.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "exec/cpu/gemm.h"
#include "exec/cpu/modern_ops.h"
#include "exec/cpu/vector_math.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// A [batch, heads, seq, size] tensor stored 4-D as such, or 3-D as [batch, seq, heads * size]:
// in both one head vector is contiguous.
struct Heads {
  const float* data = nullptr;
  int64_t batch = 0, heads = 0, seq = 0, size = 0;
  bool seq_major = false;  // the 3-D layout

  const float* Row(int64_t b, int64_t h, int64_t s) const {
    const int64_t index = seq_major ? (b * seq + s) * heads + h : (b * heads + h) * seq + s;
    return data + index * size;
  }
};

absl::StatusOr<Heads> ReadHeads(const KernelContext& ctx, const Tensor& t, const char* what,
                                const char* heads_attribute) {
  if (t.type() != DataType::kFloat) {
    return ctx.Error(what, " must be float, got ", DescribeTensor(t));
  }
  Heads v;
  v.data = t.data<float>();
  if (t.rank() == 4) {
    v.batch = t.dim(0), v.heads = t.dim(1), v.seq = t.dim(2), v.size = t.dim(3);
    return v;
  }
  if (t.rank() != 3) return ctx.Error(what, " must be 3-D or 4-D, got ", DescribeTensor(t));
  v.heads = ctx.node.GetInt(heads_attribute, 0);
  if (v.heads <= 0 || t.dim(2) % v.heads != 0) {
    return ctx.Error("a 3-D ", what, " needs ", heads_attribute, " (", v.heads,
                     ") dividing its hidden size ", t.dim(2));
  }
  v.batch = t.dim(0), v.seq = t.dim(1), v.size = t.dim(2) / v.heads, v.seq_major = true;
  return v;
}

// The output at `index` when the node asks for it (an omitted optional output has no value).
bool WantsOutput(const KernelContext& ctx, size_t index) {
  return index < ctx.outputs.size() && ctx.node.output(index) != nullptr;
}

// past ([batch, heads, past, size], or none) followed by `incoming` on the sequence axis, into
// `out` as [batch, heads, past + incoming.seq, size].
void JoinCache(const Tensor* past, const Heads& incoming, float* out) {
  const int64_t past_seq = past == nullptr ? 0 : past->dim(2);
  const int64_t total = past_seq + incoming.seq, size = incoming.size;
  for (int64_t b = 0; b < incoming.batch; ++b) {
    for (int64_t h = 0; h < incoming.heads; ++h) {
      float* dst = out + (b * incoming.heads + h) * total * size;
      if (past_seq > 0) {
        const float* src = past->data<float>() + (b * incoming.heads + h) * past_seq * size;
        std::memcpy(dst, src, past_seq * size * sizeof(float));
      }
      for (int64_t s = 0; s < incoming.seq; ++s) {
        std::memcpy(dst + (past_seq + s) * size, incoming.Row(b, h, s), size * sizeof(float));
      }
    }
  }
}

// attn_mask broadcast (aligned at the right) over [batch, q_heads, q_seq, keys], its last dim
// possibly shorter than the keys.
struct Mask {
  const Tensor* tensor = nullptr;
  int64_t strides[3] = {0, 0, 0};  // for batch, head, query; 0 where broadcast
  int64_t keys = 0;                // the mask's own last dim

  int64_t RowOffset(int64_t b, int64_t h, int64_t i) const {
    return b * strides[0] + h * strides[1] + i * strides[2];
  }
};

absl::StatusOr<Mask> ReadMask(const KernelContext& ctx, const int64_t (&dims)[4]) {
  Mask m;
  if (!ctx.has_input(3)) return m;
  const Tensor& t = ctx.input(3);
  if (t.type() != DataType::kBool && t.type() != DataType::kFloat) {
    return ctx.Error("attn_mask must be bool or float, got ", DescribeTensor(t));
  }
  if (t.rank() < 1 || t.rank() > 4) {
    return ctx.Error("attn_mask ", DescribeTensor(t), " must have rank 1 to 4");
  }
  m.tensor = &t;
  m.keys = t.dim(t.rank() - 1);
  if (m.keys > dims[3]) {
    return ctx.Error("attn_mask ", DescribeTensor(t), " has more keys than the ", dims[3], " of K");
  }
  int64_t stride = m.keys;
  for (int d = 2; d >= 0; --d) {
    const int64_t own = static_cast<int64_t>(t.rank()) - 4 + d;
    if (own < 0) break;
    const int64_t size = t.dim(own);
    if (size != 1 && size != dims[d]) {
      return ctx.Error("attn_mask ", DescribeTensor(t), " does not broadcast to [", dims[0], ", ",
                       dims[1], ", ", dims[2], ", ", dims[3], "]");
    }
    if (size != 1) m.strides[d] = stride;
    stride *= size;
  }
  return m;
}

// 8 independent sums, so that the compiler vectorizes the loop without reassociating.
float Dot(const float* a, const float* b, int64_t n) {
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) partial[k] += a[i + k] * b[i + k];
  }
  for (; i < n; ++i) partial[0] += a[i] * b[i];
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

absl::Status AttentionKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) {
    return ctx.Error("expects inputs Q, K and V");
  }
  OVFIX_ASSIGN_OR_RETURN(const Heads q, ReadHeads(ctx, ctx.input(0), "Q", "q_num_heads"));
  OVFIX_ASSIGN_OR_RETURN(const Heads k, ReadHeads(ctx, ctx.input(1), "K", "kv_num_heads"));
  OVFIX_ASSIGN_OR_RETURN(const Heads v, ReadHeads(ctx, ctx.input(2), "V", "kv_num_heads"));
  if (k.batch != q.batch || v.batch != q.batch || k.size != q.size || v.heads != k.heads ||
      v.seq != k.seq || k.heads <= 0 || q.heads % k.heads != 0) {
    return ctx.Error("Q ", DescribeTensor(ctx.input(0)), ", K ", DescribeTensor(ctx.input(1)),
                     " and V ", DescribeTensor(ctx.input(2)),
                     " do not agree (batch, head size, kv heads dividing q heads)");
  }
  const Tensor* past_key = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  const Tensor* past_value = ctx.has_input(5) ? &ctx.input(5) : nullptr;
  if ((past_key == nullptr) != (past_value == nullptr)) {
    return ctx.Error("past_key and past_value go together");
  }
  const int64_t past = past_key == nullptr ? 0 : past_key->dim(2);
  if (past_key != nullptr &&
      (past_key->type() != DataType::kFloat || past_value->type() != DataType::kFloat ||
       past_key->dims() != std::vector<int64_t>{k.batch, k.heads, past, k.size} ||
       past_value->dims() != std::vector<int64_t>{v.batch, v.heads, past, v.size})) {
    return ctx.Error("past_key ", DescribeTensor(*past_key), " and past_value ",
                     DescribeTensor(*past_value), " must be float [batch, kv_heads, past, size]");
  }
  const int64_t total = past + k.seq;
  std::vector<int64_t> nonpad;
  if (ctx.has_input(6)) {
    const Tensor& t = ctx.input(6);
    if (t.numel() != q.batch || t.type() != DataType::kInt64) {
      return ctx.Error("nonpad_kv_seqlen ", DescribeTensor(t), " must be ", q.batch, " int64");
    }
    for (int64_t b = 0; b < q.batch; ++b) {
      nonpad.push_back(t.GetAsInt64(b));
      if (nonpad.back() < 0 || nonpad.back() > total) {
        return ctx.Error("nonpad_kv_seqlen ", nonpad.back(), " is outside [0, ", total, "]");
      }
    }
  }
  const int64_t mask_dims[4] = {q.batch, q.heads, q.seq, total};
  OVFIX_ASSIGN_OR_RETURN(const Mask mask, ReadMask(ctx, mask_dims));
  const bool causal = ctx.node.GetInt("is_causal", 0) != 0;
  // Attention-25's sliding window: keys within [p - left, p + right] of the query's absolute
  // position p (-1: that side unbounded).
  const int64_t left_window = ctx.opset >= 25 ? ctx.node.GetInt("left_window_size", -1) : -1;
  const int64_t right_window = ctx.opset >= 25 ? ctx.node.GetInt("right_window_size", -1) : -1;
  if (left_window < -1 || right_window < -1) {
    return ctx.Error("window sizes must be -1 or more, are ", left_window, " and ", right_window);
  }
  const float scale = ctx.node.HasAttribute("scale")
                          ? ctx.node.GetFloat("scale", 1.0f)
                          : static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.size)));
  const float softcap = ctx.node.GetFloat("softcap", 0.0f);
  const int64_t mode = ctx.node.GetInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return ctx.Error("qk_matmul_output_mode ", mode, " is not 0 to 3");

  // K and V with the past in front, [batch, kv_heads, total, size]: the present outputs when
  // the node has them.
  std::vector<float> own_keys, own_values;
  float* keys;
  float* values;
  if (WantsOutput(ctx, 1)) {
    keys =
        ctx.OutputToOverwrite(1, DataType::kFloat, {k.batch, k.heads, total, k.size}).data<float>();
  } else {
    own_keys.resize(k.batch * k.heads * total * k.size);
    keys = own_keys.data();
  }
  if (WantsOutput(ctx, 2)) {
    values =
        ctx.OutputToOverwrite(2, DataType::kFloat, {v.batch, v.heads, total, v.size}).data<float>();
  } else {
    own_values.resize(v.batch * v.heads * total * v.size);
    values = own_values.data();
  }
  JoinCache(past_key, k, keys);
  JoinCache(past_value, v, values);

  std::vector<int64_t> y_dims = {q.batch, q.heads, q.seq, v.size};
  if (q.seq_major) y_dims = {q.batch, q.seq, q.heads * v.size};
  float* y = ctx.OutputToOverwrite(0, DataType::kFloat, y_dims).data<float>();
  float* qk_out = WantsOutput(ctx, 3)
                      ? ctx.OutputToOverwrite(3, DataType::kFloat, {q.batch, q.heads, q.seq, total})
                            .data<float>()
                      : nullptr;
  const int64_t group = q.heads / k.heads;
  const bool bool_mask = mask.tensor != nullptr && mask.tensor->type() == DataType::kBool;
  // Query row i of (b, h): its scores (scale * q . k_j, already in `scores`) turned into the
  // softmax weights in place, through softcap, the bias and the mask, with the qk output of the
  // mode asked for. A row whose every key is masked gets zeros.
  auto weigh = [&](int64_t b, int64_t h, int64_t i, float* scores) {
    float* qk_row = qk_out == nullptr ? nullptr : qk_out + ((b * q.heads + h) * q.seq + i) * total;
    if (mode == 0 && qk_row != nullptr) std::copy_n(scores, total, qk_row);
    if (softcap > 0) {
      for (int64_t j = 0; j < total; ++j) scores[j] = softcap * std::tanh(scores[j] / softcap);
    }
    if (mode == 1 && qk_row != nullptr) std::copy_n(scores, total, qk_row);
    // The bias: causal frontier, sliding window, padding, then the mask.
    int64_t visible = total;
    if (!nonpad.empty()) visible = nonpad[b];
    const int64_t offset = past_key != nullptr ? past : (nonpad.empty() ? 0 : nonpad[b] - q.seq);
    const int64_t position = i + offset;
    if (causal) visible = std::min(visible, std::max<int64_t>(0, position + 1));
    if (right_window >= 0) {
      visible = std::min(visible, std::max<int64_t>(0, position + right_window + 1));
    }
    if (mask.tensor != nullptr) visible = std::min(visible, mask.keys);
    for (int64_t j = visible; j < total; ++j) scores[j] = kMinusInf;
    if (left_window >= 0) {
      const int64_t first = std::clamp<int64_t>(position - left_window, 0, total);
      for (int64_t j = 0; j < first; ++j) scores[j] = kMinusInf;
    }
    if (mask.tensor != nullptr) {
      const int64_t m = mask.RowOffset(b, h, i);
      if (bool_mask) {
        const bool* allowed = mask.tensor->data<bool>() + m;
        for (int64_t j = 0; j < visible; ++j) {
          if (!allowed[j]) scores[j] = kMinusInf;
        }
      } else {
        const float* add = mask.tensor->data<float>() + m;
        for (int64_t j = 0; j < visible; ++j) scores[j] += add[j];
      }
    }
    if (mode == 2 && qk_row != nullptr) std::copy_n(scores, total, qk_row);
    const float max = total > 0 ? MaxFloats(scores, total) : kMinusInf;
    if (max == kMinusInf) {
      std::fill(scores, scores + total, 0.0f);  // every key masked: a zero row, not 0 / 0
    } else {
      ScaleInDouble(scores, total, 1.0 / ExpShiftedSum(scores, max, scores, total));
    }
    if (mode == 3 && qk_row != nullptr) std::copy_n(scores, total, qk_row);
  };
  // Q rows of one head are q_stride floats apart, Y rows y_stride.
  const int64_t q_stride = q.seq_major ? q.heads * q.size : q.size;
  const int64_t y_stride = q.seq_major ? q.heads * v.size : v.size;
  auto y_row = [&](int64_t b, int64_t h, int64_t i) {
    return q.seq_major ? y + ((b * q.seq + i) * q.heads + h) * v.size
                       : y + ((b * q.heads + h) * q.seq + i) * v.size;
  };
  if (nonpad.empty()) {
    // A block of query rows of one head at a time, as GEMMs: scores = scale * Q K^T, their
    // weights, then Y = weights V. (A masked key's weight is 0 and multiplies its V row.)
    const int64_t heads = q.batch * q.heads;
    int64_t rows_per_block = std::clamp<int64_t>((int64_t{1} << 17) / std::max<int64_t>(total, 1),
                                                 1, std::max<int64_t>(q.seq, 1));
    const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
    const int64_t wanted_blocks = (2 * threads + heads - 1) / std::max<int64_t>(heads, 1);
    if (wanted_blocks > 1) {
      rows_per_block = std::min(rows_per_block,
                                std::max<int64_t>(16, (q.seq + wanted_blocks - 1) / wanted_blocks));
    }
    const int64_t blocks = (q.seq + rows_per_block - 1) / rows_per_block;
    ParallelForEach(ctx.pool, heads * blocks, [&](int64_t task) {
      thread_local std::vector<float> scores;
      const int64_t b = task / blocks / q.heads, h = task / blocks % q.heads;
      const int64_t row0 = task % blocks * rows_per_block;
      const int64_t rows = std::min(rows_per_block, q.seq - row0);
      scores.resize(rows * total);
      const float* key_rows = keys + (b * k.heads + h / group) * total * k.size;
      const float* value_rows = values + (b * v.heads + h / group) * total * v.size;
      if (total > 0) {
        Sgemm(false, true, rows, total, q.size, scale, q.Row(b, h, row0), q_stride, key_rows,
              k.size, 0.0f, scores.data(), total, nullptr);
      }
      for (int64_t r = 0; r < rows; ++r) weigh(b, h, row0 + r, scores.data() + r * total);
      if (total > 0) {
        Sgemm(false, false, rows, v.size, total, 1.0f, scores.data(), total, value_rows, v.size,
              0.0f, y_row(b, h, row0), y_stride, nullptr);
      } else {
        for (int64_t r = 0; r < rows; ++r) std::fill_n(y_row(b, h, row0 + r), v.size, 0.0f);
      }
    });
    return absl::OkStatus();
  }
  // With nonpad_kv_seqlen, row by row: the padding slots of an external cache may hold
  // anything, inf and NaN included, so masked keys are skipped, not multiplied by 0.
  const int64_t rows = q.batch * q.heads * q.seq;
  ParallelFor(ctx.pool, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, total * q.size)),
              [&](int64_t begin, int64_t end) {
                std::vector<float> scores(total);
                std::vector<float> acc(v.size);
                for (int64_t r = begin; r < end; ++r) {
                  const int64_t b = r / (q.heads * q.seq), h = r / q.seq % q.heads, i = r % q.seq;
                  const int64_t kv_head = (b * k.heads + h / group) * total;
                  const float* query = q.Row(b, h, i);
                  for (int64_t j = 0; j < total; ++j) {
                    scores[j] = scale * Dot(query, keys + (kv_head + j) * k.size, k.size);
                  }
                  weigh(b, h, i, scores.data());
                  std::fill(acc.begin(), acc.end(), 0.0f);
                  const float* value_rows = values + (b * v.heads + h / group) * total * v.size;
                  for (int64_t j = 0; j < total; ++j) {
                    const float p = scores[j];
                    if (p == 0.0f) continue;
                    const float* vr = value_rows + j * v.size;
                    for (int64_t d = 0; d < v.size; ++d) acc[d] += p * vr[d];
                  }
                  std::copy_n(acc.data(), v.size, y_row(b, h, i));
                }
              });
  return absl::OkStatus();
}

}  // namespace

void AddModernAttentionKernels(std::vector<KernelDef>& table) {
  // One kernel for both versions: Attention-24 added input 6 (nonpad_kv_seqlen), which an
  // Attention-23 node cannot have.
  table.push_back({"", "Attention", 23, kLatestOpset, &AttentionKernel});
}

}  // namespace ovfix::exec
