// ovfix's schemas for opsets 18-26 and the checker that reads IR up to 13: what a model of
// this year's exporters needs to be checked and inferred.
#include "ir/op_schemas.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/model_check.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"
#include "onnx/checker.h"

namespace ovfix {
namespace {

bool AllowsType(const onnx::OpSchema& s, const std::string& param, const std::string& type) {
  for (const auto& t : s.typeConstraintParams()) {
    if (t.type_param_str != param) continue;
    return std::find(t.allowed_type_strs.begin(), t.allowed_type_strs.end(), type) !=
           t.allowed_type_strs.end();
  }
  return false;
}

TEST(OpSchemas, AnOpsetSelectsTheNewestVersionNotAboveIt) {
  EXPECT_EQ(FindSchema("ReduceMean", 17, "")->since_version(), 13);
  EXPECT_EQ(FindSchema("ReduceMean", 18, "")->since_version(), 18);
  EXPECT_EQ(FindSchema("ReduceMean", 26, "")->since_version(), 18);
  EXPECT_EQ(FindSchema("Cast", 26, "")->since_version(), 25);
  EXPECT_EQ(FindSchema("Identity", 20, "ai.onnx")->since_version(), 19);
  EXPECT_EQ(FindSchema("Relu", 26, "")->since_version(), 14);  // unchanged since 14
  EXPECT_EQ(FindSchema("Attention", 22, ""), nullptr);
  EXPECT_EQ(FindSchema("Attention", 24, "")->since_version(), 24);
  EXPECT_EQ(FindSchema("Attention", 26, "")->since_version(), 25);  // sliding windows
}

TEST(OpSchemas, NewVersionsCarryTheirSignatures) {
  // Opset 18 moved Reduce's axes to an optional input.
  const onnx::OpSchema* mean = FindSchema("ReduceMean", 18, "");
  ASSERT_EQ(mean->inputs().size(), 2u);
  EXPECT_EQ(mean->attributes().count("axes"), 0u);
  EXPECT_EQ(mean->attributes().count("noop_with_empty_axes"), 1u);
  EXPECT_EQ(FindSchema("Split", 18, "")->attributes().count("num_outputs"), 1u);
  EXPECT_EQ(FindSchema("Cast", 19, "")->attributes().count("saturate"), 1u);
  EXPECT_EQ(FindSchema("Cast", 24, "")->attributes().count("round_mode"), 1u);
  EXPECT_EQ(FindSchema("QuantizeLinear", 21, "")->attributes().count("block_size"), 1u);
  EXPECT_EQ(FindSchema("Resize", 18, "")->attributes().count("antialias"), 1u);
  // Opset 22 gave Conv bfloat16, which opset 17 lacks.
  EXPECT_FALSE(AllowsType(*FindSchema("Conv", 17, ""), "T", "tensor(bfloat16)"));
  EXPECT_TRUE(AllowsType(*FindSchema("Conv", 22, ""), "T", "tensor(bfloat16)"));
  EXPECT_EQ(SchemaVersions("Gelu", ""), std::vector<int>{20});
}

TEST(OpSchemas, VersionsBeyondWhatOvfixKnowsAreRefusedWithTheReason) {
  google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto> opsets;
  opsets.Add()->set_version(26);
  EXPECT_EQ(UnsupportedVersions(13, opsets), "");
  EXPECT_EQ(UnsupportedVersions(14, opsets), "IR version 14 is newer than ovfix reads (up to 13)");
  opsets.Mutable(0)->set_version(27);
  EXPECT_EQ(UnsupportedVersions(10, opsets),
            "opset 27 of ai.onnx is newer than ovfix knows (up to 26)");
}

// What PyTorch's dynamo exporter writes: IR 10, opset 18, axes as inputs, Split num_outputs.
constexpr char kOpset18Export[] = R"(
<ir_version: 10, opset_import: ["" : 18]>
g (float[2,6,8] x) => (float[2,6,1] mean, float[2,3,8] a, float[2,3,8] b) {
  axes = Constant <value = int64[1] {2}> ()
  mean = ReduceMean <keepdims = 1> (x, axes)
  a, b = Split <axis = 1, num_outputs = 2> (x)
}
)";

TEST(ModelCheck, AnOpset18ExportPassesTheCheckerAndInfersItsShapes) {
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(kOpset18Export);
  ASSERT_TRUE(model.ok()) << model.status();
  onnx::ModelProto proto = ModelToProto(**model);
  EXPECT_NO_THROW(CheckModelProto(proto));
  // onnx 1.12's own checker refuses the IR version.
  EXPECT_THROW(onnx::checker::check_model(proto), onnx::checker::ValidationError);
  ASSERT_TRUE(InferShapes(**model, {.strict = true}).ok());
  const Value* a = (*model)->graph().FindValue("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->static_shape(), (std::vector<int64_t>{2, 3, 8}));
}

// A Shape whose input inference could not type (a Reshape to a negative dimension before it):
// onnx 1.12's data propagation through Shape reads that type without looking and crashed
// (a fuzzed SoftmaxCrossEntropyLoss expansion raised to opset 22 for bfloat16). Inference now
// leaves what it cannot know unknown and goes on.
TEST(ModelCheck, DataPropagationPastAnUntypedValueDoesNotCrash) {
  for (int opset : {13, 22}) {
    absl::StatusOr<std::unique_ptr<Model>> model =
        ParseModelText(absl::StrCat("<ir_version: 8, opset_import: [\"\" : ", opset, R"(]>
        g (float[3,5,2] x) => (int64[3] s, float[3,10] y) {
          bad = Constant<value = int64[3] {0,0,-2}>()
          r = Reshape(x, bad)
          s = Shape(r)
          y = Reshape(r, s)
        })"));
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_TRUE(InferShapes(**model).ok()) << "opset " << opset;
  }
}

TEST(ModelCheck, ANodeOfTheWrongSignatureForItsOpsetFails) {
  // ReduceMean-18 has no `axes` attribute.
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(R"(
<ir_version: 10, opset_import: ["" : 18]>
g (float[2,6] x) => (float[2,1] y) { y = ReduceMean <axes = [1]> (x) }
)");
  ASSERT_TRUE(model.ok()) << model.status();
  onnx::ModelProto proto = ModelToProto(**model);
  EXPECT_THROW(CheckModelProto(proto), onnx::checker::ValidationError);
}

TEST(ModelCheck, Float8TypesAreSeenAsTypesOnnxLibraryLacks) {
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(R"(
<ir_version: 10, opset_import: ["" : 19]>
g (float[4] x) => (float[4] y) {
  f8 = Cast <to = 17> (x)
  y = Cast <to = 1> (f8)
}
)");
  ASSERT_TRUE(model.ok()) << model.status();
  onnx::ModelProto proto = ModelToProto(**model);
  EXPECT_TRUE(UsesTypesOnnxLibraryLacks(proto));
  EXPECT_NO_THROW(CheckModelProto(proto));
  ASSERT_TRUE(InferShapes(**model, {.strict = true}).ok());
  EXPECT_EQ(static_cast<int>((*model)->graph().FindValue("f8")->elem_type()), 17);
}

}  // namespace
}  // namespace ovfix
