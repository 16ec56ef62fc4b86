// Tests of the opset 18-26 kernels (exec/cpu/modern_*.cc): Gelu-20, Swish-24,
// RMSNormalization-23, GroupNormalization-21, RotaryEmbedding-23, Attention-23/24,
// TensorScatter-24, AffineGrid-20, CumProd-26 and BitCast-26. Each test runs one kernel on a
// one-node graph; expected values come from the spec's formulas, computed here in double by
// naive loops (or by hand for the small data-movement cases).
#include "exec/cpu/modern_ops.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/kernel.h"
#include "exec/thread_pool.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/status_macros.h"
#include "onnx/defs/attr_proto_util.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec {
namespace {

using math_testing::ExpectNear;
using math_testing::FloatTensor;
using math_testing::Int64s;
using math_testing::RandomFloats;
using math_testing::Values;
using onnx::MakeAttribute;
using Dims = std::vector<int64_t>;
using Attrs = std::vector<onnx::AttributeProto>;

const KernelDef* FindModernKernel(const std::string& op, int opset) {
  static const std::vector<KernelDef>* table = [] {
    auto* t = new std::vector<KernelDef>();
    AddModernOpKernels(*t);
    return t;
  }();
  for (const KernelDef& k : *table) {
    if (k.op_type == op && k.since_version <= opset && opset <= k.until_version) return &k;
  }
  return nullptr;
}

// Runs `op` at `opset`; an undefined Tensor is an omitted input, an empty output name an
// omitted output.
absl::StatusOr<std::vector<Tensor>> RunModern(const std::string& op, int opset,
                                              const std::vector<Tensor>& inputs,
                                              const Attrs& attributes,
                                              const std::vector<std::string>& outputs = {"y"}) {
  const KernelDef* def = FindModernKernel(op, opset);
  if (def == nullptr) return absl::NotFoundError(op + " has no kernel");
  Graph graph;
  std::vector<Value*> in_values, out_values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_values.push_back(inputs[i].defined() ? graph.CreateValue("in" + std::to_string(i))
                                            : nullptr);
  }
  for (const std::string& name : outputs) {
    out_values.push_back(name.empty() ? nullptr : graph.CreateValue(name));
  }
  Node* node = graph.AddNodeWithOutputs(op, in_values, out_values, "node");
  for (const onnx::AttributeProto& a : attributes) node->SetAttribute(a);
  KernelContext ctx = KernelContext::For(*node, opset);
  for (const Tensor& t : inputs) ctx.inputs.push_back(t.defined() ? &t : nullptr);
  ctx.outputs.resize(outputs.size());
  ctx.pool = &math_testing::MathPool();
  OVFIX_RETURN_IF_ERROR(def->fn(ctx));
  return ctx.outputs;
}

std::vector<double> ToDoubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

TEST(ModernActivations, GeluExactAndTanh) {
  const std::vector<float> x = {-6, -3, -1, -0.5f, 0, 0.25f, 1, 2.5f, 8};
  std::vector<double> exact, tanh_form;
  for (double v : x) {
    exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    tanh_form.push_back(0.5 * v *
                        (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  auto y = RunModern("Gelu", 20, {FloatTensor({3, 3}, x)}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], {3, 3}, exact, 1e-6, "Gelu");
  y = RunModern("Gelu", 20, {FloatTensor({9}, x)},
                {MakeAttribute("approximate", std::string("tanh"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], {9}, tanh_form, 1e-6, "Gelu tanh");
  // double is computed in double.
  y = RunModern("Gelu", 20, {Tensor::FromVector(DataType::kDouble, {9}, ToDoubles(x))}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kDouble);
  ExpectNear((*y)[0], {9}, exact, 1e-14, "Gelu double");
  EXPECT_FALSE(RunModern("Gelu", 20, {FloatTensor({9}, x)},
                         {MakeAttribute("approximate", std::string("erf"))})
                   .ok());
  EXPECT_EQ(FindModernKernel("Gelu", 19), nullptr);
}

TEST(ModernActivations, Swish) {
  const std::vector<float> x = {-20, -2, -0.5f, 0, 0.5f, 3, 40};
  for (float alpha : {1.0f, 1.702f}) {
    std::vector<double> expected;
    for (double v : x) expected.push_back(v / (1 + std::exp(-double(alpha) * v)));
    auto y = RunModern("Swish", 24, {FloatTensor({7}, x)}, {MakeAttribute("alpha", alpha)});
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectNear((*y)[0], {7}, expected, 1e-6, "Swish");
  }
}

TEST(ModernNormalization, RmsNormalizationOverTwoAxesWithBroadcastScale) {
  std::mt19937 rng(3);
  const Dims dims = {2, 3, 4};
  const std::vector<float> x = RandomFloats(24, rng);
  const std::vector<float> scale = {0.5f, -1, 2, 1.5f};  // [4]: broadcast over [3, 4]
  const double epsilon = 1e-3;
  std::vector<double> expected(24);
  for (int b = 0; b < 2; ++b) {
    double sum = 0;
    for (int i = 0; i < 12; ++i) sum += double(x[b * 12 + i]) * x[b * 12 + i];
    const double rms = std::sqrt(sum / 12 + epsilon);
    for (int i = 0; i < 12; ++i) expected[b * 12 + i] = x[b * 12 + i] / rms * scale[i % 4];
  }
  auto y =
      RunModern("RMSNormalization", 23, {FloatTensor(dims, x), FloatTensor({4}, scale)},
                {MakeAttribute("axis", int64_t{-2}), MakeAttribute("epsilon", float(epsilon))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], dims, expected, 1e-6, "RMSNormalization");
  // A scale that does not broadcast to the normalized dims.
  EXPECT_FALSE(RunModern("RMSNormalization", 23,
                         {FloatTensor(dims, x), FloatTensor({3}, {1, 2, 3})},
                         {MakeAttribute("axis", int64_t{-2})})
                   .ok());
}

TEST(ModernNormalization, RmsNormalizationLastAxisDefault) {
  const std::vector<float> x = {1, 2, 3, 4, -1, 0};
  auto y =
      RunModern("RMSNormalization", 23, {FloatTensor({2, 3}, x), FloatTensor({3}, {1, 1, 2})}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  const double r0 = std::sqrt((1 + 4 + 9) / 3.0 + 1e-5), r1 = std::sqrt((16 + 1) / 3.0 + 1e-5);
  ExpectNear((*y)[0], {2, 3}, {1 / r0, 2 / r0, 6 / r0, 4 / r1, -1 / r1, 0}, 1e-6, "RMS");
}

TEST(ModernNormalization, GroupNormalization21ScalesPerChannel) {
  std::mt19937 rng(5);
  const Dims dims = {2, 4, 3};  // N, C, spatial
  const std::vector<float> x = RandomFloats(24, rng);
  const std::vector<float> scale = {1, 2, -0.5f, 3}, bias = {0, 0.25f, -1, 2};
  const double epsilon = 1e-5;
  std::vector<double> expected(24);
  for (int n = 0; n < 2; ++n) {
    for (int g = 0; g < 2; ++g) {
      const int first = n * 12 + g * 6;  // two channels of 3 values per group
      double mean = 0, var = 0;
      for (int i = 0; i < 6; ++i) mean += x[first + i];
      mean /= 6;
      for (int i = 0; i < 6; ++i) var += (x[first + i] - mean) * (x[first + i] - mean);
      var /= 6;
      for (int i = 0; i < 6; ++i) {
        const int channel = g * 2 + i / 3;
        expected[first + i] =
            (x[first + i] - mean) / std::sqrt(var + epsilon) * scale[channel] + bias[channel];
      }
    }
  }
  auto y = RunModern("GroupNormalization", 21,
                     {FloatTensor(dims, x), FloatTensor({4}, scale), FloatTensor({4}, bias)},
                     {MakeAttribute("num_groups", int64_t{2})});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], dims, expected, 1e-6, "GroupNormalization-21");
  // Version 18's per-group parameters are refused by version 21.
  EXPECT_FALSE(RunModern("GroupNormalization", 21,
                         {FloatTensor(dims, x), FloatTensor({2}, {1, 1}), FloatTensor({2}, {0, 0})},
                         {MakeAttribute("num_groups", int64_t{2})})
                   .ok());
  EXPECT_FALSE(RunModern("GroupNormalization", 21,
                         {FloatTensor(dims, x), FloatTensor({4}, scale), FloatTensor({4}, bias)},
                         {MakeAttribute("num_groups", int64_t{3})})
                   .ok());
}

// The spec's rotary_embedding on a [B, S, heads, head] array: rotates element pairs of the
// first `rotary` values of each head vector with cos/sin row `row(b, s)`.
std::vector<double> NaiveRotary(const std::vector<float>& x, int64_t batch, int64_t seq,
                                int64_t heads, int64_t head, int64_t rotary, bool interleaved,
                                const std::vector<float>& cos, const std::vector<float>& sin,
                                const std::function<int64_t(int64_t, int64_t)>& row) {
  std::vector<double> y(x.begin(), x.end());
  const int64_t half = rotary / 2;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = ((b * seq + s) * heads + h) * head;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = interleaved ? 2 * i : i, c = interleaved ? 2 * i + 1 : i + half;
          const double co = cos[row(b, s) * half + i], si = sin[row(b, s) * half + i];
          y[base + a] = co * x[base + a] - si * x[base + c];
          y[base + c] = si * x[base + a] + co * x[base + c];
        }
      }
    }
  }
  return y;
}

// [B, S, H, D] <-> [B, H, S, D].
template <typename T>
std::vector<T> SwapHeadsAndSeq(const std::vector<T>& x, int64_t b_count, int64_t first,
                               int64_t second, int64_t d_count) {
  std::vector<T> y(x.size());
  for (int64_t b = 0; b < b_count; ++b) {
    for (int64_t i = 0; i < first; ++i) {
      for (int64_t j = 0; j < second; ++j) {
        for (int64_t d = 0; d < d_count; ++d) {
          y[((b * second + j) * first + i) * d_count + d] =
              x[((b * first + i) * second + j) * d_count + d];
        }
      }
    }
  }
  return y;
}

TEST(ModernRotary, FourDimensionalWithPositionIds) {
  std::mt19937 rng(7);
  const int64_t B = 2, H = 2, S = 3, D = 4, max_pos = 6;
  const std::vector<float> x = RandomFloats(B * H * S * D, rng);  // [B, H, S, D]
  std::vector<float> cos(max_pos * 2), sin(max_pos * 2);
  for (int64_t p = 0; p < max_pos; ++p) {
    for (int64_t i = 0; i < 2; ++i) {
      cos[p * 2 + i] = std::cos(p * (i + 1) * 0.3);
      sin[p * 2 + i] = std::sin(p * (i + 1) * 0.3);
    }
  }
  const std::vector<int64_t> positions = {0, 1, 2, 5, 3, 4};
  for (bool interleaved : {false, true}) {
    const std::vector<double> expected_bshd =
        NaiveRotary(SwapHeadsAndSeq(x, B, H, S, D), B, S, H, D, D, interleaved, cos, sin,
                    [&](int64_t b, int64_t s) { return positions[b * S + s]; });
    auto y = RunModern("RotaryEmbedding", 23,
                       {FloatTensor({B, H, S, D}, x), FloatTensor({max_pos, 2}, cos),
                        FloatTensor({max_pos, 2}, sin), Int64s({B, S}, positions)},
                       {MakeAttribute("interleaved", int64_t{interleaved})});
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectNear((*y)[0], {B, H, S, D}, SwapHeadsAndSeq(expected_bshd, B, S, H, D), 1e-6,
               interleaved ? "interleaved" : "halves");
  }
  EXPECT_FALSE(RunModern("RotaryEmbedding", 23,
                         {FloatTensor({B, H, S, D}, x), FloatTensor({max_pos, 2}, cos),
                          FloatTensor({max_pos, 2}, sin), Int64s({B, S}, {0, 1, 2, 6, 3, 4})},
                         {})
                   .ok());
}

TEST(ModernRotary, ThreeDimensionalPartialWithBatchCache) {
  std::mt19937 rng(8);
  const int64_t B = 1, S = 2, H = 2, D = 6, rotary = 4;
  const std::vector<float> x = RandomFloats(B * S * H * D, rng);  // [B, S, H * D]
  const std::vector<float> cos = RandomFloats(B * S * 2, rng), sin = RandomFloats(B * S * 2, rng);
  for (bool interleaved : {false, true}) {
    auto y = RunModern(
        "RotaryEmbedding", 23,
        {FloatTensor({B, S, H * D}, x), FloatTensor({B, S, 2}, cos), FloatTensor({B, S, 2}, sin)},
        {MakeAttribute("interleaved", int64_t{interleaved}), MakeAttribute("num_heads", int64_t{H}),
         MakeAttribute("rotary_embedding_dim", int64_t{rotary})});
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectNear((*y)[0], {B, S, H * D},
               NaiveRotary(x, B, S, H, D, rotary, interleaved, cos, sin,
                           [&](int64_t b, int64_t s) { return b * S + s; }),
               1e-6, "partial 3-D");
  }
  // A 3-D X needs num_heads.
  EXPECT_FALSE(RunModern("RotaryEmbedding", 23,
                         {FloatTensor({B, S, H * D}, x), FloatTensor({B, S, 2}, cos),
                          FloatTensor({B, S, 2}, sin)},
                         {MakeAttribute("rotary_embedding_dim", int64_t{rotary})})
                   .ok());
}

// Naive attention in double on [B, H, S, D] arrays; `bias(b, h, i, j)` is the additive bias
// (-inf for a masked key) the test derived for its case. Returns Y [B, Hq, Sq, Dv]; `probs`
// gets the softmax [B, Hq, Sq, T] and `raw` the scaled QK^T.
struct NaiveAttention {
  int64_t B, Hq, Hkv, Sq, T, D, Dv;
  double scale, softcap = 0;
  std::function<double(int64_t, int64_t, int64_t, int64_t)> bias = nullptr;
  std::vector<double> raw = {}, capped = {}, biased = {}, probs = {};

  std::vector<double> Run(const std::vector<float>& q, const std::vector<float>& k,
                          const std::vector<float>& v) {
    std::vector<double> y(B * Hq * Sq * Dv, 0.0);
    raw.assign(B * Hq * Sq * T, 0);
    capped = biased = probs = raw;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / (Hq / Hkv);
        for (int64_t i = 0; i < Sq; ++i) {
          const int64_t row = ((b * Hq + h) * Sq + i) * T;
          double max = -INFINITY;
          for (int64_t j = 0; j < T; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) {
              dot +=
                  double(q[((b * Hq + h) * Sq + i) * D + d]) * k[((b * Hkv + kh) * T + j) * D + d];
            }
            raw[row + j] = dot * scale;
            capped[row + j] =
                softcap > 0 ? softcap * std::tanh(raw[row + j] / softcap) : raw[row + j];
            biased[row + j] = capped[row + j] + (bias ? bias(b, h, i, j) : 0.0);
            max = std::max(max, biased[row + j]);
          }
          if (max == -INFINITY) continue;  // every key masked: zeros
          double sum = 0;
          for (int64_t j = 0; j < T; ++j) sum += std::exp(biased[row + j] - max);
          for (int64_t j = 0; j < T; ++j) {
            probs[row + j] = std::exp(biased[row + j] - max) / sum;
            for (int64_t d = 0; d < Dv; ++d) {
              y[((b * Hq + h) * Sq + i) * Dv + d] +=
                  probs[row + j] * v[((b * Hkv + kh) * T + j) * Dv + d];
            }
          }
        }
      }
    }
    return y;
  }
};

TEST(ModernAttention, FourDimensionalDefaultScale) {
  std::mt19937 rng(11);
  const int64_t B = 2, H = 2, Sq = 3, Skv = 5, D = 4, Dv = 3;
  const auto q = RandomFloats(B * H * Sq * D, rng), k = RandomFloats(B * H * Skv * D, rng),
             v = RandomFloats(B * H * Skv * Dv, rng);
  NaiveAttention naive{B, H, H, Sq, Skv, D, Dv, 1 / std::sqrt(double(D))};
  const std::vector<double> expected = naive.Run(q, k, v);
  auto y = RunModern("Attention", 23,
                     {FloatTensor({B, H, Sq, D}, q), FloatTensor({B, H, Skv, D}, k),
                      FloatTensor({B, H, Skv, Dv}, v)},
                     {});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], {B, H, Sq, Dv}, expected, 1e-5, "Y");
}

// 3-D inputs, GQA, a past cache with present outputs, is_causal (offset = past length) and a
// bool mask whose last dim is shorter than the keys.
TEST(ModernAttention, GroupedQueryCausalWithPastAndShortBoolMask) {
  std::mt19937 rng(12);
  const int64_t B = 1, Hq = 4, Hkv = 2, Sq = 3, Skv = 3, P = 3, T = P + Skv, D = 2, Dv = 3;
  const auto q = RandomFloats(B * Sq * Hq * D, rng), k = RandomFloats(B * Skv * Hkv * D, rng),
             v = RandomFloats(B * Skv * Hkv * Dv, rng);
  const auto past_k = RandomFloats(B * Hkv * P * D, rng),
             past_v = RandomFloats(B * Hkv * P * Dv, rng);
  // Mask [Sq, 5]: key 5 lies past its end (masked), which only query 2's causal frontier
  // (j <= i + 3) would let through; query 1 may not see key 0.
  const std::vector<uint8_t> mask = {1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  Tensor mask_tensor(DataType::kBool, {Sq, 5});
  std::memcpy(mask_tensor.raw(), mask.data(), mask.size());
  // The present caches: past then the new keys, [B, Hkv, T, D].
  std::vector<float> present_k, present_v;
  const auto k4 = SwapHeadsAndSeq(k, B, Skv, Hkv, D), v4 = SwapHeadsAndSeq(v, B, Skv, Hkv, Dv);
  for (int64_t h = 0; h < Hkv; ++h) {
    present_k.insert(present_k.end(), past_k.begin() + h * P * D, past_k.begin() + (h + 1) * P * D);
    present_k.insert(present_k.end(), k4.begin() + h * Skv * D, k4.begin() + (h + 1) * Skv * D);
    present_v.insert(present_v.end(), past_v.begin() + h * P * Dv,
                     past_v.begin() + (h + 1) * P * Dv);
    present_v.insert(present_v.end(), v4.begin() + h * Skv * Dv, v4.begin() + (h + 1) * Skv * Dv);
  }
  NaiveAttention naive{B, Hq, Hkv, Sq, T, D, Dv, 0.7};
  naive.bias = [&](int64_t, int64_t, int64_t i, int64_t j) {
    const bool causal_ok = j <= i + P;
    const bool mask_ok = j < 5 && mask[i * 5 + j] != 0;
    return causal_ok && mask_ok ? 0.0 : -INFINITY;
  };
  const std::vector<double> expected = SwapHeadsAndSeq(
      naive.Run(SwapHeadsAndSeq(q, B, Sq, Hq, D), present_k, present_v), B, Hq, Sq, Dv);
  auto y = RunModern("Attention", 23,
                     {FloatTensor({B, Sq, Hq * D}, q), FloatTensor({B, Skv, Hkv * D}, k),
                      FloatTensor({B, Skv, Hkv * Dv}, v), mask_tensor,
                      FloatTensor({B, Hkv, P, D}, past_k), FloatTensor({B, Hkv, P, Dv}, past_v)},
                     {MakeAttribute("q_num_heads", Hq), MakeAttribute("kv_num_heads", Hkv),
                      MakeAttribute("is_causal", int64_t{1}), MakeAttribute("scale", 0.7f),
                      MakeAttribute("qk_matmul_output_mode", int64_t{3})},
                     {"y", "present_key", "present_value", "qk"});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], {B, Sq, Hq * Dv}, expected, 1e-5, "Y");
  ExpectNear((*y)[1], {B, Hkv, T, D}, ToDoubles(present_k), 0, "present_key");
  ExpectNear((*y)[2], {B, Hkv, T, Dv}, ToDoubles(present_v), 0, "present_value");
  ExpectNear((*y)[3], {B, Hq, Sq, T}, naive.probs, 1e-5, "qk softmax");
}

// A float mask broadcast from [Hq, 1, T], softcap and each qk_matmul_output_mode; a row whose
// bool mask is all false gives zeros.
TEST(ModernAttention, FloatMaskSoftcapAndOutputModes) {
  std::mt19937 rng(13);
  const int64_t B = 2, H = 2, S = 3, D = 4;
  auto q = RandomFloats(B * H * S * D, rng), k = RandomFloats(B * H * S * D, rng),
       v = RandomFloats(B * H * S * D, rng);
  for (float& f : q) f *= 4;  // scores large enough for the softcap to matter
  const auto mask = RandomFloats(H * S, rng);
  NaiveAttention naive{B, H, H, S, S, D, D, 1 / std::sqrt(double(D)), 1.5};
  naive.bias = [&](int64_t, int64_t h, int64_t, int64_t j) { return double(mask[h * S + j]); };
  const std::vector<double> expected = naive.Run(q, k, v);
  const std::vector<std::vector<double>*> by_mode = {&naive.raw, &naive.capped, &naive.biased,
                                                     &naive.probs};
  for (int64_t mode = 0; mode < 4; ++mode) {
    auto y =
        RunModern("Attention", 24,
                  {FloatTensor({B, H, S, D}, q), FloatTensor({B, H, S, D}, k),
                   FloatTensor({B, H, S, D}, v), FloatTensor({H, 1, S}, mask)},
                  {MakeAttribute("softcap", 1.5f), MakeAttribute("qk_matmul_output_mode", mode)},
                  {"y", "", "", "qk"});
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectNear((*y)[0], {B, H, S, D}, expected, 1e-5, "Y");
    ExpectNear((*y)[3], {B, H, S, S}, *by_mode[mode], 1e-5, "qk mode " + std::to_string(mode));
  }
  Tensor none(DataType::kBool, {S, S});  // zero-filled: every key masked
  auto y = RunModern("Attention", 23,
                     {FloatTensor({B, H, S, D}, q), FloatTensor({B, H, S, D}, k),
                      FloatTensor({B, H, S, D}, v), none},
                     {});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], {B, H, S, D}, std::vector<double>(B * H * S * D, 0.0), 0, "masked");
}

// Attention-24's external cache: keys from nonpad_kv_seqlen[b] on are padding, and the causal
// frontier is offset by nonpad_kv_seqlen[b] - q_sequence_length.
TEST(ModernAttention, NonpadKvSeqlenWithCausal) {
  std::mt19937 rng(14);
  const int64_t B = 2, H = 1, Sq = 2, T = 5, D = 3;
  const auto q = RandomFloats(B * H * Sq * D, rng), k = RandomFloats(B * H * T * D, rng),
             v = RandomFloats(B * H * T * D, rng);
  const std::vector<int64_t> nonpad = {3, 5};
  NaiveAttention naive{B, H, H, Sq, T, D, D, 1 / std::sqrt(double(D))};
  naive.bias = [&](int64_t b, int64_t, int64_t i, int64_t j) {
    return j < nonpad[b] && j <= i + nonpad[b] - Sq ? 0.0 : -INFINITY;
  };
  auto y =
      RunModern("Attention", 24,
                {FloatTensor({B, H, Sq, D}, q), FloatTensor({B, H, T, D}, k),
                 FloatTensor({B, H, T, D}, v), Tensor(), Tensor(), Tensor(), Int64s({B}, nonpad)},
                {MakeAttribute("is_causal", int64_t{1})});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], {B, H, Sq, D}, naive.Run(q, k, v), 1e-5, "Y");
}

// Attention-25's sliding window: query p (absolute: past keys before it) sees keys in
// [p - left, p + right]; with is_causal the right side stops at p. The spec's example
// (left 2, right 1, no past) and a left-looking causal window after 2 past keys.
TEST(ModernAttention, SlidingWindowOfOpset25) {
  std::mt19937 rng(25);
  const int64_t B = 1, H = 2, Sq = 4, T = 6, D = 3;
  const auto q = RandomFloats(B * H * Sq * D, rng), k = RandomFloats(B * H * T * D, rng),
             v = RandomFloats(B * H * T * D, rng);
  NaiveAttention naive{B, H, H, Sq, T, D, D, 1 / std::sqrt(double(D))};
  naive.bias = [](int64_t, int64_t, int64_t i, int64_t j) {
    return i - 2 <= j && j <= i + 1 ? 0.0 : -INFINITY;
  };
  auto y = RunModern(
      "Attention", 25,
      {FloatTensor({B, H, Sq, D}, q), FloatTensor({B, H, T, D}, k), FloatTensor({B, H, T, D}, v)},
      {MakeAttribute("left_window_size", int64_t{2}),
       MakeAttribute("right_window_size", int64_t{1})});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], {B, H, Sq, D}, naive.Run(q, k, v), 1e-5, "Y");
  // At opset 24 the attributes do not exist: every key is seen.
  NaiveAttention all{B, H, H, Sq, T, D, D, 1 / std::sqrt(double(D))};
  auto y24 = RunModern(
      "Attention", 24,
      {FloatTensor({B, H, Sq, D}, q), FloatTensor({B, H, T, D}, k), FloatTensor({B, H, T, D}, v)},
      {});
  ASSERT_TRUE(y24.ok()) << y24.status();
  ExpectNear((*y24)[0], {B, H, Sq, D}, all.Run(q, k, v), 1e-5, "Y at 24");

  // Causal with a window of one key to the left, after 2 past keys: query i is at 2 + i.
  const int64_t P = 2, S = 3;
  const auto q2 = RandomFloats(B * H * S * D, rng), k2 = RandomFloats(B * H * S * D, rng),
             v2 = RandomFloats(B * H * S * D, rng), pk = RandomFloats(B * H * P * D, rng),
             pv = RandomFloats(B * H * P * D, rng);
  std::vector<float> keys, values;  // past then new, per head
  for (int64_t h = 0; h < H; ++h) {
    keys.insert(keys.end(), pk.begin() + h * P * D, pk.begin() + (h + 1) * P * D);
    keys.insert(keys.end(), k2.begin() + h * S * D, k2.begin() + (h + 1) * S * D);
    values.insert(values.end(), pv.begin() + h * P * D, pv.begin() + (h + 1) * P * D);
    values.insert(values.end(), v2.begin() + h * S * D, v2.begin() + (h + 1) * S * D);
  }
  NaiveAttention window{B, H, H, S, P + S, D, D, 1 / std::sqrt(double(D))};
  window.bias = [&](int64_t, int64_t, int64_t i, int64_t j) {
    return P + i - 1 <= j && j <= P + i ? 0.0 : -INFINITY;
  };
  auto y2 = RunModern(
      "Attention", 25,
      {FloatTensor({B, H, S, D}, q2), FloatTensor({B, H, S, D}, k2), FloatTensor({B, H, S, D}, v2),
       Tensor(), FloatTensor({B, H, P, D}, pk), FloatTensor({B, H, P, D}, pv)},
      {MakeAttribute("is_causal", int64_t{1}), MakeAttribute("left_window_size", int64_t{1})});
  ASSERT_TRUE(y2.ok()) << y2.status();
  ExpectNear((*y2)[0], {B, H, S, D}, window.Run(q2, keys, values), 1e-5, "causal window");
}

TEST(ModernAttention, RefusesMismatchedHeads) {
  const Tensor q = FloatTensor({1, 3, 2, 4}, std::vector<float>(24, 0.5f));
  const Tensor kv = FloatTensor({1, 2, 2, 4}, std::vector<float>(16, 0.5f));
  EXPECT_FALSE(RunModern("Attention", 23, {q, kv, kv}, {}).ok());  // 2 kv heads do not divide 3
  EXPECT_FALSE(
      RunModern("Attention", 23, {FloatTensor({1, 2, 8}, std::vector<float>(16, 1)), kv, kv}, {})
          .ok());  // 3-D Q without q_num_heads
}

TEST(ModernDataOps, TensorScatterLinearAndCircular) {
  // past [2, 4, 2] (axis -2 = 1), update [2, 2, 2].
  std::vector<float> past(16);
  for (int i = 0; i < 16; ++i) past[i] = float(i);
  const std::vector<float> update = {100, 101, 102, 103, 200, 201, 202, 203};
  auto y = RunModern(
      "TensorScatter", 24,
      {FloatTensor({2, 4, 2}, past), FloatTensor({2, 2, 2}, update), Int64s({2}, {1, 2})}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Values((*y)[0]), (std::vector<double>{0, 1, 100, 101, 102, 103, 6, 7,  //
                                                  8, 9, 10, 11, 200, 201, 202, 203}));
  // Circular: batch 1 writes positions 3 and 0. Linear refuses it.
  y = RunModern("TensorScatter", 24,
                {FloatTensor({2, 4, 2}, past), FloatTensor({2, 2, 2}, update), Int64s({2}, {0, 3})},
                {MakeAttribute("mode", std::string("circular"))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Values((*y)[0]), (std::vector<double>{100, 101, 102, 103, 4, 5, 6, 7,  //
                                                  202, 203, 10, 11, 12, 13, 200, 201}));
  EXPECT_FALSE(
      RunModern("TensorScatter", 24,
                {FloatTensor({2, 4, 2}, past), FloatTensor({2, 2, 2}, update), Int64s({2}, {0, 3})},
                {})
          .ok());
  // No write_indices: from 0. Any element type, moved unconverted (axis 2 of a 4-D cache).
  const Tensor past16 =
      Tensor::FromVector(DataType::kFloat16, {1, 1, 3, 1}, std::vector<uint16_t>{1, 2, 3});
  const Tensor update16 =
      Tensor::FromVector(DataType::kFloat16, {1, 1, 1, 1}, std::vector<uint16_t>{0xABCD});
  y = RunModern("TensorScatter", 24, {past16, update16}, {});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].type(), DataType::kFloat16);
  const uint16_t* bits = (*y)[0].data<uint16_t>();
  EXPECT_EQ(bits[0], 0xABCD);
  EXPECT_EQ(bits[1], 2);
  EXPECT_EQ(bits[2], 3);
}

TEST(ModernDataOps, AffineGrid2D) {
  // theta [[a, b, tx], [c, d, ty]]; W = 3, H = 2.
  const std::vector<float> theta = {1, 0.5f, 0.1f, -0.25f, 2, -0.2f};
  for (bool align : {false, true}) {
    // Normalized positions: align_corners: -1, 0, 1 (W) and -1, 1 (H); else the pixel
    // centers -2/3, 0, 2/3 and -1/2, 1/2.
    const std::vector<double> xs =
        align ? std::vector<double>{-1, 0, 1} : std::vector<double>{-2.0 / 3, 0, 2.0 / 3};
    const std::vector<double> ys =
        align ? std::vector<double>{-1, 1} : std::vector<double>{-0.5, 0.5};
    std::vector<double> expected;
    for (double y : ys) {
      for (double x : xs) {
        expected.push_back(theta[0] * x + theta[1] * y + theta[2]);
        expected.push_back(theta[3] * x + theta[4] * y + theta[5]);
      }
    }
    auto y = RunModern("AffineGrid", 20, {FloatTensor({1, 2, 3}, theta), Int64s({4}, {1, 5, 2, 3})},
                       {MakeAttribute("align_corners", int64_t{align})});
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectNear((*y)[0], {1, 2, 3, 2}, expected, 1e-6, align ? "aligned" : "not aligned");
  }
}

TEST(ModernDataOps, AffineGrid3D) {
  // A permutation with a shift: (x, y, z) -> (z + 1, x, -y); D = 2, H = 1, W = 2, aligned.
  const std::vector<float> theta = {0, 0, 1, 1, 1, 0, 0, 0, 0, -1, 0, 0};
  auto y =
      RunModern("AffineGrid", 20, {FloatTensor({1, 3, 4}, theta), Int64s({5}, {1, 1, 2, 1, 2})},
                {MakeAttribute("align_corners", int64_t{1})});
  ASSERT_TRUE(y.ok()) << y.status();
  // (z, y, x) over D = {-1, 1}, H = {-1} (one position), W = {-1, 1}.
  ExpectNear((*y)[0], {1, 2, 1, 2, 3},
             {0, -1, 1, 0, 1, 1,  //
              2, -1, 1, 2, 1, 1},
             0, "3-D");
}

TEST(ModernDataOps, CumProdSpecExamples) {
  const Tensor x = FloatTensor({3}, {1, 2, 3});
  const Tensor axis = Int64s({}, {0});
  const std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<double>>> cases = {
      {{0, 0}, {1, 2, 6}}, {{1, 0}, {1, 1, 2}}, {{0, 1}, {6, 6, 3}}, {{1, 1}, {6, 3, 1}}};
  for (const auto& [flags, expected] : cases) {
    auto y = RunModern(
        "CumProd", 26, {x, axis},
        {MakeAttribute("exclusive", flags.first), MakeAttribute("reverse", flags.second)});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(Values((*y)[0]), expected) << flags.first << flags.second;
  }
  // int64 along axis 0 of a [3, 2], axis as an int32 -2.
  auto y = RunModern("CumProd", 26,
                     {Int64s({3, 2}, {2, -1, 3, 4, 5, 6}),
                      Tensor::FromVector(DataType::kInt32, {}, std::vector<int32_t>{-2})},
                     {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kInt64);
  EXPECT_EQ(Values((*y)[0]), (std::vector<double>{2, -1, 6, -4, 30, -24}));
}

TEST(ModernDataOps, BitCast) {
  auto y = RunModern("BitCast", 26, {FloatTensor({2}, {1.0f, -2.0f})},
                     {MakeAttribute("to", int64_t{6})});  // int32
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].type(), DataType::kInt32);
  EXPECT_EQ((*y)[0].dims(), (Dims{2}));
  EXPECT_EQ((*y)[0].data<int32_t>()[0], 0x3F800000);
  EXPECT_EQ(static_cast<uint32_t>((*y)[0].data<int32_t>()[1]), 0xC0000000u);
  y = RunModern("BitCast", 26,
                {Tensor::FromVector(DataType::kUint8, {1}, std::vector<uint8_t>{200})},
                {MakeAttribute("to", int64_t{3})});  // int8
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].data<int8_t>()[0], -56);
  // Different bit widths are refused.
  EXPECT_FALSE(
      RunModern("BitCast", 26, {FloatTensor({1}, {1})}, {MakeAttribute("to", int64_t{7})}).ok());
}

// Bilinear sample of a [H, W] plane at (h, w), corners outside counting as zero.
double Bilinear(const float* plane, int64_t H, int64_t W, double h, double w) {
  const double h0 = std::floor(h), w0 = std::floor(w);
  double sum = 0;
  for (int dh = 0; dh < 2; ++dh) {
    for (int dw = 0; dw < 2; ++dw) {
      const int64_t i = int64_t(h0) + dh, j = int64_t(w0) + dw;
      if (i < 0 || i >= H || j < 0 || j >= W) continue;
      const double weight = (dh ? h - h0 : 1 - (h - h0)) * (dw ? w - w0 : 1 - (w - w0));
      sum += weight * plane[i * W + j];
    }
  }
  return sum;
}

TEST(ModernDeformConv, TwoDimensionalGroupsOffsetsAndMask) {
  std::mt19937 rng(21);
  const int64_t N = 1, C = 4, H = 4, W = 5, OC = 4, group = 2, offset_group = 2, KH = 2, KW = 3;
  const int64_t pads[4] = {1, 0, 0, 1}, sh = 1, sw = 2, dh = 2, dw = 1;
  const int64_t OH = (H + pads[0] + pads[2] - (dh * (KH - 1) + 1)) / sh + 1;
  const int64_t OW = (W + pads[1] + pads[3] - (dw * (KW - 1) + 1)) / sw + 1;
  ASSERT_EQ(OH, 3);
  ASSERT_EQ(OW, 2);
  const auto x = RandomFloats(N * C * H * W, rng);
  const auto w = RandomFloats(OC * (C / group) * KH * KW, rng);
  auto offset = RandomFloats(N * offset_group * KH * KW * 2 * OH * OW, rng);
  for (float& f : offset) f *= 1.5f;
  const auto mask = RandomFloats(N * offset_group * KH * KW * OH * OW, rng);
  const std::vector<float> bias = {0.5f, -0.25f, 1, 0};
  std::vector<double> expected(N * OC * OH * OW);
  for (int64_t oc = 0; oc < OC; ++oc) {
    const int64_t g = oc / (OC / group);
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        double sum = bias[oc];
        for (int64_t cl = 0; cl < C / group; ++cl) {
          const int64_t c = g * (C / group) + cl, og = c / (C / offset_group);
          for (int64_t i = 0; i < KH; ++i) {
            for (int64_t j = 0; j < KW; ++j) {
              const int64_t tap = (og * KH + i) * KW + j;
              const double off_h = offset[((tap * 2 + 0) * OH + oh) * OW + ow];
              const double off_w = offset[((tap * 2 + 1) * OH + oh) * OW + ow];
              const double h = double(oh * sh - pads[0] + i * dh) + off_h;
              const double ww = double(ow * sw - pads[1] + j * dw) + off_w;
              sum += w[((oc * (C / group) + cl) * KH + i) * KW + j] *
                     mask[(tap * OH + oh) * OW + ow] * Bilinear(x.data() + c * H * W, H, W, h, ww);
            }
          }
        }
        expected[(oc * OH + oh) * OW + ow] = sum;
      }
    }
  }
  const Attrs attrs = {MakeAttribute("group", group), MakeAttribute("offset_group", offset_group),
                       MakeAttribute("pads", Dims{1, 0, 0, 1}),
                       MakeAttribute("strides", Dims{sh, sw}),
                       MakeAttribute("dilations", Dims{dh, dw})};
  auto y =
      RunModern("DeformConv", 19,
                {FloatTensor({N, C, H, W}, x), FloatTensor({OC, C / group, KH, KW}, w),
                 FloatTensor({N, offset_group * KH * KW * 2, OH, OW}, offset),
                 FloatTensor({OC}, bias), FloatTensor({N, offset_group * KH * KW, OH, OW}, mask)},
                attrs);
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectNear((*y)[0], {N, OC, OH, OW}, expected, 1e-5, "DeformConv");
  // An offset of the wrong shape is refused.
  EXPECT_FALSE(RunModern("DeformConv", 22,
                         {FloatTensor({N, C, H, W}, x), FloatTensor({OC, C / group, KH, KW}, w),
                          FloatTensor({N, 2, OH, OW}, std::vector<float>(2 * OH * OW, 0))},
                         attrs)
                   .ok());
}

// Zero offsets and no mask: an ordinary convolution (1-D here, the N-D path).
TEST(ModernDeformConv, ZeroOffsetsAreAConvolution) {
  const std::vector<float> x = {1, 2, 3, 4, 5};
  const std::vector<float> w = {1, 0, -2};
  auto y = RunModern("DeformConv", 19,
                     {FloatTensor({1, 1, 5}, x), FloatTensor({1, 1, 3}, w),
                      FloatTensor({1, 3, 4}, std::vector<float>(12, 0))},
                     {MakeAttribute("pads", Dims{1, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  // Padded input 0 1 2 3 4 5: y[i] = p[i] - 2 p[i + 2].
  ExpectNear((*y)[0], {1, 1, 4}, {0 - 4, 1 - 6, 2 - 8, 3 - 10}, 0, "1-D");
}

}  // namespace
}  // namespace ovfix::exec
