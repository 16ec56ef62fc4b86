// If, Loop and Scan on the opencl backend: small models worked by hand, in fp32 and in
// fp16-storage (every value is a whole number a half holds exactly), where the control-flow
// nodes must run in the session (no CPU fallback note) and their bodies' float ops on the
// device. Runs on whatever OpenCL device is present (PoCL's CPU device on test machines).
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "exec/executor.h"
#include "exec/opencl/opencl_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/text_form.h"

namespace ovfix::exec {
namespace {

using ::testing::ElementsAreArray;

bool HaveOpencl() { return opencl::ListDevices().ok(); }

Tensor Floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  return Tensor::FromVector(DataType::kFloat, std::move(dims), v);
}
Tensor Int64(int64_t v) { return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {v}); }
Tensor Bool(bool v) {
  return Tensor::FromVector<uint8_t>(DataType::kBool, {}, {static_cast<uint8_t>(v)});
}

class ControlFlow : public ::testing::TestWithParam<Precision> {
 protected:
  // Runs `text` on the opencl backend; checks that no node fell back to the CPU.
  std::vector<Tensor> Run(const std::string& text, const TensorMap& inputs) {
    auto model = ParseModelText(text);
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return {};
    models_.push_back(*std::move(model));
    SessionOptions options;
    options.backend = "opencl";
    options.precision = GetParam();
    auto session = CreateSession(*models_.back(), options);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return {};
    auto out = (*session)->Run(inputs);
    EXPECT_TRUE(out.ok()) << out.status();
    for (const std::string& note : (*session)->notes()) {
      EXPECT_FALSE(absl::StrContains(note, "runs on the CPU")) << note;
    }
    return out.ok() ? *std::move(out) : std::vector<Tensor>{};
  }

  static std::vector<float> Values(const Tensor& t) {
    std::vector<float> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.GetAsDouble(i)));
    return v;
  }

  std::vector<std::unique_ptr<Model>> models_;
};

// The branch taken reads x from the outer scope: Relu(x) or Neg(x).
TEST_P(ControlFlow, IfRunsTheBranchTheConditionNames) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  const std::string text = R"(
    m (bool c, float[3] x) => (float[3] y) {
      y = If(c) <then_branch = g1 () => (float[3] a) { a = Relu(x) },
                 else_branch = g2 () => (float[3] b) { b = Neg(x) }>
    })";
  const Tensor x = Floats({3}, {-2, 0, 3});
  std::vector<Tensor> then_out = Run(text, {{"c", Bool(true)}, {"x", x}});
  ASSERT_EQ(then_out.size(), 1u);
  EXPECT_THAT(Values(then_out[0]), ElementsAreArray({0.0f, 0.0f, 3.0f}));
  std::vector<Tensor> else_out = Run(text, {{"c", Bool(false)}, {"x", x}});
  ASSERT_EQ(else_out.size(), 1u);
  EXPECT_THAT(Values(else_out[0]), ElementsAreArray({2.0f, 0.0f, -3.0f}));
}

// Adds the outer y to the carried x each trip and stacks the sums; the body's condition
// (i < 2) ends the loop after three trips although M allows ten.
TEST_P(ControlFlow, LoopCarriesOnTheDeviceAndStopsOnItsCondition) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  const std::string text = R"(
    m (int64 n, float[2] x0, float[2] y) => (float[2] x, float[N, 2] sums) {
      go = Constant <value = bool {1}> ()
      x, sums = Loop(n, go, x0) <body = b (int64 i, bool c, float[2] v)
          => (bool more, float[2] w, float[2] s) {
        two = Constant <value = int64 {2}> ()
        more = Less(i, two)
        w = Add(v, y)
        s = Identity(w)
      }>
    })";
  std::vector<Tensor> out =
      Run(text, {{"n", Int64(10)}, {"x0", Floats({2}, {1, 2})}, {"y", Floats({2}, {10, 20})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(Values(out[0]), ElementsAreArray({31.0f, 62.0f}));
  EXPECT_EQ(out[1].dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_THAT(Values(out[1]), ElementsAreArray({11.0f, 22.0f, 21.0f, 42.0f, 31.0f, 62.0f}));
  // No trips: the carried value passes through and the stacked output is empty.
  out = Run(text, {{"n", Int64(0)}, {"x0", Floats({2}, {1, 2})}, {"y", Floats({2}, {10, 20})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(Values(out[0]), ElementsAreArray({1.0f, 2.0f}));
  EXPECT_EQ(out[1].dims()[0], 0);
}

// A running sum over the rows of x: forward, then backward with the outputs stacked along
// axis 1 (the host path for a non-leading axis).
TEST_P(ControlFlow, ScanSlicesAndStacksRows) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  const Tensor x = Floats({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor s0 = Floats({2}, {0, 0});
  std::vector<Tensor> forward = Run(R"(
    <ir_version: 8, opset_import: ["" : 16]>
    m (float[2] s0, float[3, 2] x) => (float[2] s, float[3, 2] sums) {
      s, sums = Scan <num_scan_inputs = 1, body = b (float[2] acc, float[2] row)
          => (float[2] next, float[2] out) {
        next = Add(acc, row)
        out = Identity(next)
      }> (s0, x)
    })",
                                    {{"s0", s0}, {"x", x}});
  ASSERT_EQ(forward.size(), 2u);
  EXPECT_THAT(Values(forward[0]), ElementsAreArray({9.0f, 12.0f}));
  EXPECT_THAT(Values(forward[1]), ElementsAreArray({1.0f, 2.0f, 4.0f, 6.0f, 9.0f, 12.0f}));
  // Backward: rows 5 6, 3 4, 1 2 give sums 5 6, 8 10, 9 12, stored back in row order (last
  // first), then along axis 1: [[9, 8, 5], [12, 10, 6]].
  std::vector<Tensor> backward = Run(R"(
    <ir_version: 8, opset_import: ["" : 16]>
    m (float[2] s0, float[3, 2] x) => (float[2] s, float[2, 3] sums) {
      s, sums = Scan <num_scan_inputs = 1, scan_input_directions = [1],
                      scan_output_directions = [1], scan_output_axes = [1],
                      body = b (float[2] acc, float[2] row) => (float[2] next, float[2] out) {
        next = Add(acc, row)
        out = Identity(next)
      }> (s0, x)
    })",
                                     {{"s0", s0}, {"x", x}});
  ASSERT_EQ(backward.size(), 2u);
  EXPECT_EQ(backward[1].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(Values(backward[1]), ElementsAreArray({9.0f, 8.0f, 5.0f, 12.0f, 10.0f, 6.0f}));
}

INSTANTIATE_TEST_SUITE_P(Precisions, ControlFlow,
                         ::testing::Values(Precision::kFp32, Precision::kFp16Storage),
                         [](const auto& info) {
                           return info.param == Precision::kFp32 ? "fp32" : "fp16_storage";
                         });

}  // namespace
}  // namespace ovfix::exec
