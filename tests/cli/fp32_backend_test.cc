// `--precision fp32` on a target whose backend picks its own float type (openvino-gpu,
// ncnn-vulkan): the user runs that backend at fp32, so the structural fixes are validated in
// fp32 and the file written, with the runtime setting named; a refusal measured with every
// float tensor in fp16 names that way out.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exec/compare.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"
#include "tests/support/ort_peer.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunOvfix;

// fp16 cannot hold x + 1000 to better than 0.5: the all-fp16 run misses any criterion. The
// Squeeze without axes is what the OpenVINO GPU plugin mis-sizes: the target gives it axes.
constexpr char kOffsetSqueeze[] = R"(<ir_version: 8, opset_import: ["" : 17]>
  m (float[1, 64, 1] x) => (float[64] y) {
    offset = Constant <value = float[1] {1000}> ()
    s = Squeeze(x)
    shifted = Add(s, offset)
    y = Sub(shifted, offset)
  })";

std::string ReadText(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Fp32Backend : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp32Backend, RefusalNamesTheWayOutAndItWorks) {
  OVFIX_REQUIRE_ORT(modules);
  const std::string& target = GetParam();
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("ovfix_fp32_backend_", target, "_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(kOffsetSqueeze);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string in = (dir / "m.onnx").string(), out = (dir / "out.onnx").string();
  ASSERT_TRUE(SaveModel(**model, in).ok());
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i) - 0.3f;
  const std::string data = (dir / "x.pb").string();
  ASSERT_TRUE(
      WriteTensorFile(data, Tensor::FromVector<float>(DataType::kFloat, {1, 64, 1}, x), "x").ok());
  const std::string common =
      absl::StrCat("convert ", in, " ", out, " --target ", target, " --batch 1 --input x=", data);

  testing::CommandResult refused = RunOvfix(common);
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_THAT(refused.out, HasSubstr("the way out: --precision fp32 writes the file for the "
                                     "backend set to compute in fp32"));
  EXPECT_FALSE(fs::exists(out));

  const std::string report = (dir / "r.json").string();
  testing::CommandResult r = RunOvfix(absl::StrCat(common, " --precision fp32 --report ", report));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string setting =
      target == "openvino-gpu" ? "INFERENCE_PRECISION_HINT f32" : "use_fp16_storage";
  EXPECT_THAT(r.out, HasSubstr("precision fp32: validated in fp32, for the backend set to "
                               "compute in fp32 ("));
  EXPECT_THAT(r.out, HasSubstr(setting));
  EXPECT_THAT(ReadText(report), HasSubstr("\"fp32_runtime\":\""));
  // The structural fix is there: the Squeeze names its axes; the file stays float32.
  absl::StatusOr<std::unique_ptr<Model>> written = LoadModel(out);
  ASSERT_TRUE(written.ok()) << written.status();
  for (const Node* n : (*written)->graph().nodes()) {
    if (n->op_type() == "Squeeze") {
      EXPECT_EQ(n->inputs().size(), 2u);
    }
    if (n->op_type() == "Cast") {
      ADD_FAILURE() << "a Cast in an fp32 file";
    }
  }
  const std::vector<Tensor> expected =
      testing_support::RunOrt(modules, in, {data}, dir / "expected");
  const std::vector<Tensor> got = testing_support::RunOrt(modules, out, {data}, dir / "got");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_LE(exec::RelativeError(ConvertTensor(got[0], DataType::kFloat), expected[0]), 1e-4);
  fs::remove_all(dir);
}

// The shared models, each at batch 1 in fp32 for the backend set to fp32: written, and
// onnxruntime's run of the file matches the model's own test data.
TEST_P(Fp32Backend, SharedModelsConvertAndMatchTheirTestData) {
  OVFIX_REQUIRE_ORT(modules);
  const std::string& target = GetParam();
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("ovfix_fp32_models_", target, "_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string name :
       {"resnet18", "mobilenet_v3_small", "silero_vad", "gfpgan_modconv"}) {
    SCOPED_TRACE(name);
    const fs::path models = fs::path(OVFIX_SHARED_DIR) / "models" / name;
    if (!fs::exists(models / "model.onnx")) GTEST_SKIP() << "no " << name << " in ../shared";
    const fs::path set = models / "test_data_set_0";
    const std::string out = (dir / (name + ".onnx")).string();
    testing::CommandResult r = RunOvfix(
        absl::StrCat("convert ", (models / "model.onnx").string(), " ", out, " --target ", target,
                     " --batch 1 --precision fp32 --calibration-data ", set.string(), " --quiet"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::vector<std::string> inputs;
    for (int k = 0; fs::exists(set / absl::StrCat("input_", k, ".pb")); ++k) {
      inputs.push_back((set / absl::StrCat("input_", k, ".pb")).string());
    }
    const std::vector<Tensor> got = testing_support::RunOrt(modules, out, inputs, dir / name);
    for (size_t k = 0; k < got.size(); ++k) {
      absl::StatusOr<Tensor> expected =
          ReadTensorFile((set / absl::StrCat("output_", k, ".pb")).string());
      ASSERT_TRUE(expected.ok()) << expected.status();
      EXPECT_LE(exec::RelativeError(ConvertTensor(got[k], DataType::kFloat), *expected), 1e-4)
          << "output " << k;
    }
    EXPECT_GT(got.size(), 0u);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Targets, Fp32Backend, ::testing::Values("openvino-gpu", "ncnn-vulkan"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace ovfix
