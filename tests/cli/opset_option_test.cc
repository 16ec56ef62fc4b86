// `ovfix convert --opset N` on an opset-20 export, down to 17 and up to 21: onnxruntime runs
// both files and gets the original's outputs; a node that needs a later opset is named.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"
#include "tests/support/ort_peer.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;
using testing_support::RunOrt;

constexpr char kOpset20[] = R"(
<ir_version: 9, opset_import: ["" : 20]>
g (float[2,6,8] x) => (float[2,6,1] mean, float[2,3,8] a, float[2,6,8] act) {
  axes = Constant <value = int64[1] {2}> ()
  mean = ReduceMean <keepdims = 1> (x, axes)
  a, b = Split <axis = 1, num_outputs = 2> (x)
  gelu = Gelu (x)
  act = Mish (gelu)
}
)";

class OpsetOption : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("ovfix_opset_option_", ::getpid());
    fs::create_directories(dir_);
    absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(kOpset20);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = (dir_ / "m_op20.onnx").string();
    ASSERT_TRUE(SaveModel(**model, model_).ok());
    Tensor x(DataType::kFloat, {2, 6, 8});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::cos(0.3f * i) * 2.5f;
    input_ = (dir_ / "input_0.pb").string();
    ASSERT_TRUE(WriteTensorFile(input_, x, "x").ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string model_, input_;
};

TEST_F(OpsetOption, DownAndUpGiveFilesOnnxruntimeRunsWithTheSameOutputs) {
  OVFIX_REQUIRE_ORT(modules);
  const std::vector<Tensor> expected = RunOrt(modules, model_, {input_}, dir_ / "ort_original");
  ASSERT_EQ(expected.size(), 3u);
  for (int opset : {17, 21}) {
    const std::string out = (dir_ / absl::StrCat("m_op", opset, ".onnx")).string();
    const testing::CommandResult r = RunOvfix(
        absl::StrCat("convert ", model_, " ", out, " --opset ", opset, " --input x=", input_));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    absl::StatusOr<std::unique_ptr<Model>> written = LoadModel(out);
    ASSERT_TRUE(written.ok()) << written.status();
    EXPECT_EQ((*written)->OpsetVersion(""), opset);
    const std::vector<Tensor> actual =
        RunOrt(modules, out, {input_}, dir_ / absl::StrCat("ort_", opset));
    ASSERT_EQ(actual.size(), expected.size()) << "opset " << opset;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(actual[i].dims(), expected[i].dims());
      for (int64_t j = 0; j < expected[i].numel(); ++j) {
        EXPECT_NEAR(actual[i].GetAsDouble(j), expected[i].GetAsDouble(j), 1e-5)
            << "opset " << opset << " output " << i;
      }
    }
  }
}

TEST_F(OpsetOption, ADownConversionThatCannotBeMadeNamesTheNode) {
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(R"(
<ir_version: 10, opset_import: ["" : 23]>
g (float[1,4,8] x, float[8] scale) => (float[1,4,8] y) {
  n = RMSNormalization (x, scale)
  y = Attention <q_num_heads = 2, kv_num_heads = 2> (n, n, n)
}
)");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string path = (dir_ / "m_op23.onnx").string();
  ASSERT_TRUE(SaveModel(**model, path).ok());
  const std::string out = (dir_ / "never.onnx").string();
  const testing::CommandResult r =
      RunOvfix(absl::StrCat("convert ", path, " ", out, " --opset 17 --no-validate"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("Attention-23"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace ovfix
