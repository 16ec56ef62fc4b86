// Load then save must give back an equal model: same nodes, attributes, weight bytes,
// inputs/outputs, opset imports, metadata, doc strings, value_info, functions.
#include <cstring>
#include <filesystem>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "tests/ir/test_util.h"
#include "tests/support/transformer_model.h"

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

// A weight read from typed fields (float_data) and then set anew at the same address (the
// same buffer written with new values, as reused memory can give) is written from its bytes.
TEST(RoundTrip, AnInitializerSetAnewIsWrittenFromItsBytes) {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(13);
  onnx::GraphProto* g = proto.mutable_graph();
  g->set_name("g");
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_float_data(1.0f);
  w->add_float_data(2.0f);
  onnx::NodeProto* node = g->add_node();
  node->set_op_type("Identity");
  node->add_input("w");
  node->add_output("y");
  onnx::ValueInfoProto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto model = ModelFromProto(std::move(proto), ".", "typed_fields.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  Value* v = (*model)->graph().FindValue("w");
  ASSERT_NE(v, nullptr);
  Tensor t = v->tensor();
  t.data<float>()[0] = 5.0f;
  t.data<float>()[1] = 7.0f;
  v->set_tensor(t);
  const auto dir = testing::TempDir("set_anew");
  const std::string out = (dir / "m.onnx").string();
  ASSERT_TRUE(SaveModel(**model, out).ok());
  auto read = LoadModel(out);
  ASSERT_TRUE(read.ok()) << read.status();
  const Tensor& written = (*read)->graph().FindValue("w")->tensor();
  ASSERT_EQ(written.numel(), 2);
  EXPECT_EQ(written.data<float>()[0], 5.0f);
  EXPECT_EQ(written.data<float>()[1], 7.0f);
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
  SaveOptions inline_options;
  inline_options.external_data = ExternalDataMode::kNever;
  ASSERT_TRUE(SaveModel(**reloaded, inline_out, inline_options).ok());
  onnx::ModelProto original, saved;
  ASSERT_TRUE(testing::ReadProto(path, original));
  ASSERT_TRUE(testing::ReadProto(inline_out, saved));
  std::string diff;
  EXPECT_TRUE(Equivalent(original, saved, &diff)) << diff.substr(0, 2000);
  std::filesystem::remove_all(dir);
}

// By default a model keeps the form it came in: external data stays external (in one file
// named after the output, or as asked), a small inline model stays inline.
TEST(RoundTrip, ExternalDataStaysExternalAndInlineStaysInline) {
  const auto dir = testing::TempDir("keeps_form");
  const std::string external = (dir / "external.onnx").string();
  ASSERT_TRUE(testing::WriteTransformerModel(external, {.blocks = 2, .width = 64}).ok());
  auto model = LoadModel(external);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string out = (dir / "out.onnx").string();
  ASSERT_TRUE(SaveModel(**model, out).ok());
  EXPECT_TRUE(std::filesystem::exists(out + ".data"));
  SaveOptions renamed;
  renamed.external_location = "weights.bin";
  const std::string out2 = (dir / "out2.onnx").string();
  ASSERT_TRUE(SaveModel(**model, out2, renamed).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "weights.bin"));
  EXPECT_FALSE(std::filesystem::exists(out2 + ".data"));
  for (const std::string& path : {out, out2}) {
    onnx::ModelProto saved;
    ASSERT_TRUE(testing::ReadProto(path, saved));
    int external_tensors = 0;
    for (const auto& t : saved.graph().initializer()) {
      external_tensors += t.data_location() == onnx::TensorProto::EXTERNAL ? 1 : 0;
    }
    // w1 and w2 of both blocks; gamma and beta (256 bytes) stay under the 1024-byte threshold.
    EXPECT_EQ(external_tensors, 2 * 2);
    auto reloaded = LoadModel(path);
    ASSERT_TRUE(reloaded.ok()) << reloaded.status();
    for (const Value* v : (*model)->graph().initializers()) {
      const Value* r = (*reloaded)->graph().FindValue(v->name());
      ASSERT_NE(r, nullptr) << v->name();
      ASSERT_EQ(r->tensor().nbytes(), v->tensor().nbytes());
      EXPECT_EQ(std::memcmp(r->tensor().raw(), v->tensor().raw(), v->tensor().nbytes()), 0)
          << v->name();
    }
  }

  const std::string small = testing::SharedDir() + "/models/resnet18/model.onnx";
  if (!std::filesystem::exists(small)) return;
  auto inline_model = LoadModel(small);
  ASSERT_TRUE(inline_model.ok()) << inline_model.status();
  const std::string inline_out = (dir / "inline.onnx").string();
  ASSERT_TRUE(SaveModel(**inline_model, inline_out).ok());
  EXPECT_FALSE(std::filesystem::exists(inline_out + ".data"));
  std::filesystem::remove_all(dir);
}

// Weights read from raw_data are lent back to the saved message; a few-byte string holds its
// bytes inside itself, so lending it must not move them from under a second tensor that
// shares the buffer (a rank-raised copy of a scalar epsilon did: its low byte came out 0).
TEST(RoundTrip, TensorsSharingAShortRawDataBufferSaveTheirBytes) {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(17);
  onnx::GraphProto* g = proto.mutable_graph();
  onnx::TensorProto* eps = g->add_initializer();
  eps->set_name("eps");
  eps->set_data_type(onnx::TensorProto::FLOAT);
  const float value = 1e-5f;
  eps->set_raw_data(&value, sizeof(value));
  auto* y = g->add_output();
  y->set_name("eps");
  auto model = ModelFromProto(std::move(proto), "", "test");
  ASSERT_TRUE(model.ok()) << model.status();
  Graph& graph = (*model)->graph();
  graph.AddInitializer("eps_rank3", graph.FindValue("eps")->tensor().Reshaped({1, 1, 1}));
  const auto dir = testing::TempDir("short_raw_data");
  const std::string out = (dir / "m.onnx").string();
  ASSERT_TRUE(SaveModel(**model, out).ok());
  auto reloaded = LoadModel(out);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  for (const char* name : {"eps", "eps_rank3"}) {
    const Value* v = (*reloaded)->graph().FindValue(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(v->tensor().data<float>()[0], value) << name;
  }
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
  std::string sa((std::istreambuf_iterator<char>(a)), {}),
      sb((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(sa, sb);
  std::filesystem::remove_all(dir);
}

std::string FileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The repair's tries copy the graph and share the weights: a copy saves to the bytes its
// original saves to, each weight in the form it was read in (typed fields, an explicit data
// location, doc strings), and holds no weight of its own.
TEST(RoundTrip, ACopySharingWeightsSavesAsItsOriginal) {
  const auto models = testing::AllSharedModels();
  if (models.empty()) GTEST_SKIP() << "no ../shared models";
  const auto dir = testing::TempDir("copy_sharing");
  int checked = 0;
  for (const auto& path : models) {
    SCOPED_TRACE(path);
    auto model = LoadModel(path);
    ASSERT_TRUE(model.ok()) << model.status();
    auto copy = CopyGraphSharingWeights(**model);
    ASSERT_TRUE(copy.ok()) << copy.status();
    const std::vector<Value*>&a = (*model)->graph().initializers(),
          &b = (*copy)->graph().initializers();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i]->tensor().type() == DataType::kString) continue;
      EXPECT_EQ(a[i]->tensor().buffer(), b[i]->tensor().buffer()) << a[i]->name();
    }
    ASSERT_TRUE(SaveModel(**model, (dir / "original.onnx").string()).ok());
    ASSERT_TRUE(SaveModel(**copy, (dir / "copy.onnx").string()).ok());
    // Not ASSERT_EQ: it would print both files.
    ASSERT_TRUE(FileBytes(dir / "original.onnx") == FileBytes(dir / "copy.onnx"));
    ++checked;
  }
  EXPECT_GT(checked, 900);
  std::filesystem::remove_all(dir);
}

// Each try of the repair starts from a copy of the inferred graph that carries its types:
// every value gets the type inference gives the copy itself (bodies of If included).
TEST(RoundTrip, CarriedTypesAreTheInferredOnes) {
  int checked = 0;
  for (const char* name : {"deep_residual", "silero_vad", "ddff_squeeze", "resnet18"}) {
    const std::string path = testing::SharedDir() + "/models/" + name + "/model.onnx";
    if (!std::filesystem::exists(path)) continue;
    SCOPED_TRACE(path);
    auto model = LoadModel(path);
    ASSERT_TRUE(model.ok()) << model.status();
    auto inferred = CopyModel(**model);
    auto expected = CopyModel(**model);
    ASSERT_TRUE(inferred.ok() && expected.ok());
    ASSERT_TRUE(InferShapes(**inferred).ok());
    ASSERT_TRUE(InferShapes(**expected).ok());
    auto carried = CopyGraphSharingWeights(**inferred);
    ASSERT_TRUE(carried.ok()) << carried.status();
    CarryValueTypes((*inferred)->graph(), (*carried)->graph());
    const std::vector<Graph*> want = GraphsRecursive((*expected)->graph()),
                              got = GraphsRecursive((*carried)->graph());
    ASSERT_EQ(want.size(), got.size());
    int typed = 0;
    for (size_t g = 0; g < want.size(); ++g) {
      const std::vector<Node*> a = want[g]->NodeList(), b = got[g]->NodeList();
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) {
        for (size_t o = 0; o < a[k]->num_outputs(); ++o) {
          const Value* x = a[k]->outputs()[o];
          if (x == nullptr) continue;
          const Value* y = b[k]->outputs()[o];
          EXPECT_EQ(x->type().SerializeAsString(), y->type().SerializeAsString()) << x->name();
          typed += x->type().has_tensor_type();
        }
      }
    }
    EXPECT_GT(typed, 0);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no ../shared models";
}

}  // namespace
}  // namespace ovfix
