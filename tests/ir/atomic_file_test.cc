// KeptFile: what a write replaced comes back when the written file is taken back, so that a
// converted model found wrong after it was written (with --in-place, over its input) leaves
// the input as it was.
#include "ir/atomic_file.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/bad_input_fixtures.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

absl::Status Write(const std::string& path, const std::string& text) {
  return WriteFileAtomically(path, [&](std::ostream& out) {
    out << text;
    return absl::OkStatus();
  });
}

size_t Entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(KeptFile, RestorePutsTheReplacedFileBack) {
  const fs::path dir = testing::TempDir("kept_file");
  const std::string path = (dir / "m.onnx").string();
  testing::WriteBytes(path, "original");
  {
    KeptFile kept(path);
    ASSERT_TRUE(Write(path, "written").ok());
    EXPECT_EQ(testing::Slurp(path), "written");
    kept.Restore();
  }
  EXPECT_EQ(testing::Slurp(path), "original");
  EXPECT_EQ(Entries(dir), 1u);  // nothing kept beside it any more
  fs::remove_all(dir);
}

TEST(KeptFile, RestoreRemovesAWriteThatReplacedNothing) {
  const fs::path dir = testing::TempDir("kept_file_new");
  const std::string path = (dir / "m.onnx").string();
  {
    KeptFile kept(path);
    ASSERT_TRUE(Write(path, "written").ok());
    kept.Restore();
  }
  EXPECT_FALSE(fs::exists(path));
  fs::remove_all(dir);
}

TEST(KeptFile, WithoutRestoreTheWriteStaysThroughALink) {
  const fs::path dir = testing::TempDir("kept_file_link");
  testing::WriteBytes(dir / "m.onnx", "original");
  fs::create_symlink("m.onnx", dir / "link.onnx");
  const std::string link = (dir / "link.onnx").string();
  {
    KeptFile kept(link);
    ASSERT_TRUE(Write(link, "written").ok());
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(testing::Slurp(dir / "m.onnx"), "written");
  EXPECT_EQ(Entries(dir), 2u);
  {
    KeptFile kept(link);
    ASSERT_TRUE(Write(link, "again").ok());
    kept.Restore();
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(testing::Slurp(dir / "m.onnx"), "written");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
