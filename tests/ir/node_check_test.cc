// The structural node checks: what they refuse, with one line that names the node, and that
// well-formed nodes (subgraph holders included) pass.
#include "ir/node_check.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/ir/malformed_nodes.h"

namespace ovfix {
namespace {

using ::testing::HasSubstr;

using testing::ParseModelProto;

std::unique_ptr<Model> Load(onnx::ModelProto proto) {
  auto model = ModelFromProto(std::move(proto), "", "test");
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

std::unique_ptr<Model> Load(const char* text) { return Load(ParseModelProto(text)); }

// The error CheckNodes gives, which must be one line.
std::string NodesError(const Model& model) {
  const absl::Status s = CheckNodes(model);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos) << s;
  return std::string(s.message());
}

std::unique_ptr<Model> Conv(const char* attributes) {
  return Load((std::string(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,1,8,8] x, float[1,1,3,3] w) => (y) {
      y = Conv <)") +
               attributes + R"(> (x, w)
    })")
                  .c_str());
}

TEST(NodeCheck, WellFormedNodesPass) {
  auto model = Load(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,1,8,8] x, float[1,1,3,3] w, bool c, float[2,3] t, float[3] s) => (y, m, n) {
      y = Conv <strides = [2, 1], pads = [1, 1, 1, 1], dilations = [1, 2]> (x, w)
      m = If (c) <
        then_branch = g1 () => (float[2,3] a) { a = Relu(t) },
        else_branch = g2 () => (float[2,3] b) { b = Neg(t) }
      >
      n = LayerNormalization <axis = -2> (t, s)
    })");
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(CheckNodes(*model).ok()) << CheckNodes(*model);
  EXPECT_TRUE(CheckNodesAgainstRanks(*model).ok()) << CheckNodesAgainstRanks(*model);
}

TEST(NodeCheck, SchemaRefusesMissingRequiredInputsAndWrongAttributeTypes) {
  auto model = Load(testing::GatherWithoutDataModel());
  EXPECT_THAT(NodesError(*model), HasSubstr("Gather (output 'y'): "));
  EXPECT_THAT(NodesError(*model), HasSubstr("input 0 is marked single but has an empty string"));

  auto floats = Conv("strides = [1.0, 1.0]");
  EXPECT_THAT(NodesError(*floats), HasSubstr("Mismatched attribute type"));
  auto unknown = Conv("stride = [1, 1]");
  EXPECT_THAT(NodesError(*unknown), HasSubstr("Unrecognized attribute: stride"));
}

TEST(NodeCheck, SpatialAttributesAreCheckedWithoutRanks) {
  EXPECT_THAT(NodesError(*Conv("strides = [0, 1]")), HasSubstr("strides must be positive"));
  EXPECT_THAT(NodesError(*Conv("dilations = [1, -1]")), HasSubstr("dilations must be positive"));
  EXPECT_THAT(NodesError(*Conv("kernel_shape = [3, 0]")),
              HasSubstr("kernel dims must be positive"));
  EXPECT_THAT(NodesError(*Conv("pads = [0, 0, -1, 0]")), HasSubstr("pads must not be negative"));
  EXPECT_THAT(NodesError(*Conv("pads = [1, 1, 1]")),
              HasSubstr("pads must have two values per spatial axis"));
  EXPECT_THAT(NodesError(*Conv("kernel_shape = [3, 3], strides = [1, 1, 1]")),
              HasSubstr("strides must have 2 values"));
  EXPECT_THAT(NodesError(*Conv("strides = [1, 4294967296]")), HasSubstr("too large"));
  EXPECT_THAT(NodesError(*Conv("auto_pad = \"SAME\"")), HasSubstr("unknown auto_pad 'SAME'"));
}

// onnx's inference divides by the stride: InferShapes refuses the model first.
TEST(NodeCheck, ShapeInferenceRefusesWhatTheChecksRefuse) {
  auto model = Conv("strides = [0, 1]");
  const absl::Status s = InferShapes(*model);
  EXPECT_THAT(s.message(), HasSubstr("strides must be positive")) << s;
}

TEST(NodeCheck, RanksTheModelKnowsBoundAxesAndSpatialLists) {
  auto layer_norm = Load(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x, float[3] s) => (y) {
      y = LayerNormalization <axis = -3> (x, s)
    })");
  // Without ranks the axis could be right.
  EXPECT_TRUE(CheckNodes(*layer_norm).ok());
  const absl::Status s = CheckNodesAgainstRanks(*layer_norm);
  EXPECT_THAT(s.message(), HasSubstr("axis -3 is out of range for rank 2")) << s;

  auto conv = Conv("strides = [1, 1, 1]");
  EXPECT_TRUE(CheckNodes(*conv).ok());  // three spatial axes would do
  EXPECT_THAT(CheckNodesAgainstRanks(*conv).message(), HasSubstr("strides must have 2 values"));
}

TEST(NodeCheck, TensorAttributesMustFillTheirDims) {
  auto model = Load(testing::ShortConstantModel());
  EXPECT_THAT(NodesError(*model),
              HasSubstr("attribute 'value': tensor '': raw_data has 1 bytes, its dims need 8"));
}

TEST(NodeCheck, BodiesAreChecked) {
  onnx::ModelProto proto = ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool c, float[1,1,8,8] x, float[1,1,3,3] w) => (y) {
      y = If (c) <
        then_branch = g1 () => (a) { a = Conv <strides = [1, 0]> (x, w) },
        else_branch = g2 () => (b) { b = Identity(x) }
      >
    })");
  auto model = Load(std::move(proto));
  EXPECT_THAT(NodesError(*model), HasSubstr("Conv (output 'a'): strides must be positive"));
}

TEST(TensorProtoCheck, SizesMustFitTheDimsWithoutDecoding) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_float_data(1.0f);
  EXPECT_THAT(CheckTensorProto(t).message(), HasSubstr("has 1 values, its dims need 2"));
  t.add_float_data(2.0f);
  EXPECT_TRUE(CheckTensorProto(t).ok());
  t.clear_float_data();
  t.set_raw_data(std::string(7, '\0'));
  EXPECT_THAT(CheckTensorProto(t).message(), HasSubstr("raw_data has 7 bytes, its dims need 8"));
  t.add_dims(-1);
  EXPECT_THAT(CheckTensorProto(t).message(), HasSubstr("negative dim -1"));
  // External data is sized when it is read (against its file).
  onnx::TensorProto external;
  external.set_data_type(onnx::TensorProto::FLOAT);
  external.add_dims(1 << 20);
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  EXPECT_TRUE(CheckTensorProto(external).ok());
}

}  // namespace
}  // namespace ovfix

namespace ovfix {
namespace {

// Found by the convert fuzzer: ConvTranspose on a rank-2 input crashed onnx 1.12's inference
// (fuzz/regressions/convert/conv_transpose_rank2_input.txt); by the load_model fuzzer:
// QLinearConv on a rank-3 input with a rank-4 weight (fuzz/regressions/load_model/
// qlinearconv_weight_rank.bin). Refused before inference runs.
TEST(NodeCheck, ConvolutionsNeedSpatialAxesAndWeightsOfTheInputsRank) {
  for (const char* text : {
           "g (float[1,3] x, float[1,2,3] w) => (y) { y = ConvTranspose(x, w) }",
           "g (float[1,3] x, float[1,1,3] w) => (y) { y = Conv(x, w) }",
           "g (float[1,1,8] x, float[1,1,3,3] w) => (y) { y = Conv(x, w) }",
           "g (float[1,3] x) => (y) { y = MaxPool<kernel_shape = [2]>(x) }",
           "g (uint8[1,7,7] x, float xs, uint8 xz, uint8[1,1,1,1] w, float ws, uint8 wz, "
           "float ys, uint8 yz) => (y) { y = QLinearConv(x, xs, xz, w, ws, wz, ys, yz) }",
       }) {
    absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(text);
    ASSERT_TRUE(model.ok()) << model.status();
    absl::Status s = CheckNodes(**model);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("rank")) << text;
  }
  absl::StatusOr<std::unique_ptr<Model>> fine =
      ParseModelText("g (float[1,1,8] x, float[1,1,3] w) => (y) { y = Conv(x, w) }");
  ASSERT_TRUE(fine.ok());
  EXPECT_TRUE(CheckNodes(**fine).ok());
}

// Found by the load_model fuzzer: a MaxPool window (126) wider than its padded input (32) made
// onnx's inference write the output dim -93, which the saved file then declared and the next
// load refused. The dim is left unknown, and the model saves and loads again.
TEST(ShapeInference, ANegativeInferredDimIsLeftUnknown) {
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(
      "g (float[1,3,28,28] x) => (y) "
      "{ y = MaxPool<kernel_shape = [3, 126], pads = [2, 2, 2, 2]>(x) }");
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(InferShapes(**model).ok());
  const Value* y = (*model)->graph().outputs()[0];
  ASSERT_EQ(y->rank(), 4);
  const onnx::TensorShapeProto& shape = y->type().tensor_type().shape();
  EXPECT_EQ(shape.dim(2).dim_value(), 30);
  EXPECT_FALSE(shape.dim(3).has_dim_value()) << shape.dim(3).dim_value();
  absl::StatusOr<std::unique_ptr<Model>> again =
      ModelFromProto(ModelToProto(**model), "", "m.onnx");
  EXPECT_TRUE(again.ok()) << again.status();
}

}  // namespace
}  // namespace ovfix
