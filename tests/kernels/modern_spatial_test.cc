// Tests of exec/cpu/modern_spatial_ops.cc (Col2Im-18, CenterCropPad-18) and of the packed
// sub-byte element types (int4, uint4, int2, uint2) in Gather, ConstantOfShape, sparse
// Constant and Scan. Every expected value is worked out by hand in the comments.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/cpu_session.h"
#include "exec/executor.h"
#include "exec/kernel.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/narrow_types.h"
#include "ir/tensor_proto.h"
#include "onnx/defs/attr_proto_util.h"
#include "tests/kernels/math_test_util.h"
#include "tests/support/model_text.h"

namespace ovfix::exec {
namespace {

using math_testing::FloatTensor;
using math_testing::Int64s;
using math_testing::IntAttr;
using math_testing::IntsAttr;
using math_testing::RunOp;
using math_testing::Values;
using onnx::MakeAttribute;
using Dims = std::vector<int64_t>;
using Attrs = std::vector<onnx::AttributeProto>;

Tensor RunOne(const std::string& op, int opset, const std::vector<Tensor>& inputs,
              const Attrs& attributes = {}) {
  absl::StatusOr<std::vector<Tensor>> out = RunOp(op, opset, inputs, attributes);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

std::string ErrorOf(const std::string& op, int opset, const std::vector<Tensor>& inputs,
                    const Attrs& attributes = {}) {
  absl::StatusOr<std::vector<Tensor>> out = RunOp(op, opset, inputs, attributes);
  return out.ok() ? "ok" : std::string(out.status().message());
}

// A packed tensor (int4, uint4, int2, uint2) of these element values.
Tensor Packed(DataType type, Dims dims, const std::vector<int32_t>& values) {
  Tensor t(type, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) SetPackedElement(type, t.raw(), i, values[i]);
  return t;
}

std::vector<int32_t> PackedValues(const Tensor& t) {
  std::vector<int32_t> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = GetPackedElement(t.type(), t.raw(), i);
  return v;
}

std::vector<uint8_t> BytesOf(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw());
  return {p, p + t.nbytes()};
}

// ---- Col2Im ----

// Image 3x3, block 2x2, stride 1: blocks l = 2 * bi + bj at (bi, bj) in {0,1}^2, block
// elements k = 2 * ki + kj; column (k, l) lands on pixel (bi + ki, bj + kj). With x[k][l] =
// 10k + l in channel 0:
//   (0,0): k0 l0 = 0                      (0,1): k0 l1 + k1 l0 = 1 + 10 = 11
//   (0,2): k1 l1 = 11                     (1,0): k0 l2 + k2 l0 = 2 + 20 = 22
//   (1,1): k0 l3 + k1 l2 + k2 l1 + k3 l0 = 3 + 12 + 21 + 30 = 66
//   (1,2): k1 l3 + k3 l1 = 13 + 31 = 44   (2,0): k2 l2 = 22
//   (2,1): k2 l3 + k3 l2 = 23 + 32 = 55   (2,2): k3 l3 = 33
// Channel 1 (rows 4..7) holds 100 + 10k + l: each pixel adds 100 per column that covers it,
// and the cover counts are [[1,2,1],[2,4,2],[1,2,1]].
TEST(Col2Im, TwoDimensionalOverlapsAddUp) {
  std::vector<float> x;
  for (int c = 0; c < 2; ++c) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 4; ++l) x.push_back(100.0f * c + 10.0f * k + l);
    }
  }
  const Tensor y =
      RunOne("Col2Im", 18, {FloatTensor({1, 8, 4}, x), Int64s({2}, {3, 3}), Int64s({2}, {2, 2})});
  EXPECT_EQ(y.dims(), (Dims{1, 2, 3, 3}));
  EXPECT_EQ(Values(y), (std::vector<double>{0, 11, 11, 22, 66, 44, 22, 55, 33, 100, 211, 111, 222,
                                            466, 244, 122, 255, 133}));
}

// Image 1x5, block 1x2, strides [1, 2], dilations [1, 2], pads [0, 1, 0, 1]. Along W the
// padded width is 7 and the dilated block 3 wide: (7 - 3) / 2 + 1 = 3 blocks. Block j,
// element kj lands on image column 2j + 2kj - 1:
//   kj = 0: columns -1 (dropped), 1, 3;  kj = 1: columns 1, 3, 5 (dropped).
// With row 0 = [1, 2, 3] and row 1 = [10, 20, 30]: column 1 = 2 + 10, column 3 = 3 + 20,
// columns 0, 2 and 4 get nothing.
TEST(Col2Im, PadsStridesAndDilations) {
  const Attrs attributes = {IntsAttr("strides", {1, 2}), IntsAttr("dilations", {1, 2}),
                            IntsAttr("pads", {0, 1, 0, 1})};
  const Tensor y = RunOne(
      "Col2Im", 18,
      {FloatTensor({1, 2, 3}, {1, 2, 3, 10, 20, 30}), Int64s({2}, {1, 5}), Int64s({2}, {1, 2})},
      attributes);
  EXPECT_EQ(y.dims(), (Dims{1, 1, 1, 5}));
  EXPECT_EQ(Values(y), (std::vector<double>{0, 12, 0, 23, 0}));
  // The same on int32 (Col2Im takes every numeric type), batch 2 with the second negated.
  const Tensor xi = Tensor::FromVector<int32_t>(DataType::kInt32, {2, 2, 3},
                                                {1, 2, 3, 10, 20, 30, -1, -2, -3, -10, -20, -30});
  const Tensor yi =
      RunOne("Col2Im", 18, {xi, Int64s({2}, {1, 5}), Int64s({2}, {1, 2})}, attributes);
  ASSERT_EQ(yi.type(), DataType::kInt32);
  EXPECT_EQ(yi.dims(), (Dims{2, 1, 1, 5}));
  EXPECT_EQ(Values(yi), (std::vector<double>{0, 12, 0, 23, 0, 0, -12, 0, -23, 0}));
}

// Image 2x2x3, block 1x2x2, stride 1: blocks per dim D 2, H 1, W 2 (L = 4, l = 2 * d + wb);
// block elements k = 2 * kh + kw. Pixel (d, h, w) takes kh = h and kw in {0, 1} with
// wb = w - kw in {0, 1}. With every row x[k] = [0, 1, 2, 3] (the value is l):
//   w = 0: l = 2d;  w = 1: (2d + 1) + 2d = 4d + 1;  w = 2: 2d + 1
// so d = 0 gives [0, 1, 1] and d = 1 gives [2, 5, 3], for both h.
TEST(Col2Im, ThreeDimensional) {
  const std::vector<float> row = {0, 1, 2, 3};
  std::vector<float> x;
  for (int k = 0; k < 4; ++k) x.insert(x.end(), row.begin(), row.end());
  const Tensor y = RunOne(
      "Col2Im", 18, {FloatTensor({1, 4, 4}, x), Int64s({3}, {2, 2, 3}), Int64s({3}, {1, 2, 2})});
  EXPECT_EQ(y.dims(), (Dims{1, 1, 2, 2, 3}));
  EXPECT_EQ(Values(y), (std::vector<double>{0, 1, 1, 0, 1, 1, 2, 5, 3, 2, 5, 3}));
}

TEST(Col2Im, RefusesInconsistentShapes) {
  // 3x3 image, 2x2 block: 4 blocks, not 5.
  EXPECT_NE(ErrorOf("Col2Im", 18,
                    {FloatTensor({1, 4, 5}, std::vector<float>(20)), Int64s({2}, {3, 3}),
                     Int64s({2}, {2, 2})})
                .find("blocks"),
            std::string::npos);
  // Dim 1 (6) is not a multiple of the block size 4.
  EXPECT_NE(ErrorOf("Col2Im", 18,
                    {FloatTensor({1, 6, 4}, std::vector<float>(24)), Int64s({2}, {3, 3}),
                     Int64s({2}, {2, 2})})
                .find("multiple"),
            std::string::npos);
  // image_shape and block_shape of different lengths.
  EXPECT_NE(ErrorOf("Col2Im", 18,
                    {FloatTensor({1, 4, 4}, std::vector<float>(16)), Int64s({3}, {3, 3, 3}),
                     Int64s({2}, {2, 2})}),
            "ok");
}

// ---- CenterCropPad ----

// Odd differences: a crop of 5 to 2 starts at floor(3 / 2) = 1 (half an element left of
// center); a pad of 2 to 5 puts floor(3 / 2) = 1 zero before and the other 2 after.
TEST(CenterCropPad, OddDifferencesFollowTheSpec) {
  EXPECT_EQ(
      Values(RunOne("CenterCropPad", 18, {FloatTensor({5}, {0, 1, 2, 3, 4}), Int64s({1}, {2})})),
      (std::vector<double>{1, 2}));
  EXPECT_EQ(Values(RunOne("CenterCropPad", 18, {FloatTensor({2}, {7, 8}), Int64s({1}, {5})})),
            (std::vector<double>{0, 7, 8, 0, 0}));
  // Even differences: 6 to 2 starts at 2; 2 to 4 pads one each side.
  EXPECT_EQ(
      Values(RunOne("CenterCropPad", 18, {FloatTensor({6}, {0, 1, 2, 3, 4, 5}), Int64s({1}, {2})})),
      (std::vector<double>{2, 3}));
  EXPECT_EQ(Values(RunOne("CenterCropPad", 18, {FloatTensor({2}, {7, 8}), Int64s({1}, {4})})),
            (std::vector<double>{0, 7, 8, 0}));
}

// x [3, 4] = 0..11 with axes [-1, -2] and shape [2, 5]: W 4 -> 2 keeps columns 1 and 2;
// H 3 -> 5 adds one zero row on each side. Rows: [0 0], [1 2], [5 6], [9 10], [0 0].
TEST(CenterCropPad, NegativeAxesCropOneDimAndPadAnother) {
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  const Tensor y = RunOne("CenterCropPad", 18, {FloatTensor({3, 4}, x), Int64s({2}, {2, 5})},
                          {IntsAttr("axes", {-1, -2})});
  EXPECT_EQ(y.dims(), (Dims{5, 2}));
  EXPECT_EQ(Values(y), (std::vector<double>{0, 0, 1, 2, 5, 6, 9, 10, 0, 0}));
}

// No axes: every dim. [[0 1 2] [3 4 5]] to [4, 1]: H 2 -> 4 pads one row each side, W 3 -> 1
// keeps column 1: [0], [1], [4], [0]. The shape may be int32.
TEST(CenterCropPad, AllAxesByDefault) {
  const Tensor shape = Tensor::FromVector<int32_t>(DataType::kInt32, {2}, {4, 1});
  const Tensor y = RunOne("CenterCropPad", 18, {FloatTensor({2, 3}, {0, 1, 2, 3, 4, 5}), shape});
  EXPECT_EQ(y.dims(), (Dims{4, 1}));
  EXPECT_EQ(Values(y), (std::vector<double>{0, 1, 4, 0}));
}

TEST(CenterCropPad, AnyElementType) {
  // Strings: 3 -> 4 pads one empty string on the right.
  const Tensor s(Dims{3}, std::vector<std::string>{"a", "b", "c"});
  const Tensor ys = RunOne("CenterCropPad", 18, {s, Int64s({1}, {4})});
  EXPECT_EQ(ys.strings(), (std::vector<std::string>{"a", "b", "c", ""}));
  // float16 bits are moved as they are: 4 -> 2 keeps elements 1 and 2.
  const Tensor h =
      Tensor::FromVector<uint16_t>(DataType::kFloat16, {4}, {0x3C00, 0x4000, 0x4200, 0x4400});
  const Tensor yh = RunOne("CenterCropPad", 18, {h, Int64s({1}, {2})});
  ASSERT_EQ(yh.type(), DataType::kFloat16);
  EXPECT_EQ(yh.data<uint16_t>()[0], 0x4000);
  EXPECT_EQ(yh.data<uint16_t>()[1], 0x4200);
  // int4, packed: [-8 -1 0 3 7] cropped to 3 starts at 1: [-1 0 3]; padded to 6: [.. 7 0].
  const Tensor i4 = Packed(DataType::kInt4, {5}, {-8, -1, 0, 3, 7});
  const Tensor cropped = RunOne("CenterCropPad", 18, {i4, Int64s({1}, {3})});
  ASSERT_EQ(cropped.type(), DataType::kInt4);
  EXPECT_EQ(PackedValues(cropped), (std::vector<int32_t>{-1, 0, 3}));
  const Tensor padded = RunOne("CenterCropPad", 18, {i4, Int64s({1}, {6})});
  EXPECT_EQ(PackedValues(padded), (std::vector<int32_t>{-8, -1, 0, 3, 7, 0}));
  // uint2 [2, 3] = [[1 2 3] [3 2 1]] to [2, 1] along axis 1: column 1 = [2, 2].
  const Tensor u2 = Packed(DataType::kUint2, {2, 3}, {1, 2, 3, 3, 2, 1});
  const Tensor yu = RunOne("CenterCropPad", 18, {u2, Int64s({1}, {1})}, {IntsAttr("axes", {1})});
  EXPECT_EQ(yu.dims(), (Dims{2, 1}));
  EXPECT_EQ(PackedValues(yu), (std::vector<int32_t>{2, 2}));
}

TEST(CenterCropPad, RefusesBadArguments) {
  const Tensor x = FloatTensor({2, 2}, {1, 2, 3, 4});
  EXPECT_NE(ErrorOf("CenterCropPad", 18, {x, Int64s({1}, {2})}), "ok");  // 1 value, 2 axes
  EXPECT_NE(ErrorOf("CenterCropPad", 18, {x, Int64s({2}, {2, 2})}, {IntsAttr("axes", {0, -2})})
                .find("repeated"),
            std::string::npos);
  EXPECT_NE(ErrorOf("CenterCropPad", 18, {x, Int64s({1}, {2})}, {IntsAttr("axes", {2})}), "ok");
  EXPECT_NE(ErrorOf("CenterCropPad", 18, {x, Int64s({2}, {-1, 2})}), "ok");
}

// ---- packed types in Gather, ConstantOfShape, sparse Constant and Scan ----

TEST(PackedTypes, Gather) {
  // int4 [3, 3] rows [1 2 3] [-4 -5 -6] [7 -8 0]: rows 2, 0 (3 elements a row, rows that
  // start mid-byte) and column -1 = [3, -6, 0].
  const Tensor i4 = Packed(DataType::kInt4, {3, 3}, {1, 2, 3, -4, -5, -6, 7, -8, 0});
  const Tensor rows = RunOne("Gather", 13, {i4, Int64s({2}, {2, 0})});
  ASSERT_EQ(rows.type(), DataType::kInt4);
  EXPECT_EQ(rows.dims(), (Dims{2, 3}));
  EXPECT_EQ(PackedValues(rows), (std::vector<int32_t>{7, -8, 0, 1, 2, 3}));
  const Tensor last = RunOne("Gather", 13, {i4, Int64s({1}, {-1})}, {IntAttr("axis", 1)});
  EXPECT_EQ(last.dims(), (Dims{3, 1}));
  EXPECT_EQ(PackedValues(last), (std::vector<int32_t>{3, -6, 0}));
  // uint4 [4, 2] (whole bytes a row): rows 3, 1 = [7 8] [3 4], bytes 0x87 0x43.
  const Tensor u4 = Packed(DataType::kUint4, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor y = RunOne("Gather", 13, {u4, Int64s({2}, {3, 1})});
  EXPECT_EQ(BytesOf(y), (std::vector<uint8_t>{0x87, 0x43}));
  // int2 [5] = [-2 -1 0 1 -2]: elements 4, 1, 3 = [-2 -1 1].
  const Tensor i2 = Packed(DataType::kInt2, {5}, {-2, -1, 0, 1, -2});
  EXPECT_EQ(PackedValues(RunOne("Gather", 13, {i2, Int64s({3}, {4, 1, 3})})),
            (std::vector<int32_t>{-2, -1, 1}));
}

TEST(PackedTypes, ConstantOfShape) {
  // int4 -3 (code 0xD) five times: bytes 0xDD 0xDD 0x0D (the last high nibble unused, zero).
  const Tensor v4 = Packed(DataType::kInt4, {1}, {-3});
  const Tensor y4 = RunOne("ConstantOfShape", 21, {Int64s({1}, {5})},
                           {MakeAttribute("value", TensorToProto(v4, "value"))});
  ASSERT_EQ(y4.type(), DataType::kInt4);
  EXPECT_EQ(y4.dims(), (Dims{5}));
  EXPECT_EQ(BytesOf(y4), (std::vector<uint8_t>{0xDD, 0xDD, 0x0D}));
  // uint2 2 (0b10) six times: 0b10101010 = 0xAA, then two elements 0b1010 = 0x0A.
  const Tensor v2 = Packed(DataType::kUint2, {1}, {2});
  const Tensor y2 = RunOne("ConstantOfShape", 25, {Int64s({2}, {2, 3})},
                           {MakeAttribute("value", TensorToProto(v2, "value"))});
  EXPECT_EQ(BytesOf(y2), (std::vector<uint8_t>{0xAA, 0x0A}));
}

// A sparse int4 constant [5] with values [-2, 5] at 3 and 0: [5 0 0 -2 0].
TEST(PackedTypes, SparseConstant) {
  onnx::SparseTensorProto sparse;
  *sparse.mutable_values() = TensorToProto(Packed(DataType::kInt4, {2}, {-2, 5}), "v");
  *sparse.mutable_indices() = TensorToProto(Int64s({2}, {3, 0}), "i");
  sparse.add_dims(5);
  onnx::AttributeProto attribute;
  attribute.set_name("sparse_value");
  attribute.set_type(onnx::AttributeProto::SPARSE_TENSOR);
  *attribute.mutable_sparse_tensor() = sparse;
  const Tensor y = RunOne("Constant", 13, {}, {attribute});
  ASSERT_EQ(y.type(), DataType::kInt4);
  EXPECT_EQ(PackedValues(y), (std::vector<int32_t>{5, 0, 0, -2, 0}));
}

// Scan slices an int4 [3, 3] along axis 0 (rows start mid-byte) and stacks the body's rows
// back: the output equals the input. (The text form predates int4: the model is written with
// uint8 and its values retyped.)
TEST(PackedTypes, ScanSlicesAndStacksInt4) {
  std::unique_ptr<Model> model = test_support::Parse(R"(
    agraph (uint8[3,3] xs) => (uint8[3,3] ys) {
      ys = Scan(xs) <num_scan_inputs = 1, body = body (uint8[3] x) => (uint8[3] y) {
        y = Identity(x)
      }>
    })");
  ASSERT_NE(model, nullptr);
  Graph& graph = model->graph();
  graph.inputs()[0]->set_elem_type(DataType::kInt4);
  graph.outputs()[0]->set_elem_type(DataType::kInt4);
  Graph* body = graph.outputs()[0]->producer()->GetSubgraph("body");
  ASSERT_NE(body, nullptr);
  body->inputs()[0]->set_elem_type(DataType::kInt4);
  body->outputs()[0]->set_elem_type(DataType::kInt4);
  SessionOptions options;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> session = CreateSession(*model, options);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::vector<int32_t> values = {1, -2, 3, -4, 5, -6, 7, -8, 0};
  auto out = (*session)->Run({{"xs", Packed(DataType::kInt4, {3, 3}, values)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].type(), DataType::kInt4);
  EXPECT_EQ((*out)[0].dims(), (Dims{3, 3}));
  EXPECT_EQ(PackedValues((*out)[0]), values);
}

}  // namespace
}  // namespace ovfix::exec
