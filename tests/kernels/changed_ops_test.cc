// Kernels whose behaviour changed in opsets 18-26, against values worked by hand from the
// ONNX specification: Cast/CastLike to and from the narrow types (float8 tables, int4 packing
// with element 0 in the low nibble), QuantizeLinear/DequantizeLinear with float8, sub-byte and
// blocked quantization, and the data-movement kernels on the new types.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/narrow_types.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor Floats(const Dims& dims, const std::vector<float>& v) {
  return Tensor::FromVector(DataType::kFloat, dims, v);
}

// A tensor of a one-byte or packed type from its stored bytes.
Tensor Raw(DataType type, const Dims& dims, const std::vector<uint8_t>& bytes) {
  Tensor t(type, dims);
  EXPECT_EQ(t.nbytes(), bytes.size());
  for (size_t i = 0; i < bytes.size() && i < t.nbytes(); ++i) t.data<uint8_t>()[i] = bytes[i];
  return t;
}

std::vector<uint8_t> BytesOf(const Tensor& t) {
  return std::vector<uint8_t>(t.data<uint8_t>(), t.data<uint8_t>() + t.nbytes());
}

std::vector<double> DoublesOf(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.GetAsDouble(i));
  return v;
}

Tensor RunOne(const std::string& op, int opset, const std::vector<Tensor>& inputs,
              const std::vector<onnx::AttributeProto>& attributes = {}) {
  auto out = RunOp(op, opset, inputs, attributes);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

onnx::AttributeProto To(DataType t) { return IntAttr("to", static_cast<int64_t>(t)); }

// Cast-19's table: 449 rounds to 448 (in range); 464 is halfway between 448 and 480 and goes
// to the even mantissa (448); 465 and 480 round past the largest finite value.
TEST(ChangedOps, CastFloatToE4M3FNWithAndWithoutSaturate) {
  const Tensor x = Floats({9}, {448, 449, 464, 465, 480, kInf, -kInf, kNaN, -0.0f});
  const Tensor saturated = RunOne("Cast", 19, {x}, {To(DataType::kFloat8E4M3FN)});
  EXPECT_EQ(saturated.type(), DataType::kFloat8E4M3FN);
  EXPECT_EQ(BytesOf(saturated),
            (std::vector<uint8_t>{0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x80}));
  const Tensor wrapped =
      RunOne("Cast", 19, {x}, {To(DataType::kFloat8E4M3FN), IntAttr("saturate", 0)});
  EXPECT_EQ(BytesOf(wrapped),
            (std::vector<uint8_t>{0x7E, 0x7E, 0x7E, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F, 0x80}));
}

TEST(ChangedOps, CastToE5M2KeepsInfinityWithoutSaturate) {
  const Tensor x = Floats({4}, {1.0f, 61440.0f, kInf, -kInf});
  EXPECT_EQ(BytesOf(RunOne("Cast", 19, {x}, {To(DataType::kFloat8E5M2)})),
            (std::vector<uint8_t>{0x3C, 0x7B, 0x7B, 0xFB}));
  EXPECT_EQ(BytesOf(RunOne("Cast", 19, {x}, {To(DataType::kFloat8E5M2), IntAttr("saturate", 0)})),
            (std::vector<uint8_t>{0x3C, 0x7C, 0x7C, 0xFC}));
}

TEST(ChangedOps, CastFromFloat8ToOtherTypes) {
  // e4m3fn 0x7E = 448, 0xB8 = -1, 0x01 = 2^-9, 0x7F = NaN.
  const Tensor x = Raw(DataType::kFloat8E4M3FN, {4}, {0x7E, 0xB8, 0x01, 0x7F});
  const Tensor f = RunOne("Cast", 19, {x}, {To(DataType::kFloat)});
  ASSERT_EQ(f.type(), DataType::kFloat);
  EXPECT_EQ(f.data<float>()[0], 448.0f);
  EXPECT_EQ(f.data<float>()[1], -1.0f);
  EXPECT_EQ(f.data<float>()[2], std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(f.data<float>()[3]));
  const Tensor i = RunOne("Cast", 19, {x}, {To(DataType::kInt32)});
  EXPECT_EQ(i.data<int32_t>()[0], 448);
  EXPECT_EQ(i.data<int32_t>()[1], -1);
  // 448 in e5m2: exponent 8 + 15 = 10111, mantissa 11.
  EXPECT_EQ(BytesOf(RunOne("Cast", 19, {x}, {To(DataType::kFloat8E5M2)}))[0], 0x5F);
  const Tensor h = RunOne("Cast", 19, {x}, {To(DataType::kFloat16)});
  EXPECT_EQ(HalfBitsToFloat(h.data<uint16_t>()[0]), 448.0f);
  const Tensor s = RunOne("Cast", 19, {x}, {To(DataType::kString)});
  EXPECT_EQ(s.strings()[0], "448");
  EXPECT_EQ(s.strings()[1], "-1");
}

TEST(ChangedOps, CastStringAndFloat16ToFloat8) {
  const Tensor s(Dims{2}, std::vector<std::string>{"448", "-INF"});
  EXPECT_EQ(BytesOf(RunOne("Cast", 19, {s}, {To(DataType::kFloat8E4M3FN)})),
            (std::vector<uint8_t>{0x7E, 0xFE}));
  Tensor h(DataType::kFloat16, {1});
  h.data<uint16_t>()[0] = FloatToHalfBits(1.0f);
  EXPECT_EQ(BytesOf(RunOne("Cast", 19, {h}, {To(DataType::kFloat8E5M2FNUZ)}))[0], 0x40);
}

// int4: round to nearest, ties away from zero (as onnxruntime casts), then keep the low 4
// bits (as any integer cast discards higher bits); two per byte, element 0 in the low nibble.
TEST(ChangedOps, CastToAndFromInt4) {
  const Tensor x = Floats({5}, {1.5f, 2.5f, -9.0f, 100.0f, -3.4f});
  const Tensor y = RunOne("Cast", 21, {x}, {To(DataType::kInt4)});
  ASSERT_EQ(y.type(), DataType::kInt4);
  // 2, 3, -9 -> 7, 100 = 0x64 -> 4, -3 -> 0x32, 0x47, 0x0D.
  EXPECT_EQ(BytesOf(y), (std::vector<uint8_t>{0x32, 0x47, 0x0D}));
  const Tensor back = RunOne("Cast", 21, {y}, {To(DataType::kFloat)});
  EXPECT_EQ(DoublesOf(back), (std::vector<double>{2, 3, 7, 4, -3}));
  const Tensor ints =
      Tensor::FromVector(DataType::kInt64, {4}, std::vector<int64_t>{-3, 20, 5, -8});
  // uint4: -3 -> 13, 20 -> 4, 5, -8 -> 8.
  EXPECT_EQ(BytesOf(RunOne("Cast", 21, {ints}, {To(DataType::kUint4)})),
            (std::vector<uint8_t>{0x4D, 0x85}));
  // int4 -> uint8 goes through the value: -2 wraps as any integer cast does.
  const Tensor i4 = Raw(DataType::kInt4, {2}, {0xE3});  // 3, -2
  const Tensor u8 = RunOne("Cast", 21, {i4}, {To(DataType::kUint8)});
  EXPECT_EQ(BytesOf(u8), (std::vector<uint8_t>{3, 254}));
}

TEST(ChangedOps, CastToFloat4AndTwoBitIntegers) {
  const Tensor x = Floats({4}, {2.5f, -0.75f, 7.0f, 0.5f});
  // e2m1 codes 4 (2.0), 0xA (-1.0), 7 (6.0), 1 (0.5).
  EXPECT_EQ(BytesOf(RunOne("Cast", 23, {x}, {To(DataType::kFloat4E2M1)})),
            (std::vector<uint8_t>{0xA4, 0x17}));
  const Tensor y = Floats({4}, {1.0f, -1.0f, -6.0f, 0.4f});
  EXPECT_EQ(BytesOf(RunOne("Cast", 25, {y}, {To(DataType::kInt2)})),
            (std::vector<uint8_t>{0x2D}));               // 1, -1, -6 -> low bits 10 = -2, 0
  const Tensor u2 = Raw(DataType::kUint2, {4}, {0x2D});  // 1, 3, 2, 0
  EXPECT_EQ(DoublesOf(RunOne("Cast", 25, {u2}, {To(DataType::kFloat)})),
            (std::vector<double>{1, 3, 2, 0}));
}

TEST(ChangedOps, CastToE8M0RoundModes) {
  const Tensor x = Floats({3}, {3.0f, 2.9f, 1.0f});
  EXPECT_EQ(BytesOf(RunOne("Cast", 24, {x}, {To(DataType::kFloat8E8M0)})),
            (std::vector<uint8_t>{129, 129, 127}));
  EXPECT_EQ(BytesOf(RunOne("Cast", 24, {x},
                           {To(DataType::kFloat8E8M0), StringAttr("round_mode", "down")})),
            (std::vector<uint8_t>{128, 128, 127}));
  EXPECT_EQ(BytesOf(RunOne("Cast", 24, {x},
                           {To(DataType::kFloat8E8M0), StringAttr("round_mode", "nearest")})),
            (std::vector<uint8_t>{129, 128, 127}));
  auto bad = RunOp("Cast", 24, {x}, {To(DataType::kFloat8E8M0), StringAttr("round_mode", "odd")});
  EXPECT_FALSE(bad.ok());
}

TEST(ChangedOps, CastLikeTakesTheNarrowType) {
  const Tensor x = Floats({2}, {1.0f, 500.0f});
  const Tensor like = Raw(DataType::kFloat8E4M3FNUZ, {1}, {0});
  const Tensor y = RunOne("CastLike", 19, {x, like}, {IntAttr("saturate", 0)});
  ASSERT_EQ(y.type(), DataType::kFloat8E4M3FNUZ);
  EXPECT_EQ(BytesOf(y), (std::vector<uint8_t>{0x40, 0x80}));
}

// QuantizeLinear-19 to float8: x / scale rounded as Cast with `saturate`.
TEST(ChangedOps, QuantizeLinearToFloat8) {
  const Tensor x = Floats({3}, {2.0f, 1000.0f, -1000.0f});
  const Tensor scale = Floats({}, {2.0f});
  const Tensor zero = Raw(DataType::kFloat8E4M3FN, {}, {0});
  EXPECT_EQ(BytesOf(RunOne("QuantizeLinear", 19, {x, scale, zero})),
            (std::vector<uint8_t>{0x38, 0x7E, 0xFE}));
  EXPECT_EQ(BytesOf(RunOne("QuantizeLinear", 19, {x, scale, zero}, {IntAttr("saturate", 0)})),
            (std::vector<uint8_t>{0x38, 0x7F, 0xFF}));
  const Tensor y = RunOne("DequantizeLinear", 19,
                          {Raw(DataType::kFloat8E4M3FN, {2}, {0x38, 0x7E}), scale, zero});
  EXPECT_EQ(DoublesOf(y), (std::vector<double>{2, 896}));
}

// Blocked int4: x [2, 3], axis 1, blocks of 2 -> scale [2, 2].
TEST(ChangedOps, QuantizeLinearBlockedInt4) {
  const Tensor x = Floats({2, 3}, {1.5f, 2.5f, 5.0f, 10.0f, -40.0f, 100.0f});
  const Tensor scale = Floats({2, 2}, {1, 2, 4, 8});
  const Tensor zero = Raw(DataType::kInt4, {2, 2}, {0, 0});
  const Tensor y = RunOne("QuantizeLinear", 21, {x, scale, zero},
                          {IntAttr("axis", 1), IntAttr("block_size", 2)});
  ASSERT_EQ(y.type(), DataType::kInt4);
  // 1.5 -> 2, 2.5 -> 2, 5/2 -> 2; 10/4 -> 2, -40/4 -> -8, 100/8 -> 7.
  EXPECT_EQ(BytesOf(y), (std::vector<uint8_t>{0x22, 0x22, 0x78}));
  const Tensor back = RunOne("DequantizeLinear", 21, {y, scale, zero},
                             {IntAttr("axis", 1), IntAttr("block_size", 2)});
  EXPECT_EQ(DoublesOf(back), (std::vector<double>{2, 2, 4, 8, -32, 56}));
  // A scale of the wrong blocked shape is refused.
  auto bad = RunOp("QuantizeLinear", 21, {x, Floats({2, 1}, {1, 1})},
                   {IntAttr("axis", 1), IntAttr("block_size", 2)});
  EXPECT_FALSE(bad.ok());
}

TEST(ChangedOps, QuantizeLinearOutputDtypeAndWideIntegers) {
  const Tensor x = Floats({2}, {3.0f, 20.0f});
  const Tensor scale = Floats({}, {1.0f});
  const Tensor y = RunOne("QuantizeLinear", 21, {x, scale},
                          {IntAttr("output_dtype", static_cast<int64_t>(DataType::kUint4))});
  ASSERT_EQ(y.type(), DataType::kUint4);
  EXPECT_EQ(BytesOf(y), (std::vector<uint8_t>{0xF3}));
  const Tensor big = Floats({2}, {40000.5f, -40000.0f});
  const Tensor zero16 = Tensor::FromVector(DataType::kInt16, {}, std::vector<int16_t>{1});
  const Tensor y16 = RunOne("QuantizeLinear", 21, {big, scale, zero16});
  EXPECT_EQ(DoublesOf(y16), (std::vector<double>{32767, -32768}));
  // output_dtype must agree with the zero point.
  auto bad = RunOp("QuantizeLinear", 21, {x, scale, zero16},
                   {IntAttr("output_dtype", static_cast<int64_t>(DataType::kInt8))});
  EXPECT_FALSE(bad.ok());
}

// DequantizeLinear-19 writes the scale's type; 23 adds output_dtype; 25 int2/uint2.
TEST(ChangedOps, DequantizeLinearOutputTypes) {
  Tensor half_scale(DataType::kFloat16, {});
  half_scale.data<uint16_t>()[0] = FloatToHalfBits(0.5f);
  const Tensor x = Tensor::FromVector(DataType::kInt8, {3}, std::vector<int8_t>{-3, 0, 5});
  const Tensor h = RunOne("DequantizeLinear", 19, {x, half_scale});
  ASSERT_EQ(h.type(), DataType::kFloat16);
  EXPECT_EQ(DoublesOf(h), (std::vector<double>{-1.5, 0, 2.5}));
  const Tensor b = RunOne("DequantizeLinear", 23, {x, Floats({}, {0.5f})},
                          {IntAttr("output_dtype", static_cast<int64_t>(DataType::kBfloat16))});
  ASSERT_EQ(b.type(), DataType::kBfloat16);
  EXPECT_EQ(DoublesOf(b), (std::vector<double>{-1.5, 0, 2.5}));
  const Tensor u2 = Raw(DataType::kUint2, {4}, {0x2D});  // 1, 3, 2, 0
  const Tensor zero = Raw(DataType::kUint2, {}, {0x01});
  const Tensor y = RunOne("DequantizeLinear", 25, {u2, Floats({}, {0.5f}), zero});
  EXPECT_EQ(DoublesOf(y), (std::vector<double>{0, 1, 0.5, -0.5}));
  // float4e2m1 in: codes 4 (2.0) and 0xF (-6.0).
  const Tensor f4 = Raw(DataType::kFloat4E2M1, {2}, {0xF4});
  EXPECT_EQ(DoublesOf(RunOne("DequantizeLinear", 23, {f4, Floats({}, {2.0f})})),
            (std::vector<double>{4, -12}));
}

Tensor Int64s(const Dims& dims, const std::vector<int64_t>& v) {
  return Tensor::FromVector(DataType::kInt64, dims, v);
}

// Packed types move by bytes where the layout does not change, and are refused by name where
// elements would have to move one by one; the float8 types are one byte and move as such.
TEST(ChangedOps, DataMovementOnNarrowTypes) {
  const Tensor i4 = Raw(DataType::kInt4, {4}, {0x21, 0x43});  // 1, 2, 3, 4
  const Tensor r = RunOne("Reshape", 21, {i4, Int64s({2}, {2, 2})});
  EXPECT_EQ(r.type(), DataType::kInt4);
  EXPECT_EQ(r.dims(), (Dims{2, 2}));
  EXPECT_EQ(BytesOf(r), (std::vector<uint8_t>{0x21, 0x43}));
  EXPECT_EQ(BytesOf(RunOne("Identity", 21, {i4})), (std::vector<uint8_t>{0x21, 0x43}));
  const Tensor u = RunOne("Unsqueeze", 21, {i4, Int64s({1}, {0})});
  EXPECT_EQ(u.dims(), (Dims{1, 4}));
  EXPECT_EQ(BytesOf(RunOne("Flatten", 21, {r})), (std::vector<uint8_t>{0x21, 0x43}));
  auto transposed = RunOp("Transpose", 21, {r});
  ASSERT_FALSE(transposed.ok());
  EXPECT_NE(transposed.status().message().find("int4"), std::string::npos) << transposed.status();
  const Tensor f8 = Raw(DataType::kFloat8E5M2, {2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(BytesOf(RunOne("Transpose", 21, {f8})), (std::vector<uint8_t>{1, 3, 2, 4}));
  auto concat = RunOp("Concat", 21, {f8, f8}, {IntAttr("axis", 0)});
  ASSERT_TRUE(concat.ok()) << concat.status();
  EXPECT_EQ((*concat)[0].dims(), (Dims{4, 2}));
}

// Pad-19 wrap: the axis repeats as on a torus; Pad-18 axes pads only the axes listed.
TEST(ChangedOps, PadWrapAndAxes) {
  const Tensor x = Floats({1, 3}, {1, 2, 3});
  const Tensor wrapped =
      RunOne("Pad", 19, {x, Int64s({4}, {0, 2, 0, 1})}, {StringAttr("mode", "wrap")});
  EXPECT_EQ(DoublesOf(wrapped), (std::vector<double>{2, 3, 1, 2, 3, 1}));
  EXPECT_FALSE(RunOp("Pad", 18, {x, Int64s({4}, {0, 2, 0, 1})}, {StringAttr("mode", "wrap")}).ok());
  const Tensor y = Floats({2, 2}, {1, 2, 3, 4});
  const Tensor padded = RunOne("Pad", 18, {y, Int64s({2}, {1, 0}), Tensor(), Int64s({1}, {1})});
  EXPECT_EQ(padded.dims(), (Dims{2, 3}));
  EXPECT_EQ(DoublesOf(padded), (std::vector<double>{0, 1, 2, 0, 3, 4}));
}

TEST(ChangedOps, AveragePoolDilations) {
  const Tensor x = Floats({1, 1, 5}, {1, 2, 3, 4, 5});
  // Windows {0, 2}, {1, 3}, {2, 4}.
  const Tensor y =
      RunOne("AveragePool", 19, {x}, {IntsAttr("kernel_shape", {2}), IntsAttr("dilations", {2})});
  EXPECT_EQ(DoublesOf(y), (std::vector<double>{2, 3, 4}));
}

TEST(ChangedOps, SplitNumOutputsUneven) {
  NodeRun run;
  run.num_outputs = 3;
  auto out =
      RunNode("Split", 18, {Floats({7}, {0, 1, 2, 3, 4, 5, 6})}, {IntAttr("num_outputs", 3)}, run);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{3}));
  EXPECT_EQ((*out)[1].dims(), (Dims{3}));
  EXPECT_EQ(DoublesOf((*out)[2]), (std::vector<double>{6}));
}

TEST(ChangedOps, ReduceMaxMinOnBool) {
  const Tensor b = Tensor::FromVector(DataType::kBool, {2, 2}, std::vector<uint8_t>{1, 0, 0, 0});
  const Tensor max = RunOne("ReduceMax", 20, {b, Int64s({1}, {1})}, {IntAttr("keepdims", 0)});
  ASSERT_EQ(max.type(), DataType::kBool);
  EXPECT_EQ(DoublesOf(max), (std::vector<double>{1, 0}));
  const Tensor min = RunOne("ReduceMin", 20, {b});
  EXPECT_EQ(min.dims(), (Dims{1, 1}));
  EXPECT_EQ(DoublesOf(min), (std::vector<double>{0}));
  EXPECT_FALSE(RunOp("ReduceMax", 18, {b}).ok());
}

TEST(ChangedOps, EqualOnStrings) {
  const Tensor a(Dims{2}, std::vector<std::string>{"a", "b"});
  const Tensor c(Dims{1}, std::vector<std::string>{"a"});
  const Tensor y = RunOne("Equal", 19, {a, c});
  ASSERT_EQ(y.type(), DataType::kBool);
  EXPECT_EQ(DoublesOf(y), (std::vector<double>{1, 0}));
}

TEST(ChangedOps, ScatterElementsMaxMin) {
  const Tensor data = Floats({3}, {1, 5, 3});
  const Tensor indices = Int64s({2}, {0, 1});
  const Tensor updates = Floats({2}, {4, 2});
  EXPECT_EQ(DoublesOf(RunOne("ScatterElements", 18, {data, indices, updates},
                             {StringAttr("reduction", "max")})),
            (std::vector<double>{4, 5, 3}));
  EXPECT_EQ(DoublesOf(RunOne("ScatterElements", 18, {data, indices, updates},
                             {StringAttr("reduction", "min")})),
            (std::vector<double>{1, 2, 3}));
}

// Element-wise within 1e-5 (the DFT's twiddles are rounded: sin(pi) is not 0).
void ExpectNear(const Tensor& t, const std::vector<double>& expected) {
  const std::vector<double> got = DoublesOf(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << i;
}

// DFT of {1, 2, 3, 4}: 10, -2 + 2i, -2, -2 - 2i.
TEST(ChangedOps, DftAxisMovedToAnInput) {
  const std::vector<double> expected = {10, 0, -2, 2, -2, 0, -2, -2};
  const Tensor x20 = Floats({4, 1}, {1, 2, 3, 4});
  const Tensor y20 = RunOne("DFT", 20, {x20, Tensor(), Int64s({}, {0})});
  EXPECT_EQ(y20.dims(), (Dims{4, 2}));
  ExpectNear(y20, expected);
  // The default axis -2 is the same axis here.
  ExpectNear(RunOne("DFT", 20, {x20}), expected);
  const Tensor x17 = Floats({1, 4, 1}, {1, 2, 3, 4});
  ExpectNear(RunOne("DFT", 17, {x17}, {IntAttr("axis", 1)}), expected);
  EXPECT_FALSE(RunOp("DFT", 20, {x20, Tensor(), Int64s({}, {1})}).ok());  // the complex axis
}

// A 2x2x2 volume holding d*4 + h*2 + w, sampled with align_corners at its centre and corners
// (grid components are (x, y, z) = (w, h, d)).
TEST(ChangedOps, GridSampleVolumetricAndRenamedModes) {
  std::vector<float> volume(8);
  for (int i = 0; i < 8; ++i) volume[i] = static_cast<float>(i);
  const Tensor x = Floats({1, 1, 2, 2, 2}, volume);
  const Tensor grid = Floats({1, 1, 1, 3, 3}, {0, 0, 0, 1, -1, -1, -1, 1, 1});
  const Tensor y = RunOne("GridSample", 20, {x, grid},
                          {StringAttr("mode", "linear"), IntAttr("align_corners", 1)});
  EXPECT_EQ(y.dims(), (Dims{1, 1, 1, 1, 3}));
  EXPECT_EQ(DoublesOf(y), (std::vector<double>{3.5, 1, 6}));
  const Tensor near = RunOne("GridSample", 20, {x, Floats({1, 1, 1, 1, 3}, {1, 1, -1})},
                             {StringAttr("mode", "nearest"), IntAttr("align_corners", 1)});
  EXPECT_EQ(DoublesOf(near), (std::vector<double>{3}));
  const Tensor image = Floats({1, 1, 2, 2}, {0, 1, 2, 3});
  const Tensor point = Floats({1, 1, 1, 2}, {0, 0});
  EXPECT_EQ(DoublesOf(RunOne("GridSample", 20, {image, point}, {IntAttr("align_corners", 1)})),
            (std::vector<double>{1.5}));  // default mode linear
  EXPECT_FALSE(RunOp("GridSample", 20, {image, point}, {StringAttr("mode", "bilinear")}).ok());
  EXPECT_FALSE(RunOp("GridSample", 16, {image, point}, {StringAttr("mode", "linear")}).ok());
}

// Linear downscaling by 0.5 with antialias: the tent doubles to half-width 2. Output 0 sits at
// x = 0.5: taps -1..2 with tent weights 0.25, 0.75, 0.75, 0.25 (sum 2), tap -1 reading the
// edge element; output 1 at x = 2.5: taps 1..4, tap 4 reading element 3. With exclude_outside
// the outside taps drop out: 0.75, 0.75, 0.25 over 1.75.
TEST(ChangedOps, ResizeLinearAntialias) {
  const Tensor x = Floats({1, 1, 1, 4}, {0, 4, 8, 12});
  const Tensor scales = Floats({4}, {1, 1, 1, 0.5f});
  const Tensor y = RunOne("Resize", 18, {x, Tensor(), scales},
                          {StringAttr("mode", "linear"), IntAttr("antialias", 1)});
  ExpectNear(y, {2.5, 9.5});
  const Tensor excluded = RunOne(
      "Resize", 18, {x, Tensor(), scales},
      {StringAttr("mode", "linear"), IntAttr("antialias", 1), IntAttr("exclude_outside", 1)});
  ExpectNear(excluded, {20.0 / 7, 64.0 / 7});
  const Tensor plain = RunOne("Resize", 18, {x, Tensor(), scales}, {StringAttr("mode", "linear")});
  EXPECT_EQ(DoublesOf(plain), (std::vector<double>{2, 10}));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
