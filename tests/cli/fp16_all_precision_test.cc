// `ovfix run --precision fp16-all` and `ovfix compare --test cpu:fp16-all`: every float tensor
// stored in fp16 with the model's fp32 islands ignored, as OpenVINO's GPU plugin and ncnn on
// Vulkan run a model, so that a user can check such a backend's output by hand. The model is
// a float16 model with an fp32 island whose value (x * 1000 = 1e5 for x = 100) exceeds fp16's
// largest finite value (65504): fp16-storage honours the island and returns x; fp16-all rounds
// the island's value to inf (worked out by hand).
#include <cmath>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"
#include "tests/support/fp16_overflow_models.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

struct Files {
  fs::path dir;
  std::string model, input;
};

Files WriteIslandModel() {
  Files f;
  f.dir = fs::temp_directory_path() / ("ovfix_fp16_all_" + std::to_string(::getpid()));
  fs::create_directories(f.dir);
  auto model = ParseModelText(testing::kFloat16ModelWithIsland);
  EXPECT_TRUE(model.ok()) << model.status();
  f.model = (f.dir / "island.onnx").string();
  EXPECT_TRUE(SaveModel(**model, f.model).ok());
  f.input = (f.dir / "x.pb").string();
  const Tensor x = ConvertTensor(
      Tensor::FromVector<float>(DataType::kFloat, {4}, {100, 100, -100, 1}), DataType::kFloat16);
  EXPECT_TRUE(WriteTensorFile(f.input, x, "x").ok());
  return f;
}

Tensor Output(const fs::path& dir) {
  auto t = ReadTensorFile((dir / "output_0.pb").string());
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? ConvertTensor(*t, DataType::kFloat) : Tensor();
}

TEST(Fp16AllPrecision, RunIgnoresTheIslandsThatFp16StorageHonours) {
  const Files f = WriteIslandModel();
  const std::string run = "run " + f.model + " --input x=" + f.input;
  auto storage =
      RunOvfix(run + " --precision fp16-storage --output-dir " + (f.dir / "storage").string());
  ASSERT_EQ(storage.exit_code, 0) << storage.err;
  const Tensor kept = Output(f.dir / "storage");
  ASSERT_EQ(kept.numel(), 4);
  EXPECT_FLOAT_EQ(kept.data<float>()[0], 100);

  auto all = RunOvfix(run + " --precision fp16-all --output-dir " + (f.dir / "all").string());
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const Tensor lost = Output(f.dir / "all");
  ASSERT_EQ(lost.numel(), 4);
  EXPECT_TRUE(std::isinf(lost.data<float>()[0]) && std::isinf(lost.data<float>()[2]));
  EXPECT_FLOAT_EQ(lost.data<float>()[3], 1);  // 1000 fits fp16

  // The device backends store what the model says: refused in one line, exit 2.
  auto opencl = RunOvfix(run + " --precision fp16-all --backend opencl");
  EXPECT_EQ(opencl.exit_code, 2) << opencl.out << opencl.err;
  EXPECT_NE(opencl.err.find("fp16-all"), std::string::npos) << opencl.err;
  fs::remove_all(f.dir);
}

TEST(Fp16AllPrecision, CompareFindsTheOverflowThatTheBackendWouldSee) {
  const Files f = WriteIslandModel();
  auto r = RunOvfix("compare " + f.model + " --input x=" + f.input +
                    " --ref cpu:fp32 --test cpu:fp16-all");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto honoured = RunOvfix("compare " + f.model + " --input x=" + f.input +
                           " --ref cpu:fp32 --test cpu:fp16-storage");
  EXPECT_EQ(honoured.exit_code, 0) << honoured.out << honoured.err;
  fs::remove_all(f.dir);
}

}  // namespace
}  // namespace ovfix
