// Tests of the optimizer steps Adagrad, Adam and Momentum (exec/cpu/training.cc) on one-element
// tensors worked by hand from the operator definitions.
#include <cstdint>
#include <vector>

#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::HasSubstr;

Tensor Rate(float r) { return Tensor::FromVector<float>(DataType::kFloat, {}, {r}); }
Tensor Count(int64_t t) { return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {t}); }
Tensor One(float v) { return FloatTensor({1}, {v}); }

NodeRun Training(int outputs) {
  NodeRun run;
  run.domain = "ai.onnx.preview.training";
  run.num_outputs = outputs;
  return run;
}

// One Adagrad step from X = 1, G = 3 at rate 0.1: the updated X and H.
void ExpectAdagrad(int64_t step, float history, std::vector<onnx::AttributeProto> attributes,
                   double x, double h, const std::string& what) {
  attributes.push_back(FloatAttr("epsilon", 0));
  auto out = RunNode("Adagrad", 1, {Rate(0.1f), Count(step), One(1), One(3), One(history)},
                     attributes, Training(2));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1}, {x}, 1e-6, "X, " + what);
  ExpectNear((*out)[1], {1}, {h}, 1e-6, "H, " + what);
}

TEST(AdagradTest, OneStepWorkedByHand) {
  // H' = 16 + 3^2 = 25; X' = 1 - r 3 / (5 + eps) with r = 0.1 / (1 + T decay).
  ExpectAdagrad(0, 16, {FloatAttr("decay_factor", 0.5f)}, 0.94, 25, "T = 0");
  ExpectAdagrad(2, 16, {FloatAttr("decay_factor", 0.5f)}, 0.97, 25, "T = 2: r = 0.05");
}

TEST(AdagradTest, RegularizationAddsToTheGradient) {
  // G' = 1 * X + G = 4; H' = 9 + 16 = 25; X' = 1 - 0.1 * 4 / 5.
  ExpectAdagrad(0, 9, {FloatAttr("norm_coefficient", 1)}, 0.92, 25, "norm_coefficient 1");
}

TEST(AdamTest, OneStepWorkedByHand) {
  // V' = 0.5 * 0 + 0.5 * 4 = 2; H' = 0.25 * 16 = 4; R' = sqrt(1 - 0.75) / (1 - 0.5) = 1;
  // X' = 2 - 1 * 2 / 2 = 1, then scaled by 1 - norm_coefficient_post.
  const std::vector<onnx::AttributeProto> attributes = {
      FloatAttr("alpha", 0.5f), FloatAttr("beta", 0.75f), FloatAttr("epsilon", 0),
      FloatAttr("norm_coefficient_post", 0.5f)};
  auto out = RunNode("Adam", 1, {Rate(1), Count(1), One(2), One(4), One(0), One(0)}, attributes,
                     Training(3));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1}, {0.5}, 1e-6, "X");
  ExpectNear((*out)[1], {1}, {2}, 1e-6, "V");
  ExpectNear((*out)[2], {1}, {4}, 1e-6, "H");
  // T = 0: no bias correction, R' = R = 0.5: X' = (2 - 0.5) * 0.5.
  auto first = RunNode("Adam", 1, {Rate(0.5f), Count(0), One(2), One(4), One(0), One(0)},
                       attributes, Training(3));
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectNear((*first)[0], {1}, {0.75}, 1e-6, "X, T = 0");
}

TEST(AdamTest, TwoTensorsAtOnce) {
  // Inputs R, T, X1, X2, G1, G2, V1, V2, H1, H2; outputs X1', X2', V1', V2', H1', H2'.
  auto out = RunNode(
      "Adam", 1,
      {Rate(1), Count(1), One(2), One(3), One(4), One(2), One(0), One(0), One(0), One(0)},
      {FloatAttr("alpha", 0.5f), FloatAttr("beta", 0.75f), FloatAttr("epsilon", 0)}, Training(6));
  ASSERT_TRUE(out.ok()) << out.status();
  // The second: V' = 1, H' = 0.25 * 4 = 1, X' = 3 - 1 * 1 / 1.
  ExpectNear((*out)[0], {1}, {1}, 1e-6, "X1");
  ExpectNear((*out)[1], {1}, {2}, 1e-6, "X2");
  ExpectNear((*out)[2], {1}, {2}, 1e-6, "V1");
  ExpectNear((*out)[3], {1}, {1}, 1e-6, "V2");
  ExpectNear((*out)[5], {1}, {1}, 1e-6, "H2");
}

TEST(MomentumTest, StandardAndNesterov) {
  // V' = alpha V + beta G = 0.5 * 4 + 0.25 * 2 = 2.5 (beta is 1 at T = 0: V' = 4).
  auto attributes = [](const char* mode) {
    return std::vector<onnx::AttributeProto>{FloatAttr("alpha", 0.5f), FloatAttr("beta", 0.25f),
                                             FloatAttr("norm_coefficient", 0),
                                             StringAttr("mode", mode)};
  };
  auto standard = RunNode("Momentum", 1, {Rate(0.1f), Count(1), One(1), One(2), One(4)},
                          attributes("standard"), Training(2));
  ASSERT_TRUE(standard.ok()) << standard.status();
  ExpectNear((*standard)[0], {1}, {0.75}, 1e-6, "X = 1 - 0.1 * 2.5");
  ExpectNear((*standard)[1], {1}, {2.5}, 1e-6, "V");
  auto first = RunNode("Momentum", 1, {Rate(0.1f), Count(0), One(1), One(2), One(4)},
                       attributes("standard"), Training(2));
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectNear((*first)[0], {1}, {0.6}, 1e-6, "X at T = 0");
  auto nesterov = RunNode("Momentum", 1, {Rate(0.1f), Count(1), One(1), One(2), One(4)},
                          attributes("nesterov"), Training(2));
  ASSERT_TRUE(nesterov.ok()) << nesterov.status();
  ExpectNear((*nesterov)[0], {1}, {0.675}, 1e-6, "X = 1 - 0.1 * (2 + 0.5 * 2.5)");
}

TEST(MomentumTest, RefusesABadModeAndMismatchedTensors) {
  auto mode = RunNode("Momentum", 1, {Rate(0.1f), Count(1), One(1), One(2), One(4)},
                      {FloatAttr("alpha", 0.5f), FloatAttr("beta", 0.25f),
                       FloatAttr("norm_coefficient", 0), StringAttr("mode", "heavy")},
                      Training(2));
  ASSERT_FALSE(mode.ok());
  EXPECT_THAT(mode.status().message(), HasSubstr("mode"));
  auto shapes =
      RunNode("Adagrad", 1, {Rate(0.1f), Count(0), One(1), FloatTensor({2}, {1, 2}), One(1)}, {},
              Training(2));
  ASSERT_FALSE(shapes.ok());
  EXPECT_THAT(shapes.status().message(), HasSubstr("input 3"));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
