// Layer-by-layer comparison: the node where a divergence starts is named, not the nodes that
// inherit it; values are compared against the reference range; weights fp16 cannot hold are
// listed apart.
#include "exec/layer_compare.h"

#include <cmath>
#include <limits>

#include "exec/random_inputs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/text_form.h"
#include "tests/support/model_text.h"

namespace ovfix::exec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using test_support::Floats;
using test_support::Parse;

CompareSide Side(const Model& model, const std::string& spec) {
  CompareSide side;
  side.model = &model;
  side.label = spec;
  EXPECT_TRUE(ParseSideSpec(spec, side.options).ok()) << spec;
  side.options.threads = 1;
  return side;
}

const NodeComparison* FirstDivergence(const LayerReport& report) {
  return report.first_divergence < 0 ? nullptr : &report.nodes[report.first_divergence];
}

// x in [-1, 1] scaled by 300 is fine in fp16; its square (up to 9e4) is not. The Add and
// Relu after the square only show the overflow.
constexpr char kOverflowInTheMiddle[] = R"(
  agraph (float[6] x) => (float[6] y) {
    scale = Constant <value = float[1] {300.0}> ()
    a = Mul(x, scale)
    b = Mul(a, a)
    one = Constant <value = float[1] {1.0}> ()
    c = Add(b, one)
    y = Relu(c)
  })";

TEST(LayerCompare, Fp16OverflowIsNamedWhereItStarts) {
  auto model = Parse(kOverflowInTheMiddle);
  ASSERT_NE(model, nullptr);
  // The graph's nodes are unnamed: name them so the report can be checked by name.
  int k = 0;
  for (Node* node : model->graph().nodes()) node->set_name("n" + std::to_string(k++));
  const TensorMap inputs = {{"x", Floats({6}, {-1, -0.5, 0, 0.25, 0.75, 1})}};
  absl::StatusOr<LayerReport> report = CompareLayers(
      Side(*model, "cpu:fp32"), Side(*model, "cpu:fp16-storage"), inputs, {1e-2, 1e-3});
  ASSERT_TRUE(report.ok()) << report.status();
  // Constants are not rows: Mul, Mul, Add, Relu.
  ASSERT_EQ(report->nodes.size(), 4u);
  const NodeComparison* first = FirstDivergence(*report);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->name, "n2");  // b = Mul(a, a)
  EXPECT_EQ(first->op_type, "Mul");
  EXPECT_FALSE(first->inputs_diverged);
  EXPECT_GT(first->test_non_finite, 0);
  EXPECT_EQ(first->ref_non_finite, 0);
  EXPECT_EQ(report->nodes[0].state, NodeState::kWithin);  // a = x * 300 holds in fp16
  for (size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(report->nodes[i].state, NodeState::kDiverged) << i;
    EXPECT_TRUE(report->nodes[i].inputs_diverged) << i;
  }
  EXPECT_FALSE(report->all_within());
  EXPECT_TRUE(report->weights.empty());
}

TEST(LayerCompare, SameRunIsWithinTolerance) {
  auto model = Parse(kOverflowInTheMiddle);
  ASSERT_NE(model, nullptr);
  const TensorMap inputs = {{"x", Floats({6}, {-1, -0.5, 0, 0.25, 0.75, 1})}};
  absl::StatusOr<LayerReport> report =
      CompareLayers(Side(*model, "cpu:fp32"), Side(*model, "cpu"), inputs, {1e-4, 1e-5});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->all_within());
  EXPECT_EQ(report->first_divergence, -1);
  EXPECT_EQ(report->compared_values, 5);  // x and the four node outputs
}

constexpr char kChain[] = R"(
  agraph (float[3] x) => (float[3] y) {
    a = Relu(x)
    b = Neg(a)
    c = Abs(b)
    y = Sigmoid(c)
  })";

TEST(LayerCompare, NodeWhoseInputDivergedIsNotNamed) {
  auto model = Parse(kChain);
  ASSERT_NE(model, nullptr);
  const TensorMap ref = {{"x", Floats({3}, {1, 2, 3})},
                         {"a", Floats({3}, {1, 2, 3})},
                         {"b", Floats({3}, {-1, -2, -3})},
                         {"c", Floats({3}, {1, 2, 3})},
                         {"y", Floats({3}, {0.7, 0.8, 0.9})}};
  TensorMap test = ref;
  test["b"] = Floats({3}, {-1, -2, -30});
  test["c"] = Floats({3}, {1, 2, 30});
  test["y"] = Floats({3}, {0.7, 0.8, 1.0});
  LayerReport report = CompareCaptures(model->graph(), ref, test, {1e-3, 1e-5});
  ASSERT_EQ(report.nodes.size(), 4u);
  const NodeComparison* first = FirstDivergence(report);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->op_type, "Neg");
  EXPECT_TRUE(report.nodes[2].inputs_diverged);
  EXPECT_THAT(report.nodes[2].diverged_inputs, ElementsAre("b"));
  EXPECT_EQ(report.diverged_values, 3);
}

TEST(LayerCompare, DivergenceCarriesThroughValuesNotCompared) {
  auto model = Parse(kChain);
  ASSERT_NE(model, nullptr);
  // The test side lacks "b" and "c" (a conversion renamed them). "a" diverges; y differs
  // too, but what reached it came from a through b and c, which could not be compared, so
  // y's node inherits the divergence instead of being named.
  TensorMap ref = {{"x", Floats({3}, {1, 2, 3})},
                   {"a", Floats({3}, {1, 2, 3})},
                   {"b", Floats({3}, {-1, -2, -3})},
                   {"c", Floats({3}, {1, 2, 3})},
                   {"y", Floats({3}, {0.7, 0.8, 0.9})}};
  TensorMap test = {
      {"x", ref["x"]}, {"a", Floats({3}, {1, 2, 4})}, {"y", Floats({3}, {0.7, 0.8, 1})}};
  LayerReport report = CompareCaptures(model->graph(), ref, test, {1e-3, 1e-5});
  const NodeComparison* first = FirstDivergence(report);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->op_type, "Relu");
  EXPECT_EQ(report.nodes[1].state, NodeState::kNotCompared);
  EXPECT_EQ(report.nodes[3].state, NodeState::kDiverged);
  EXPECT_TRUE(report.nodes[3].inputs_diverged);
}

TEST(LayerCompare, ValuesAreComparedAgainstTheReferenceRange) {
  // 1000.4 vs 1000 is 4e-4 of the range: within rtol 1e-3 even though 0.01 vs 0.0 is not
  // within it element-wise.
  ValueComparison c =
      CompareValue("v", Floats({2}, {1000, 0}), Floats({2}, {1000.4, 0.01}), {1e-3, 0});
  EXPECT_TRUE(c.within) << c.problem;
  EXPECT_NEAR(c.range, 1000, 1e-9);
  EXPECT_NEAR(c.rel_error, 4e-4, 1e-6);
  EXPECT_GT(c.cosine, 0.999);

  // Non-finite values must sit at the same places.
  const float inf = std::numeric_limits<float>::infinity();
  ValueComparison nf = CompareValue("v", Floats({2}, {1, inf}), Floats({2}, {inf, inf}), {1, 1});
  EXPECT_FALSE(nf.within);
  EXPECT_EQ(nf.ref_non_finite, 1);
  EXPECT_EQ(nf.test_non_finite, 2);
  EXPECT_THAT(nf.problem, HasSubstr("non-finite"));

  // float16 against float: converted, compared as numbers.
  Tensor half(DataType::kFloat16, {2});
  half.data<uint16_t>()[0] = FloatToHalfBits(0.1f);
  half.data<uint16_t>()[1] = FloatToHalfBits(-2.0f);
  EXPECT_TRUE(CompareValue("h", Floats({2}, {0.1f, -2}), half, {1e-3, 0}).within);

  // Integers exactly; shapes must agree.
  Tensor ints = Tensor::FromVector<int64_t>(DataType::kInt64, {3}, {1, 2, 3});
  Tensor other = Tensor::FromVector<int64_t>(DataType::kInt64, {3}, {1, 2, 4});
  EXPECT_TRUE(CompareValue("i", ints, ints, {}).within);
  EXPECT_FALSE(CompareValue("i", ints, other, {1, 1}).within);
  ValueComparison shape = CompareValue("s", Floats({2}, {1, 2}), Floats({1, 2}, {1, 2}), {});
  EXPECT_FALSE(shape.within);
  EXPECT_THAT(shape.problem, HasSubstr("shape"));
}

TEST(LayerCompare, ListsWeightsFp16CannotHold) {
  auto model = Parse(R"(
    agraph (float[4] x) => (float[4] y) {
      big = Constant <value = float[2] {1.0, 100000.0}> ()
      eps = Constant <value = float[1] {1e-8}> ()
      small = Constant <value = float[1] {1e-5}> ()
      mixed = Constant <value = float[2] {0.5, 1e-9}> ()
      a = Mul(x, big)
      b = Add(a, eps)
      c = Add(b, small)
      y = Mul(c, mixed)
    })");
  ASSERT_NE(model, nullptr);
  std::vector<WeightIssue> issues = FindUnrepresentableWeights(*model);
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].name, "big");
  EXPECT_EQ(issues[0].overflow, 1);
  EXPECT_TRUE(std::isinf(issues[0].example_fp16));
  EXPECT_EQ(issues[1].name, "eps");  // 1e-8 becomes 0
  EXPECT_EQ(issues[1].underflow, 1);
  EXPECT_EQ(issues[1].example_fp16, 0);
  EXPECT_THAT(issues[1].problem, HasSubstr("becomes 0"));
  // 1e-5 is a subnormal fp16 holds to 0.3%; 1e-9 next to 0.5 is below 0.5's own rounding.
}

TEST(LayerCompare, WeightsAreCheckedOnlyWhenTheTestSideIsFp16) {
  auto model = Parse(R"(
    agraph (float[1] x) => (float[1] y) {
      eps = Constant <value = float[1] {1e-8}> ()
      y = Add(x, eps)
    })");
  ASSERT_NE(model, nullptr);
  const TensorMap inputs = {{"x", Floats({1}, {1})}};
  auto fp32 = CompareLayers(Side(*model, "cpu:fp32"), Side(*model, "cpu:fp32"), inputs, {});
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  EXPECT_TRUE(fp32->weights.empty());
  auto fp16 = CompareLayers(Side(*model, "cpu:fp32"), Side(*model, "cpu:fp16-storage"), inputs,
                            {1e-2, 1e-3});
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  ASSERT_EQ(fp16->weights.size(), 1u);
  EXPECT_EQ(fp16->weights[0].name, "eps");
  EXPECT_TRUE(fp16->all_within());  // 1e-8 lost next to 1 is within tolerance
}

TEST(LayerCompare, TwoModelsAreComparedOverSharedNames) {
  auto original = Parse(R"(
    agraph (float[4] x) => (float[4] y) {
      eps = Constant <value = float[1] {1e-8}> ()
      t = Mul(x, x)
      u = Add(t, eps)
      y = Add(u, x)
    })");
  // Its fp16 conversion: the same names, float16 inside, Casts at the edges.
  auto converted = Parse(R"(
    agraph (float[4] x) => (float[4] y) {
      eps = Constant <value = float[1] {1e-8}> ()
      epsh = Cast <to = 10> (eps)
      xh = Cast <to = 10> (x)
      t = Mul(xh, xh)
      u = Add(t, epsh)
      yh = Add(u, xh)
      y = Cast <to = 1> (yh)
    })");
  ASSERT_NE(original, nullptr);
  ASSERT_NE(converted, nullptr);
  EXPECT_FALSE(HasFloat16Values(*original));
  EXPECT_TRUE(HasFloat16Values(*converted));
  const TensorMap inputs = {{"x", Floats({4}, {-1, 0.5, 2, 3})}};
  auto report = CompareLayers(Side(*original, "cpu:fp32"), Side(*converted, "cpu:fp32"), inputs,
                              {1e-2, 1e-3});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->all_within());
  EXPECT_EQ(report->compared_values, 4);  // x, t, u, y
  ASSERT_EQ(report->weights.size(), 1u);  // eps is cast to float16 in the converted model
  EXPECT_EQ(report->weights[0].name, "eps");
}

TEST(LayerCompare, RandomInputsAreFixedAndSymbolicDimsAreOne) {
  auto model = Parse(R"(
    agraph (float[N,3] x, int64[2] k) => (float[N,3] y) {
      y = Relu(x)
    })");
  ASSERT_NE(model, nullptr);
  auto a = RandomInputs(model->graph());
  auto b = RandomInputs(model->graph());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->at("x").dims(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(a->at("k").type(), DataType::kInt64);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a->at("x").data<float>()[i], b->at("x").data<float>()[i]);
    EXPECT_GE(a->at("x").data<float>()[i], -1);
    EXPECT_LT(a->at("x").data<float>()[i], 1);
  }
}

TEST(LayerCompare, SideSpecs) {
  SessionOptions options;
  ASSERT_TRUE(ParseSideSpec("opencl:fp16-storage", options).ok());
  EXPECT_EQ(options.backend, "opencl");
  EXPECT_EQ(options.precision, Precision::kFp16Storage);
  ASSERT_TRUE(ParseSideSpec("cpu", options).ok());
  EXPECT_EQ(options.precision, Precision::kFp32);
  EXPECT_FALSE(ParseSideSpec("vulkan:fp32", options).ok());
  EXPECT_FALSE(ParseSideSpec("cpu:fp8", options).ok());
  // fp16-all: fp16 storage with the model's fp32 islands ignored, emulated on the cpu only.
  ASSERT_TRUE(ParseSideSpec("cpu:fp16-all", options).ok());
  EXPECT_EQ(options.precision, Precision::kFp16Storage);
  EXPECT_TRUE(options.islands_ignored);
  ASSERT_TRUE(ParseSideSpec("cpu:fp16-storage", options).ok());
  EXPECT_FALSE(options.islands_ignored);
  EXPECT_FALSE(ParseSideSpec("opencl:fp16-all", options).ok());
}

}  // namespace
}  // namespace ovfix::exec
