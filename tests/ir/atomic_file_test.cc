// KeptFile: what a write replaced comes back when the written file is taken back, so that a
// converted model found wrong after it was written (with --in-place, over its input) leaves
// the input as it was.
#include "ir/atomic_file.h"

#include <filesystem>
#include <fstream>
#include <string>

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

// A file written over another replaces it whole (swapped into place, the old one removed):
// nothing else is left in the folder, and a reader that opened the old file keeps reading it.
TEST(WriteFileAtomically, ReplacesAnExistingFileAndLeavesNothingBeside) {
  const fs::path dir = testing::TempDir("atomic_replace");
  const std::string path = (dir / "m.onnx").string();
  testing::WriteBytes(path, "original");
  std::ifstream old_reader(path);
  ASSERT_TRUE(Write(path, "written").ok());
  EXPECT_EQ(testing::Slurp(path), "written");
  EXPECT_EQ(Entries(dir), 1u);
  std::string old_text;
  std::getline(old_reader, old_text);
  EXPECT_EQ(old_text, "original");
  fs::remove_all(dir);
}

// A folder where the file is to go is refused, and stays.
TEST(WriteFileAtomically, RefusesAFolderInThePlaceOfTheFile) {
  const fs::path dir = testing::TempDir("atomic_folder");
  fs::create_directory(dir / "m.onnx");
  testing::WriteBytes(dir / "m.onnx" / "inside", "kept");
  EXPECT_FALSE(Write((dir / "m.onnx").string(), "written").ok());
  EXPECT_TRUE(fs::is_directory(dir / "m.onnx"));
  EXPECT_EQ(testing::Slurp(dir / "m.onnx" / "inside"), "kept");
  EXPECT_EQ(Entries(dir), 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
