// Every kind of broken model file gives a one-line error that names the file and the problem.
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "tests/ir/bad_input_fixtures.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

TEST(BadInput, EachBrokenModelIsRefusedWithAClearMessage) {
  const auto dir = testing::TempDir("bad_input");
  const auto cases = testing::WriteBadModels(dir);
  ASSERT_EQ(cases.size(), 11u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = (dir / c.name).string();
    auto model = LoadModel(path);
    ASSERT_FALSE(model.ok());
    const std::string message(model.status().message());
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The same model with its weights in range loads: the fixtures break one thing each.
  auto good = testing::TinyModel();
  testing::WriteBytes(dir / "good.onnx", good.SerializeAsString());
  EXPECT_TRUE(LoadModel((dir / "good.onnx").string()).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
