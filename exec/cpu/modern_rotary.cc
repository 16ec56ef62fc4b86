// RotaryEmbedding-23: rotates the first rotary_embedding_dim values of every head vector by
// the angle of its token's position. The pairs rotated are (i, i + rot/2) ("half" layout) or
// (2i, 2i + 1) (interleaved); pair i at one token uses cos/sin entry i of the token's cache
// row: the row position_ids[b, s] of a 2-D cache, or row (b, s) of a 3-D cache.
//   real = cos * x1 - sin * x2,  imag = sin * x1 + cos * x2.
// Values past rotary_embedding_dim are copied.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "exec/cpu/dispatch.h"
#include "exec/cpu/modern_ops.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

absl::Status RotaryEmbeddingKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) {
    return ctx.Error("expects inputs X, cos_cache and sin_cache");
  }
  const Tensor& input = ctx.input(0);
  const Tensor& cos_cache = ctx.input(1);
  const Tensor& sin_cache = ctx.input(2);
  const Tensor* position_ids = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  // X is [B, heads, S, head] (4-D) or [B, S, heads * head] (3-D, heads from num_heads); in
  // both a head vector is contiguous, only the order of the heads and sequence axes differs.
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0;
  const bool seq_major = input.rank() == 3;
  if (input.rank() == 4) {
    batch = input.dim(0), heads = input.dim(1), seq = input.dim(2), head_size = input.dim(3);
  } else if (input.rank() == 3) {
    heads = ctx.node.GetInt("num_heads", 0);
    if (heads <= 0 || input.dim(2) % heads != 0) {
      return ctx.Error("a 3-D X needs num_heads (", heads, ") dividing its hidden size ",
                       input.dim(2));
    }
    batch = input.dim(0), seq = input.dim(1), head_size = input.dim(2) / heads;
  } else {
    return ctx.Error("X must be 3-D or 4-D, got ", DescribeTensor(input));
  }
  int64_t rotary = ctx.node.GetInt("rotary_embedding_dim", 0);
  if (rotary == 0) rotary = head_size;
  if (rotary < 0 || rotary > head_size || rotary % 2 != 0) {
    return ctx.Error("rotary_embedding_dim ", rotary, " must be even and at most the head size ",
                     head_size);
  }
  const int64_t half = rotary / 2;
  const bool interleaved = ctx.node.GetInt("interleaved", 0) != 0;
  if (cos_cache.dims() != sin_cache.dims() || cos_cache.type() != input.type() ||
      sin_cache.type() != input.type()) {
    return ctx.Error("cos_cache ", DescribeTensor(cos_cache), " and sin_cache ",
                     DescribeTensor(sin_cache), " must have one shape and X's type");
  }
  if (position_ids != nullptr) {
    if (cos_cache.rank() != 2 || cos_cache.dim(1) != half) {
      return ctx.Error("with position_ids the caches must be [max_position, ", half, "], got ",
                       DescribeTensor(cos_cache));
    }
    if (position_ids->numel() != batch * seq ||
        (position_ids->type() != DataType::kInt64 && position_ids->type() != DataType::kInt32)) {
      return ctx.Error("position_ids ", DescribeTensor(*position_ids), " must be [", batch, ", ",
                       seq, "] integers");
    }
  } else if (cos_cache.rank() != 3 || cos_cache.dim(0) != batch || cos_cache.dim(1) != seq ||
             cos_cache.dim(2) != half) {
    return ctx.Error("without position_ids the caches must be [", batch, ", ", seq, ", ", half,
                     "], got ", DescribeTensor(cos_cache));
  }
  // The cache row of each token (b, s), checked once before the parallel part.
  std::vector<int64_t> rows(batch * seq);
  for (int64_t t = 0; t < batch * seq; ++t) {
    rows[t] = t;
    if (position_ids == nullptr) continue;
    rows[t] = position_ids->GetAsInt64(t);
    if (rows[t] < 0 || rows[t] >= cos_cache.dim(0)) {
      return ctx.Error("position id ", rows[t], " is outside the caches' ", cos_cache.dim(0),
                       " rows");
    }
  }
  return Dispatch(ctx, input.type(), kFloatTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = input.data<T>();
    const T* cos = cos_cache.data<T>();
    const T* sin = sin_cache.data<T>();
    T* y = ctx.OutputToOverwrite(0, input.type(), input.dims()).template data<T>();
    const int64_t vectors = batch * seq * heads;
    ParallelFor(ctx.pool, vectors, std::max<int64_t>(1, 8192 / std::max<int64_t>(head_size, 1)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t v = begin; v < end; ++v) {
                    // v counts head vectors in memory order.
                    int64_t b, s;
                    if (seq_major) {
                      b = v / (seq * heads), s = v / heads % seq;
                    } else {
                      b = v / (heads * seq), s = v % seq;
                    }
                    const T* c = cos + rows[b * seq + s] * half;
                    const T* sn = sin + rows[b * seq + s] * half;
                    const T* in = x + v * head_size;
                    T* out = y + v * head_size;
                    // Pair i: positions (first(i), second(i)).
                    const int64_t step = interleaved ? 2 : 1;
                    const int64_t partner = interleaved ? 1 : half;
                    for (int64_t i = 0; i < half; ++i) {
                      const int64_t p = i * step;
                      const T x1 = in[p], x2 = in[p + partner];
                      out[p] = c[i] * x1 - sn[i] * x2;
                      out[p + partner] = sn[i] * x1 + c[i] * x2;
                    }
                    for (int64_t i = rotary; i < head_size; ++i) out[i] = in[i];
                  }
                });
    return absl::OkStatus();
  });
}

}  // namespace

void AddModernRotaryKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "RotaryEmbedding", 23, kLatestOpset, &RotaryEmbeddingKernel});
}

}  // namespace ovfix::exec
