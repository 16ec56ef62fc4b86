// Tests of the loss kernels (exec/cpu/loss.cc) on cases worked by hand: weights, the three
// reductions, ignore_index, the optional log_prob output, and targets out of range.
#include <cmath>
#include <vector>

#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::HasSubstr;

Tensor Targets(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
}

// Log-probabilities of 2 samples over 3 classes, targets 2 and 0, class weights 1, 2, 3.
const std::vector<float> kLogProb = {-1.5f, -0.5f, -2.0f, -0.25f, -3.0f, -1.0f};

TEST(LossTest, NegativeLogLikelihoodReductions) {
  const Tensor x = FloatTensor({2, 3}, kLogProb);
  const Tensor w = FloatTensor({3}, {1, 2, 3});
  // Sample 0 loses -w[2] * x[0][2] = 6, sample 1 loses -w[0] * x[1][0] = 0.25.
  auto none = RunNode("NegativeLogLikelihoodLoss", 13, {x, Targets({2, 0}), w},
                      {StringAttr("reduction", "none")});
  ASSERT_TRUE(none.ok()) << none.status();
  ExpectNear((*none)[0], {2}, {6.0, 0.25}, 1e-6, "none");
  auto sum = RunNode("NegativeLogLikelihoodLoss", 13, {x, Targets({2, 0}), w},
                     {StringAttr("reduction", "sum")});
  ASSERT_TRUE(sum.ok()) << sum.status();
  ExpectNear((*sum)[0], {}, {6.25}, 1e-6, "sum");
  // Mean divides by the weights of the samples counted: 3 + 1.
  auto mean = RunNode("NegativeLogLikelihoodLoss", 13, {x, Targets({2, 0}), w}, {});
  ASSERT_TRUE(mean.ok()) << mean.status();
  ExpectNear((*mean)[0], {}, {6.25 / 4}, 1e-6, "mean");
}

TEST(LossTest, IgnoredSamplesLoseAndWeighNothing) {
  const Tensor x = FloatTensor({2, 3}, kLogProb);
  const Tensor w = FloatTensor({3}, {1, 2, 3});
  auto mean = RunNode("NegativeLogLikelihoodLoss", 13, {x, Targets({2, 0}), w},
                      {IntAttr("ignore_index", 0)});
  ASSERT_TRUE(mean.ok()) << mean.status();
  ExpectNear((*mean)[0], {}, {6.0 / 3}, 1e-6, "mean without sample 1");
  auto all_ignored = RunNode("NegativeLogLikelihoodLoss", 13, {x, Targets({0, 0}), w},
                             {IntAttr("ignore_index", 0)});
  ASSERT_TRUE(all_ignored.ok()) << all_ignored.status();
  EXPECT_TRUE(std::isnan((*all_ignored)[0].GetAsDouble(0)));  // 0 / 0, as the spec computes
}

TEST(LossTest, SoftmaxCrossEntropyAndItsLogProb) {
  const Tensor scores = FloatTensor({1, 3}, {1, 2, 3});
  NodeRun two_outputs;
  two_outputs.num_outputs = 2;
  auto out = RunNode("SoftmaxCrossEntropyLoss", 13, {scores, Targets({1})}, {}, two_outputs);
  ASSERT_TRUE(out.ok()) << out.status();
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  ExpectNear((*out)[0], {}, {lse - 2}, 1e-5, "loss");
  ExpectNear((*out)[1], {1, 3}, {1 - lse, 2 - lse, 3 - lse}, 1e-5, "log_prob");
}

TEST(LossTest, TargetsOutOfRangeAreErrors) {
  const Tensor x = FloatTensor({2, 3}, kLogProb);
  auto bad = RunNode("NegativeLogLikelihoodLoss", 13, {x, Targets({3, 0})}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("3"));
  auto wrong_shape = RunNode("NegativeLogLikelihoodLoss", 13, {x, Targets({1, 0, 2})}, {});
  EXPECT_FALSE(wrong_shape.ok());
}

}  // namespace
}  // namespace ovfix::exec::math_testing
