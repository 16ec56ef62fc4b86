// What a command writes never replaces what it reads: the model, its external data, rule
// files, inputs, test data, nor another of its outputs; links are written through only in
// place; external data is read only from regular files; temporary files of a killed run go
// with the next write of the same output. Each refusal is exit 2 with one line on stderr,
// and leaves every file as it was.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/bad_input_fixtures.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;
using testing::Slurp;

// y = x + w with w [2048] floats: 8 KB of weights, enough to go to external data.
onnx::ModelProto WeightModel() {
  onnx::ModelProto m = testing::TinyModel();
  auto* g = m.mutable_graph();
  for (auto* vi : {g->mutable_input(0), g->mutable_output(0)}) {
    vi->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(2048);
  }
  onnx::TensorProto* w = g->mutable_initializer(0);
  w->set_dims(0, 2048);
  w->set_raw_data(std::string(2048 * sizeof(float), '\0'));
  return m;
}

class OutputFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir("output_files");
    testing::WriteBytes(Path("A.onnx"), WeightModel().SerializeAsString());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // Every entry under the folder with the bytes of the regular files: what a refused
  // command must leave as it was.
  std::map<std::string, std::string> Snapshot() const {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      out[e.path().string()] = e.is_regular_file() ? Slurp(e.path()) : "";
    }
    return out;
  }
  // Runs `args` and expects a refusal: exit 2, one line saying `problem`, nothing changed.
  void ExpectRefused(const std::string& args, const std::string& problem) {
    const std::map<std::string, std::string> before = Snapshot();
    auto r = RunOvfix(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(problem), std::string::npos) << r.err;
    EXPECT_TRUE(Snapshot() == before) << args;
  }
  std::string ConvertArgs(const std::string& in, const std::string& out) const {
    return "convert " + Path(in) + " " + Path(out) + " --no-validate";
  }

  fs::path dir_;
};

TEST_F(OutputFiles, ExternalDataNeverReplacesTheInputOrTheOutputModel) {
  ExpectRefused(ConvertArgs("A.onnx", "out.onnx") + " --external-data-name A.onnx",
                "would overwrite the input model");
  ExpectRefused(ConvertArgs("A.onnx", "out.onnx") + " --external-data-name out.onnx",
                "would overwrite the output model");
  // The data file of a model loaded with external data is an input too.
  auto r = RunOvfix(ConvertArgs("A.onnx", "E.onnx") + " --external-data");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(Path("E.onnx.data")));
  ExpectRefused(ConvertArgs("E.onnx", "out.onnx") + " --external-data-name E.onnx.data",
                "would overwrite the external data of");
  ExpectRefused(ConvertArgs("E.onnx", "E.onnx.data"), "would overwrite the external data of");
}

TEST_F(OutputFiles, ReportsNeverReplaceWhatTheCommandReadsOrWrites) {
  testing::WriteBytes(Path("my.rules"), "# nothing yet\n");
  ExpectRefused(ConvertArgs("A.onnx", "B.onnx") + " --report " + Path("A.onnx"),
                "--report would overwrite the input model");
  ExpectRefused(ConvertArgs("A.onnx", "B.onnx") + " --report " + Path("B.onnx"),
                "--report would overwrite the output model");
  ExpectRefused(
      ConvertArgs("A.onnx", "B.onnx") + " --external-data --report " + Path("B.onnx.data"),
      "--report would overwrite the external data file");
  ExpectRefused(ConvertArgs("A.onnx", "B.onnx") + " --rules " + Path("my.rules") + " --report " +
                    Path("my.rules"),
                "--report would overwrite --rules");
  ExpectRefused("compare " + Path("A.onnx") + " " + Path("A.onnx") + " --json " + Path("A.onnx"),
                "--json would overwrite the model");
  ExpectRefused("compare " + Path("A.onnx") + " --ref cpu:fp32 --test cpu:fp16-storage --json " +
                    Path("r.json") + " --html " + Path("r.json"),
                "--html would overwrite --json");
  // Through another spelling of the same file.
  ExpectRefused(ConvertArgs("A.onnx", "B.onnx") + " --report " + (dir_ / "." / "A.onnx").string(),
                "would overwrite the input model");
  fs::create_hard_link(Path("A.onnx"), Path("hard.onnx"));
  ExpectRefused(ConvertArgs("A.onnx", "B.onnx") + " --report " + Path("hard.onnx"),
                "would overwrite the input model");
}

TEST_F(OutputFiles, RunOutputsNeverReplaceTheTestData) {
  fs::create_directories(Path("data"));
  Tensor zeros = Tensor::FromVector<float>(DataType::kFloat, {2048}, std::vector<float>(2048));
  ASSERT_TRUE(WriteTensorFile(Path("data/input_0.pb"), zeros, "x").ok());
  Tensor ones = Tensor::FromVector<float>(DataType::kFloat, {2048}, std::vector<float>(2048, 1));
  ASSERT_TRUE(WriteTensorFile(Path("data/output_0.pb"), ones, "y").ok());
  // The expected outputs differ from what the model computes: a run that wrote over them
  // first would then compare its outputs with themselves and pass.
  ExpectRefused(
      "run " + Path("A.onnx") + " --test-data " + Path("data") + " --output-dir " + Path("data"),
      "--output-dir would overwrite --test-data");
  auto r = RunOvfix("run " + Path("A.onnx") + " --test-data " + Path("data") + " --output-dir " +
                    Path("out"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(fs::exists(Path("out/output_0.pb")));
}

TEST_F(OutputFiles, LinksAreWrittenThroughInPlaceAndRefusedOtherwise) {
  fs::create_symlink("A.onnx", Path("link.onnx"));
  fs::create_symlink("new.onnx", Path("dangling.onnx"));
  ExpectRefused(ConvertArgs("A.onnx", "dangling.onnx"), "is a symbolic link");
  ExpectRefused(ConvertArgs("link.onnx", "link.onnx"), "--in-place");
  ExpectRefused(
      "compare " + Path("A.onnx") + " " + Path("A.onnx") + " --json " + Path("dangling.onnx"),
      "is a symbolic link");

  auto inode = [&](const std::string& name) {
    struct stat st {};
    ::stat(Path(name).c_str(), &st);
    return st.st_ino;
  };
  const auto before = inode("A.onnx");
  auto r = RunOvfix(ConvertArgs("link.onnx", "link.onnx") + " --in-place");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(Path("link.onnx")));
  EXPECT_EQ(fs::read_symlink(Path("link.onnx")), "A.onnx");
  EXPECT_NE(inode("A.onnx"), before);  // a new file renamed over the link's target
  EXPECT_TRUE(LoadModel(Path("A.onnx")).ok());

  r = RunOvfix(ConvertArgs("A.onnx", "dangling.onnx") + " --in-place");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(Path("dangling.onnx")));
  EXPECT_TRUE(LoadModel(Path("new.onnx")).ok());
}

TEST_F(OutputFiles, InPlaceReplacesTheModelAndItsOwnExternalData) {
  auto r = RunOvfix(ConvertArgs("A.onnx", "E.onnx") + " --external-data");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunOvfix(ConvertArgs("E.onnx", "E.onnx") + " --in-place");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto model = LoadModel(Path("E.onnx"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->loaded_with_external_data());
  // In place covers the input's files only: the model itself as its data is still refused.
  ExpectRefused(ConvertArgs("E.onnx", "E.onnx") + " --in-place --external-data-name E.onnx",
                "--external-data-name would overwrite the input model");
}

TEST_F(OutputFiles, ExternalDataThatIsNotARegularFileIsRefused) {
  auto r = RunOvfix(ConvertArgs("A.onnx", "E.onnx") + " --external-data");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::remove(Path("E.onnx.data"));
  ASSERT_EQ(::mkfifo(Path("E.onnx.data").c_str(), 0644), 0);
  // A FIFO would block the reader until someone writes to it: these would never return.
  for (const std::string& command :
       {"inspect " + Path("E.onnx"), "run " + Path("E.onnx"), ConvertArgs("E.onnx", "out.onnx")}) {
    r = RunOvfix(command, /*timeout_seconds=*/20);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.err;
    EXPECT_NE(r.err.find("E.onnx.data: not a regular file"), std::string::npos) << r.err;
  }
  fs::remove(Path("E.onnx.data"));
  fs::create_directory(Path("E.onnx.data"));
  r = RunOvfix("inspect " + Path("E.onnx"), 20);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  // The model itself too.
  ASSERT_EQ(::mkfifo(Path("fifo.onnx").c_str(), 0644), 0);
  r = RunOvfix("inspect " + Path("fifo.onnx"), 20);
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST_F(OutputFiles, TemporaryFilesOfAKilledRunGoWithTheNextWrite) {
  // A killed run leaves its temporary file unlocked; a live one holds a lock on it.
  const std::string model = Slurp(Path("A.onnx"));
  testing::WriteBytes(Path(".out.onnx.tmp-a1b2c3"), model);
  testing::WriteBytes(Path(".out.onnx.data.tmp-d4e5f6"), std::string(100, 'x'));
  testing::WriteBytes(Path(".out.onnx.tmp-live00"), model);
  testing::WriteBytes(Path(".other.onnx.tmp-g7h8i9"), model);
  const int live = ::open(Path(".out.onnx.tmp-live00").c_str(), O_RDONLY);
  ASSERT_GE(live, 0);
  ASSERT_EQ(::flock(live, LOCK_EX), 0);

  // Never taken for a model.
  auto r = RunOvfix("inspect " + Path(".out.onnx.tmp-a1b2c3"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("temporary file"), std::string::npos) << r.err;

  r = RunOvfix(ConvertArgs("A.onnx", "out.onnx") + " --external-data");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(Path(".out.onnx.tmp-a1b2c3")));
  EXPECT_FALSE(fs::exists(Path(".out.onnx.data.tmp-d4e5f6")));
  EXPECT_TRUE(fs::exists(Path(".out.onnx.tmp-live00")));    // a run still writing it
  EXPECT_TRUE(fs::exists(Path(".other.onnx.tmp-g7h8i9")));  // another output's
  EXPECT_TRUE(LoadModel(Path("out.onnx")).ok());
  ::close(live);
}

}  // namespace
}  // namespace ovfix
