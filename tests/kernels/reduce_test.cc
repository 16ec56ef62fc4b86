// Tests of the reduction group's kernels (exec/cpu/reduce.cc, softmax.cc, normalization.cc,
// arg_topk.cc), run one node at a time through KernelContext and checked against naive
// formulas written out here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/kernel.h"
#include "exec/thread_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<float> RandomFloats(int64_t n, uint32_t seed, float low = -2, float high = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Runs one node of `op_type` at `opset` on `inputs` (an undefined Tensor stands for an
// omitted optional input), on `pool` (single-threaded when null).
absl::StatusOr<std::vector<Tensor>> RunOp(const std::string& op_type, int opset,
                                          const std::vector<Tensor>& inputs,
                                          const std::vector<onnx::AttributeProto>& attributes,
                                          int num_outputs = 1, ThreadPool* pool = nullptr) {
  NodeRun run;
  run.pool = pool;
  run.num_outputs = num_outputs;
  run.name = "node";
  return RunNode(op_type, opset, inputs, attributes, run);
}

// Reduce* by the definition: gather each output's inputs, then apply the formula.
std::vector<double> ReferenceReduce(const std::string& op, const std::vector<float>& x,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<bool>& reduced) {
  const size_t rank = dims.size();
  std::vector<int64_t> out_dims;
  for (size_t d = 0; d < rank; ++d) out_dims.push_back(reduced[d] ? 1 : dims[d]);
  std::vector<std::vector<double>> groups(Tensor::NumElements(out_dims));
  std::vector<int64_t> index(rank, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t out = 0;
    for (size_t d = 0; d < rank; ++d) out = out * out_dims[d] + (reduced[d] ? 0 : index[d]);
    groups[out].push_back(x[i]);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  std::vector<double> result;
  for (const auto& g : groups) {
    double sum = 0, abs_sum = 0, squares = 0, prod = 1, exp_sum = 0;
    double max = -INFINITY, min = INFINITY;
    for (double v : g) {
      sum += v;
      abs_sum += std::fabs(v);
      squares += v * v;
      prod *= v;
      exp_sum += std::exp(v);
      max = std::max(max, v);
      min = std::min(min, v);
    }
    if (op == "ReduceSum") result.push_back(sum);
    if (op == "ReduceMean") result.push_back(sum / g.size());
    if (op == "ReduceMax") result.push_back(max);
    if (op == "ReduceMin") result.push_back(min);
    if (op == "ReduceProd") result.push_back(prod);
    if (op == "ReduceL1") result.push_back(abs_sum);
    if (op == "ReduceL2") result.push_back(std::sqrt(squares));
    if (op == "ReduceLogSum") result.push_back(std::log(sum));
    if (op == "ReduceLogSumExp") result.push_back(std::log(exp_sum));
    if (op == "ReduceSumSquare") result.push_back(squares);
  }
  return result;
}

void ExpectNear(const std::vector<double>& actual, const std::vector<double>& expected,
                double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], atol + rtol * std::fabs(expected[i])) << "at " << i;
  }
}

const char* const kReduceOps[] = {"ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
                                  "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                                  "ReduceLogSumExp", "ReduceSumSquare"};

// Every op, every subset of the axes of a 4-D input, keepdims on and off, axes as attribute
// and as input, single-threaded and on a pool.
TEST(ReduceTest, AllOpsAllAxisSubsetsMatchDefinition) {
  const std::vector<int64_t> dims = {2, 3, 4, 5};
  std::vector<float> x = RandomFloats(120, 1, 0.5f, 1.5f);  // positive: LogSum, Prod stay sane
  ThreadPool pool(3);
  for (const std::string op : kReduceOps) {
    const int axes_input_since = op == "ReduceSum" ? 13 : 18;
    for (int mask = 1; mask < 16; ++mask) {
      std::vector<int64_t> axes;
      std::vector<bool> reduced(4);
      std::vector<int64_t> kept_dims, removed_dims;
      for (int d = 0; d < 4; ++d) {
        reduced[d] = (mask >> d) & 1;
        if (reduced[d]) axes.push_back(d % 2 ? d - 4 : d);  // some negative
        kept_dims.push_back(reduced[d] ? 1 : dims[d]);
        if (!reduced[d]) removed_dims.push_back(dims[d]);
      }
      const std::vector<double> expected = ReferenceReduce(op, x, dims, reduced);
      for (int keepdims = 0; keepdims < 2; ++keepdims) {
        for (int opset : {11, axes_input_since}) {
          SCOPED_TRACE(op + " mask " + std::to_string(mask) + " keepdims " +
                       std::to_string(keepdims) + " opset " + std::to_string(opset));
          std::vector<Tensor> inputs = {FloatTensor(dims, x)};
          std::vector<onnx::AttributeProto> attributes = {IntAttr("keepdims", keepdims)};
          if (opset >= axes_input_since) {
            inputs.push_back(Int64s({static_cast<int64_t>(axes.size())}, axes));
          } else {
            attributes.push_back(IntsAttr("axes", axes));
          }
          auto result = RunOp(op, opset, inputs, attributes, 1, mask % 2 ? &pool : nullptr);
          ASSERT_TRUE(result.ok()) << result.status();
          EXPECT_EQ((*result)[0].dims(), keepdims ? kept_dims : removed_dims);
          ExpectNear(Values((*result)[0]), expected);
        }
      }
    }
  }
}

TEST(ReduceTest, EmptyAxesReduceAllUnlessNoop) {
  const std::vector<float> x = {1, -2, 3, -4, 5, -6};
  auto all = RunOp("ReduceSum", 13, {FloatTensor({2, 3}, x), Int64s({0}, {})}, {});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)[0].dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ((*all)[0].GetAsDouble(0), -3);
  auto omitted = RunOp("ReduceMax", 11, {FloatTensor({2, 3}, x)}, {IntAttr("keepdims", 0)});
  ASSERT_TRUE(omitted.ok()) << omitted.status();
  EXPECT_TRUE((*omitted)[0].dims().empty());
  EXPECT_EQ((*omitted)[0].GetAsDouble(0), 5);
  auto noop = RunOp("ReduceSum", 13, {FloatTensor({2, 3}, x), Int64s({0}, {})},
                    {IntAttr("noop_with_empty_axes", 1)});
  ASSERT_TRUE(noop.ok()) << noop.status();
  EXPECT_EQ((*noop)[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(Values((*noop)[0]), ElementsAre(1, -2, 3, -4, 5, -6));
  // With no axes each element is reduced alone: ReduceSumSquare squares (as the reference).
  auto squares = RunOp("ReduceSumSquare", 18, {FloatTensor({2, 3}, x), Tensor()},
                       {IntAttr("noop_with_empty_axes", 1)});
  ASSERT_TRUE(squares.ok()) << squares.status();
  EXPECT_THAT(Values((*squares)[0]), ElementsAre(1, 4, 9, 16, 25, 36));
}

TEST(ReduceTest, IntegerTypes) {
  auto sum =
      RunOp("ReduceSum", 11,
            {Tensor::FromVector(DataType::kInt32, {3}, std::vector<int32_t>{2147483647, 1, 5})},
            {IntAttr("keepdims", 0)});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].type(), DataType::kInt32);
  EXPECT_EQ((*sum)[0].data<int32_t>()[0], -2147483648 + 5);  // wraps like int32
  auto max =
      RunOp("ReduceMax", 13,
            {Tensor::FromVector(DataType::kUint8, {2, 2}, std::vector<uint8_t>{3, 250, 7, 1})},
            {IntsAttr("axes", {1})});
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_THAT(Values((*max)[0]), ElementsAre(250, 7));
  auto l1 = RunOp("ReduceL1", 13,
                  {Tensor::FromVector(DataType::kInt64, {3}, std::vector<int64_t>{-3, 4, -5})}, {});
  ASSERT_TRUE(l1.ok()) << l1.status();
  EXPECT_EQ((*l1)[0].data<int64_t>()[0], 12);
  auto mean = RunOp("ReduceMean", 13,
                    {Tensor::FromVector(DataType::kInt8, {3}, std::vector<int8_t>{-7, 0, 0})}, {});
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ((*mean)[0].data<int8_t>()[0], -2);
}

TEST(ReduceTest, EmptyReducedSetGivesIdentity) {
  const Tensor x(DataType::kFloat, {2, 0, 3});
  const std::vector<onnx::AttributeProto> axis1 = {IntsAttr("axes", {1}), IntAttr("keepdims", 0)};
  auto sum = RunOp("ReduceSum", 11, {x}, axis1);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(Values((*sum)[0]), ElementsAreArray(std::vector<double>(6, 0.0)));
  auto prod = RunOp("ReduceProd", 11, {x}, axis1);
  ASSERT_TRUE(prod.ok());
  EXPECT_THAT(Values((*prod)[0]), ElementsAreArray(std::vector<double>(6, 1.0)));
  auto max = RunOp("ReduceMax", 11, {x}, axis1);
  ASSERT_TRUE(max.ok());
  EXPECT_EQ((*max)[0].GetAsDouble(0), -INFINITY);
  auto kept_empty = RunOp("ReduceSum", 11, {x}, {IntsAttr("axes", {2})});
  ASSERT_TRUE(kept_empty.ok());
  EXPECT_EQ((*kept_empty)[0].dims(), (std::vector<int64_t>{2, 0, 1}));
}

TEST(ReduceTest, BadAxesAreErrors) {
  const Tensor x = FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out_of_range = RunOp("ReduceSum", 11, {x}, {IntsAttr("axes", {2})});
  EXPECT_THAT(out_of_range.status().message(), HasSubstr("out of range"));
  auto repeated = RunOp("ReduceMean", 18, {x, Int64s({2}, {1, -1})}, {});
  EXPECT_THAT(repeated.status().message(), HasSubstr("repeated"));
  auto float_axes = RunOp("ReduceSum", 13, {x, FloatTensor({1}, {0})}, {});
  EXPECT_FALSE(float_axes.ok());
  auto strings = RunOp("ReduceMax", 13, {Tensor({1}, {"a"})}, {});
  EXPECT_THAT(strings.status().message(), HasSubstr("node"));
}

// The GFPGAN energy term: a sum of squares near 1e6 must be exact in fp32 (fp16-storage
// emulation then turns it to inf by rounding the output, not here).
TEST(ReduceTest, LargeSumOfSquaresAndThreads) {
  const int64_t rows = 64, columns = 4096;
  std::vector<float> x(rows * columns);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 15.625f + 0.001f * (i % 7);
  ThreadPool pool(4);
  for (int64_t axis : {0, 1}) {
    auto single = RunOp("ReduceSumSquare", 13, {FloatTensor({rows, columns}, x)},
                        {IntsAttr("axes", {axis}), IntAttr("keepdims", 0)});
    auto threaded = RunOp("ReduceSumSquare", 13, {FloatTensor({rows, columns}, x)},
                          {IntsAttr("axes", {axis}), IntAttr("keepdims", 0)}, 1, &pool);
    ASSERT_TRUE(single.ok() && threaded.ok());
    EXPECT_THAT(Values((*threaded)[0]), ElementsAreArray(Values((*single)[0])));
  }
  auto total = RunOp("ReduceSumSquare", 13, {FloatTensor({rows, columns}, x)}, {}, 1, &pool);
  ASSERT_TRUE(total.ok());
  double expected = 0;
  for (float v : x) expected += static_cast<double>(v) * v;
  EXPECT_NEAR((*total)[0].GetAsDouble(0), expected, expected * 1e-6);
  EXPECT_GT(expected, 6.4e7);
}

TEST(ReduceTest, LogSumExpIsStable) {
  auto result = RunOp("ReduceLogSumExp", 13, {FloatTensor({3}, {1000, 1000, -INFINITY})}, {});
  ASSERT_TRUE(result.ok());
  EXPECT_NEAR((*result)[0].GetAsDouble(0), 1000 + std::log(2.0), 1e-3);
}

TEST(SoftmaxTest, OpsetChangesAxisMeaning) {
  const std::vector<float> x = RandomFloats(24, 2);
  // Opset 11, axis 1 on [2, 3, 4]: each of 2 rows of 12 sums to one.
  auto old = RunOp("Softmax", 11, {FloatTensor({2, 3, 4}, x)}, {IntAttr("axis", 1)});
  ASSERT_TRUE(old.ok()) << old.status();
  std::vector<double> y = Values((*old)[0]);
  for (int r = 0; r < 2; ++r) {
    double max = -INFINITY, sum = 0;
    for (int i = 0; i < 12; ++i) max = std::max<double>(max, x[r * 12 + i]);
    for (int i = 0; i < 12; ++i) sum += std::exp(x[r * 12 + i] - max);
    for (int i = 0; i < 12; ++i) {
      EXPECT_NEAR(y[r * 12 + i], std::exp(x[r * 12 + i] - max) / sum, 1e-6);
    }
  }
  // Opset 13, axis 1: each line of 3 (stride 4) sums to one.
  auto single_axis = RunOp("Softmax", 13, {FloatTensor({2, 3, 4}, x)}, {IntAttr("axis", 1)});
  ASSERT_TRUE(single_axis.ok());
  y = Values((*single_axis)[0]);
  for (int o = 0; o < 2; ++o) {
    for (int j = 0; j < 4; ++j) {
      double sum = 0, expected_sum = 0;
      for (int k = 0; k < 3; ++k) expected_sum += std::exp(x[o * 12 + k * 4 + j]);
      for (int k = 0; k < 3; ++k) {
        sum += y[o * 12 + k * 4 + j];
        EXPECT_NEAR(y[o * 12 + k * 4 + j], std::exp(x[o * 12 + k * 4 + j]) / expected_sum, 1e-6);
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  }
  // Default axis: 1 before opset 13, -1 from 13.
  auto default_13 = RunOp("LogSoftmax", 13, {FloatTensor({2, 3, 4}, x)}, {});
  auto last_axis = RunOp("LogSoftmax", 13, {FloatTensor({2, 3, 4}, x)}, {IntAttr("axis", 2)});
  ASSERT_TRUE(default_13.ok() && last_axis.ok());
  EXPECT_THAT(Values((*default_13)[0]), ElementsAreArray(Values((*last_axis)[0])));
}

TEST(SoftmaxTest, LargeNumbersAndLogSoftmax) {
  auto soft = RunOp("Softmax", 13, {FloatTensor({1, 3}, {1000, 1001, 1002})}, {});
  ASSERT_TRUE(soft.ok());
  const double sum = std::exp(-2.0) + std::exp(-1.0) + 1;
  ExpectNear(Values((*soft)[0]), {std::exp(-2.0) / sum, std::exp(-1.0) / sum, 1 / sum});
  auto log_soft = RunOp("LogSoftmax", 13, {FloatTensor({1, 3}, {1000, 1001, 1002})}, {});
  ASSERT_TRUE(log_soft.ok());
  ExpectNear(Values((*log_soft)[0]), {-2 - std::log(sum), -1 - std::log(sum), -std::log(sum)});
}

TEST(SoftmaxTest, HardmaxPicksFirstMaximum) {
  auto hard = RunOp("Hardmax", 13, {FloatTensor({2, 3}, {1, 3, 3, 5, 2, 1})}, {});
  ASSERT_TRUE(hard.ok());
  EXPECT_THAT(Values((*hard)[0]), ElementsAre(0, 1, 0, 1, 0, 0));
  auto column =
      RunOp("Hardmax", 13, {FloatTensor({2, 3}, {1, 3, 3, 5, 2, 3})}, {IntAttr("axis", 0)});
  ASSERT_TRUE(column.ok());
  EXPECT_THAT(Values((*column)[0]), ElementsAre(0, 1, 1, 1, 0, 0));
  auto bad = RunOp("Hardmax", 13, {FloatTensor({2, 3}, {1, 3, 3, 5, 2, 3})}, {IntAttr("axis", 2)});
  EXPECT_THAT(bad.status().message(), HasSubstr("out of range"));
}

TEST(SoftmaxTest, ThreadedWideInnerMatchesSingle) {
  const std::vector<float> x = RandomFloats(3 * 5 * 700, 3);
  ThreadPool pool(4);
  auto single = RunOp("Softmax", 13, {FloatTensor({3, 5, 700}, x)}, {IntAttr("axis", 1)});
  auto threaded =
      RunOp("Softmax", 13, {FloatTensor({3, 5, 700}, x)}, {IntAttr("axis", 1)}, 1, &pool);
  ASSERT_TRUE(single.ok() && threaded.ok());
  EXPECT_THAT(Values((*threaded)[0]), ElementsAreArray(Values((*single)[0])));
  const std::vector<double> y = Values((*single)[0]);
  double sum = 0;
  for (int k = 0; k < 5; ++k) sum += y[2 * 3500 + k * 700 + 699];
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(NormalizationTest, LayerNormalizationWithStatistics) {
  const std::vector<float> x = RandomFloats(24, 4);
  const std::vector<float> scale = {0.5f, 2.0f, -1.0f, 1.5f};
  auto result =
      RunOp("LayerNormalization", 17,
            {FloatTensor({2, 3, 4}, x), FloatTensor({4}, scale), FloatTensor({1}, {0.25f})},
            {IntAttr("axis", 1), FloatAttr("epsilon", 1e-3f)}, 3);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ((*result)[1].dims(), (std::vector<int64_t>{2, 1, 1}));
  const std::vector<double> y = Values((*result)[0]);
  for (int r = 0; r < 2; ++r) {
    double mean = 0, variance = 0;
    for (int i = 0; i < 12; ++i) mean += x[r * 12 + i] / 12.0;
    for (int i = 0; i < 12; ++i) variance += (x[r * 12 + i] - mean) * (x[r * 12 + i] - mean) / 12;
    const double inv_std = 1 / std::sqrt(variance + 1e-3);
    EXPECT_NEAR((*result)[1].GetAsDouble(r), mean, 1e-6);
    EXPECT_NEAR((*result)[2].GetAsDouble(r), inv_std, 1e-5);
    for (int i = 0; i < 12; ++i) {
      EXPECT_NEAR(y[r * 12 + i], (x[r * 12 + i] - mean) * inv_std * scale[i % 4] + 0.25, 1e-5);
    }
  }
  auto bad_scale =
      RunOp("LayerNormalization", 17, {FloatTensor({2, 3, 4}, x), FloatTensor({3}, {1, 1, 1})},
            {IntAttr("axis", 1)});
  EXPECT_THAT(bad_scale.status().message(), HasSubstr("broadcast"));
}

// Rows longer than a vector and with a partial one at the end (the vectorized path), with and
// without a bias, against the two-pass double formula; Mean and InvStdDev too.
TEST(NormalizationTest, LayerNormalizationLongRowsMatchFormula) {
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis, n;
    bool bias;
  };
  for (const Case& c :
       {Case{{5, 37}, -1, 37, true}, Case{{3, 2, 200}, 1, 400, false}, Case{{2, 7}, 1, 7, true}}) {
    const int64_t rows = Tensor::NumElements(c.dims) / c.n;
    const std::vector<float> x = RandomFloats(rows * c.n, 11);
    const std::vector<float> scale = RandomFloats(c.n, 12), bias = RandomFloats(c.n, 13);
    std::vector<int64_t> param_dims(c.dims.begin() + (c.axis < 0 ? c.dims.size() - 1 : c.axis),
                                    c.dims.end());
    std::vector<Tensor> inputs = {FloatTensor(c.dims, x), FloatTensor(param_dims, scale)};
    if (c.bias) inputs.push_back(FloatTensor(param_dims, bias));
    auto result = RunOp("LayerNormalization", 17, inputs, {IntAttr("axis", c.axis)}, 3);
    ASSERT_TRUE(result.ok()) << result.status();
    const std::vector<double> y = Values((*result)[0]);
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, variance = 0;
      for (int64_t i = 0; i < c.n; ++i) mean += x[r * c.n + i];
      mean /= static_cast<double>(c.n);
      for (int64_t i = 0; i < c.n; ++i) {
        variance += (x[r * c.n + i] - mean) * (x[r * c.n + i] - mean);
      }
      const double inv_std = 1 / std::sqrt(variance / static_cast<double>(c.n) + 1e-5);
      EXPECT_NEAR((*result)[1].GetAsDouble(r), mean, 1e-6);
      EXPECT_NEAR((*result)[2].GetAsDouble(r), inv_std, 1e-5 * inv_std);
      for (int64_t i = 0; i < c.n; ++i) {
        const double expected =
            (x[r * c.n + i] - mean) * inv_std * scale[i] + (c.bias ? bias[i] : 0.0);
        ASSERT_NEAR(y[r * c.n + i], expected, 1e-5 * (1 + std::abs(expected)))
            << "row " << r << " element " << i << " of " << c.n;
      }
    }
  }
}

// ovfix.fused.ChannelLayerNormalization (ConvNeXt's LayerNorm over NCHW channels, fused by the
// session graph) against a double-precision hand loop: within 1e-6 of the output's range, on
// blocks of positions with a partial last one, one channel, a batch, and a mean of 1e4 (the
// variance's cancellation).
TEST(NormalizationTest, ChannelLayerNormalizationWithinMillionthOfRange) {
  struct Case {
    std::vector<int64_t> dims;
    float mean, spread;
  };
  const Case cases[] = {{{1, 64, 40, 40}, 0, 1},   {{2, 3, 5, 7}, 0.5f, 2},
                        {{1, 96, 300}, 1e4f, 1},   {{1, 1, 9}, 3, 1},
                        {{3, 17, 257}, -20, 0.1f}, {{1, 5, 1, 1, 3}, 0, 1}};
  uint32_t seed = 70;
  for (const Case& c : cases) {
    const int64_t batch = c.dims[0], channels = c.dims[1];
    const int64_t positions = Tensor::NumElements(c.dims) / (batch * channels);
    std::vector<float> x = RandomFloats(Tensor::NumElements(c.dims), seed++, -1, 1);
    for (float& v : x) v = c.mean + c.spread * v;
    const std::vector<float> scale = RandomFloats(channels, seed++),
                             bias = RandomFloats(channels, seed++);
    NodeRun run;
    run.domain = "ovfix.fused";
    auto result = RunNode("ChannelLayerNormalization", 1,
                          {FloatTensor(c.dims, x), FloatTensor({channels, 1, 1}, scale),
                           FloatTensor({channels, 1, 1}, bias)},
                          {FloatAttr("epsilon", 1e-6f)}, run);
    ASSERT_TRUE(result.ok()) << result.status();
    const std::vector<double> y = Values((*result)[0]);
    std::vector<double> want(x.size());
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t p = 0; p < positions; ++p) {
        auto at = [&](int64_t ch) { return (n * channels + ch) * positions + p; };
        double mean = 0, variance = 0;
        for (int64_t ch = 0; ch < channels; ++ch) mean += x[at(ch)];
        mean /= static_cast<double>(channels);
        for (int64_t ch = 0; ch < channels; ++ch) {
          variance += (x[at(ch)] - mean) * (x[at(ch)] - mean);
        }
        const double inv_std = 1 / std::sqrt(variance / static_cast<double>(channels) + 1e-6f);
        for (int64_t ch = 0; ch < channels; ++ch) {
          want[at(ch)] = (x[at(ch)] - mean) * inv_std * scale[ch] + bias[ch];
        }
      }
    }
    double lo = want[0], hi = want[0], error = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      lo = std::min(lo, want[i]);
      hi = std::max(hi, want[i]);
      error = std::max(error, std::abs(y[i] - want[i]));
    }
    EXPECT_LE(error, 1e-6 * (hi - lo)) << "dims " << ::testing::PrintToString(c.dims);
  }
  NodeRun run;
  run.domain = "ovfix.fused";
  EXPECT_FALSE(RunNode("ChannelLayerNormalization", 1,
                       {FloatTensor({1, 4, 3}, RandomFloats(12, 1)), FloatTensor({3}, {1, 1, 1}),
                        FloatTensor({3}, {0, 0, 0})},
                       {}, run)
                   .ok());
}

// ovfix.fused.AddLayerNormalization gives bit for bit what Add then LayerNormalization give
// (the same float sum, normalized by the same row), with and without the sum as an output.
TEST(NormalizationTest, AddLayerNormalizationIsAddThenLayerNorm) {
  uint32_t seed = 90;
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{3, 7, 37}, {1, 384}, {2, 1}, {128, 96}, {5, 1000}}) {
    const int64_t n = dims.back();
    const Tensor a = FloatTensor(dims, RandomFloats(Tensor::NumElements(dims), seed++));
    std::vector<float> shifted = RandomFloats(Tensor::NumElements(dims), seed++);
    for (float& v : shifted) v += 1e3f;
    const Tensor b = FloatTensor(dims, shifted);
    const Tensor scale = FloatTensor({n}, RandomFloats(n, seed++));
    const Tensor bias = FloatTensor({n}, RandomFloats(n, seed++));
    auto sum = RunOp("Add", 14, {a, b}, {});
    ASSERT_TRUE(sum.ok()) << sum.status();
    auto normalized = RunOp("LayerNormalization", 17, {(*sum)[0], scale, bias},
                            {IntAttr("axis", -1), FloatAttr("epsilon", 1e-5f)});
    ASSERT_TRUE(normalized.ok()) << normalized.status();
    for (int outputs : {1, 2}) {
      NodeRun run;
      run.domain = "ovfix.fused";
      run.num_outputs = outputs;
      auto fused = RunNode("AddLayerNormalization", 1, {a, b, scale, bias},
                           {FloatAttr("epsilon", 1e-5f)}, run);
      ASSERT_TRUE(fused.ok()) << fused.status();
      EXPECT_THAT(Values((*fused)[0]), ElementsAreArray(Values((*normalized)[0])))
          << ::testing::PrintToString(dims);
      if (outputs == 2) {
        EXPECT_THAT(Values((*fused)[1]), ElementsAreArray(Values((*sum)[0])));
      }
    }
  }
  NodeRun run;
  run.domain = "ovfix.fused";
  EXPECT_FALSE(RunNode("AddLayerNormalization", 1,
                       {FloatTensor({2, 3}, RandomFloats(6, 1)), FloatTensor({3}, {1, 2, 3}),
                        FloatTensor({3}, {1, 1, 1}), FloatTensor({3}, {0, 0, 0})},
                       {}, run)
                   .ok());
}

TEST(NormalizationTest, InstanceAndGroupNormalization) {
  const std::vector<float> x = RandomFloats(2 * 4 * 3, 5);
  auto instance = RunOp(
      "InstanceNormalization", 6,
      {FloatTensor({2, 4, 3}, x), FloatTensor({4}, {1, 2, 3, 4}), FloatTensor({4}, {0, 1, 0, 1})},
      {FloatAttr("epsilon", 1e-5f)});
  ASSERT_TRUE(instance.ok()) << instance.status();
  // Groups of 2 channels with per-group parameters.
  auto group =
      RunOp("GroupNormalization", 18,
            {FloatTensor({2, 4, 3}, x), FloatTensor({2}, {2, 3}), FloatTensor({2}, {1, -1})},
            {IntAttr("num_groups", 2), FloatAttr("epsilon", 1e-5f)});
  ASSERT_TRUE(group.ok()) << group.status();
  // Each run of `size` elements normalized by its own mean and variance, then scaled and
  // shifted by run's parameters: instance norm per channel, group norm per 2 channels.
  auto expect_normalized = [&](const Tensor& y, int size, auto scale, auto bias) {
    for (int run = 0; run * size < static_cast<int>(x.size()); ++run) {
      const auto first = x.begin() + run * size;
      const double mean = std::accumulate(first, first + size, 0.0) / size;
      double variance = 0;
      for (int i = 0; i < size; ++i) variance += (first[i] - mean) * (first[i] - mean) / size;
      for (int i = 0; i < size; ++i) {
        const double normal = (first[i] - mean) / std::sqrt(variance + 1e-5);
        EXPECT_NEAR(y.GetAsDouble(run * size + i), normal * scale(run) + bias(run), 1e-4)
            << "run " << run << " of " << size;
      }
    }
  };
  expect_normalized((*instance)[0], 3, [](int run) { return run % 4 + 1; },
                    [](int run) { return run % 2; });
  expect_normalized((*group)[0], 6, [](int run) { return run % 2 ? 3 : 2; },
                    [](int run) { return run % 2 ? -1 : 1; });
  auto bad = RunOp(
      "InstanceNormalization", 6,
      {FloatTensor({2, 4, 3}, x), FloatTensor({3}, {1, 2, 3}), FloatTensor({4}, {0, 1, 0, 1})}, {});
  EXPECT_FALSE(bad.ok());
}

TEST(NormalizationTest, LrnMatchesFormula) {
  const std::vector<float> x = RandomFloats(1 * 5 * 2, 6);
  auto result = RunOp("LRN", 13, {FloatTensor({1, 5, 2, 1}, x)},
                      {IntAttr("size", 4), FloatAttr("alpha", 0.01f), FloatAttr("beta", 0.5f),
                       FloatAttr("bias", 2.0f)});
  ASSERT_TRUE(result.ok()) << result.status();
  for (int c = 0; c < 5; ++c) {
    for (int s = 0; s < 2; ++s) {
      double square_sum = 0;  // window: 1 channel back, 2 forward
      for (int other = std::max(0, c - 1); other <= std::min(4, c + 2); ++other) {
        square_sum += x[other * 2 + s] * x[other * 2 + s];
      }
      const double expected = x[c * 2 + s] / std::pow(2.0 + 0.01 / 4 * square_sum, 0.5);
      EXPECT_NEAR((*result)[0].GetAsDouble(c * 2 + s), expected, 1e-6);
    }
  }
  EXPECT_FALSE(RunOp("LRN", 13, {FloatTensor({1, 5, 2, 1}, x)}, {}).ok());  // size is required
}

TEST(NormalizationTest, MeanVarianceNormalization) {
  const std::vector<float> x = RandomFloats(2 * 3 * 2 * 2, 7);
  auto result = RunOp("MeanVarianceNormalization", 13, {FloatTensor({2, 3, 2, 2}, x)}, {});
  ASSERT_TRUE(result.ok()) << result.status();
  for (int c = 0; c < 3; ++c) {
    std::vector<int> members;
    for (int n = 0; n < 2; ++n) {
      for (int s = 0; s < 4; ++s) members.push_back((n * 3 + c) * 4 + s);
    }
    double mean = 0, variance = 0;
    for (int i : members) mean += x[i] / 8.0;
    for (int i : members) variance += (x[i] - mean) * (x[i] - mean) / 8.0;
    for (int i : members) {
      EXPECT_NEAR((*result)[0].GetAsDouble(i), (x[i] - mean) / std::sqrt(variance), 1e-5);
    }
  }
}

TEST(ArgTest, KeepdimsAndSelectLastIndex) {
  const Tensor x = FloatTensor({2, 3}, {1, 5, 5, 7, 0, 7});
  auto first = RunOp("ArgMax", 13, {x}, {IntAttr("axis", 1)});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)[0].type(), DataType::kInt64);
  EXPECT_EQ((*first)[0].dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_THAT(Values((*first)[0]), ElementsAre(1, 0));
  auto last = RunOp("ArgMax", 13, {x},
                    {IntAttr("axis", -1), IntAttr("select_last_index", 1), IntAttr("keepdims", 0)});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ((*last)[0].dims(), (std::vector<int64_t>{2}));
  EXPECT_THAT(Values((*last)[0]), ElementsAre(2, 2));
  auto min = RunOp("ArgMin", 11, {x}, {});
  ASSERT_TRUE(min.ok());
  EXPECT_THAT(Values((*min)[0]), ElementsAre(0, 1, 0));
  auto ints = RunOp("ArgMin", 13,
                    {Tensor::FromVector(DataType::kInt32, {4}, std::vector<int32_t>{4, -2, 9, -2})},
                    {IntAttr("select_last_index", 1)});
  ASSERT_TRUE(ints.ok());
  EXPECT_THAT(Values((*ints)[0]), ElementsAre(3));
  EXPECT_FALSE(RunOp("ArgMax", 13, {Tensor(DataType::kFloat, {2, 0})}, {IntAttr("axis", 1)}).ok());
}

TEST(TopKTest, LargestSmallestAndStableTies) {
  const Tensor x = FloatTensor({2, 4}, {3, 1, 3, 2, 0, 4, 4, 4});
  auto largest = RunOp("TopK", 11, {x, Int64s({1}, {3})}, {}, 2);
  ASSERT_TRUE(largest.ok()) << largest.status();
  EXPECT_EQ((*largest)[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(Values((*largest)[0]), ElementsAre(3, 3, 2, 4, 4, 4));
  EXPECT_THAT(Values((*largest)[1]), ElementsAre(0, 2, 3, 1, 2, 3));
  auto smallest = RunOp("TopK", 11, {x, Int64s({1}, {2})}, {IntAttr("largest", 0)}, 2);
  ASSERT_TRUE(smallest.ok());
  EXPECT_THAT(Values((*smallest)[0]), ElementsAre(1, 2, 0, 4));
  EXPECT_THAT(Values((*smallest)[1]), ElementsAre(1, 3, 0, 1));
  auto axis0 = RunOp("TopK", 1, {x}, {IntAttr("k", 1), IntAttr("axis", 0)}, 2);
  ASSERT_TRUE(axis0.ok()) << axis0.status();
  EXPECT_THAT(Values((*axis0)[0]), ElementsAre(3, 4, 4, 4));
  EXPECT_THAT(Values((*axis0)[1]), ElementsAre(0, 1, 1, 1));
  auto too_many = RunOp("TopK", 11, {x, Int64s({1}, {5})}, {}, 2);
  EXPECT_THAT(too_many.status().message(), HasSubstr("out of range"));
  EXPECT_FALSE(RunOp("TopK", 11, {x, Int64s({1}, {-1})}, {}, 2).ok());
  EXPECT_FALSE(RunOp("TopK", 1, {x}, {}, 2).ok());  // k attribute missing
}

TEST(CumSumTest, ExclusiveReverseAndAxis) {
  const Tensor x = FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  auto rows = RunOp("CumSum", 14, {x, Int64s({}, {1})}, {}, 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(Values((*rows)[0]), ElementsAre(1, 3, 6, 4, 9, 15));
  auto columns = RunOp("CumSum", 11, {x, Int64s({1}, {-2})}, {});
  ASSERT_TRUE(columns.ok());
  EXPECT_THAT(Values((*columns)[0]), ElementsAre(1, 2, 3, 5, 7, 9));
  auto both =
      RunOp("CumSum", 14, {x, Int64s({}, {1})}, {IntAttr("exclusive", 1), IntAttr("reverse", 1)});
  ASSERT_TRUE(both.ok());
  EXPECT_THAT(Values((*both)[0]), ElementsAre(5, 3, 0, 11, 6, 0));
  auto ints = RunOp("CumSum", 14,
                    {Tensor::FromVector(DataType::kInt32, {3}, std::vector<int32_t>{1, 2, 3}),
                     Tensor::FromVector(DataType::kInt32, {}, std::vector<int32_t>{0})},
                    {IntAttr("exclusive", 1)});
  ASSERT_TRUE(ints.ok());
  EXPECT_THAT(Values((*ints)[0]), ElementsAre(0, 1, 3));
  EXPECT_FALSE(RunOp("CumSum", 14, {x, Int64s({}, {2})}, {}).ok());
}

// Odd shapes and attributes: each may succeed or fail, but must not crash or read out of
// bounds (run under OVFIX_ASAN to check the latter).
TEST(ReduceGroupTest, OddInputsDoNotCrash) {
  const std::vector<Tensor> inputs = {
      FloatTensor({}, {2}), Tensor(DataType::kFloat, {0}), Tensor(DataType::kFloat, {2, 0, 3}),
      FloatTensor({1, 1, 1}, {5}), FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6})};
  const std::vector<std::vector<onnx::AttributeProto>> attribute_sets = {
      {},
      {IntAttr("axis", 5)},
      {IntAttr("axis", -1), IntAttr("keepdims", 0)},
      {IntsAttr("axes", {0, 1})},
      {IntAttr("size", 3), IntAttr("num_groups", 1), IntAttr("k", 1)},
  };
  std::vector<KernelDef> table;
  AddReduceKernels(table);
  ThreadPool pool(2);
  for (const KernelDef& kernel : table) {
    for (const Tensor& x : inputs) {
      for (const auto& attributes : attribute_sets) {
        const Tensor k = Int64s({1}, {1});
        const Tensor axis = Int64s({}, {0});
        const Tensor ones = FloatTensor({1}, {1});
        std::vector<Tensor> in = {x, k, ones};
        if (kernel.op_type == "CumSum") in = {x, axis};
        auto result =
            RunOp(std::string(kernel.op_type), kernel.until_version, in, attributes, 3, &pool);
        if (result.ok()) {
          EXPECT_TRUE((*result)[0].defined()) << kernel.op_type;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ovfix::exec::math_testing
