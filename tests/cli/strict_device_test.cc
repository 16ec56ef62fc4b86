// `ovfix run --backend opencl` and `compare` sum up the nodes that ran on the CPU in one
// line, and --strict-device makes any such fallback an error (exit 2, one stderr line).
// The model has a Mod, which has no OpenCL kernel, next to a Relu, which has one.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

class StrictDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ovfix_strict_device_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    Write("mixed.onnx", R"(
      m (float[2, 3] x) => (float y) {
        two = Constant<value = float {2.0}>()
        r = Relu(x)
        y = Mod<fmod = 1>(r, two)
      })");
    Write("device_only.onnx", R"(
      m (float[2, 3] x) => (float y) {
        y = Relu(x)
      })");
    Tensor x = Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {-1, 0.5, 2.5, 3, -4, 7});
    ASSERT_TRUE(WriteTensorFile((dir_ / "x.pb").string(), x, "x").ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) {
    auto model = ParseModelText(text);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE(SaveModel(**model, (dir_ / name).string()).ok());
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Input() const { return " --input x=" + Path("x.pb"); }

  fs::path dir_;
};

int CountLines(const std::string& text, const std::string& needle) {
  int count = 0;
  size_t at = 0;
  while ((at = text.find(needle, at)) != std::string::npos) {
    ++count;
    at += needle.size();
  }
  return count;
}

TEST_F(StrictDevice, RunSaysInOneLineWhatRanOnTheCpu) {
  auto r = RunOvfix("run " + Path("mixed.onnx") + Input() + " --backend opencl");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(CountLines(r.out, "on the CPU"), 1) << r.out;
  EXPECT_NE(r.out.find("runs on the CPU: 1 of 3 nodes (Mod: no OpenCL kernel)"), std::string::npos)
      << r.out;
}

TEST_F(StrictDevice, RunRefusesAFallback) {
  auto r = RunOvfix("run " + Path("mixed.onnx") + Input() + " --backend opencl --strict-device");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(CountLines(r.err, "\n"), 1) << r.err;
  EXPECT_NE(r.err.find("--strict-device: runs on the CPU: 1 of 3 nodes (Mod"), std::string::npos)
      << r.err;
}

TEST_F(StrictDevice, RunPassesAGraphWholeOnTheDevice) {
  auto r =
      RunOvfix("run " + Path("device_only.onnx") + Input() + " --backend opencl --strict-device");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("on the CPU"), std::string::npos) << r.out;
}

TEST_F(StrictDevice, RunOnTheCpuBackendIsAUsageError) {
  auto r = RunOvfix("run " + Path("device_only.onnx") + Input() + " --strict-device");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--strict-device needs a device backend"), std::string::npos) << r.err;
}

TEST_F(StrictDevice, CompareRefusesAFallbackOnTheTestSide) {
  const std::string base = "compare " + Path("mixed.onnx") + " --ref cpu:fp32 --test opencl:fp32";
  auto plain = RunOvfix(base);
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_EQ(CountLines(plain.out, "runs on the CPU"), 1) << plain.out;
  auto strict = RunOvfix(base + " --strict-device");
  EXPECT_EQ(strict.exit_code, 2) << strict.out << strict.err;
  EXPECT_NE(strict.err.find("--strict-device: opencl:fp32: runs on the CPU: 1 of 3 nodes (Mod"),
            std::string::npos)
      << strict.err;
}

}  // namespace
}  // namespace ovfix
