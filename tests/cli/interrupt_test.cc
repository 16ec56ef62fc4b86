// Ctrl-C or SIGTERM while `ovfix convert` writes its output: one line on stderr says so and
// what was written, the exit code is 130 (143 for SIGTERM), and no temporary file is left
// beside the output (cli/interrupt.h). The conversion is a real one of a model with 200 MB of
// weights, interrupted as soon as the first temporary file of its output appears (inotify
// reports the creation, so the test waits on that event, never on a fixed sleep).
#include "cli/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/atomic_file.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/bad_input_fixtures.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

// y = MatMul(x, w), w float[7168,7168]: 205 MB of weights, small values that fp16 keeps. The
// written file is run on a batch of 64 while it is written, which keeps its temporary files
// there for half a second (the signal follows their creation within milliseconds).
void WriteBigModel(const fs::path& path) {
  constexpr int64_t kDim = 7168, kBatch = 64;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("big");
  auto add_io = [](onnx::ValueInfoProto* vi, const char* name) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(kBatch);
    t->mutable_shape()->add_dim()->set_dim_value(kDim);
  };
  add_io(g->add_input(), "x");
  add_io(g->add_output(), "y");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("MatMul");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(kDim);
  w->add_dims(kDim);
  std::vector<float> values(kDim * kDim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 97) / 4096.0f;
  w->set_raw_data(values.data(), values.size() * sizeof(float));
  values = {};
  testing::WriteBytes(path, m.SerializeAsString());
}

struct Interrupted {
  bool saw_temporary = false;
  int status = 0;  // waitpid's
  std::string err;
};

// Runs ovfix with `args`, sends `signal` once a temporary file of `output` appears in its
// folder, and waits for the process to end (a minute at most after the signal, else it is
// killed and the test fails).
Interrupted ConvertAndInterrupt(const std::vector<std::string>& args, const fs::path& output,
                                const fs::path& err_file, int signal) {
  Interrupted result;
  const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  EXPECT_GE(watch, 0) << std::strerror(errno);
  if (watch < 0) return result;
  EXPECT_GE(::inotify_add_watch(watch, output.parent_path().c_str(), IN_CREATE), 0);
  const std::string prefix = absl::StrCat(".", output.filename().string());
  std::vector<char*> argv = {const_cast<char*>(OVFIX_BINARY)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::execv(OVFIX_BINARY, argv.data());
    ::_exit(127);
  }
  // Until the temporary file is created or the process ends on its own (a failure).
  bool ended = false;
  while (!result.saw_temporary && !ended) {
    pollfd p = {watch, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      alignas(inotify_event) char buffer[64 * 1024];
      const ssize_t n = ::read(watch, buffer, sizeof(buffer));
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
        const std::string name = e->len > 0 ? e->name : "";
        if (absl::StartsWith(name, prefix) && IsTemporaryFileName(name)) {
          result.saw_temporary = true;
        }
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    if (!result.saw_temporary) ended = ::waitpid(child, &result.status, WNOHANG) == child;
  }
  ::close(watch);
  if (result.saw_temporary) {
    ::kill(child, signal);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (::waitpid(child, &result.status, WNOHANG) != child) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "ovfix did not end within a minute of the signal";
        ::kill(child, SIGKILL);
        ::waitpid(child, &result.status, 0);
        break;
      }
      ::usleep(10000);
    }
  }
  result.err = testing::Slurp(err_file);
  return result;
}

std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class Interrupt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(testing::TempDir("interrupt"));
    fs::create_directories(*dir_ / "models");
    WriteBigModel(*dir_ / "models" / "big.onnx");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  void TearDown() override {
    // What a test left besides the input model.
    for (const auto& e : fs::directory_iterator(*dir_ / "models")) {
      if (e.path().filename() != "big.onnx") fs::remove_all(e.path());
    }
  }

  static fs::path* dir_;
};
fs::path* Interrupt::dir_ = nullptr;

TEST_F(Interrupt, CtrlCWhileWritingSaysSoAndLeavesNoTemporaryFile) {
  const fs::path models = *dir_ / "models";
  const fs::path output = models / "out.onnx";
  // External data: the data file's temporary comes first, then the model's.
  const Interrupted r =
      ConvertAndInterrupt({"convert", (models / "big.onnx").string(), output.string(), "--target",
                           "gpu-fp16", "--external-data"},
                          output, *dir_ / "err.txt", SIGINT);
  ASSERT_TRUE(r.saw_temporary) << "the conversion ended before writing: " << r.err;
  EXPECT_TRUE(WIFEXITED(r.status)) << "ended by signal " << WTERMSIG(r.status) << ": " << r.err;
  EXPECT_EQ(WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1, 130) << r.err;
  EXPECT_EQ(r.err, "ovfix convert: interrupted; nothing written\n");
  EXPECT_EQ(Entries(models), std::vector<std::string>{"big.onnx"});
}

TEST_F(Interrupt, SigtermWhileWritingEndsWith143) {
  const fs::path models = *dir_ / "models";
  const fs::path output = models / "out.onnx";
  const fs::path report = models / "report.json";
  const Interrupted r =
      ConvertAndInterrupt({"convert", (models / "big.onnx").string(), output.string(), "--target",
                           "gpu-fp16", "--report", report.string()},
                          output, *dir_ / "err.txt", SIGTERM);
  ASSERT_TRUE(r.saw_temporary) << "the conversion ended before writing: " << r.err;
  EXPECT_TRUE(WIFEXITED(r.status)) << "ended by signal " << WTERMSIG(r.status) << ": " << r.err;
  EXPECT_EQ(WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1, 143) << r.err;
  EXPECT_EQ(r.err, "ovfix convert: interrupted; nothing written\n");
  EXPECT_EQ(Entries(models), std::vector<std::string>{"big.onnx"});
}

// The line names what was written when an output is in place already (an interrupt after the
// conversion wrote its files, or the report alone of an exit 1), and what was not.
TEST_F(Interrupt, LineNamesWhatWasWritten) {
  const fs::path models = *dir_ / "models";
  const std::string written = (models / "out.onnx").string();
  const std::string kept = (models / "old.json").string();
  const std::string missing = (models / "out.onnx.data").string();
  testing::WriteBytes(kept, "{}");
  const fs::path err_file = *dir_ / "err.txt";
  const pid_t child = ::fork();
  if (child == 0) {
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, STDERR_FILENO);
    cli::HandleInterrupts("convert");
    cli::WatchOutputs({written, "", missing, kept});
    const int fd = ::open(written.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::close(fd);
    ::raise(SIGINT);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status;
  EXPECT_EQ(testing::Slurp(err_file), absl::StrCat("ovfix convert: interrupted; written: ", written,
                                                   "; not written: ", missing, ", ", kept, "\n"));
}

}  // namespace
}  // namespace ovfix
