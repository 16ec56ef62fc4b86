// The opencl backend against the CPU executor: the same models, the same inputs, outputs
// compared. Runs on whatever OpenCL device is present (PoCL's CPU device on test machines).
#include <cmath>
#include <filesystem>

#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/opencl/opencl_runtime.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/support/run_both.h"
#include "tests/support/softmax_island.h"

namespace ovfix::exec {
namespace {

std::string ModelDir(const std::string& name) {
  return std::string(OVFIX_SHARED_DIR) + "/models/" + name;
}

TensorMap ReadInputs(const Model& model, const std::string& dir) {
  TensorMap inputs;
  int k = 0;
  for (const Value* v : model.graph().inputs()) {
    if (v->is_initializer()) continue;
    auto t = ReadTensorFile(dir + "/test_data_set_0/input_" + std::to_string(k++) + ".pb");
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) inputs[v->name()] = *t;
  }
  return inputs;
}

// Max abs difference relative to the reference's range (its magnitude for a single value).
double RangeError(const Tensor& actual, const Tensor& expected) {
  const Comparison c = CompareTensors(actual, expected, {0, 0});
  double range = c.expected_max - c.expected_min;
  if (range == 0) range = std::max(std::abs(c.expected_max), std::abs(c.expected_min));
  return c.max_abs_error / std::max(range, 1e-12);
}

bool HaveOpencl() { return opencl::ListDevices().ok(); }

struct ModelCase {
  const char* name;
  double tolerance;  // relative to the output range
};

class OpenclModels : public ::testing::TestWithParam<ModelCase> {};

TEST_P(OpenclModels, Fp32MatchesTheCpuExecutor) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  const std::string dir = ModelDir(GetParam().name);
  if (!std::filesystem::exists(dir)) GTEST_SKIP();
  auto model = LoadModel(dir + "/model.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  const TensorMap inputs = ReadInputs(**model, dir);
  SessionOptions cpu_options;
  auto cpu = CreateSession(**model, cpu_options);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  SessionOptions cl_options;
  cl_options.backend = "opencl";
  auto cl = CreateSession(**model, cl_options);
  ASSERT_TRUE(cl.ok()) << cl.status();
  const test_support::BothRuns runs = test_support::RunBoth(**cpu, **cl, inputs);
  ASSERT_TRUE(runs.ok);
  for (size_t i = 0; i < runs.actual.size(); ++i) {
    EXPECT_EQ(runs.actual[i].dims(), runs.expected[i].dims());
    EXPECT_LE(RangeError(runs.actual[i], runs.expected[i]), GetParam().tolerance) << "output " << i;
  }
  // Every op of these models has an OpenCL kernel: nothing fell back to the CPU.
  for (const auto& note : (*cl)->notes()) {
    EXPECT_EQ(note.find("runs on the CPU"), std::string::npos) << note;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, OpenclModels,
    ::testing::Values(ModelCase{"resnet18", 1e-4}, ModelCase{"mobilenet_v3_small", 1e-4},
                      ModelCase{"gfpgan_modconv", 1e-4}, ModelCase{"hand_softmax", 1e-4},
                      ModelCase{"ddff_squeeze", 1e-4}, ModelCase{"trt_broadcast", 1e-4},
                      ModelCase{"conv3d_991", 1e-4}),
    [](const auto& info) { return std::string(info.param.name); });

// silero_vad (an If on the sample rate around STFT-as-Conv and LSTM subgraphs): test_data_set_0
// holds onnxruntime's outputs with --opt-level disabled (the graph as written). The CPU
// executor must match them to 1e-5 of each output's range, the opencl backend, whose session
// runs the If and its branches, to 1e-4.
TEST(OpenclSession, SileroVadMatchesOnnxruntime) {
  const std::string dir = ModelDir("silero_vad");
  if (!std::filesystem::exists(dir)) GTEST_SKIP();
  auto model = LoadModel(dir + "/model.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  const TensorMap inputs = ReadInputs(**model, dir);
  std::vector<std::pair<std::string, double>> backends = {{"cpu", 1e-5}};
  if (HaveOpencl()) backends.emplace_back("opencl", 1e-4);
  for (const auto& [backend, tolerance] : backends) {
    SessionOptions options;
    options.backend = backend;
    auto session = CreateSession(**model, options);
    ASSERT_TRUE(session.ok()) << backend << ": " << session.status();
    auto out = (*session)->Run(inputs);
    ASSERT_TRUE(out.ok()) << backend << ": " << out.status();
    ASSERT_EQ(out->size(), 2u);
    for (size_t i = 0; i < out->size(); ++i) {
      auto expected = ReadTensorFile(dir + "/test_data_set_0/output_" + std::to_string(i) + ".pb");
      ASSERT_TRUE(expected.ok()) << expected.status();
      EXPECT_EQ((*out)[i].dims(), expected->dims()) << backend << " output " << i;
      EXPECT_LE(RangeError((*out)[i], *expected), tolerance) << backend << " output " << i;
    }
  }
}

TEST(OpenclSession, Fp16StorageOverflowsLikeAGpu) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  const std::string dir = ModelDir("gfpgan_modconv");
  if (!std::filesystem::exists(dir)) GTEST_SKIP();
  auto model = LoadModel(dir + "/model.onnx");
  ASSERT_TRUE(model.ok());
  SessionOptions options;
  options.backend = "opencl";
  options.precision = Precision::kFp16Storage;
  auto cl = CreateSession(**model, options);
  ASSERT_TRUE(cl.ok()) << cl.status();
  auto out = (*cl)->Run(ReadInputs(**model, dir));
  ASSERT_TRUE(out.ok()) << out.status();
  // `energy` (~1e6) cannot be held in half: inf, as on a GPU with fp16 storage.
  const Tensor& energy = (*out)[1];
  bool non_finite = false;
  for (float v : energy.values<float>()) non_finite = non_finite || !std::isfinite(v);
  EXPECT_TRUE(non_finite);
}

TEST(OpenclSession, FallbackToCpuIsNamed) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  auto model = ParseModelText(R"(
    m (float[2, 3] x) => (float[2, 3] y) {
      y = Round(x)
    }
  )");
  ASSERT_TRUE(model.ok());
  SessionOptions options;
  options.backend = "opencl";
  auto cl = CreateSession(**model, options);
  ASSERT_TRUE(cl.ok()) << cl.status();
  Tensor x = Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {1, 2.25f, 3, 4, 5, 6});
  auto out = (*cl)->Run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values<float>()[1], 2.0f);
  bool named = false;
  for (const auto& note : (*cl)->notes()) named = named || note.find("Round") != std::string::npos;
  EXPECT_TRUE(named);
}

// Device buffers go back to a free list when a value dies and are handed to the next value
// of the same size, in the same run or the next: runs with new inputs must not see the last
// run's data, and a run's outputs must stay as they were after later runs. The model has
// values of equal sizes alive at once (a residual), a padded Conv (its temporary buffer) and
// a MatMul; in fp16-storage the Conv also widens its half weights into a temporary.
TEST(OpenclSession, RepeatedRunsReusingBuffersMatchTheCpu) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  auto model = ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    m (float[1, 4, 6, 6] x, float[4, 4, 3, 3] w, float[6, 6] p) => (float[1, 4, 6, 6] y) {
      c = Conv<pads = [1, 1, 1, 1]>(x, w)
      r = Relu(c)
      s = Add(r, x)
      t = MatMul(s, p)
      y = Sigmoid(t)
    }
  )");
  ASSERT_TRUE(model.ok()) << model.status();
  for (Precision precision : {Precision::kFp32, Precision::kFp16Storage}) {
    SCOPED_TRACE(std::string(PrecisionName(precision)));
    SessionOptions cpu_options;
    cpu_options.precision = precision;
    SessionOptions cl_options = cpu_options;
    cl_options.backend = "opencl";
    auto cpu = CreateSession(**model, cpu_options);
    auto cl = CreateSession(**model, cl_options);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    ASSERT_TRUE(cl.ok()) << cl.status();
    const double tolerance = precision == Precision::kFp32 ? 1e-5 : 4.0 / 1024;
    std::vector<std::vector<Tensor>> kept;
    std::vector<std::vector<Tensor>> expected;
    for (int run = 0; run < 3; ++run) {
      TensorMap inputs;
      for (const auto& [name, dims] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
               {"x", {1, 4, 6, 6}}, {"w", {4, 4, 3, 3}}, {"p", {6, 6}}}) {
        Tensor t(DataType::kFloat, dims);
        float* data = t.data<float>();
        for (int64_t i = 0; i < t.numel(); ++i) {
          data[i] =
              static_cast<float>(((i * 37 + run * 11 + static_cast<int64_t>(name[0])) % 23) - 11) /
              8.0f;
        }
        inputs[name] = t;
      }
      auto want = (*cpu)->Run(inputs);
      auto got = (*cl)->Run(inputs);
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_LE(RangeError((*got)[0], (*want)[0]), tolerance) << "run " << run;
      kept.push_back(*got);
      expected.push_back(*want);
    }
    for (size_t run = 0; run < kept.size(); ++run) {
      EXPECT_LE(RangeError(kept[run][0], expected[run][0]), tolerance) << "kept run " << run;
    }
    // The runs differ, so a stale buffer would have shown.
    EXPECT_GT(RangeError(expected[0][0], expected[1][0]), 0.01);
  }
}

// As on the CPU (tests/exec/session_test.cc): fp16-storage keeps the float32 island of a
// model that declares float16 data (tests/support/softmax_island.h), so the softmax is right
// although exp(12) is beyond fp16; the all-float32 model overflows.
TEST(OpenclSession, Fp16StorageKeepsAConvertedModelsFloat32Island) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  auto island = ParseModelText(testing::kSoftmaxIsland);
  auto plain = ParseModelText(testing::kSoftmaxFloat);
  ASSERT_TRUE(island.ok() && plain.ok());
  SessionOptions options;
  options.backend = "opencl";
  options.precision = Precision::kFp16Storage;
  auto cl = CreateSession(**island, options);
  ASSERT_TRUE(cl.ok()) << cl.status();
  Tensor x16(DataType::kFloat16, {3});
  for (int i = 0; i < 3; ++i) x16.data<uint16_t>()[i] = FloatToHalfBits(testing::kSoftmaxInput[i]);
  auto out = (*cl)->Run({{"x", x16}});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(HalfBitsToFloat((*out)[0].data<uint16_t>()[i]), testing::kSoftmaxExpected[i], 1e-3)
        << i;
  }
  auto forced = CreateSession(**plain, options);
  ASSERT_TRUE(forced.ok()) << forced.status();
  out = (*forced)->Run(
      {{"x", Tensor::FromVector<float>(DataType::kFloat, {3},
                                       {testing::kSoftmaxInput, testing::kSoftmaxInput + 3})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(std::isfinite((*out)[0].data<float>()[2]));
}

TEST(OpenclSession, UnknownDeviceIsAClearError) {
  if (!HaveOpencl()) GTEST_SKIP() << "no OpenCL device";
  auto model = ParseModelText("m (float[1] x) => (float[1] y) { y = Relu(x) }");
  ASSERT_TRUE(model.ok());
  SessionOptions options;
  options.backend = "opencl";
  options.device = 99;
  auto cl = CreateSession(**model, options);
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(std::string(cl.status().message()).find("no OpenCL device 99"), std::string::npos);
}

}  // namespace
}  // namespace ovfix::exec
