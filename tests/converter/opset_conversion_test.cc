// --opset N: a model rewritten at another opset computes what it computed, and a node with no
// equivalent at the target opset is named.
#include "converter/opset_conversion.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "converter/model_run.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_check.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/support/ort_peer.h"

namespace ovfix::converter {
namespace {

// An opset-20 export: Gelu and Mish as single ops, axes as inputs, Split by num_outputs.
constexpr char kOpset20[] = R"(
<ir_version: 9, opset_import: ["" : 20]>
g (float[2,6,8] x) => (float[2,6,1] mean, float[2,3,8] a, float[2,3,8] b, float[2,6,8] gelu,
                       float[2,6,8] gelu_tanh, float[2,6,8] mish, float[2,2,8] c) {
  axes = Constant <value = int64[1] {2}> ()
  mean = ReduceMean <keepdims = 1> (x, axes)
  a, b = Split <axis = 1, num_outputs = 2> (x)
  gelu = Gelu (x)
  gelu_tanh = Gelu <approximate = "tanh"> (x)
  mish = Mish (x)
  p, q, c = Split <axis = 1, num_outputs = 3> (x)
}
)";

std::unique_ptr<Model> Load(const char* text) {
  absl::StatusOr<std::unique_ptr<Model>> m = ParseModelText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  EXPECT_TRUE(InferShapes(**m).ok());
  return std::move(*m);
}

exec::TensorMap Inputs() {
  Tensor x(DataType::kFloat, {2, 6, 8});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.37f * i) * 3.0f;
  return {{"x", x}};
}

void ExpectSameOutputs(const Model& a, const Model& b) {
  absl::StatusOr<std::vector<Tensor>> x = RunAsTyped(a, Inputs());
  absl::StatusOr<std::vector<Tensor>> y = RunAsTyped(b, Inputs());
  ASSERT_TRUE(x.ok()) << x.status();
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(x->size(), y->size());
  for (size_t i = 0; i < x->size(); ++i) {
    ASSERT_EQ((*x)[i].dims(), (*y)[i].dims()) << "output " << i;
    for (int64_t j = 0; j < (*x)[i].numel(); ++j) {
      EXPECT_NEAR((*x)[i].GetAsDouble(j), (*y)[i].GetAsDouble(j), 1e-5) << "output " << i;
    }
  }
}

int CountOps(const Model& m, const std::string& op) {
  int n = 0;
  for (const Graph* g : GraphsRecursive(const_cast<Graph&>(m.graph()))) {
    for (const Node* node : g->nodes()) n += node->op_type() == op ? 1 : 0;
  }
  return n;
}

TEST(OpsetConversion, DownToOpset17WritesTheNewOpsWithOldOnes) {
  std::unique_ptr<Model> original = Load(kOpset20);
  std::unique_ptr<Model> converted = Load(kOpset20);
  ASSERT_NE(converted, nullptr);
  absl::StatusOr<OpsetChange> change = ConvertOpset(*converted, 17);
  ASSERT_TRUE(change.ok()) << change.status();
  EXPECT_EQ(converted->OpsetVersion(""), 17);
  EXPECT_EQ(converted->extras().ir_version(), 8);
  EXPECT_EQ(CountOps(*converted, "Gelu"), 0);
  EXPECT_EQ(CountOps(*converted, "Mish"), 0);
  EXPECT_GT(CountOps(*converted, "Erf"), 0);
  // The converted model passes onnx 1.12's own checker: opset 17 is what it knows.
  EXPECT_NO_THROW(CheckModelProto(ModelToProto(*converted)));
  ExpectSameOutputs(*original, *converted);
}

TEST(OpsetConversion, UpToOpset21KeepsTheOutputs) {
  std::unique_ptr<Model> original = Load(kOpset20);
  std::unique_ptr<Model> converted = Load(kOpset20);
  absl::StatusOr<OpsetChange> change = ConvertOpset(*converted, 21);
  ASSERT_TRUE(change.ok()) << change.status();
  EXPECT_EQ(converted->OpsetVersion(""), 21);
  EXPECT_EQ(converted->extras().ir_version(), 10);
  ExpectSameOutputs(*original, *converted);
}

TEST(OpsetConversion, UpFromOpset13MovesReduceAxesToAnInput) {
  std::unique_ptr<Model> original = Load(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[2,6,8] x) => (float[2,6] y) { y = ReduceMax <axes = [2], keepdims = 0> (x) }
)");
  std::unique_ptr<Model> converted = Load(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[2,6,8] x) => (float[2,6] y) { y = ReduceMax <axes = [2], keepdims = 0> (x) }
)");
  absl::StatusOr<OpsetChange> change = ConvertOpset(*converted, 18);
  ASSERT_TRUE(change.ok()) << change.status();
  const Node* reduce = *converted->graph().nodes().begin();
  EXPECT_EQ(reduce->num_inputs(), 2u);
  EXPECT_FALSE(reduce->HasAttribute("axes"));
  EXPECT_NO_THROW(CheckModelProto(ModelToProto(*converted)));
  ExpectSameOutputs(*original, *converted);
}

TEST(OpsetConversion, ANodeWithoutAnEquivalentIsNamedAndTheModelIsLeftAlone) {
  std::unique_ptr<Model> model = Load(R"(
<ir_version: 10, opset_import: ["" : 23]>
g (float[1,4,8] q, float[1,4,8] k, float[1,4,8] v) => (float[1,4,8] y) {
  y = Attention <q_num_heads = 2, kv_num_heads = 2> (q, k, v)
}
)");
  absl::StatusOr<OpsetChange> change = ConvertOpset(*model, 17);
  ASSERT_FALSE(change.ok());
  EXPECT_NE(change.status().message().find("Attention-23"), std::string::npos) << change.status();
  EXPECT_NE(change.status().message().find("no equivalent at opset 17"), std::string::npos);
  EXPECT_EQ(model->OpsetVersion(""), 23);
}

// Softmax-family ops before opset 13 flatten at `axis`; onnx 1.12's adapter stopped a raise
// past 12 where it could not see the input's shape ("Version conversion for Softmax failed
// because input shape is unknown"; a PaddleOCR recognizer kept every node fp32 for bf16 so).
// Raised to 13 and 17, onnxruntime computes what it computed at opset 11.
TEST(OpsetConversion, SoftmaxOfUnknownShapeIsRaisedPast12) {
  OVFIX_REQUIRE_ORT(modules);
  constexpr char kOpset11[] = R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2,6,8] x, int64[K] s) => (float[P,Q,R] a, float[2,6,8] b, float[P,Q,R] c, float[2,6,8] d) {
  r = Reshape(x, s)
  a = Softmax <axis = 1> (r)
  b = LogSoftmax <axis = -1> (x)
  c = Hardmax <axis = 2> (r)
  d = Softmax (x)
}
)";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("ovfix_softmax_11_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string original = (dir / "m11.onnx").string();
  std::unique_ptr<Model> model = Load(kOpset11);
  ASSERT_NE(model, nullptr);
  ASSERT_TRUE(SaveModel(*model, original).ok());
  const std::vector<std::string> inputs = {(dir / "x.pb").string(), (dir / "s.pb").string()};
  ASSERT_TRUE(WriteTensorFile(inputs[0], Inputs().at("x"), "x").ok());
  ASSERT_TRUE(
      WriteTensorFile(inputs[1], Tensor::FromVector<int64_t>(DataType::kInt64, {3}, {2, 6, 8}), "s")
          .ok());
  const std::vector<Tensor> expected =
      testing_support::RunOrt(modules, original, inputs, dir / "expected");
  ASSERT_EQ(expected.size(), 4u);
  for (int64_t opset : {13, 17}) {
    SCOPED_TRACE(opset);
    std::unique_ptr<Model> converted = Load(kOpset11);
    absl::StatusOr<OpsetChange> change = ConvertOpset(*converted, opset);
    ASSERT_TRUE(change.ok()) << change.status();
    const std::string file = (dir / absl::StrCat("m", opset, ".onnx")).string();
    ASSERT_TRUE(SaveModel(*converted, file).ok());
    const std::vector<Tensor> got =
        testing_support::RunOrt(modules, file, inputs, dir / absl::StrCat("got", opset));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].dims(), expected[i].dims()) << "output " << i;
      for (int64_t j = 0; j < got[i].numel(); ++j) {
        EXPECT_NEAR(got[i].GetAsDouble(j), expected[i].GetAsDouble(j), 1e-6) << "output " << i;
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix::converter
