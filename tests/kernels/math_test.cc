// The math kernels (GEMM, MatMul, Gemm, pooling, BatchNormalization) checked against naive
// loops over many shapes: odd sizes, transposes, alpha/beta, pads, strides, dilations,
// ceil_mode. Every GEMM micro-kernel this CPU supports is run, not only the one picked at
// startup. Convolutions are in math_conv_test.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "exec/cpu/gemm.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

// ---- GEMM ----

void NaiveGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
               const std::vector<float>& a, const std::vector<float>& b, float beta,
               std::vector<double>& c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += double(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      }
      c[i * n + j] = alpha * sum + (beta == 0 ? 0.0 : beta * c[i * n + j]);
    }
  }
}

class GemmKernels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(SelectGemmKernelForTesting(GetParam())); }
  void TearDown() override { SelectGemmKernelForTesting(AvailableGemmKernels().front()); }
};

TEST_P(GemmKernels, MatchesNaive) {
  std::mt19937 rng(7);
  for (int64_t m : {1, 2, 5, 6, 12, 13, 31, 70}) {
    for (int64_t n : {1, 3, 8, 16, 17, 33, 100, 400}) {
      for (int64_t k : {1, 7, 64, 301, 700}) {
        for (int t = 0; t < 4; ++t) {
          const bool ta = t & 1, tb = t & 2;
          const float alpha = t == 2 ? -1.5f : 0.75f, beta = t == 1 ? 0.0f : 0.5f;
          auto a = RandomFloats(m * k, rng), b = RandomFloats(k * n, rng);
          auto c = RandomFloats(m * n, rng);
          std::vector<double> expected(c.begin(), c.end());
          NaiveGemm(ta, tb, m, n, k, alpha, a, b, beta, expected);
          Sgemm(ta, tb, m, n, k, alpha, a.data(), ta ? m : k, b.data(), tb ? k : n, beta, c.data(),
                n, t == 3 ? nullptr : &MathPool());
          for (int64_t i = 0; i < m * n; ++i) {
            ASSERT_NEAR(c[i], expected[i], 1e-4 * (1 + std::sqrt(double(k))))
                << GetParam() << " m=" << m << " n=" << n << " k=" << k << " ta=" << ta
                << " tb=" << tb << " at " << i;
          }
        }
      }
    }
  }
}

TEST_P(GemmKernels, PackedWithRowBiasAndLeadingDims) {
  std::mt19937 rng(11);
  const int64_t m = 29, n = 75, k = 530, ldc = 80;
  auto a = RandomFloats(m * k, rng), b = RandomFloats(k * n, rng), bias = RandomFloats(m, rng);
  std::vector<float> c(m * ldc, 1e30f);  // beta = 0: the old contents must not leak through
  PackedA packed(a.data(), k, false, m, k);
  GemmEpilogue epilogue;
  epilogue.row_bias = bias.data();
  GemmPacked(packed, MatrixB(b.data(), n, false), n, c.data(), ldc, epilogue, &MathPool());
  std::vector<double> expected(m * n, 0.0);
  NaiveGemm(false, false, m, n, k, 1.0f, a, b, 0.0f, expected);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_NEAR(c[i * ldc + j], expected[i * n + j] + bias[i], 1e-3) << i << "," << j;
    }
    for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], 1e30f);
  }
}

// A row-major A read in place (its last rows in tiles of 4 or 5 where a tile of 1 to 3 would
// be left) and the same A packed (given transposed) give the same floats bit for bit: the
// sums of an element do not depend on how the rows are cut into tiles. Row counts of every
// remainder by the AVX2 tile's 6 rows, with a pool and without, beta 0 and 1.
TEST_P(GemmKernels, RowsInPlaceMatchPackedBitForBit) {
  std::mt19937 rng(17);
  for (int64_t m : {9, 10, 13, 14, 15, 16, 19, 20, 31, 49, 128, 196}) {
    for (int64_t n : {16, 40}) {
      const int64_t k = 37;
      auto a = RandomFloats(m * k, rng), b = RandomFloats(k * n, rng),
           c0 = RandomFloats(m * n, rng);
      std::vector<float> a_t(k * m);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t p = 0; p < k; ++p) a_t[p * m + i] = a[i * k + p];
      }
      for (int t = 0; t < 2; ++t) {
        const float beta = t == 0 ? 0.0f : 1.0f;
        std::vector<float> in_place = c0, packed = c0;
        ThreadPool* pool = t == 0 ? &MathPool() : nullptr;
        Sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, beta, in_place.data(), n,
              pool);
        Sgemm(true, false, m, n, k, 1.0f, a_t.data(), m, b.data(), n, beta, packed.data(), n, pool);
        ASSERT_EQ(std::memcmp(in_place.data(), packed.data(), m * n * sizeof(float)), 0)
            << GetParam() << " m=" << m << " n=" << n << " beta=" << beta;
      }
    }
  }
}

// Packed weights are run in one of two orders: a block of B that fits in half the L2 with each
// A panel across all of it, a larger one (or any, for a part of at most 16 A panels) panel by
// panel across the A panels. A product whose first block is too large for the first (384
// columns, 450 or 800 deep: 600-1200 KiB) and the same product a 16-column slice at a time
// (25-50 KiB blocks) on one thread (150 rows: 25 A panels, the first order; 53 rows: 9, the
// second) and on the pool (a few panels a part) give the same floats bit for bit, with the
// column bias, residual and clamp of a convolution's epilogue; all match a double reference.
TEST_P(GemmKernels, PackedWeightsGiveTheSameFloatsInEitherOrder) {
  std::mt19937 rng(23);
  for (int64_t m : {53, 150}) {
    for (int64_t k : {450, 800}) {
      const int64_t n = 400;
      auto a = RandomFloats(m * k, rng), b = RandomFloats(k * n, rng);
      auto bias = RandomFloats(n, rng), residual = RandomFloats(m * n, rng);
      GemmEpilogue epilogue;
      epilogue.column_bias = bias.data();
      epilogue.residual = residual.data();
      epilogue.clamp = true;
      epilogue.clamp_min = -2.0f;
      epilogue.clamp_max = 2.0f;
      std::vector<float> whole(m * n);
      // On one thread: one part, whose first 384 columns are one block.
      GemmRowsInPlace(a.data(), k, m, k, PackedB(b.data(), n, false, k, n), n, whole.data(), n,
                      epilogue, nullptr);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &MathPool()}) {
        std::vector<float> sliced(m * n);
        for (int64_t j = 0; j < n; j += 16) {
          GemmEpilogue slice = epilogue;
          slice.column_bias = bias.data() + j;
          slice.residual = residual.data() + j;
          GemmRowsInPlace(a.data(), k, m, k, PackedB(b.data() + j, n, false, k, 16), 16,
                          sliced.data() + j, n, slice, pool);
        }
        ASSERT_EQ(std::memcmp(whole.data(), sliced.data(), m * n * sizeof(float)), 0)
            << GetParam() << " m=" << m << " k=" << k << (pool != nullptr ? " pool" : "");
      }
      std::vector<double> expected(m * n, 0.0);
      NaiveGemm(false, false, m, n, k, 1.0f, a, b, 0.0f, expected);
      for (int64_t i = 0; i < m * n; ++i) {
        const double want = std::clamp(expected[i] + bias[i % n] + residual[i], -2.0, 2.0);
        ASSERT_NEAR(whole[i], want, 1e-4 * (1 + std::sqrt(double(k)))) << GetParam() << " at " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Math, GemmKernels, ::testing::ValuesIn(AvailableGemmKernels()));

// Few rows of A stream B column block by column block: products wider than one block, with
// a leading dimension of C wider than the product, beta = 0 ignoring what C held (NaN).
TEST(GemmTest, FewRowsAcrossColumnBlocksMatchNaive) {
  std::mt19937 rng(13);
  for (int64_t m : {int64_t{2}, int64_t{4}, kFewRows}) {
    for (int64_t n : {511, 512, 1300}) {
      for (int t = 0; t < 2; ++t) {
        const bool ta = t == 1;
        const int64_t k = 97, ldc = n + 5;
        const float beta = ta ? 0.25f : 0.0f;
        auto a = RandomFloats(m * k, rng), b = RandomFloats(k * n, rng);
        std::vector<float> c(m * ldc, beta == 0.0f ? std::nanf("") : 2.0f);
        std::vector<double> expected(m * n, 2.0);
        NaiveGemm(ta, false, m, n, k, 1.25f, a, b, beta, expected);
        Sgemm(ta, false, m, n, k, 1.25f, a.data(), ta ? m : k, b.data(), n, beta, c.data(), ldc,
              &MathPool());
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < ldc; ++j) {
            const float want = j < n ? static_cast<float>(expected[i * n + j])
                                     : (beta == 0.0f ? std::nanf("") : 2.0f);
            if (j >= n && beta == 0.0f) {
              ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "m=" << m << " n=" << n << " j=" << j;
            } else {
              ASSERT_NEAR(c[i * ldc + j], want, 1e-4 * (1 + std::sqrt(double(k))))
                  << "m=" << m << " n=" << n << " ta=" << ta << " at " << i << "," << j;
            }
          }
        }
      }
    }
  }
}

TEST(GemmTest, EmptyDepthAndDouble) {
  std::vector<float> c = {1, 2, 3, 4};
  Sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 2.0f, c.data(), 2, nullptr);
  EXPECT_EQ(c, (std::vector<float>{2, 4, 6, 8}));
  std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1}, d(4, 1.0);
  Dgemm(false, false, 2, 2, 3, 1.0, a.data(), 3, b.data(), 2, 1.0, d.data(), 2, &MathPool());
  EXPECT_EQ(d, (std::vector<double>{5, 6, 11, 12}));
}

// ---- MatMul and Gemm nodes ----

TEST(MatMulTest, BroadcastBatchesAndVectors) {
  std::mt19937 rng(3);
  struct Case {
    Dims a, b, out;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}},
      {{2, 1, 3, 4}, {3, 4, 6}, {2, 3, 3, 6}},
      {{4}, {4, 5}, {5}},
      {{2, 3, 4}, {4}, {2, 3}},
      {{4}, {4}, {}},
      {{1, 3, 4}, {2, 4, 2}, {2, 3, 2}},
      {{0, 3, 4}, {4, 2}, {0, 3, 2}},
  };
  for (const Case& c : cases) {
    const Tensor a = FloatTensor(c.a, RandomFloats(Tensor::NumElements(c.a), rng));
    const Tensor b = FloatTensor(c.b, RandomFloats(Tensor::NumElements(c.b), rng));
    auto out = RunNode("MatMul", 13, {a, b}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    // Naive: promote vectors, then index batches by broadcasting.
    Dims ad = c.a, bd = c.b;
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
    const int64_t batches = m * n == 0 ? 0 : Tensor::NumElements(c.out) / (m * n);
    const size_t rank = std::max(ad.size(), bd.size());
    Dims batch_dims(rank - 2, 1);
    for (size_t i = 0; i + 2 < rank; ++i) {
      const int64_t da = i + ad.size() >= rank ? ad[i + ad.size() - rank] : 1;
      const int64_t db = i + bd.size() >= rank ? bd[i + bd.size() - rank] : 1;
      batch_dims[i] = std::max(da, db);
    }
    std::vector<double> expected;
    for (int64_t batch = 0; batch < batches; ++batch) {
      int64_t rest = batch, a_off = 0, b_off = 0, a_stride = 1, b_stride = 1;
      for (size_t i = batch_dims.size(); i-- > 0;) {
        const int64_t coord = rest % batch_dims[i];
        rest /= batch_dims[i];
        const int64_t ai = static_cast<int64_t>(i + ad.size()) - static_cast<int64_t>(rank);
        const int64_t bi = static_cast<int64_t>(i + bd.size()) - static_cast<int64_t>(rank);
        if (ai >= 0) {
          if (ad[ai] != 1) a_off += coord * a_stride;
          a_stride *= ad[ai];
        }
        if (bi >= 0) {
          if (bd[bi] != 1) b_off += coord * b_stride;
          b_stride *= bd[bi];
        }
      }
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p) {
            sum += double(a.data<float>()[a_off * m * k + i * k + p]) *
                   b.data<float>()[b_off * k * n + p * n + j];
          }
          expected.push_back(sum);
        }
      }
    }
    ExpectNear((*out)[0], c.out, expected, 1e-5, "MatMul");
  }
}

TEST(MatMulTest, IntegersWrapAndErrors) {
  const Tensor a = Tensor::FromVector<int32_t>(DataType::kInt32, {1, 2}, {2147483647, 2});
  const Tensor b = Tensor::FromVector<int32_t>(DataType::kInt32, {2, 1}, {2, 3});
  auto out = RunNode("MatMul", 13, {a, b}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<int32_t>()[0], 4);  // 2 * (2^31 - 1) + 6 wraps to 4
  const Tensor c = FloatTensor({2, 3}, std::vector<float>(6, 1));
  const Tensor d = FloatTensor({2, 3}, std::vector<float>(6, 1));
  EXPECT_EQ(RunNode("MatMul", 13, {c, d}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(RunNode("MatMul", 13, {c}, {}).ok());
}

TEST(GemmNodeTest, TransposesAlphaBetaAndBroadcastC) {
  std::mt19937 rng(5);
  const int64_t m = 7, n = 9, k = 11;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const auto av = RandomFloats(m * k, rng), bv = RandomFloats(k * n, rng);
    for (const Dims& c_dims : {Dims{}, Dims{n}, Dims{m, 1}, Dims{1, n}, Dims{m, n}}) {
      const auto cv = RandomFloats(Tensor::NumElements(c_dims), rng);
      const Tensor a = FloatTensor(ta ? Dims{k, m} : Dims{m, k}, av);
      const Tensor b = FloatTensor(tb ? Dims{n, k} : Dims{k, n}, bv);
      const Tensor c = FloatTensor(c_dims, cv);
      auto out = RunNode("Gemm", 13, {a, b, c},
                         {IntAttr("transA", ta), IntAttr("transB", tb), FloatAttr("alpha", 0.5f),
                          FloatAttr("beta", 2.0f)});
      ASSERT_TRUE(out.ok()) << out.status();
      std::vector<double> expected(m * n);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t ci = c_dims.size() == 2
                                 ? (c_dims[0] == 1 ? 0 : i) * c_dims[1] + (c_dims[1] == 1 ? 0 : j)
                             : c_dims.size() == 1 ? j
                                                  : 0;
          expected[i * n + j] = 2.0 * cv[ci];
        }
      }
      std::vector<double> product(m * n, 0.0);
      NaiveGemm(ta, tb, m, n, k, 0.5f, av, bv, 0.0f, product);
      for (int64_t i = 0; i < m * n; ++i) expected[i] += product[i];
      ExpectNear((*out)[0], {m, n}, expected, 1e-5, "Gemm");
    }
  }
  // No C (opset 11+), and a C that does not broadcast.
  const Tensor a = FloatTensor({2, 3}, RandomFloats(6, rng));
  const Tensor b = FloatTensor({3, 4}, RandomFloats(12, rng));
  EXPECT_TRUE(RunNode("Gemm", 11, {a, b}, {}).ok());
  EXPECT_EQ(RunNode("Gemm", 13, {a, b, FloatTensor({3}, {1, 2, 3})}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- Pooling ----

struct PoolCase {
  PoolCase(Dims x, Dims kernel, Dims strides, Dims pads, Dims dilations = {},
           bool ceil_mode = false, bool count_include_pad = false)
      : x(std::move(x)),
        kernel(std::move(kernel)),
        strides(std::move(strides)),
        pads(std::move(pads)),
        dilations(std::move(dilations)),
        ceil_mode(ceil_mode),
        count_include_pad(count_include_pad) {}
  Dims x, kernel, strides, pads, dilations;
  bool ceil_mode;
  bool count_include_pad;
};

// Naive pooling; kind 0 max, 1 average, 2 Lp (p = 2). Also the argmax (row-major) index.
std::vector<double> NaivePool(const PoolCase& c, const std::vector<float>& x, int kind,
                              Dims* out_dims, std::vector<double>* indices) {
  const size_t rank = c.x.size() - 2;
  Dims out;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t extent = (c.kernel[i] - 1) * (c.dilations.empty() ? 1 : c.dilations[i]) + 1;
    const int64_t span = c.x[i + 2] + c.pads[i] + c.pads[i + rank] - extent;
    int64_t o = (c.ceil_mode ? (span + c.strides[i] - 1) / c.strides[i] : span / c.strides[i]) + 1;
    if (c.ceil_mode && (o - 1) * c.strides[i] >= c.x[i + 2] + c.pads[i]) --o;
    out.push_back(o);
  }
  *out_dims = {c.x[0], c.x[1]};
  out_dims->insert(out_dims->end(), out.begin(), out.end());
  const Dims in3 = Pad3(Dims(c.x.begin() + 2, c.x.end()), rank, 1), o3 = Pad3(out, rank, 1);
  const Dims k3 = Pad3(c.kernel, rank, 1), s3 = Pad3(c.strides, rank, 1);
  const Dims d3 = Pad3(c.dilations.empty() ? Dims(rank, 1) : c.dilations, rank, 1);
  const Dims pb = Pad3(Dims(c.pads.begin(), c.pads.begin() + rank), rank, 0);
  const Dims pe = Pad3(Dims(c.pads.begin() + rank, c.pads.end()), rank, 0);
  const int64_t in_size = in3[0] * in3[1] * in3[2];
  std::vector<double> y;
  for (int64_t plane = 0; plane < c.x[0] * c.x[1]; ++plane) {
    for (int64_t o0 = 0; o0 < o3[0]; ++o0) {
      for (int64_t o1 = 0; o1 < o3[1]; ++o1) {
        for (int64_t o2 = 0; o2 < o3[2]; ++o2) {
          double acc = kind == 0 ? -INFINITY : 0.0;
          int64_t count = 0, padded = 0, best = -1;
          for (int64_t t0 = 0; t0 < k3[0]; ++t0) {
            for (int64_t t1 = 0; t1 < k3[1]; ++t1) {
              for (int64_t t2 = 0; t2 < k3[2]; ++t2) {
                const int64_t p[3] = {o0 * s3[0] - pb[0] + t0 * d3[0],
                                      o1 * s3[1] - pb[1] + t1 * d3[1],
                                      o2 * s3[2] - pb[2] + t2 * d3[2]};
                bool inside = true, in_pads = true;
                for (int a = 0; a < 3; ++a) {
                  inside = inside && p[a] >= 0 && p[a] < in3[a];
                  in_pads = in_pads && p[a] < in3[a] + pe[a];
                }
                padded += in_pads;
                if (!inside) continue;
                const int64_t at = (p[0] * in3[1] + p[1]) * in3[2] + p[2];
                const double v = x[plane * in_size + at];
                ++count;
                if (kind == 0 && v > acc) {
                  acc = v;
                  best = plane * in_size + at;
                } else if (kind == 1) {
                  acc += v;
                } else if (kind == 2) {
                  acc += v * v;
                }
              }
            }
          }
          if (kind == 1) acc /= c.count_include_pad ? padded : count;
          if (kind == 2) acc = std::sqrt(acc);
          y.push_back(acc);
          if (indices != nullptr) indices->push_back(best);
        }
      }
    }
  }
  return y;
}

TEST(PoolTest, MatchesNaive) {
  const std::vector<PoolCase> cases = {
      {{1, 64, 20, 20}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
      {{2, 3, 9, 11}, {3, 2}, {1, 2}, {0, 1, 2, 0}},
      {{1, 2, 8, 8}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, true},
      {{1, 2, 4, 4}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {}, true},
      {{1, 2, 10, 9}, {3, 3}, {3, 2}, {1, 0, 1, 1}, {}, true, true},
      {{1, 2, 9, 9}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {2, 3}},
      {{1, 3, 12}, {4}, {3}, {1, 2}},
      {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 0, 1, 0, 1, 1}, {1, 1, 2}},
  };
  std::mt19937 rng(29);
  for (const PoolCase& c : cases) {
    const auto x = RandomFloats(Tensor::NumElements(c.x), rng);
    const Tensor input = FloatTensor(c.x, x);
    std::vector<onnx::AttributeProto> attributes = {
        IntsAttr("kernel_shape", c.kernel), IntsAttr("strides", c.strides),
        IntsAttr("pads", c.pads), IntAttr("ceil_mode", c.ceil_mode)};
    if (!c.dilations.empty()) attributes.push_back(IntsAttr("dilations", c.dilations));
    Dims out_dims;
    std::vector<double> indices;
    const auto max_expected = NaivePool(c, x, 0, &out_dims, &indices);
    NodeRun two_outputs;
    two_outputs.num_outputs = 2;
    auto max = RunNode("MaxPool", 12, {input}, attributes, two_outputs);
    ASSERT_TRUE(max.ok()) << max.status();
    ExpectNear((*max)[0], out_dims, max_expected, 0, "MaxPool");
    ExpectNear((*max)[1], out_dims, indices, 0, "MaxPool indices");

    auto lp = RunNode("LpPool", 18, {input}, attributes);
    ASSERT_TRUE(lp.ok()) << lp.status();
    ExpectNear((*lp)[0], out_dims, NaivePool(c, x, 2, &out_dims, nullptr), 1e-5, "LpPool");

    if (!c.dilations.empty()) continue;  // AveragePool has dilations only from opset 19
    attributes.push_back(IntAttr("count_include_pad", c.count_include_pad));
    auto average = RunNode("AveragePool", 11, {input}, attributes);
    ASSERT_TRUE(average.ok()) << average.status();
    ExpectNear((*average)[0], out_dims, NaivePool(c, x, 1, &out_dims, nullptr), 1e-5,
               "AveragePool");
  }
}

// AveragePool over 1-D and 2-D planes runs separably (row sums, then column sums, in double):
// bit for bit the double window average rounded once, with pads, ceil_mode, count_include_pad,
// dilations (opset 19), DenseNet's 2x2 transitions and threads.
TEST(PoolTest, AverageRowsMatchDoubleAverageExactly) {
  const std::vector<PoolCase> cases = {
      {{1, 128, 32, 32}, {2, 2}, {2, 2}, {0, 0, 0, 0}},
      {{2, 3, 9, 11}, {3, 2}, {1, 2}, {0, 1, 2, 0}},
      {{1, 2, 10, 9}, {3, 3}, {3, 2}, {1, 0, 1, 1}, {}, true, true},
      {{1, 2, 10, 9}, {3, 3}, {3, 2}, {1, 0, 1, 1}, {}, true, false},
      {{1, 5, 7, 13}, {3, 4}, {2, 3}, {1, 2, 2, 1}, {2, 1}, false, true},
      {{1, 3, 12}, {4}, {3}, {1, 2}, {}, false, true},
      {{2, 4, 17}, {2}, {2}, {0, 1}, {3}},
      {{1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
  };
  std::mt19937 rng(41);
  for (const PoolCase& c : cases) {
    std::vector<float> x = RandomFloats(Tensor::NumElements(c.x), rng);
    for (float& v : x) v = v * 100 + 3;  // values of mixed magnitudes and an offset
    std::vector<onnx::AttributeProto> attributes = {
        IntsAttr("kernel_shape", c.kernel), IntsAttr("strides", c.strides),
        IntsAttr("pads", c.pads), IntAttr("ceil_mode", c.ceil_mode),
        IntAttr("count_include_pad", c.count_include_pad)};
    if (!c.dilations.empty()) attributes.push_back(IntsAttr("dilations", c.dilations));
    Dims out_dims;
    std::vector<double> expected = NaivePool(c, x, 1, &out_dims, nullptr);
    for (double& v : expected) v = static_cast<float>(v);
    auto average = RunNode("AveragePool", 19, {FloatTensor(c.x, x)}, attributes);
    ASSERT_TRUE(average.ok()) << average.status();
    ExpectNear((*average)[0], out_dims, expected, 0, "AveragePool");
  }
}

TEST(PoolTest, GlobalPoolsAndInts) {
  std::mt19937 rng(31);
  const Dims dims = {2, 3, 7, 5};
  const auto x = RandomFloats(Tensor::NumElements(dims), rng);
  const Tensor input = FloatTensor(dims, x);
  std::vector<double> average, maximum;
  for (int64_t plane = 0; plane < 6; ++plane) {
    double sum = 0, best = -INFINITY;
    for (int64_t i = 0; i < 35; ++i) {
      sum += x[plane * 35 + i];
      best = std::max<double>(best, x[plane * 35 + i]);
    }
    average.push_back(sum / 35);
    maximum.push_back(best);
  }
  auto out = RunNode("GlobalAveragePool", 1, {input}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {2, 3, 1, 1}, average, 1e-6, "GlobalAveragePool");
  out = RunNode("GlobalMaxPool", 1, {input}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {2, 3, 1, 1}, maximum, 0, "GlobalMaxPool");

  const Tensor bytes =
      Tensor::FromVector<uint8_t>(DataType::kUint8, {1, 1, 2, 3}, {1, 9, 3, 4, 5, 250});
  out = RunNode("MaxPool", 12, {bytes}, {IntsAttr("kernel_shape", {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<uint8_t>()[0], 9);
  EXPECT_EQ((*out)[0].data<uint8_t>()[1], 250);
  EXPECT_FALSE(RunNode("MaxPool", 12, {input}, {}).ok());  // no kernel_shape
  EXPECT_FALSE(RunNode("MaxPool", 12, {input}, {IntsAttr("kernel_shape", {9, 9})}).ok());
}

TEST(PoolTest, MaxUnpoolUndoesMaxPool) {
  std::mt19937 rng(41);
  const Dims dims = {2, 3, 6, 8};
  const auto x = RandomFloats(Tensor::NumElements(dims), rng);
  NodeRun two_outputs;
  two_outputs.num_outputs = 2;
  const std::vector<onnx::AttributeProto> attributes = {IntsAttr("kernel_shape", {2, 2}),
                                                        IntsAttr("strides", {2, 2})};
  auto pooled = RunNode("MaxPool", 12, {FloatTensor(dims, x)}, attributes, two_outputs);
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  auto unpooled = RunNode("MaxUnpool", 11, {(*pooled)[0], (*pooled)[1]}, attributes);
  ASSERT_TRUE(unpooled.ok()) << unpooled.status();
  // Every maximum is back where it came from; everything else is zero.
  std::vector<double> expected(x.size(), 0.0);
  for (int64_t i = 0; i < (*pooled)[1].numel(); ++i) {
    const int64_t at = (*pooled)[1].data<int64_t>()[i];
    expected[at] = x[at];
  }
  ExpectNear((*unpooled)[0], dims, expected, 0, "MaxUnpool");
  // A larger output_shape pads at the end of each axis.
  const Tensor shape = Tensor::FromVector<int64_t>(DataType::kInt64, {4}, {2, 3, 7, 9});
  unpooled = RunNode("MaxUnpool", 11, {(*pooled)[0], (*pooled)[1], shape}, attributes);
  ASSERT_TRUE(unpooled.ok()) << unpooled.status();
  EXPECT_EQ((*unpooled)[0].dims(), (Dims{2, 3, 7, 9}));
  EXPECT_EQ((*unpooled)[0].GetAsDouble(9 + 1), expected[8 + 1]);
  // Indices outside the output are refused.
  Tensor bad = (*pooled)[1].Clone();
  bad.data<int64_t>()[0] = 1000000;
  EXPECT_EQ(RunNode("MaxUnpool", 11, {(*pooled)[0], bad}, attributes).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MathTest, EmptyTensors) {
  // Zero-sized batch, channels or inner dims give empty or bias-only outputs, never a crash.
  const Tensor x = FloatTensor({0, 3, 5, 5}, {});
  const Tensor w = FloatTensor({4, 3, 3, 3}, std::vector<float>(108, 1));
  auto out = RunNode("Conv", 11, {x, w}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{0, 4, 3, 3}));
  const Tensor x2 = FloatTensor({1, 0, 5, 5}, {});
  const Tensor w2 = FloatTensor({4, 0, 3, 3}, {});
  out = RunNode("Conv", 11, {x2, w2, FloatTensor({4}, {1, 2, 3, 4})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].GetAsDouble(9), 2.0);
  out = RunNode("MatMul", 13, {FloatTensor({2, 0}, {}), FloatTensor({0, 3}, {})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {2, 3}, std::vector<double>(6, 0.0), 0, "MatMul over K = 0");
  out =
      RunNode("Gemm", 13,
              {FloatTensor({2, 0}, {}), FloatTensor({0, 3}, {}), FloatTensor({3}, {1, 2, 3})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {2, 3}, {1, 2, 3, 1, 2, 3}, 0, "Gemm over K = 0");
  out = RunNode("MaxPool", 12, {FloatTensor({0, 2, 4, 4}, {})}, {IntsAttr("kernel_shape", {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{0, 2, 3, 3}));
  out = RunNode("GlobalAveragePool", 1, {FloatTensor({2, 0, 4, 4}, {})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{2, 0, 1, 1}));
}

// ---- BatchNormalization ----

TEST(BatchNormTest, InferenceAndTraining) {
  std::mt19937 rng(37);
  const Dims dims = {2, 3, 4, 5};
  const auto x = RandomFloats(120, rng);
  const std::vector<float> scale = {0.5f, 1.5f, -1.0f}, bias = {0.1f, 0.2f, 0.3f};
  const std::vector<float> mean = {0.0f, 0.2f, -0.1f}, var = {1.0f, 0.5f, 2.0f};
  std::vector<Tensor> inputs = {FloatTensor(dims, x), FloatTensor({3}, scale),
                                FloatTensor({3}, bias), FloatTensor({3}, mean),
                                FloatTensor({3}, var)};
  std::vector<double> expected(120);
  for (int64_t i = 0; i < 120; ++i) {
    const int64_t c = (i / 20) % 3;
    expected[i] = (x[i] - mean[c]) / std::sqrt(var[c] + 1e-3) * scale[c] + bias[c];
  }
  auto out = RunNode("BatchNormalization", 15, inputs, {FloatAttr("epsilon", 1e-3f)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], dims, expected, 1e-5, "BatchNormalization");

  // Training: batch statistics, running statistics updated with momentum.
  std::vector<double> batch_mean(3, 0), batch_var(3, 0);
  for (int64_t i = 0; i < 120; ++i) batch_mean[(i / 20) % 3] += x[i] / 40.0;
  for (int64_t i = 0; i < 120; ++i) {
    const int64_t c = (i / 20) % 3;
    batch_var[c] += (x[i] - batch_mean[c]) * (x[i] - batch_mean[c]) / 40.0;
  }
  for (int64_t i = 0; i < 120; ++i) {
    const int64_t c = (i / 20) % 3;
    expected[i] = (x[i] - batch_mean[c]) / std::sqrt(batch_var[c] + 1e-5) * scale[c] + bias[c];
  }
  NodeRun three;
  three.num_outputs = 3;
  out = RunNode("BatchNormalization", 15, inputs,
                {IntAttr("training_mode", 1), FloatAttr("momentum", 0.8f)}, three);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], dims, expected, 1e-5, "BatchNormalization training");
  std::vector<double> running_mean(3), running_var(3);
  for (int c = 0; c < 3; ++c) {
    running_mean[c] = mean[c] * 0.8 + batch_mean[c] * 0.2;
    running_var[c] = var[c] * 0.8 + batch_var[c] * 0.2;
  }
  ExpectNear((*out)[1], {3}, running_mean, 1e-5, "running_mean");
  ExpectNear((*out)[2], {3}, running_var, 1e-5, "running_var");

  inputs[4] = FloatTensor({2}, {1, 1});
  EXPECT_EQ(RunNode("BatchNormalization", 15, inputs, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Inference over float planes of every length around the vector widths (the vectorized loop
// and its remainder), without an activation and with a fused clamp or hard swish: bit for bit
// a plain loop over the same per-channel scale and shift (x * scale, then + shift, in float),
// then the activation as FusedActivation::Activate applies it.
TEST(BatchNormTest, FloatPlanesBitForBitWithFusedActivations) {
  std::mt19937 rng(41);
  const std::vector<float> scale = {0.5f, 1.5f, -1.0f}, bias = {0.1f, 0.2f, 0.3f};
  const std::vector<float> mean = {0.0f, 0.2f, -0.1f}, var = {1.0f, 0.5f, 2.0f};
  const double epsilon = 1e-5f;
  std::vector<float> a(3), b(3);
  for (int c = 0; c < 3; ++c) {
    const double s = scale[c] / std::sqrt(var[c] + epsilon);
    a[c] = static_cast<float>(s);
    b[c] = static_cast<float>(bias[c] - mean[c] * s);
  }
  std::vector<FusedActivation> activations(3);
  activations[1].clamp = true;
  activations[1].clamp_min = -0.25f;
  activations[1].clamp_max = 0.5f;
  activations[2].hard_swish = true;
  activations[2].hard_swish_alpha = 1.0f / 6.0f;
  activations[2].hard_swish_beta = 0.5f;
  for (int64_t inner : {1, 7, 8, 9, 16, 17, 35, 100}) {
    const Dims dims = {2, 3, inner};
    const auto x = RandomFloats(6 * inner, rng);
    for (const FusedActivation& activation : activations) {
      NodeRun run;
      run.fused = activation;
      auto out = RunNode("BatchNormalization", 15,
                         {FloatTensor(dims, x), FloatTensor({3}, scale), FloatTensor({3}, bias),
                          FloatTensor({3}, mean), FloatTensor({3}, var)},
                         {}, run);
      ASSERT_TRUE(out.ok()) << out.status();
      for (int64_t i = 0; i < 6 * inner; ++i) {
        const int64_t c = (i / inner) % 3;
        const float product = x[i] * a[c];
        const float expected = activation.Activate(product + b[c]);
        ASSERT_EQ((*out)[0].data<float>()[i], expected)
            << "inner " << inner << " element " << i << (activation.clamp ? " clamp" : "")
            << (activation.hard_swish ? " hard swish" : "");
      }
    }
  }
}

}  // namespace
}  // namespace ovfix::exec::math_testing
