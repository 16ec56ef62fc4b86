// The C++ API on models whose declared types are not whole (fuzz/regressions/load_model): an
// InvalidArgument status naming the value, from a file and from a ModelProto; never a crash.
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "ovfix/onnx.h"

namespace {

namespace fs = std::filesystem;

TEST(DeclaredTypes, ConvertReturnsTheErrorOfAMalformedType) {
  int files = 0;
  for (const auto& e :
       fs::directory_iterator(fs::path(OVFIX_SOURCE_DIR) / "fuzz/regressions/load_model")) {
    if (e.path().extension() != ".onnx") continue;
    ++files;
    const std::string out = (fs::temp_directory_path() / "ovfix_declared_types_api.onnx").string();
    absl::StatusOr<ovfix::ConversionReport> report =
        ovfix::ConvertFileStatus(e.path().string(), out);
    ASSERT_FALSE(report.ok()) << e.path();
    EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(report.status().message().find("input 'x'"), std::string::npos) << report.status();
    EXPECT_FALSE(fs::exists(out));
    onnx::ModelProto proto;
    std::ifstream in(e.path(), std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&in));
    absl::StatusOr<ovfix::ConvertedModelProto> converted = ovfix::Convert(proto);
    ASSERT_FALSE(converted.ok()) << e.path();
    EXPECT_NE(converted.status().message().find("input 'x'"), std::string::npos)
        << converted.status();
  }
  EXPECT_GE(files, 7);
}

}  // namespace
