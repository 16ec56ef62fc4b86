// Load then save must give back an equal model: same nodes, attributes, weight bytes,
// inputs/outputs, opset imports, metadata, doc strings, value_info, functions.
#include <filesystem>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

using google::protobuf::util::MessageDifferencer;

bool Equivalent(const onnx::ModelProto& a, const onnx::ModelProto& b, std::string* diff) {
  MessageDifferencer differencer;
  // An empty string written back equals an unset one; nothing else may differ.
  differencer.set_message_field_comparison(MessageDifferencer::EQUIVALENT);
  differencer.ReportDifferencesToString(diff);
  return differencer.Compare(a, b);
}

TEST(RoundTrip, EverySharedModelSavesEqual) {
  const auto models = testing::AllSharedModels();
  if (models.empty()) GTEST_SKIP() << "no ../shared models";
  const auto dir = testing::TempDir("roundtrip");
  int checked = 0;
  for (const auto& path : models) {
    SCOPED_TRACE(path);
    onnx::ModelProto original;
    ASSERT_TRUE(testing::ReadProto(path, original));
    auto model = LoadModel(path);
    ASSERT_TRUE(model.ok()) << model.status();
    const std::string out = (dir / "out.onnx").string();
    ASSERT_TRUE(SaveModel(**model, out).ok());
    onnx::ModelProto saved;
    ASSERT_TRUE(testing::ReadProto(out, saved));
    std::string diff;
    EXPECT_TRUE(Equivalent(original, saved, &diff)) << diff.substr(0, 2000);
    // The IR's weights are intact after a save (the bytes were lent, then taken back).
    onnx::ModelProto again = ModelToProto(**model);
    diff.clear();
    EXPECT_TRUE(Equivalent(original, again, &diff)) << diff.substr(0, 2000);
    ++checked;
  }
  EXPECT_GT(checked, 900);
  std::filesystem::remove_all(dir);
}

TEST(RoundTrip, ExternalDataWrittenAndReadBack) {
  const std::string path = testing::SharedDir() + "/models/resnet18/model.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP();
  const auto dir = testing::TempDir("external");
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  SaveOptions options;
  options.external_data = ExternalDataMode::kAlways;
  const std::string out = (dir / "m.onnx").string();
  ASSERT_TRUE(SaveModel(**model, out, options).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "m.onnx.data"));
  EXPECT_LT(std::filesystem::file_size(out), 200000u);
  // Reload (weights now mapped views) and save inline again: equal to the original file.
  auto reloaded = LoadModel(out);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  const std::string inline_out = (dir / "inline.onnx").string();
  ASSERT_TRUE(SaveModel(**reloaded, inline_out).ok());
  onnx::ModelProto original, saved;
  ASSERT_TRUE(testing::ReadProto(path, original));
  ASSERT_TRUE(testing::ReadProto(inline_out, saved));
  std::string diff;
  EXPECT_TRUE(Equivalent(original, saved, &diff)) << diff.substr(0, 2000);
  std::filesystem::remove_all(dir);
}

TEST(RoundTrip, SavingTwiceGivesIdenticalBytes) {
  const std::string path = testing::SharedDir() + "/models/mobilenet_v3_small/model.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP();
  const auto dir = testing::TempDir("deterministic");
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE(SaveModel(**model, (dir / "a.onnx").string()).ok());
  ASSERT_TRUE(SaveModel(**model, (dir / "b.onnx").string()).ok());
  std::ifstream a(dir / "a.onnx", std::ios::binary), b(dir / "b.onnx", std::ios::binary);
  std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(sa, sb);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
