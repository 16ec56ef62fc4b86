// A process that used the opencl backend exits cleanly, also when PoCL had to compile a kernel
// for it. PoCL compiles a kernel's work-group function on its driver threads when the command
// runs, looking its compiler passes up in LLVM's pass registry the first time; with LLVM 15 that
// registry is a static that exit() destroys, so a compile that starts during exit aborts the
// process with "Failed to create kernel compiler pass inline-kernels" after the tests passed.
// A kernel whose result nothing reads (the weights a zero-batch Conv widens from half storage,
// for a convolution that has no rows to compute) was such a compile, until runs and runtimes
// finished their queue. The child process runs with an empty PoCL kernel cache, so the compile
// cannot be skipped by a binary cached by an earlier run.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "exec/executor.h"
#include "exec/opencl/opencl_runtime.h"
#include "gtest/gtest.h"
#include "ir/text_form.h"

namespace ovfix::exec {
namespace {

constexpr char kChildVariable[] = "OVFIX_OPENCL_EXIT_CHILD";

// What the child does: one run whose only kernel feeds an empty output, then a normal exit.
void RunZeroBatchConvInHalfStorage() {
  auto model = ParseModelText(R"(
    m (float[0, 3, 5, 5] x, float[2, 3, 3, 3] w) => (float[0, 2, 3, 3] y) { y = Conv(x, w) }
  )");
  ASSERT_TRUE(model.ok()) << model.status();
  SessionOptions options;
  options.backend = "opencl";
  options.precision = Precision::kFp16Storage;
  auto session = CreateSession(**model, options);
  ASSERT_TRUE(session.ok()) << session.status();
  Tensor w(DataType::kFloat, {2, 3, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * static_cast<float>(i);
  auto out = (*session)->Run({{"x", Tensor(DataType::kFloat, {0, 3, 5, 5})}, {"w", w}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].numel(), 0);
}

TEST(OpenclExit, NoKernelIsLeftToCompileAtExit) {
  if (std::getenv(kChildVariable) != nullptr) {
    RunZeroBatchConvInHalfStorage();
    return;
  }
  if (!opencl::ListDevices().ok()) GTEST_SKIP() << "no OpenCL device";
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  std::string cache = testing::TempDir() + "ovfix-pocl-cache-XXXXXX";
  ASSERT_NE(::mkdtemp(cache.data()), nullptr);
  const std::string command = std::string(kChildVariable) + "=1 POCL_CACHE_DIR=" + cache + " " +
                              self.string() + " --gtest_filter=OpenclExit.* 2>&1";
  FILE* child = ::popen(command.c_str(), "r");
  ASSERT_NE(child, nullptr);
  std::string output;
  std::array<char, 4096> chunk;
  while (size_t n = std::fread(chunk.data(), 1, chunk.size(), child))
    output.append(chunk.data(), n);
  const int status = ::pclose(child);
  std::filesystem::remove_all(cache);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_FALSE(absl::StrContains(output, "Failed to create kernel compiler pass")) << output;
  EXPECT_TRUE(absl::StrContains(output, "[  PASSED  ] 1 test")) << output;
}

}  // namespace
}  // namespace ovfix::exec
