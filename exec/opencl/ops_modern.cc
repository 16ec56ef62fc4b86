// The ops that opsets 17-24 added, on the device (kernels/modern.cl): Mish, Gelu and Swish;
// LayerNormalization, RMSNormalization and GroupNormalization (18: scale and bias per group,
// 21: per channel); RotaryEmbedding; Attention (23, and 24's nonpad_kv_seqlen and short
// masks). Configurations the kernels do not implement (double, integer masks, another
// stash_type) return Unsupported, so the node runs on the CPU and the session says so.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "exec/opencl/kernel_args.h"
#include "exec/opencl/op_context.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

constexpr std::string_view kFile = "modern.cl";

bool WantsOutput(const OpContext& ctx, size_t i) { return ctx.node.output(i) != nullptr; }

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// ---- activations ----

absl::Status Activation(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (!IsFloat(x)) return ctx.Unsupported("non-float input");
  const std::string& op = ctx.node.op_type();
  int code = 0;
  float alpha = 0;
  if (op == "Gelu") {
    const std::string approximate = ctx.node.GetString("approximate", "none");
    if (approximate == "none") {
      code = 1;
    } else if (approximate == "tanh") {
      code = 2;
    } else {
      return ctx.Error("approximate must be \"none\" or \"tanh\", not \"", approximate, "\"");
    }
  } else if (op == "Swish") {
    code = 3;
    alpha = ctx.node.GetFloat("alpha", 1.0f);
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, x.dims));
  if (x.numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(
      auto kernel, ctx.Kernel(kFile, "activation",
                              ctx.Options({{"A", &x}, {"Y", y}}, absl::StrCat("-DOP=", code))));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, kernel, *dx, *y->device, alpha));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(x.numel())));
}

// ---- normalizations ----

// One launch of kernels/modern.cl's `normalize_rows`: `rows` rows of `n` contiguous elements of
// input 0, scale (input 1) and optional bias (input `bias_input`) broadcast over `view` (X's
// dims or a regrouping of them) from the dims `scale_dims` / `bias_dims` they take in it.
struct NormalizeLaunch {
  int mode = 0;  // 0: mean and variance, 1: root mean square
  int64_t rows = 0, n = 0;
  std::vector<int64_t> view, scale_dims, bias_dims;
  int bias_input = -1;
  float epsilon = 1e-5f;
  DataType y_type = DataType::kFloat;
  std::vector<int64_t> stat_dims;  // LayerNormalization's Mean and InvStdDev (outputs 1, 2)
};

// Whether `dims` broadcasts to `to` one way (numpy rules, `dims` not longer than `to`).
bool BroadcastsTo(const std::vector<int64_t>& dims, const std::vector<int64_t>& to) {
  if (dims.size() > to.size()) return false;
  const size_t shift = to.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 1 && dims[i] != to[shift + i]) return false;
  }
  return true;
}

absl::Status RunNormalize(OpContext& ctx, const NormalizeLaunch& l) {
  const ClValue& x = ctx.input(0);
  const ClValue& scale = ctx.input(1);
  const ClValue* bias =
      l.bias_input >= 0 && ctx.has_input(l.bias_input) ? &ctx.input(l.bias_input) : nullptr;
  if (!IsFloat(x) || !IsFloat(scale) || (bias != nullptr && !IsFloat(*bias))) {
    return ctx.Unsupported("non-float input");
  }
  if (l.view.size() > static_cast<size_t>(kMaxBroadcastRank)) {
    return ctx.Unsupported("rank above 8");
  }
  if (!BroadcastsTo(l.scale_dims, l.view)) {
    return ctx.Error("scale ", DimsText(scale.dims), " does not broadcast to X ", DimsText(x.dims));
  }
  if (bias != nullptr && !BroadcastsTo(l.bias_dims, l.view)) {
    return ctx.Error("bias ", DimsText(bias->dims), " does not broadcast to X ", DimsText(x.dims));
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, l.y_type, x.dims));
  ClValue* mean = nullptr;
  ClValue* istd = nullptr;
  if (!l.stat_dims.empty()) {
    if (WantsOutput(ctx, 1)) {
      OVFIX_ASSIGN_OR_RETURN(mean, ctx.NewOutput(1, DataType::kFloat, l.stat_dims));
    }
    if (WantsOutput(ctx, 2)) {
      OVFIX_ASSIGN_OR_RETURN(istd, ctx.NewOutput(2, DataType::kFloat, l.stat_dims));
    }
  }
  if (l.rows == 0) return absl::OkStatus();
  if (l.n == 0) return ctx.Unsupported("empty normalized axes");
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto ds, ctx.Device(1));
  cl::Buffer* db = ds;
  if (bias != nullptr) {
    OVFIX_ASSIGN_OR_RETURN(db, ctx.Device(l.bias_input));
  }
  std::string extra = absl::StrCat("-DMODE=", l.mode);
  if (bias != nullptr) absl::StrAppend(&extra, " -DHAS_BIAS");
  if (mean != nullptr) absl::StrAppend(&extra, " -DHAS_MEAN");
  if (istd != nullptr) absl::StrAppend(&extra, " -DHAS_ISTD");
  OVFIX_ASSIGN_OR_RETURN(
      auto kernel,
      ctx.Kernel(
          kFile, "normalize_rows",
          ctx.Options(
              {{"A", &x}, {"W", &scale}, {"B", bias}, {"MEAN", mean}, {"ISTD", istd}, {"Y", y}},
              extra)));
  cl::Buffer* mean_buffer = mean != nullptr ? mean->device.get() : y->device.get();
  cl::Buffer* istd_buffer = istd != nullptr ? istd->device.get() : y->device.get();
  OVFIX_RETURN_IF_ERROR(
      SetArgs(ctx, kernel, *dx, *ds, *db, *y->device, *mean_buffer, *istd_buffer, cl_long{l.n},
              l.epsilon, PaddedDims(l.view), BroadcastStrides(l.scale_dims, l.view),
              BroadcastStrides(bias != nullptr ? l.bias_dims : l.scale_dims, l.view)));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(l.rows)));
}

// LayerNormalization (17) and RMSNormalization (23): the axes from `axis` on are normalized.
absl::Status AxisNormalization(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  const bool rms = ctx.node.op_type() == "RMSNormalization";
  // stash_type 1 (float) is what the kernel computes stage one in; any other is left to the
  // CPU rather than computed at a precision the model did not ask for.
  if (ctx.node.GetInt("stash_type", 1) != 1) return ctx.Unsupported("stash_type other than 1");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  int64_t axis = ctx.node.GetInt("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range for rank ", rank);
  NormalizeLaunch l;
  l.mode = rms ? 1 : 0;
  l.rows = Product(x.dims, 0, axis);
  l.n = Product(x.dims, axis, rank);
  l.view = x.dims;
  l.scale_dims = ctx.input(1).dims;
  l.epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  // RMSNormalization's output takes the scale's type (V); LayerNormalization's X's.
  l.y_type = rms ? ctx.input(1).type : x.type;
  if (!rms) {
    l.bias_input = 2;
    if (ctx.has_input(2)) l.bias_dims = ctx.input(2).dims;
    l.stat_dims.assign(x.dims.begin(), x.dims.begin() + axis);
    l.stat_dims.resize(rank, 1);
  }
  return RunNormalize(ctx, l);
}

// GroupNormalization: X [N, C, ...] normalized per instance and group of C / num_groups
// channels. Version 18 has scale and bias per group, 21 per channel: both are a broadcast over
// a view of X, [N, G, rest] or [N, C, spatial].
absl::Status GroupNormalization(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (!ctx.has_input(2)) return ctx.Error("expects inputs X, scale and bias");
  if (ctx.opset >= 21 && ctx.node.GetInt("stash_type", 1) != 1) {
    return ctx.Unsupported("stash_type other than 1");
  }
  if (x.dims.size() < 2) return ctx.Error("X must have rank 2 or more, got ", DimsText(x.dims));
  const int64_t n = x.dims[0], c = x.dims[1];
  const int64_t groups = ctx.node.GetInt("num_groups", 0);
  if (groups <= 0 || c % groups != 0) {
    return ctx.Error("num_groups ", groups, " does not divide the ", c, " channels");
  }
  const int64_t spatial = Product(x.dims, 2, x.dims.size());
  const bool per_channel = ctx.opset >= 21;
  const int64_t count = per_channel ? c : groups;
  for (int i = 1; i <= 2; ++i) {
    if (ctx.input(i).numel() != count) {
      return ctx.Error(i == 1 ? "scale " : "bias ", DimsText(ctx.input(i).dims), " must have ",
                       count,
                       per_channel ? " elements (one per channel)" : " elements (one per group)");
    }
  }
  NormalizeLaunch l;
  l.rows = n * groups;
  l.n = c / groups * spatial;
  l.view = per_channel ? std::vector<int64_t>{n, c, spatial}
                       : std::vector<int64_t>{n, groups, c / groups * spatial};
  l.scale_dims = l.bias_dims = {1, count, 1};
  l.bias_input = 2;
  l.epsilon = ctx.node.GetFloat("epsilon", 1e-5f);
  l.y_type = x.type;
  return RunNormalize(ctx, l);
}

// ---- RotaryEmbedding ----

absl::Status RotaryEmbedding(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  const ClValue& cos_cache = ctx.input(1);
  const ClValue& sin_cache = ctx.input(2);
  if (!IsFloat(x) || !IsFloat(cos_cache) || !IsFloat(sin_cache))
    return ctx.Unsupported("non-float input");
  int64_t batch, seq, heads, head_size;
  const bool three_d = x.dims.size() == 3;
  if (three_d) {
    heads = ctx.node.GetInt("num_heads", 0);
    batch = x.dims[0];
    seq = x.dims[1];
    if (heads <= 0 || x.dims[2] % heads != 0) {
      return ctx.Error("a 3-D X needs num_heads dividing its hidden size ", x.dims[2]);
    }
    head_size = x.dims[2] / heads;
  } else if (x.dims.size() == 4) {
    batch = x.dims[0];
    heads = x.dims[1];
    seq = x.dims[2];
    head_size = x.dims[3];
  } else {
    return ctx.Error("X must be 3-D or 4-D, got ", DimsText(x.dims));
  }
  int64_t rotary = ctx.node.GetInt("rotary_embedding_dim", 0);
  if (rotary == 0) rotary = head_size;
  if (rotary < 0 || rotary > head_size || rotary % 2 != 0) {
    return ctx.Error("rotary_embedding_dim ", rotary, " must be even and at most head size ",
                     head_size);
  }
  const int64_t half = rotary / 2;
  const bool positions = ctx.has_input(3);
  const size_t cache_rank = positions ? 2 : 3;
  for (const ClValue* cache : {&cos_cache, &sin_cache}) {
    if (cache->dims.size() != cache_rank || cache->dims.back() != half ||
        (!positions && (cache->dims[0] != batch || cache->dims[1] != seq))) {
      return ctx.Error("cos/sin cache ", DimsText(cache->dims), " must be ",
                       positions ? "[max_position + 1, " : "[batch, seq, ", half, "]");
    }
  }
  if (sin_cache.dims != cos_cache.dims) return ctx.Error("cos and sin caches differ in shape");
  if (positions) {
    // Checked here: an index past the cache would read outside its buffer on the device.
    OVFIX_ASSIGN_OR_RETURN(const Tensor* ids, ctx.Host(3));
    if (ctx.input(3).dims != std::vector<int64_t>{batch, seq}) {
      return ctx.Error("position_ids ", DimsText(ctx.input(3).dims), " must be [batch, seq]");
    }
    for (int64_t i = 0; i < ids->numel(); ++i) {
      const int64_t p = ids->GetAsInt64(i);
      if (p < 0 || p >= cos_cache.dims[0]) {
        return ctx.Error("position id ", p, " outside the cache of ", cos_cache.dims[0], " rows");
      }
    }
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, x.dims));
  if (x.numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto dcos, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(auto dsin, ctx.Device(2));
  OVFIX_ASSIGN_OR_RETURN(auto dpos, ctx.DeviceOr(3, y->device.get()));
  std::string extra;
  if (three_d) absl::StrAppend(&extra, " -DTHREE_D");
  if (positions) absl::StrAppend(&extra, " -DHAS_POSITIONS");
  if (ctx.node.GetInt("interleaved", 0) != 0) absl::StrAppend(&extra, " -DINTERLEAVED");
  OVFIX_ASSIGN_OR_RETURN(
      auto kernel,
      ctx.Kernel(kFile, "rotary",
                 ctx.Options({{"A", &x}, {"B", &cos_cache}, {"C", &sin_cache}, {"Y", y}}, extra)));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, kernel, *dx, *dcos, *dsin, *dpos, *y->device, cl_long{heads},
                                cl_long{seq}, cl_long{head_size}, cl_long{rotary}));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(x.numel())));
}

// ---- Attention ----

// Q, K or V seen as [batch, heads, seq, depth]: 4-D as it is, 3-D [batch, seq, heads * depth]
// with `heads` from an attribute.
struct Heads {
  int64_t batch = 0, heads = 0, seq = 0, depth = 0;
  bool three_d = false;
};

absl::StatusOr<Heads> ReadHeads(const OpContext& ctx, const ClValue& v, const char* name,
                                const char* heads_attribute) {
  Heads h;
  if (v.dims.size() == 4) {
    h = {v.dims[0], v.dims[1], v.dims[2], v.dims[3], false};
  } else if (v.dims.size() == 3) {
    h.heads = ctx.node.GetInt(heads_attribute, 0);
    if (h.heads <= 0 || v.dims[2] % h.heads != 0) {
      return ctx.Error("a 3-D ", name, " needs ", heads_attribute, " dividing its hidden size ",
                       v.dims[2]);
    }
    h = {v.dims[0], h.heads, v.dims[1], v.dims[2] / h.heads, true};
  } else {
    return ctx.Error(name, " must be 3-D or 4-D, got ", DimsText(v.dims));
  }
  return h;
}

enum AttentionInput { kQ, kK, kV, kMask, kPastKey, kPastValue, kNonpad };

// present = Concat(past, new) along the sequence, [batch, kv_heads, total, depth]; `past` may
// be absent (the new keys or values alone, made 4-D).
absl::Status ConcatCache(OpContext& ctx, int past, int fresh, const Heads& h, int64_t past_len,
                         ClValue& present) {
  const ClValue* past_value = ctx.has_input(past) ? &ctx.input(past) : nullptr;
  const ClValue& fresh_value = ctx.input(fresh);
  OVFIX_ASSIGN_OR_RETURN(auto dpast, ctx.DeviceOr(past, present.device.get()));
  OVFIX_ASSIGN_OR_RETURN(auto dfresh, ctx.Device(fresh));
  OVFIX_ASSIGN_OR_RETURN(
      auto kernel,
      ctx.Kernel(kFile, "kv_concat",
                 ctx.Options({{"A", past_value}, {"B", &fresh_value}, {"Y", &present}})));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, kernel, *dpast, *dfresh, *present.device, cl_long{h.heads},
                                cl_long{past_len}, cl_long{h.seq}, cl_long{h.depth},
                                cl_int{h.three_d ? 1 : 0}));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(present.numel())));
}

absl::Status Attention(OpContext& ctx) {
  const ClValue& q = ctx.input(kQ);
  const ClValue& k = ctx.input(kK);
  const ClValue& v = ctx.input(kV);
  if (!IsFloat(q) || !IsFloat(k) || !IsFloat(v)) return ctx.Unsupported("non-float Q, K or V");
  if (ctx.node.HasAttribute("softmax_precision") &&
      ctx.node.GetInt("softmax_precision", 1) != static_cast<int64_t>(DataType::kFloat)) {
    // The kernel's softmax is float; a model asking for another precision runs on the CPU.
    return ctx.Unsupported("softmax_precision other than float");
  }
  if (ctx.node.GetInt("left_window_size", -1) != -1 ||
      ctx.node.GetInt("right_window_size", -1) != -1) {
    return ctx.Unsupported("a sliding window (Attention-25)");
  }
  OVFIX_ASSIGN_OR_RETURN(const Heads hq, ReadHeads(ctx, q, "Q", "q_num_heads"));
  OVFIX_ASSIGN_OR_RETURN(const Heads hk, ReadHeads(ctx, k, "K", "kv_num_heads"));
  OVFIX_ASSIGN_OR_RETURN(const Heads hv, ReadHeads(ctx, v, "V", "kv_num_heads"));
  if (hk.batch != hq.batch || hv.batch != hq.batch) return ctx.Error("Q, K and V differ in batch");
  if (hk.depth != hq.depth) return ctx.Error("Q and K differ in head size");
  if (hk.heads != hv.heads || hk.seq != hv.seq) {
    return ctx.Error("K and V differ in heads or sequence length");
  }
  if (hq.heads % hk.heads != 0) {
    return ctx.Error("q_num_heads ", hq.heads, " is not a multiple of kv_num_heads ", hk.heads);
  }
  const bool has_past = ctx.has_input(kPastKey);
  if (has_past != ctx.has_input(kPastValue)) {
    return ctx.Error("past_key and past_value go together");
  }
  int64_t past_len = 0;
  if (has_past) {
    const ClValue& pk = ctx.input(kPastKey);
    const ClValue& pv = ctx.input(kPastValue);
    if (!IsFloat(pk) || !IsFloat(pv)) return ctx.Unsupported("non-float past");
    past_len = pk.dims.size() == 4 ? pk.dims[2] : -1;
    if (pk.dims != std::vector<int64_t>{hq.batch, hk.heads, past_len, hk.depth} ||
        pv.dims != std::vector<int64_t>{hq.batch, hk.heads, past_len, hv.depth}) {
      return ctx.Error("past_key ", DimsText(pk.dims), " / past_value ", DimsText(pv.dims),
                       " do not match K and V");
    }
  }
  const int64_t total = past_len + hk.seq;
  const bool has_nonpad = ctx.opset >= 24 && ctx.has_input(kNonpad);
  if (has_nonpad) {
    if (ctx.input(kNonpad).type != DataType::kInt64 ||
        ctx.input(kNonpad).dims != std::vector<int64_t>{hq.batch}) {
      return ctx.Error("nonpad_kv_seqlen must be int64 [batch]");
    }
  }

  // The mask, padded to [batch, q_heads, q_seq, keys] with stride 0 along broadcast dims.
  int mask_kind = 0;
  cl_long4 mask_strides;
  for (int i = 0; i < 4; ++i) mask_strides.s[i] = 0;
  int64_t mask_len = total;
  const ClValue* mask = ctx.has_input(kMask) ? &ctx.input(kMask) : nullptr;
  if (mask != nullptr) {
    if (mask->type == DataType::kBool) {
      mask_kind = 1;
    } else if (IsFloat(*mask)) {
      mask_kind = 2;
    } else {
      return ctx.Unsupported("attn_mask of type ", std::string(DataTypeName(mask->type)));
    }
    if (mask->dims.size() > 4) return ctx.Error("attn_mask has rank above 4");
    std::vector<int64_t> m(4 - mask->dims.size(), 1);
    m.insert(m.end(), mask->dims.begin(), mask->dims.end());
    const int64_t target[4] = {hq.batch, hq.heads, hq.seq, total};
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      const bool fits = m[i] == target[i] || m[i] == 1 ||
                        // Opset 24: a shorter key axis, the rest masked out.
                        (i == 3 && ctx.opset >= 24 && m[i] < target[i]);
      if (!fits) {
        return ctx.Error("attn_mask ", DimsText(mask->dims), " does not broadcast to [", hq.batch,
                         ",", hq.heads, ",", hq.seq, ",", total, "]");
      }
      mask_strides.s[i] = m[i] == 1 && target[i] != 1 ? 0 : stride;
      stride *= m[i];
    }
    // A key axis of 1 broadcasts (numpy's rule); a longer one shorter than `total` pads.
    if (m[3] != 1) mask_len = m[3];
  }

  float scale = ctx.node.GetFloat("scale", 0.0f);
  if (!ctx.node.HasAttribute("scale")) scale = 1.0f / std::sqrt(static_cast<float>(hq.depth));
  // Q and K are each scaled by sqrt(scale) (the spec's guard against overflow).
  if (scale < 0) return ctx.Unsupported("negative scale");
  const float softcap = ctx.node.GetFloat("softcap", 0.0f);
  const bool causal = ctx.node.GetInt("is_causal", 0) != 0;
  const int64_t qk_mode = ctx.node.GetInt("qk_matmul_output_mode", 0);
  if (qk_mode < 0 || qk_mode > 3) return ctx.Error("qk_matmul_output_mode must be 0 to 3");

  // Outputs: Y in Q's layout, the present caches, the scores.
  std::vector<int64_t> y_dims = hq.three_d
                                    ? std::vector<int64_t>{hq.batch, hq.seq, hq.heads * hv.depth}
                                    : std::vector<int64_t>{hq.batch, hq.heads, hq.seq, hv.depth};
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, q.type, y_dims));
  const std::vector<int64_t> key_dims = {hq.batch, hk.heads, total, hk.depth};
  const std::vector<int64_t> value_dims = {hq.batch, hk.heads, total, hv.depth};
  // Keys and values the kernel reads: the present caches when there is a past (output or not),
  // else K and V as given.
  ClValue key_cache, value_cache;
  ClValue* keys = nullptr;
  ClValue* values = nullptr;
  for (int which = 0; which < 2; ++which) {
    const bool is_key = which == 0;
    const size_t out = is_key ? 1 : 2;
    const ClValue& fresh = is_key ? k : v;
    ClValue* cache = nullptr;
    if (WantsOutput(ctx, out)) {
      OVFIX_ASSIGN_OR_RETURN(cache, ctx.NewOutput(out, fresh.type, is_key ? key_dims : value_dims));
    } else if (has_past) {
      cache = is_key ? &key_cache : &value_cache;
      cache->type = fresh.type;
      cache->dims = is_key ? key_dims : value_dims;
      cache->half = ctx.StoresHalf(fresh.type);
      OVFIX_ASSIGN_OR_RETURN(cache->device, ctx.rt.AllocateShared(cache->device_bytes()));
    }
    if (cache != nullptr && cache->numel() > 0) {
      OVFIX_RETURN_IF_ERROR(ConcatCache(ctx, is_key ? kPastKey : kPastValue, is_key ? kK : kV,
                                        is_key ? hk : hv, past_len, *cache));
    }
    (is_key ? keys : values) = cache;
  }
  const bool keys_3d = keys == nullptr && hk.three_d;
  const bool values_3d = values == nullptr && hv.three_d;
  if (keys == nullptr) keys = ctx.inputs[kK];
  if (values == nullptr) values = ctx.inputs[kV];

  ClValue* qk = nullptr;
  if (WantsOutput(ctx, 3)) {
    OVFIX_ASSIGN_OR_RETURN(qk, ctx.NewOutput(3, q.type, {hq.batch, hq.heads, hq.seq, total}));
  }
  const int64_t rows = hq.batch * hq.heads * hq.seq;
  if (rows == 0) return absl::OkStatus();
  if (total == 0) return ctx.Unsupported("no keys");

  OVFIX_ASSIGN_OR_RETURN(auto dq, ctx.Device(kQ));
  // K and V read as given are uploaded if they are still on the host.
  if (keys == ctx.inputs[kK]) OVFIX_RETURN_IF_ERROR(ctx.Device(kK).status());
  if (values == ctx.inputs[kV]) OVFIX_RETURN_IF_ERROR(ctx.Device(kV).status());
  cl::Buffer* absent = y->device.get();
  OVFIX_ASSIGN_OR_RETURN(auto dmask, ctx.DeviceOr(kMask, absent));
  cl::Buffer* dnonpad = absent;
  if (has_nonpad) {
    OVFIX_ASSIGN_OR_RETURN(dnonpad, ctx.Device(kNonpad));
  }
  // Scores of each row, kept in float between the passes of the softmax.
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer scores,
                         ctx.rt.Allocate(static_cast<size_t>(rows * total) * sizeof(float)));

  std::string extra =
      absl::StrCat("-DMASK=", mask_kind, " -DQK_MODE=", qk != nullptr ? qk_mode : -1);
  if (causal) absl::StrAppend(&extra, " -DIS_CAUSAL");
  if (has_past) absl::StrAppend(&extra, " -DHAS_PAST");
  if (has_nonpad) absl::StrAppend(&extra, " -DHAS_NONPAD");
  OVFIX_ASSIGN_OR_RETURN(auto kernel,
                         ctx.Kernel(kFile, "attention",
                                    ctx.Options({{"Q", &q},
                                                 {"K", keys},
                                                 {"V", values},
                                                 {"MASK", mask_kind == 2 ? mask : nullptr},
                                                 {"QK", qk},
                                                 {"Y", y}},
                                                extra)));
  cl::Buffer* dqk = qk != nullptr ? qk->device.get() : absent;
  OVFIX_RETURN_IF_ERROR(
      SetArgs(ctx, kernel, *dq, *keys->device, *values->device, *dmask, *dmask, *dnonpad,
              *y->device, *dqk, scores, cl_long{hq.heads}, cl_long{hk.heads}, cl_long{hq.seq},
              cl_long{total}, cl_long{hq.depth}, cl_long{hv.depth}, std::sqrt(scale), softcap,
              cl_long{past_len}, mask_strides, cl_long{mask_len}, cl_int{hq.three_d ? 1 : 0},
              cl_int{keys_3d ? 1 : 0}, cl_int{values_3d ? 1 : 0}, cl_int{hq.three_d ? 1 : 0}));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(rows)));
}

}  // namespace

void AddModernOps(std::vector<OpDef>& table) {
  table.push_back({"Mish", 18, kOpenVersion, Activation});
  table.push_back({"Gelu", 20, kOpenVersion, Activation});
  table.push_back({"Swish", 24, kOpenVersion, Activation});
  table.push_back({"LayerNormalization", 17, kOpenVersion, AxisNormalization});
  table.push_back({"RMSNormalization", 23, kOpenVersion, AxisNormalization});
  table.push_back({"GroupNormalization", 18, kOpenVersion, GroupNormalization});
  table.push_back({"RotaryEmbedding", 23, kOpenVersion, RotaryEmbedding});
  table.push_back({"Attention", 23, kOpenVersion, Attention});
}

}  // namespace ovfix::exec::opencl
