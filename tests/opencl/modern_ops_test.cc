// The OpenCL kernels of the ops opsets 17-24 added (exec/opencl/ops_modern.cc): Mish, Gelu,
// Swish, LayerNormalization, RMSNormalization, GroupNormalization, RotaryEmbedding and
// Attention. Each case runs a one-node model on the OpenCL session alone and compares it with
// the spec's formula evaluated here in double on the inputs as the device holds them (rounded
// to half in the fp16 precisions): not with the CPU executor, so that the two implementations
// check each other only through the spec. Every node must run on the device.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exec/opencl/op_context.h"
#include "tests/opencl/matches_cpu.h"

namespace ovfix::exec::matches_cpu {
namespace {

using Values = std::vector<double>;
using Reference = std::function<std::vector<Values>(const TensorMap&)>;

struct ModernCase {
  std::string name;
  int opset = 23;
  std::vector<Input> inputs;
  std::string outputs;  // declarations, e.g. "float y"
  std::string body;
  Reference reference;  // the expected outputs, in order
};
using ModernParam = InPrecision<ModernCase>;

Values Get(const TensorMap& in, const std::string& name) {
  const Tensor& t = in.at(name);
  Values v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}
const Dims& DimsOf(const TensorMap& in, const std::string& name) { return in.at(name).dims(); }

int64_t Count(const Dims& d, size_t begin = 0, size_t end = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, d.size()); ++i) p *= d[i];
  return p;
}

// The element of a `from`-shaped operand that numpy broadcasting reads for element i of `to`.
int64_t BroadcastIndex(int64_t i, const Dims& to, const Dims& from) {
  int64_t index = 0, stride = 1;
  for (int k = static_cast<int>(to.size()) - 1, f = static_cast<int>(from.size()) - 1; k >= 0;
       --k, --f) {
    const int64_t c = i % to[k];
    i /= to[k];
    if (f >= 0) {
      if (from[f] != 1) index += c * stride;
      stride *= from[f];
    }
  }
  return index;
}

// A float16 graph input: the model computes in half storage whatever the precision.
Input Half(std::string name, Dims dims, double low = -2, double high = 2) {
  return {std::move(name), DataType::kFloat16, std::move(dims), low, high};
}

// ---- activations ----

Reference Elementwise(std::function<double(double)> f) {
  return [f](const TensorMap& in) {
    Values x = Get(in, "x");
    for (double& v : x) v = f(v);
    return std::vector<Values>{x};
  };
}

void AddActivations(std::vector<ModernCase>& cases) {
  const auto mish = [](double x) { return x * std::tanh(std::log1p(std::exp(x))); };
  const auto gelu = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  const auto gelu_tanh = [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  cases.push_back({"Mish_18",
                   18,
                   {Float("x", {2, 3, 17}, -8, 8)},
                   "float y",
                   "y = Mish(x)",
                   Elementwise(mish)});
  cases.push_back(
      {"Mish_24", 24, {Float("x", {40}, -30, 30)}, "float y", "y = Mish(x)", Elementwise(mish)});
  cases.push_back(
      {"Gelu_none", 20, {Float("x", {3, 50}, -6, 6)}, "float y", "y = Gelu(x)", Elementwise(gelu)});
  cases.push_back({"Gelu_tanh",
                   20,
                   {Float("x", {3, 50}, -6, 6)},
                   "float y",
                   "y = Gelu<approximate = \"tanh\">(x)",
                   Elementwise(gelu_tanh)});
  cases.push_back({"Swish",
                   24,
                   {Float("x", {4, 33}, -8, 8)},
                   "float y",
                   "y = Swish<alpha = 1.7>(x)",
                   Elementwise([](double x) { return x / (1 + std::exp(-1.7 * x)); })});
  cases.push_back({"Swish_default_alpha",
                   24,
                   {Float("x", {64}, -8, 8)},
                   "float y",
                   "y = Swish(x)",
                   Elementwise([](double x) { return x / (1 + std::exp(-x)); })});
}

// ---- normalizations ----

// Layer (rms = false) or RMS normalization of x over the axes from `axis` on, with scale "s"
// and, when `bias`, "b" broadcast to x; `stats` adds LayerNormalization's Mean and InvStdDev.
Reference AxisNorm(int64_t axis, bool rms, bool bias, bool stats, double epsilon = 1e-5) {
  return [=](const TensorMap& in) {
    const Values x = Get(in, "x"), s = Get(in, "s");
    const Values b = bias ? Get(in, "b") : Values{};
    const Dims& dims = DimsOf(in, "x");
    const int64_t a = axis < 0 ? axis + static_cast<int64_t>(dims.size()) : axis;
    const int64_t n = Count(dims, a), rows = Count(dims, 0, a);
    Values y(x.size()), mean(rows), istd(rows);
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, sq = 0;
      if (!rms) {
        for (int64_t j = 0; j < n; ++j) m += x[r * n + j];
        m /= n;
      }
      for (int64_t j = 0; j < n; ++j) sq += (x[r * n + j] - m) * (x[r * n + j] - m);
      const double inv = 1 / std::sqrt(sq / n + epsilon);
      mean[r] = m;
      istd[r] = inv;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t i = r * n + j;
        y[i] = (x[i] - m) * inv * s[BroadcastIndex(i, dims, DimsOf(in, "s"))];
        if (bias) y[i] += b[BroadcastIndex(i, dims, DimsOf(in, "b"))];
      }
    }
    return stats ? std::vector<Values>{y, mean, istd} : std::vector<Values>{y};
  };
}

Reference GroupNorm(int64_t groups, bool per_channel, double epsilon = 1e-5) {
  return [=](const TensorMap& in) {
    const Values x = Get(in, "x"), s = Get(in, "s"), b = Get(in, "b");
    const Dims& dims = DimsOf(in, "x");
    const int64_t c = dims[1], spatial = Count(dims, 2), per_group = c / groups * spatial;
    Values y(x.size());
    for (int64_t r = 0; r < dims[0] * groups; ++r) {
      double m = 0, sq = 0;
      for (int64_t j = 0; j < per_group; ++j) m += x[r * per_group + j];
      m /= per_group;
      for (int64_t j = 0; j < per_group; ++j) {
        sq += (x[r * per_group + j] - m) * (x[r * per_group + j] - m);
      }
      const double inv = 1 / std::sqrt(sq / per_group + epsilon);
      for (int64_t j = 0; j < per_group; ++j) {
        const int64_t i = r * per_group + j;
        const int64_t channel = (i / spatial) % c;
        const int64_t k = per_channel ? channel : channel / (c / groups);
        y[i] = (x[i] - m) * inv * s[k] + b[k];
      }
    }
    return std::vector<Values>{y};
  };
}

void AddNormalizations(std::vector<ModernCase>& cases) {
  cases.push_back({"LayerNormalization_last_axis_with_stats",
                   17,
                   {Float("x", {2, 3, 16}, -3, 5), Float("s", {16}), Float("b", {16})},
                   "float y, float mean, float istd",
                   "y, mean, istd = LayerNormalization<axis = -1>(x, s, b)",
                   AxisNorm(-1, false, true, true)});
  cases.push_back({"LayerNormalization_axis1_no_bias",
                   18,
                   {Float("x", {2, 4, 3, 5}), Float("s", {4, 3, 5})},
                   "float y",
                   "y = LayerNormalization<axis = 1, epsilon = 0.001>(x, s)",
                   AxisNorm(1, false, false, false, 1e-3)});
  cases.push_back({"LayerNormalization_broadcast_scale",
                   23,
                   {Float("x", {2, 3, 8}), Float("s", {1, 8}), Float("b", {3, 1})},
                   "float y",
                   "y = LayerNormalization<axis = -2>(x, s, b)",
                   AxisNorm(-2, false, true, false)});
  cases.push_back({"LayerNormalization_float16_with_stats",
                   17,
                   {Half("x", {3, 24}, -3, 5), Half("s", {24}), Half("b", {24})},
                   "float16 y, float mean, float istd",
                   "y, mean, istd = LayerNormalization(x, s, b)",
                   AxisNorm(-1, false, true, true)});
  cases.push_back({"RMSNormalization_float16_scale",
                   23,
                   {Float("x", {3, 16}), Half("s", {16})},
                   "float16 y",
                   "y = RMSNormalization(x, s)",
                   AxisNorm(-1, true, false, false)});
  cases.push_back({"RMSNormalization_last_axis",
                   23,
                   {Float("x", {2, 5, 32}, -3, 5), Float("s", {32})},
                   "float y",
                   "y = RMSNormalization(x, s)",
                   AxisNorm(-1, true, false, false)});
  cases.push_back({"RMSNormalization_two_axes_broadcast",
                   24,
                   {Float("x", {2, 6, 8}), Float("s", {1, 8})},
                   "float y",
                   "y = RMSNormalization<axis = 1, epsilon = 0.01>(x, s)",
                   AxisNorm(1, true, false, false, 0.01)});
  cases.push_back({"GroupNormalization_18_per_group",
                   18,
                   {Float("x", {2, 6, 4, 5}, -2, 4), Float("s", {3}), Float("b", {3})},
                   "float y",
                   "y = GroupNormalization<num_groups = 3>(x, s, b)",
                   GroupNorm(3, false)});
  cases.push_back({"GroupNormalization_21_per_channel",
                   21,
                   {Float("x", {2, 6, 4, 5}, -2, 4), Float("s", {6}), Float("b", {6})},
                   "float y",
                   "y = GroupNormalization<num_groups = 2, epsilon = 0.0001>(x, s, b)",
                   GroupNorm(2, true, 1e-4)});
  cases.push_back({"GroupNormalization_21_rank3",
                   23,
                   {Float("x", {1, 8, 10}), Float("s", {8}), Float("b", {8})},
                   "float y",
                   "y = GroupNormalization<num_groups = 4>(x, s, b)",
                   GroupNorm(4, true)});
}

// ---- RotaryEmbedding ----

// The spec's numpy reference, element by element: x 4-D [b, h, s, d] or 3-D [b, s, h * d].
Reference Rotary(int64_t num_heads, int64_t rotary_dim, bool interleaved, bool positions) {
  return [=](const TensorMap& in) {
    const Values x = Get(in, "x"), cos = Get(in, "cos"), sin = Get(in, "sin");
    const Values pos = positions ? Get(in, "pos") : Values{};
    const Dims& dims = DimsOf(in, "x");
    const bool three_d = dims.size() == 3;
    const int64_t batch = dims[0], heads = three_d ? num_heads : dims[1];
    const int64_t seq = three_d ? dims[1] : dims[2];
    const int64_t head = three_d ? dims[2] / num_heads : dims[3];
    const int64_t rot = rotary_dim == 0 ? head : rotary_dim, half = rot / 2;
    Values y(x.size());
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t s = 0; s < seq; ++s) {
          const int64_t base =
              three_d ? ((b * seq + s) * heads + h) * head : ((b * heads + h) * seq + s) * head;
          const int64_t row = positions ? static_cast<int64_t>(pos[b * seq + s]) : b * seq + s;
          for (int64_t d = rot; d < head; ++d) y[base + d] = x[base + d];
          for (int64_t j = 0; j < half; ++j) {
            const int64_t i1 = interleaved ? base + 2 * j : base + j;
            const int64_t i2 = interleaved ? base + 2 * j + 1 : base + j + half;
            const double c = cos[row * half + j], sn = sin[row * half + j];
            y[i1] = c * x[i1] - sn * x[i2];
            y[i2] = sn * x[i1] + c * x[i2];
          }
        }
      }
    }
    return std::vector<Values>{y};
  };
}

void AddRotary(std::vector<ModernCase>& cases) {
  cases.push_back(
      {"RotaryEmbedding_4d_caches_3d",
       23,
       {Float("x", {2, 3, 5, 8}), Float("cos", {2, 5, 4}, -1, 1), Float("sin", {2, 5, 4}, -1, 1)},
       "float y",
       "y = RotaryEmbedding(x, cos, sin)",
       Rotary(0, 0, false, false)});
  cases.push_back({"RotaryEmbedding_3d_positions",
                   23,
                   {Float("x", {2, 5, 24}), Float("cos", {10, 4}, -1, 1),
                    Float("sin", {10, 4}, -1, 1), Integral("pos", {2, 5}, 0, 9, DataType::kInt64)},
                   "float y",
                   "y = RotaryEmbedding<num_heads = 3>(x, cos, sin, pos)",
                   Rotary(3, 0, false, true)});
  cases.push_back(
      {"RotaryEmbedding_interleaved_partial",
       24,
       {Float("x", {1, 2, 4, 8}), Float("cos", {6, 2}, -1, 1), Float("sin", {6, 2}, -1, 1),
        Integral("pos", {1, 4}, 0, 5, DataType::kInt64)},
       "float y",
       "y = RotaryEmbedding<interleaved = 1, rotary_embedding_dim = 4>(x, cos, sin, pos)",
       Rotary(0, 4, true, true)});
  cases.push_back(
      {"RotaryEmbedding_3d_partial_no_positions",
       23,
       {Float("x", {2, 3, 2 * 6}), Float("cos", {2, 3, 2}, -1, 1), Float("sin", {2, 3, 2}, -1, 1)},
       "float y",
       "y = RotaryEmbedding<num_heads = 2, rotary_embedding_dim = 4>(x, cos, sin)",
       Rotary(2, 4, false, false)});
}

// ---- Attention ----

struct AttentionSpec {
  int64_t q_heads = 0, kv_heads = 0;  // for 3-D inputs
  double scale = std::nan("");        // NaN: 1 / sqrt(head size)
  double softcap = 0;
  bool causal = false;
  int qk_mode = -1;  // -1: no qk_matmul_output
  bool present = false;
  std::string mask, past_key, past_value, nonpad;  // input names, "" if absent
  int opset = 23;
};

// Q, K or V as [b, h, s, d] (4-D as given, 3-D [b, s, h * d] with `heads`): value at (b,h,s,d).
struct Heads4 {
  Values v;
  int64_t batch, heads, seq, depth;
  bool three_d;
  double at(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return v[three_d ? ((b * seq + s) * heads + h) * depth + d
                     : ((b * heads + h) * seq + s) * depth + d];
  }
};
Heads4 AsHeads(const TensorMap& in, const std::string& name, int64_t heads) {
  const Dims& d = DimsOf(in, name);
  if (d.size() == 4) return {Get(in, name), d[0], d[1], d[2], d[3], false};
  return {Get(in, name), d[0], heads, d[1], d[2] / heads, true};
}

Reference AttentionRef(AttentionSpec a) {
  return [a](const TensorMap& in) {
    const Heads4 q = AsHeads(in, "q", a.q_heads);
    Heads4 k = AsHeads(in, "k", a.kv_heads);
    Heads4 v = AsHeads(in, "v", a.kv_heads);
    const int64_t past = a.past_key.empty() ? 0 : DimsOf(in, a.past_key)[2];
    const int64_t total = past + k.seq;
    // present = Concat(past, new) on the sequence axis.
    auto present = [&](const Heads4& fresh, const std::string& past_name) {
      const Values p = past_name.empty() ? Values{} : Get(in, past_name);
      Heads4 out{Values(fresh.batch * fresh.heads * total * fresh.depth),
                 fresh.batch,
                 fresh.heads,
                 total,
                 fresh.depth,
                 false};
      for (int64_t b = 0; b < fresh.batch; ++b)
        for (int64_t h = 0; h < fresh.heads; ++h)
          for (int64_t t = 0; t < total; ++t)
            for (int64_t d = 0; d < fresh.depth; ++d) {
              out.v[((b * fresh.heads + h) * total + t) * fresh.depth + d] =
                  t < past ? p[((b * fresh.heads + h) * past + t) * fresh.depth + d]
                           : fresh.at(b, h, t - past, d);
            }
      return out;
    };
    k = present(k, a.past_key);
    v = present(v, a.past_value);
    const double scale =
        std::isnan(a.scale) ? 1 / std::sqrt(static_cast<double>(q.depth)) : a.scale;
    const Values mask = a.mask.empty() ? Values{} : Get(in, a.mask);
    Dims mdims;
    if (!a.mask.empty()) {
      mdims = DimsOf(in, a.mask);
      mdims.insert(mdims.begin(), 4 - mdims.size(), 1);
    }
    const bool bool_mask = !a.mask.empty() && in.at(a.mask).type() == DataType::kBool;
    const Values nonpad = a.nonpad.empty() ? Values{} : Get(in, a.nonpad);
    Values y(q.batch * q.heads * q.seq * v.depth), qk(q.batch * q.heads * q.seq * total);
    const double inf = std::numeric_limits<double>::infinity();
    for (int64_t b = 0; b < q.batch; ++b)
      for (int64_t h = 0; h < q.heads; ++h)
        for (int64_t s = 0; s < q.seq; ++s) {
          const int64_t kh = h / (q.heads / k.heads);
          const int64_t row = (b * q.heads + h) * q.seq + s;
          Values score(total);
          for (int64_t t = 0; t < total; ++t) {
            double dot = 0;
            for (int64_t d = 0; d < q.depth; ++d) dot += q.at(b, h, s, d) * k.at(b, kh, t, d);
            double x = dot * scale;
            if (a.qk_mode == 0) qk[row * total + t] = x;
            if (a.softcap > 0) x = a.softcap * std::tanh(x / a.softcap);
            if (a.qk_mode == 1) qk[row * total + t] = x;
            if (!a.mask.empty()) {
              if (t >= mdims[3] && mdims[3] != 1) {
                x = -inf;  // opset 24: a short mask pads with -inf
              } else {
                const int64_t c[4] = {b, h, s, mdims[3] == 1 ? 0 : t};
                int64_t m = 0;
                for (int i = 0; i < 4; ++i) m = m * mdims[i] + (mdims[i] == 1 ? 0 : c[i]);
                x = bool_mask ? (mask[m] != 0 ? x : -inf) : x + mask[m];
              }
            }
            int64_t offset = past;
            if (!nonpad.empty()) {
              if (t >= nonpad[b]) x = -inf;
              if (a.past_key.empty()) offset = static_cast<int64_t>(nonpad[b]) - q.seq;
            }
            if (a.causal && t > s + offset) x = -inf;
            if (a.qk_mode == 2) qk[row * total + t] = x;
            score[t] = x;
          }
          const double peak = *std::max_element(score.begin(), score.end());
          if (peak == -inf) continue;  // fully masked: zeros
          double sum = 0;
          for (double& x : score) sum += (x = std::exp(x - peak));
          for (int64_t t = 0; t < total; ++t) {
            score[t] /= sum;
            if (a.qk_mode == 3) qk[row * total + t] = score[t];
          }
          for (int64_t d = 0; d < v.depth; ++d) {
            double acc = 0;
            const int64_t limit = nonpad.empty() ? total : std::min<int64_t>(total, nonpad[b]);
            for (int64_t t = 0; t < limit; ++t) acc += score[t] * v.at(b, kh, t, d);
            // Y in Q's layout.
            y[q.three_d ? ((b * q.seq + s) * q.heads + h) * v.depth + d
                        : ((b * q.heads + h) * q.seq + s) * v.depth + d] = acc;
          }
        }
    std::vector<Values> out = {y};
    if (a.present) {
      out.push_back(k.v);
      out.push_back(v.v);
    }
    if (a.qk_mode >= 0) out.push_back(qk);
    return out;
  };
}

void AddAttention(std::vector<ModernCase>& cases) {
  {
    AttentionSpec a;
    cases.push_back({"Attention_4d_cross_value_depth",
                     23,
                     {Float("q", {2, 3, 4, 8}), Float("k", {2, 3, 6, 8}), Float("v", {2, 3, 6, 5})},
                     "float y",
                     "y = Attention(q, k, v)",
                     AttentionRef(a)});
  }
  {
    AttentionSpec a;
    a.q_heads = 4;
    a.kv_heads = 2;
    a.causal = true;
    cases.push_back({"Attention_3d_gqa_causal",
                     23,
                     {Float("q", {2, 4, 32}), Float("k", {2, 4, 16}), Float("v", {2, 4, 12})},
                     "float y",
                     "y = Attention<q_num_heads = 4, kv_num_heads = 2, is_causal = 1>(q, k, v)",
                     AttentionRef(a)});
  }
  {
    AttentionSpec a;
    a.mask = "m";
    a.scale = 0.3;
    a.softcap = 2.0;
    cases.push_back({"Attention_bool_mask_scale_softcap",
                     23,
                     {Float("q", {2, 2, 4, 8}), Float("k", {2, 2, 6, 8}), Float("v", {2, 2, 6, 8}),
                      Bool("m", {2, 1, 4, 6})},
                     "float y",
                     "y = Attention<scale = 0.3, softcap = 2.0>(q, k, v, m)",
                     AttentionRef(a)});
  }
  {
    AttentionSpec a;
    a.mask = "m";
    a.past_key = "pk";
    a.past_value = "pv";
    a.present = true;
    a.causal = true;
    cases.push_back({"Attention_past_float_mask_causal",
                     23,
                     {Float("q", {1, 2, 3, 8}), Float("k", {1, 2, 3, 8}), Float("v", {1, 2, 3, 4}),
                      Float("m", {3, 7}), Float("pk", {1, 2, 4, 8}), Float("pv", {1, 2, 4, 4})},
                     "float y, float present_k, float present_v",
                     "y, present_k, present_v = Attention<is_causal = 1>(q, k, v, m, pk, pv)",
                     AttentionRef(a)});
  }
  {
    // Past given, present not asked for: the cache is concatenated into scratch.
    AttentionSpec a;
    a.past_key = "pk";
    a.past_value = "pv";
    a.q_heads = 2;
    a.kv_heads = 1;
    cases.push_back({"Attention_3d_past_no_present",
                     23,
                     {Float("q", {1, 2, 16}), Float("k", {1, 2, 8}), Float("v", {1, 2, 8}),
                      Float("pk", {1, 1, 3, 8}), Float("pv", {1, 1, 3, 8})},
                     "float y",
                     "y = Attention<q_num_heads = 2, kv_num_heads = 1>(q, k, v, , pk, pv)",
                     AttentionRef(a)});
  }
  for (int mode : {0, 3}) {
    AttentionSpec a;
    a.present = true;
    a.qk_mode = mode;
    a.softcap = 1.5;
    a.mask = "m";
    cases.push_back({absl::StrCat("Attention_qk_output_mode", mode),
                     23,
                     {Float("q", {1, 2, 3, 4}), Float("k", {1, 2, 5, 4}), Float("v", {1, 2, 5, 4}),
                      Float("m", {1, 1, 3, 5})},
                     "float y, float pk, float pv, float qk",
                     absl::StrCat("y, pk, pv, qk = Attention<qk_matmul_output_mode = ", mode,
                                  ", softcap = 1.5>(q, k, v, m)"),
                     AttentionRef(a)});
  }
  {
    AttentionSpec a;
    a.nonpad = "n";
    a.causal = true;
    a.opset = 24;
    cases.push_back({"Attention_24_nonpad_causal",
                     24,
                     {Float("q", {2, 2, 3, 4}), Float("k", {2, 2, 6, 4}), Float("v", {2, 2, 6, 4}),
                      Integral("n", {2}, 3, 6, DataType::kInt64)},
                     "float y",
                     "y = Attention<is_causal = 1>(q, k, v, , , , n)",
                     AttentionRef(a)});
  }
  {
    AttentionSpec a;
    a.mask = "m";
    a.causal = true;
    cases.push_back({"Attention_float16_float_mask",
                     23,
                     {Half("q", {1, 2, 4, 8}), Half("k", {1, 2, 4, 8}), Half("v", {1, 2, 4, 8}),
                      Half("m", {4, 4})},
                     "float16 y",
                     "y = Attention<is_causal = 1>(q, k, v, m)",
                     AttentionRef(a)});
  }
  {
    AttentionSpec a;
    a.mask = "m";
    a.opset = 24;
    cases.push_back({"Attention_24_short_bool_mask",
                     24,
                     {Float("q", {1, 2, 3, 4}), Float("k", {1, 2, 6, 4}), Float("v", {1, 2, 6, 4}),
                      Bool("m", {3, 4})},
                     "float y",
                     "y = Attention(q, k, v, m)",
                     AttentionRef(a)});
  }
}

std::vector<ModernCase> AllCases() {
  std::vector<ModernCase> cases;
  AddActivations(cases);
  AddNormalizations(cases);
  AddRotary(cases);
  AddAttention(cases);
  return cases;
}

void ExpectMatchesSpec(const ModernParam& param) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  const ModernCase& c = param.op;
  std::vector<std::string> declarations;
  for (const Input& in : c.inputs) declarations.push_back(Declaration(in.type, in.dims, in.name));
  const std::string text = absl::StrCat("<ir_version: 10, opset_import: [\"\" : ", c.opset,
                                        "]>\nm (", absl::StrJoin(declarations, ", "), ") => (",
                                        c.outputs, ") {\n", c.body, "\n}\n");
  SCOPED_TRACE(text);
  OpCase random;
  random.name = c.name;
  random.inputs = c.inputs;
  const TensorMap inputs = RandomInputs(random);

  auto model = ParseModelText(text);
  ASSERT_TRUE(model.ok()) << model.status();
  SessionOptions options;
  options.backend = "opencl";
  options.precision = param.precision;
  auto session = CreateSession(**model, options);
  if (param.precision == Precision::kFp16 && !session.ok() &&
      absl::StrContains(session.status().message(), "cl_khr_fp16")) {
    GTEST_SKIP() << "the device has no half arithmetic";
  }
  ASSERT_TRUE(session.ok()) << session.status();
  auto actual = (*session)->Run(inputs);
  ASSERT_TRUE(actual.ok()) << actual.status();
  for (const std::string& note : (*session)->notes()) {
    EXPECT_FALSE(absl::StrContains(note, "runs on the CPU")) << note;
  }

  // The reference sees the inputs as the device holds them.
  TensorMap seen = inputs;
  if (param.precision != Precision::kFp32) {
    for (auto& [name, t] : seen) {
      if (t.type() != DataType::kFloat) continue;
      t = t.Clone();
      RoundFloatsToHalf(t.data<float>(), t.numel());
    }
  }
  const std::vector<Values> expected = c.reference(seen);
  ASSERT_EQ(actual->size(), expected.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    const Tensor& a = (*actual)[o];
    const Values& e = expected[o];
    ASSERT_EQ(a.numel(), static_cast<int64_t>(e.size())) << "output " << o;
    double lo = e.empty() ? 0 : e[0], hi = lo, worst = 0;
    int64_t worst_at = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      lo = std::min(lo, e[i]);
      hi = std::max(hi, e[i]);
      const double err = std::abs(a.GetAsDouble(i) - e[i]);
      if (!(err <= worst)) {
        worst = err;
        worst_at = static_cast<int64_t>(i);
      }
    }
    const double range = std::max({hi - lo, std::abs(hi), std::abs(lo), 1e-30});
    // A float16 output is rounded to half whatever the precision.
    const double tolerance =
        std::max(Tolerance(param.precision),
                 a.type() == DataType::kFloat16 ? Tolerance(Precision::kFp16Storage) : 0.0);
    EXPECT_LE(worst / range, tolerance)
        << "output " << o << ": element " << worst_at << " is " << a.GetAsDouble(worst_at)
        << ", expected " << e[worst_at] << " (reference in [" << lo << ", " << hi << "])";
  }
}

class ModernOps : public ::testing::TestWithParam<ModernParam> {};
TEST_P(ModernOps, MatchesSpec) { ExpectMatchesSpec(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Ops, ModernOps,
                         ::testing::ValuesIn(InPrecisions(AllCases(), {Precision::kFp32,
                                                                       Precision::kFp16Storage,
                                                                       Precision::kFp16})),
                         CaseName());

// Bad inputs are errors naming the node, not reads outside a buffer.
TEST(ModernOpErrors, RotaryPositionOutsideTheCache) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  auto m = OnOpencl(
      "<ir_version: 10, opset_import: [\"\" : 23]>\n"
      "m (float[1,1,2,4] x, float[3,2] c, float[3,2] s, int64[1,2] p) => (float y) {\n"
      "y = RotaryEmbedding(x, c, s, p)\n}\n");
  ASSERT_TRUE(m.ok()) << m.status();
  TensorMap inputs;
  inputs["x"] = Tensor(DataType::kFloat, {1, 1, 2, 4});
  inputs["c"] = Tensor(DataType::kFloat, {3, 2});
  inputs["s"] = Tensor(DataType::kFloat, {3, 2});
  Tensor p(DataType::kInt64, {1, 2});
  p.SetFromDouble(0, 1);
  p.SetFromDouble(1, 3);
  inputs["p"] = p;
  auto out = m->session->Run(inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::StrContains(out.status().message(), "position id 3")) << out.status();
}

// Version ranges: the kernels claim the versions whose meaning they implement.
TEST(ModernOpTable, RegistersTheNewVersions) {
  using opencl::FindOp;
  EXPECT_EQ(FindOp("Mish", 17), nullptr);
  EXPECT_NE(FindOp("Mish", 18), nullptr);
  EXPECT_EQ(FindOp("Gelu", 19), nullptr);
  EXPECT_NE(FindOp("Gelu", 20), nullptr);
  EXPECT_NE(FindOp("Swish", 24), nullptr);
  EXPECT_NE(FindOp("LayerNormalization", 17), nullptr);
  EXPECT_NE(FindOp("RMSNormalization", 23), nullptr);
  EXPECT_NE(FindOp("GroupNormalization", 18), nullptr);
  EXPECT_NE(FindOp("RotaryEmbedding", 23), nullptr);
  EXPECT_EQ(FindOp("Attention", 22), nullptr);
  EXPECT_NE(FindOp("Attention", 24), nullptr);
}

}  // namespace
}  // namespace ovfix::exec::matches_cpu
