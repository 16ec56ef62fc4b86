// bfloat16 in the cpu executor: each op of a bfloat16 model computes in float on its widened
// inputs (MatMul, Gemm and Conv accumulate in fp32) and stores its output rounded to bfloat16,
// nearest even. Checked against a float/double reference computed here, with the rounding to
// bfloat16 done here too, independently of ir/float16.h.
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/text_form.h"
#include "tests/support/bfloat16_reference.h"

namespace ovfix::exec {
namespace {

using test_support::RoundToBfloat16;

// One bfloat16 ulp at |x| (8 significant bits).
double UlpAt(double x) {
  if (x == 0) return 1e-38;
  int e;
  std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1
  return std::ldexp(1.0, e - 8);
}

constexpr char kModel[] = R"(
  bf16ops (bfloat16[2,8] a, bfloat16[8,4] b, bfloat16[2,4] c, bfloat16[2,4] d,
           bfloat16[1,2,5,5] x, bfloat16[3,2,3,3] w, bfloat16[8] scale, bfloat16[8] bias,
           float[2,4] f)
      => (bfloat16[2,4] mm, bfloat16[2,4] gemm, bfloat16[2,4] add, bfloat16[2,4] mul,
          bfloat16[2,4] relu, bfloat16[2,4] sig, bfloat16[2,4] tanh, bfloat16[2,8] sm,
          bfloat16[2,1] rsum, bfloat16[2,1] rmean, bfloat16[1,3,3,3] conv, bfloat16[2,8] ln,
          bfloat16[2,4] to_bf16, float[2,4] to_float)
      <int64[1] axes = {1}> {
    mm = MatMul(a, b)
    gemm = Gemm<alpha = 0.5>(a, b, c)
    add = Add(c, d)
    mul = Mul(c, d)
    relu = Relu(c)
    sig = Sigmoid(c)
    tanh = Tanh(c)
    sm = Softmax<axis = 1>(a)
    rsum = ReduceSum<keepdims = 1>(a, axes)
    rmean = ReduceMean<axes = [1], keepdims = 1>(a)
    conv = Conv(x, w)
    ln = LayerNormalization<axis = -1, epsilon = 0.00001>(a, scale, bias)
    to_bf16 = Cast<to = 16>(f)
    to_float = Cast<to = 1>(c)
  })";

// Values exactly representable in bfloat16, as a float tensor.
std::vector<float> Bf16Values(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = RoundToBfloat16(u(rng));
  return v;
}

TEST(Bfloat16Kernels, ComputeInFloatAndRoundOutputsToNearestEven) {
  auto model = ParseModelText(kModel);
  ASSERT_TRUE(model.ok()) << model.status();
  std::mt19937 rng(7);
  std::map<std::string, std::vector<float>> v;
  std::map<std::string, std::vector<int64_t>> dims = {
      {"a", {2, 8}},       {"b", {8, 4}},  {"c", {2, 4}}, {"d", {2, 4}}, {"x", {1, 2, 5, 5}},
      {"w", {3, 2, 3, 3}}, {"scale", {8}}, {"bias", {8}}, {"f", {2, 4}}};
  TensorMap inputs;
  for (const auto& [name, shape] : dims) {
    size_t n = 1;
    for (int64_t s : shape) n *= static_cast<size_t>(s);
    // f is float: not bfloat16-representable (the Cast rounds it).
    v[name] = name == "f" ? std::vector<float>{1.00390625f, 1.01171875f, -3.14159f, 1e-3f,
                                               100.3f,      257.0f,      0.333333f, -65504.7f}
                          : Bf16Values(rng, n, -2, 2);
    Tensor t = Tensor::FromVector<float>(DataType::kFloat, shape, v[name]);
    inputs[name] = name == "f" ? t : ConvertTensor(t, DataType::kBfloat16);
  }
  auto session = CreateSession(**model, {});
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run(inputs);
  ASSERT_TRUE(out.ok()) << out.status();

  const auto& a = v["a"];
  const auto& b = v["b"];
  const auto& c = v["c"];
  const auto& d = v["d"];
  std::map<std::string, std::vector<double>> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      double dot = 0;
      for (int k = 0; k < 8; ++k) dot += double{a[i * 8 + k]} * b[k * 4 + j];
      want["mm"].push_back(dot);
      want["gemm"].push_back(0.5 * dot + c[i * 4 + j]);
    }
  }
  for (size_t i = 0; i < c.size(); ++i) {
    want["add"].push_back(double{c[i]} + d[i]);
    want["mul"].push_back(double{c[i]} * d[i]);
    want["relu"].push_back(std::max(0.0, double{c[i]}));
    want["sig"].push_back(1 / (1 + std::exp(-double{c[i]})));
    want["tanh"].push_back(std::tanh(double{c[i]}));
    want["to_bf16"].push_back(v["f"][i]);
    want["to_float"].push_back(c[i]);
  }
  for (int i = 0; i < 2; ++i) {
    double mx = -INFINITY, sum = 0, mean = 0, var = 0;
    for (int k = 0; k < 8; ++k) mx = std::max(mx, double{a[i * 8 + k]});
    for (int k = 0; k < 8; ++k) sum += std::exp(a[i * 8 + k] - mx);
    for (int k = 0; k < 8; ++k) want["sm"].push_back(std::exp(a[i * 8 + k] - mx) / sum);
    for (int k = 0; k < 8; ++k) mean += a[i * 8 + k];
    want["rsum"].push_back(mean);
    mean /= 8;
    want["rmean"].push_back(mean);
    for (int k = 0; k < 8; ++k) var += (a[i * 8 + k] - mean) * (a[i * 8 + k] - mean);
    var /= 8;
    for (int k = 0; k < 8; ++k) {
      want["ln"].push_back((a[i * 8 + k] - mean) / std::sqrt(var + 1e-5) * v["scale"][k] +
                           v["bias"][k]);
    }
  }
  const auto& x = v["x"];
  const auto& w = v["w"];
  for (int m = 0; m < 3; ++m) {
    for (int oy = 0; oy < 3; ++oy) {
      for (int ox = 0; ox < 3; ++ox) {
        double s = 0;
        for (int ch = 0; ch < 2; ++ch) {
          for (int ky = 0; ky < 3; ++ky) {
            for (int kx = 0; kx < 3; ++kx) {
              s +=
                  double{x[(ch * 5 + oy + ky) * 5 + ox + kx]} * w[((m * 2 + ch) * 3 + ky) * 3 + kx];
            }
          }
        }
        want["conv"].push_back(s);
      }
    }
  }

  const Graph& g = (*model)->graph();
  ASSERT_EQ(out->size(), g.outputs().size());
  for (size_t o = 0; o < out->size(); ++o) {
    const std::string& name = g.outputs()[o]->name();
    const Tensor& t = (*out)[o];
    SCOPED_TRACE(name);
    ASSERT_TRUE(want.contains(name));
    const bool bf16 = name != "to_float";
    // Storage: a bfloat16 output is a bfloat16 tensor (it can hold nothing else).
    EXPECT_EQ(t.type(), bf16 ? DataType::kBfloat16 : DataType::kFloat);
    const Tensor as_float = ConvertTensor(t, DataType::kFloat);
    ASSERT_EQ(as_float.numel(), static_cast<int64_t>(want[name].size()));
    int exact = 0;
    for (int64_t i = 0; i < as_float.numel(); ++i) {
      const double got = as_float.data<float>()[i];
      const double ref = want[name][i];
      const double rounded = bf16 ? RoundToBfloat16(static_cast<float>(ref)) : ref;
      exact += got == rounded ? 1 : 0;
      // fp32 arithmetic may land on the other side of a rounding boundary than the double
      // reference: one bfloat16 ulp at most; transcendental ops one more.
      const double ulps = name == "sig" || name == "tanh" || name == "sm" || name == "ln" ? 2 : 1;
      EXPECT_LE(std::abs(got - rounded), ulps * UlpAt(ref) + 1e-30) << "element " << i;
    }
    // Most elements match the independently rounded reference bit for bit.
    EXPECT_GE(2 * exact, static_cast<int>(as_float.numel())) << exact << " exact";
  }
}

// A bfloat16 chain keeps each intermediate rounded: 1 + 2^-8 is a tie that rounds to 1, so
// (x + e) - x is 0 in bfloat16 storage, 2^-8 in float.
TEST(Bfloat16Kernels, IntermediatesAreStoredInBfloat16) {
  auto model = ParseModelText(R"(
    chain (bfloat16[1] x, bfloat16[1] e) => (bfloat16[1] y) <bfloat16[1] s> {
      s = Add(x, e)
      y = Sub(s, x)
    })");
  ASSERT_TRUE(model.ok()) << model.status();
  TensorMap inputs;
  inputs["x"] =
      ConvertTensor(Tensor::FromVector<float>(DataType::kFloat, {1}, {1.0f}), DataType::kBfloat16);
  inputs["e"] = ConvertTensor(Tensor::FromVector<float>(DataType::kFloat, {1}, {0.00390625f}),
                              DataType::kBfloat16);
  auto session = CreateSession(**model, {});
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run(inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ConvertTensor((*out)[0], DataType::kFloat).data<float>()[0], 0.0f);
}

}  // namespace
}  // namespace ovfix::exec
