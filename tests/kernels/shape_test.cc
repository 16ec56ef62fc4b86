// Shape and data-movement kernels run one node at a time through the kernel table, checked
// against the ONNX spec's examples and against naive coordinate loops, over several element
// types (the kernels move bytes, so float16, bool and string tensors must come out exact).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "exec/thread_pool.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/graph.h"
#include "ir/tensor_proto.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

onnx::AttributeProto TensorAttr(const std::string& name, const Tensor& t) {
  onnx::AttributeProto a = NamedAttr(name, onnx::AttributeProto::TENSOR);
  *a.mutable_t() = TensorToProto(t);
  return a;
}

// The single output of a run that must succeed.
Tensor Run1(const std::string& op, int opset, std::vector<Tensor> inputs,
            std::vector<onnx::AttributeProto> attributes = {}) {
  absl::StatusOr<std::vector<Tensor>> out = RunOp(op, opset, std::move(inputs), attributes);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

// A run that must fail with an InvalidArgument naming the node.
void ExpectError(const std::string& op, int opset, std::vector<Tensor> inputs,
                 std::vector<onnx::AttributeProto> attributes = {}, int num_outputs = 1) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunOp(op, opset, std::move(inputs), attributes, num_outputs);
  ASSERT_FALSE(out.ok()) << op << " should have failed";
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find(op + " 'n'"), std::string::npos) << out.status();
}

Tensor Ints(std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  return Tensor::FromVector(DataType::kInt64, std::move(dims), v);
}
Tensor Ints(const std::vector<int64_t>& v) { return Ints({static_cast<int64_t>(v.size())}, v); }
Tensor Int64Scalar(int64_t v) { return Ints({}, {v}); }
// 0, 1, 2, ... as float.
Tensor Iota(std::vector<int64_t> dims) {
  std::vector<float> v(Tensor::NumElements(dims));
  std::iota(v.begin(), v.end(), 0.0f);
  return FloatTensor(std::move(dims), v);
}
std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.GetAsDouble(i));
  return v;
}

void ExpectTensor(const Tensor& t, DataType type, const std::vector<int64_t>& dims,
                  const std::vector<double>& values) {
  EXPECT_EQ(t.type(), type);
  EXPECT_EQ(t.dims(), dims);
  EXPECT_EQ(Doubles(t), values);
}

// Same type, dims and bytes (or strings).
void ExpectSame(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.type(), b.type());
  ASSERT_EQ(a.dims(), b.dims());
  if (a.type() == DataType::kString) {
    EXPECT_EQ(a.strings(), b.strings());
  } else if (a.nbytes() > 0) {
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
  }
}

// The same values 0..n-1 held as several element types.
std::vector<Tensor> TypedIota(std::vector<int64_t> dims) {
  const int64_t n = Tensor::NumElements(dims);
  std::vector<Tensor> out;
  for (DataType type : {DataType::kFloat, DataType::kFloat16, DataType::kUint8, DataType::kBool,
                        DataType::kInt64, DataType::kDouble}) {
    Tensor t(type, dims);
    for (int64_t i = 0; i < n; ++i) {
      switch (type) {
        case DataType::kFloat:
          t.data<float>()[i] = i;
          break;
        case DataType::kFloat16:
          t.data<uint16_t>()[i] = FloatToHalfBits(i);
          break;
        case DataType::kUint8:
          t.data<uint8_t>()[i] = i % 251;
          break;
        case DataType::kBool:
          t.data<uint8_t>()[i] = i % 3 == 0;
          break;
        case DataType::kInt64:
          t.data<int64_t>()[i] = i * 1000003;
          break;
        default:
          t.data<double>()[i] = i + 0.5;
          break;
      }
    }
    out.push_back(std::move(t));
  }
  std::vector<std::string> strings(n);
  for (int64_t i = 0; i < n; ++i) strings[i] = "s" + std::to_string(i);
  out.push_back(Tensor(dims, strings));
  return out;
}

// Element `index` of `dst` taken from element `source` of `src`, whatever the type.
void CopyElement(const Tensor& src, int64_t source, Tensor& dst, int64_t index) {
  if (src.type() == DataType::kString) {
    dst.strings()[index] = src.strings()[source];
  } else {
    const size_t size = ElementSize(src.type());
    std::memcpy(static_cast<std::byte*>(dst.raw()) + index * size,
                static_cast<const std::byte*>(src.raw()) + source * size, size);
  }
}

std::vector<int64_t> Coordinates(int64_t index, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = index % dims[d];
    index /= dims[d];
  }
  return c;
}

int64_t Flat(const std::vector<int64_t>& coords, const std::vector<int64_t>& dims) {
  int64_t index = 0;
  for (size_t d = 0; d < dims.size(); ++d) index = index * dims[d] + coords[d];
  return index;
}

// out[i] = x[source(coords of i)], the naive way.
template <typename Fn>
Tensor NaiveGather(const Tensor& x, const std::vector<int64_t>& out_dims, Fn source) {
  Tensor out(x.type(), out_dims);
  for (int64_t i = 0; i < out.numel(); ++i) {
    CopyElement(x, Flat(source(Coordinates(i, out_dims)), x.dims()), out, i);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Reshape, Squeeze, Unsqueeze, Flatten, Shape, Size

TEST(ShapeOpsTest, ReshapeZeroAndInferredDims) {
  Tensor x = Iota({2, 3, 4});
  Tensor y = Run1("Reshape", 14, {x, Ints({0, -1})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(y.raw(), x.raw());  // a view, no copy
  EXPECT_EQ(Run1("Reshape", 14, {x, Ints({-1})}).dims(), (std::vector<int64_t>{24}));
  EXPECT_EQ(Run1("Reshape", 5, {x, Ints({4, 0, 2})}).dims(), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(Run1("Reshape", 1, {x}, {IntsAttr("shape", {6, -1})}).dims(),
            (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(Run1("Reshape", 14, {Iota({1}), Ints({0}, {})}).dims(), (std::vector<int64_t>{}));
}

TEST(ShapeOpsTest, ReshapeAllowZero) {
  Tensor empty = Iota({0, 3});
  EXPECT_EQ(Run1("Reshape", 14, {empty, Ints({3, 0})}, {IntAttr("allowzero", 1)}).dims(),
            (std::vector<int64_t>{3, 0}));
  // Without allowzero the 0 copies the input dim.
  EXPECT_EQ(Run1("Reshape", 14, {empty, Ints({0, 3})}).dims(), (std::vector<int64_t>{0, 3}));
  ExpectError("Reshape", 14, {Iota({2, 3}), Ints({3, 0})}, {IntAttr("allowzero", 1)});
  ExpectError("Reshape", 14, {empty, Ints({0, -1})}, {IntAttr("allowzero", 1)});
}

TEST(ShapeOpsTest, ReshapeErrors) {
  Tensor x = Iota({2, 3});
  ExpectError("Reshape", 14, {x, Ints({-1, -1})});
  ExpectError("Reshape", 14, {x, Ints({4, -1})});
  ExpectError("Reshape", 14, {x, Ints({7})});
  ExpectError("Reshape", 14, {x, Ints({-2, 3})});
  ExpectError("Reshape", 14, {x, Ints({1, 1, 0})});  // 0 past the input's rank
  ExpectError("Reshape", 14, {x, Ints({int64_t{1} << 62, 4, 0})}, {IntAttr("allowzero", 1)});
}

TEST(ShapeOpsTest, ReshapeStrings) {
  Tensor x({2, 2}, {"a", "b", "c", "d"});
  Tensor y = Run1("Reshape", 14, {x, Ints({4})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{4}));
  EXPECT_EQ(y.strings(), x.strings());
}

TEST(ShapeOpsTest, Squeeze) {
  Tensor x = Iota({1, 3, 1, 2});
  EXPECT_EQ(Run1("Squeeze", 13, {x}).dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Run1("Squeeze", 13, {x, Ints({-2})}).dims(), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(Run1("Squeeze", 11, {x}, {IntsAttr("axes", {0})}).dims(),
            (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(Run1("Squeeze", 13, {x}).raw(), x.raw());
  ExpectError("Squeeze", 13, {x, Ints({1})});
  ExpectError("Squeeze", 13, {x, Ints({4})});
  ExpectError("Squeeze", 13, {x, Ints({0, -4})});
}

TEST(ShapeOpsTest, Unsqueeze) {
  Tensor x = Iota({3, 4});
  EXPECT_EQ(Run1("Unsqueeze", 13, {x, Ints({2, 0})}).dims(), (std::vector<int64_t>{1, 3, 1, 4}));
  EXPECT_EQ(Run1("Unsqueeze", 13, {x, Ints({-1})}).dims(), (std::vector<int64_t>{3, 4, 1}));
  EXPECT_EQ(Run1("Unsqueeze", 11, {x}, {IntsAttr("axes", {1, 3})}).dims(),
            (std::vector<int64_t>{3, 1, 4, 1}));
  EXPECT_EQ(Run1("Unsqueeze", 13, {FloatTensor({}, {7}), Ints({0})}).dims(),
            (std::vector<int64_t>{1}));
  ExpectError("Unsqueeze", 13, {x, Ints({4})});
  ExpectError("Unsqueeze", 13, {x, Ints({1, 1})});
  ExpectError("Unsqueeze", 13, {x});
}

TEST(ShapeOpsTest, FlattenShapeSize) {
  Tensor x = Iota({2, 3, 4, 5});
  EXPECT_EQ(Run1("Flatten", 13, {x}).dims(), (std::vector<int64_t>{2, 60}));
  EXPECT_EQ(Run1("Flatten", 13, {x}, {IntAttr("axis", 0)}).dims(), (std::vector<int64_t>{1, 120}));
  EXPECT_EQ(Run1("Flatten", 13, {x}, {IntAttr("axis", -1)}).dims(), (std::vector<int64_t>{24, 5}));
  EXPECT_EQ(Run1("Flatten", 13, {x}, {IntAttr("axis", 4)}).dims(), (std::vector<int64_t>{120, 1}));
  ExpectError("Flatten", 13, {x}, {IntAttr("axis", 5)});

  ExpectTensor(Run1("Shape", 13, {x}), DataType::kInt64, {4}, {2, 3, 4, 5});
  ExpectTensor(Run1("Shape", 15, {x}, {IntAttr("start", 1), IntAttr("end", -1)}), DataType::kInt64,
               {2}, {3, 4});
  ExpectTensor(Run1("Shape", 15, {x}, {IntAttr("start", -10), IntAttr("end", 10)}),
               DataType::kInt64, {4}, {2, 3, 4, 5});
  ExpectTensor(Run1("Shape", 15, {x}, {IntAttr("start", 3), IntAttr("end", 1)}), DataType::kInt64,
               {0}, {});
  ExpectTensor(Run1("Size", 13, {x}), DataType::kInt64, {}, {120});
  ExpectTensor(Run1("Size", 13, {Iota({3, 0})}), DataType::kInt64, {}, {0});
}

// ---------------------------------------------------------------------------------------
// Transpose, Concat, Split, Tile, Expand

TEST(DataMovementTest, TransposeAllPermutationsAllTypes) {
  for (const Tensor& x : TypedIota({2, 3, 4, 5})) {
    std::vector<int64_t> perm = {0, 1, 2, 3};
    do {
      std::vector<int64_t> out_dims(4);
      for (int d = 0; d < 4; ++d) out_dims[d] = x.dim(perm[d]);
      Tensor expected = NaiveGather(x, out_dims, [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> in(4);
        for (int d = 0; d < 4; ++d) in[perm[d]] = c[d];
        return in;
      });
      ExpectSame(Run1("Transpose", 13, {x}, {IntsAttr("perm", perm)}), expected);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(DataMovementTest, TransposeLargeAndDegenerate) {
  // NCHW -> NHWC and back at a size where the tiled path runs on several threads.
  Tensor x = Iota({2, 37, 41, 43});
  Tensor nhwc = Run1("Transpose", 13, {x}, {IntsAttr("perm", {0, 2, 3, 1})});
  EXPECT_EQ(nhwc.dims(), (std::vector<int64_t>{2, 41, 43, 37}));
  ExpectSame(nhwc, NaiveGather(x, nhwc.dims(), [](const std::vector<int64_t>& c) {
               return std::vector<int64_t>{c[0], c[3], c[1], c[2]};
             }));
  ExpectSame(Run1("Transpose", 13, {nhwc}, {IntsAttr("perm", {0, 3, 1, 2})}), x);
  // Default perm reverses; unit dims moving alone is a view.
  EXPECT_EQ(Run1("Transpose", 13, {Iota({2, 3, 4})}).dims(), (std::vector<int64_t>{4, 3, 2}));
  Tensor unit = Iota({1, 5, 1, 6});
  Tensor moved = Run1("Transpose", 13, {unit}, {IntsAttr("perm", {2, 1, 0, 3})});
  EXPECT_EQ(moved.raw(), unit.raw());
  EXPECT_EQ(Run1("Transpose", 13, {Iota({0, 3})}).dims(), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(Run1("Transpose", 13, {FloatTensor({}, {1})}).dims(), (std::vector<int64_t>{}));
  ExpectError("Transpose", 13, {Iota({2, 3})}, {IntsAttr("perm", {0, 0})});
  ExpectError("Transpose", 13, {Iota({2, 3})}, {IntsAttr("perm", {0, 1, 2})});
}

TEST(DataMovementTest, Concat) {
  for (const Tensor& x : TypedIota({2, 3})) {
    const Tensor a = Run1("Slice", 13, {x, Ints({0}), Ints({1}), Ints({1})});  // [2, 1]
    Tensor y = Run1("Concat", 13, {x, a, x}, {IntAttr("axis", -1)});
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 7}));
    ExpectSame(y, NaiveGather(x, {2, 7}, [](const std::vector<int64_t>& c) {
                 const int64_t j = c[1] < 3 ? c[1] : c[1] == 3 ? 0 : c[1] - 4;
                 return std::vector<int64_t>{c[0], j};
               }));
  }
  ExpectTensor(Run1("Concat", 13, {Ints({}), Ints({5, 6}), Ints({0}, {})}, {IntAttr("axis", 0)}),
               DataType::kInt64, {2}, {5, 6});
  ExpectTensor(Run1("Concat", 1, {Iota({1, 1}), Iota({1, 2})}), DataType::kFloat, {1, 3},
               {0, 0, 1});  // opset 1 defaults to axis 1
  ExpectError("Concat", 13, {Iota({2, 3}), Iota({3, 3})}, {IntAttr("axis", 1)});
  ExpectError("Concat", 13, {Iota({2, 3}), Ints({2, 3}, {1, 2, 3, 4, 5, 6})}, {IntAttr("axis", 0)});
  ExpectError("Concat", 13, {Iota({2})}, {IntAttr("axis", 1)});
  ExpectError("Concat", 13, {Iota({2})});
}

// Concat of large blocks with few outer blocks (channels of one or two images): the copies are
// cut into pieces for the threads; each element still lands where the plain copy puts it.
TEST(DataMovementTest, ConcatLargeBlocksInPieces) {
  for (int64_t batch : {1, 2}) {
    const Tensor a = Iota({batch, 3, 300, 301});
    const Tensor b = Iota({batch, 2, 300, 301});
    const Tensor y = Run1("Concat", 13, {a, b, a}, {IntAttr("axis", 1)});
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{batch, 8, 300, 301}));
    const int64_t plane = 300 * 301;
    const float* out = y.data<float>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < 8; ++c) {
        // Channel c of image n comes from a (c < 3), b (c < 5) or a again.
        const int64_t channels = c < 3 || c >= 5 ? 3 : 2;
        const int64_t source_c = c < 3 ? c : c < 5 ? c - 3 : c - 5;
        for (int64_t i = 0; i < plane; i += 997) {
          const float expected = static_cast<float>((n * channels + source_c) * plane + i);
          ASSERT_EQ(out[(n * 8 + c) * plane + i], expected) << n << " " << c << " " << i;
        }
        ASSERT_EQ(out[(n * 8 + c) * plane + plane - 1],
                  static_cast<float>((n * channels + source_c) * plane + plane - 1));
      }
    }
  }
}

TEST(DataMovementTest, Split) {
  Tensor x = Iota({2, 6});
  auto out = RunOp("Split", 13, {x, Ints({1, 0, 5})}, {IntAttr("axis", 1)}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DataType::kFloat, {2, 1}, {0, 6});
  ExpectTensor((*out)[1], DataType::kFloat, {2, 0}, {});
  ExpectTensor((*out)[2], DataType::kFloat, {2, 5}, {1, 2, 3, 4, 5, 7, 8, 9, 10, 11});
  out = RunOp("Split", 11, {x}, {IntAttr("axis", -1), IntsAttr("split", {4, 2})}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[1], DataType::kFloat, {2, 2}, {4, 5, 10, 11});
  out = RunOp("Split", 13, {x}, {IntAttr("axis", 1)}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[2], DataType::kFloat, {2, 2}, {4, 5, 10, 11});
  out = RunOp("Split", 18, {Iota({5})}, {IntAttr("num_outputs", 2)}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DataType::kFloat, {3}, {0, 1, 2});
  ExpectTensor((*out)[1], DataType::kFloat, {2}, {3, 4});
  out = RunOp("Split", 13, {Tensor({4}, {"a", "b", "c", "d"})}, {}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].strings(), (std::vector<std::string>{"c", "d"}));
  ExpectError("Split", 13, {x}, {IntAttr("axis", 1)}, 4);
  ExpectError("Split", 13, {x, Ints({3, 4})}, {IntAttr("axis", 1)}, 2);
  ExpectError("Split", 13, {x, Ints({7, -1})}, {IntAttr("axis", 1)}, 2);
  ExpectError("Split", 13, {x, Ints({6})}, {IntAttr("axis", 1)}, 2);
}

TEST(DataMovementTest, TileAndExpand) {
  for (const Tensor& x : TypedIota({2, 1, 3})) {
    Tensor tiled = Run1("Tile", 13, {x, Ints({2, 3, 2})});
    ExpectSame(tiled, NaiveGather(x, {4, 3, 6}, [](const std::vector<int64_t>& c) {
                 return std::vector<int64_t>{c[0] % 2, 0, c[2] % 3};
               }));
    Tensor expanded = Run1("Expand", 13, {x, Ints({2, 1, 4, 1})});
    ExpectSame(expanded, NaiveGather(x, {2, 2, 4, 3}, [](const std::vector<int64_t>& c) {
                 return std::vector<int64_t>{c[1], 0, c[3]};
               }));
  }
  ExpectTensor(Run1("Tile", 13, {Iota({2}), Ints({0})}), DataType::kFloat, {0}, {});
  ExpectTensor(Run1("Expand", 13, {Iota({3}), Ints({0, 1})}), DataType::kFloat, {0, 3}, {});
  ExpectTensor(Run1("Expand", 13, {FloatTensor({}, {5}), Ints({2})}), DataType::kFloat, {2},
               {5, 5});
  Tensor same = Iota({2, 3});
  EXPECT_EQ(Run1("Expand", 13, {same, Ints({1, 3})}).raw(), same.raw());
  ExpectError("Tile", 13, {Iota({2}), Ints({1, 1})});
  ExpectError("Tile", 13, {Iota({2}), Ints({-1})});
  ExpectError("Tile", 13, {Iota({2}), Ints({int64_t{1} << 61})});
  ExpectError("Expand", 13, {Iota({3}), Ints({2})});
  ExpectError("Expand", 13, {Iota({3}), Ints({-1, 3})});
  ExpectError("Expand", 13, {Iota({1}), Ints({int64_t{1} << 50, 1 << 20})});
}

// ---------------------------------------------------------------------------------------
// Slice, Pad

TEST(DataMovementTest, SliceStepsAndClamping) {
  Tensor x = Iota({3, 10});
  // The spec's examples: negative steps and out-of-range starts/ends clamp.
  ExpectTensor(Run1("Slice", 13, {x, Ints({20, 2}), Ints({-100, 3}), Ints({1, 0}), Ints({-3, 1})}),
               DataType::kFloat, {1, 4}, {29, 26, 23, 20});
  ExpectTensor(Run1("Slice", 13, {x, Ints({1}), Ints({1000}), Ints({-1}), Ints({4})}),
               DataType::kFloat, {3, 3}, {1, 5, 9, 11, 15, 19, 21, 25, 29});
  ExpectTensor(Run1("Slice", 13, {x, Ints({-2, 8}), Ints({INT64_MAX, INT64_MAX})}),
               DataType::kFloat, {2, 2}, {18, 19, 28, 29});
  ExpectTensor(Run1("Slice", 13, {x, Ints({5}), Ints({5}), Ints({1})}), DataType::kFloat, {3, 0},
               {});
  ExpectTensor(Run1("Slice", 13, {x, Ints({9}), Ints({INT64_MIN}), Ints({1}), Ints({INT64_MIN})}),
               DataType::kFloat, {3, 1}, {9, 19, 29});
  ExpectTensor(Run1("Slice", 9, {x},
                    {IntsAttr("starts", {1}), IntsAttr("ends", {2}), IntsAttr("axes", {0})}),
               DataType::kFloat, {1, 10}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19});
  EXPECT_EQ(Run1("Slice", 13, {Iota({0, 4}), Ints({3}), Ints({0}), Ints({0}), Ints({-1})}).dims(),
            (std::vector<int64_t>{0, 4}));
  ExpectError("Slice", 13, {x, Ints({0}), Ints({1}), Ints({1}), Ints({0})});
  ExpectError("Slice", 13, {x, Ints({0}), Ints({1}), Ints({2})});
  ExpectError("Slice", 13, {x, Ints({0, 0}), Ints({1, 1}), Ints({1, -1})});
  ExpectError("Slice", 13, {x, Ints({0, 0}), Ints({1})});
}

TEST(DataMovementTest, SliceAllTypes) {
  for (const Tensor& x : TypedIota({4, 5})) {
    Tensor y = Run1("Slice", 13, {x, Ints({3, 1}), Ints({0, 5}), Ints({0, 1}), Ints({-2, 2})});
    ExpectSame(y, NaiveGather(x, {2, 2}, [](const std::vector<int64_t>& c) {
                 return std::vector<int64_t>{3 - 2 * c[0], 1 + 2 * c[1]};
               }));
  }
}

// Slices whose rows are contiguous runs of the input (along an outer axis, or every axis
// after one whole): copied run by run, long runs in pieces on several threads. Pad's filled
// outer rows take the same path.
TEST(DataMovementTest, SliceAndPadContiguousRuns) {
  for (const Tensor& x : TypedIota({2, 30, 70})) {
    for (int64_t axis = 0; axis < 3; ++axis) {
      std::vector<int64_t> out_dims = x.dims();
      out_dims[axis] = x.dim(axis) - 1;
      Tensor y = Run1("Slice", 13, {x, Ints({1}), Ints({x.dim(axis)}), Ints({axis})});
      ExpectSame(y, NaiveGather(x, out_dims, [axis](std::vector<int64_t> c) {
                   ++c[axis];
                   return c;
                 }));
    }
  }
  // torch.roll's halves of a [1, 56, 56, 96] activation (runs of 96 to 285k floats).
  const Tensor x = Iota({1, 56, 56, 96});
  for (int64_t axis = 1; axis < 4; ++axis) {
    for (const auto& [start, end] : {std::pair<int64_t, int64_t>{3, 56}, {0, 53}, {50, 53}}) {
      std::vector<int64_t> out_dims = x.dims();
      out_dims[axis] = end - start;
      Tensor y = Run1("Slice", 13, {x, Ints({start}), Ints({end}), Ints({axis})});
      ExpectSame(y, NaiveGather(x, out_dims, [axis, start](std::vector<int64_t> c) {
                   c[axis] += start;
                   return c;
                 }));
    }
  }
  // Zero rows in front of and after whole planes: each output row a run or the fill.
  Tensor padded = Run1("Pad", 13, {x, Ints({0, 2, 0, 0, 0, 1, 0, 0}), FloatTensor({}, {-1})});
  ASSERT_EQ(padded.dims(), (std::vector<int64_t>{1, 59, 56, 96}));
  const float* p = padded.data<float>();
  for (int64_t i = 0; i < padded.numel(); ++i) {
    const int64_t row = i / (56 * 96);
    const float want = row < 2 || row >= 58 ? -1.0f : static_cast<float>(i - 2 * 56 * 96);
    ASSERT_EQ(p[i], want) << i;
  }
  // Pads of 0 everywhere: the input as it is.
  ExpectSame(Run1("Pad", 13, {x, Ints({0, 0, 0, 0, 0, 0, 0, 0}), FloatTensor({}, {-1})}), x);
  ExpectSame(Run1("Pad", 13, {x, Ints({0, 0, 0, 0, 0, 0, 0, 0})}, {StringAttr("mode", "edge")}), x);
}

// Transposes that keep a last axis of 16 or more (attention's head split and merge): a copy
// per run of it, rows walked by an odometer on several threads; every element type.
TEST(DataMovementTest, TransposeKeepingTheLastAxisCopiesRuns) {
  struct Case {
    std::vector<int64_t> dims, perm;
  };
  for (const Case& c : {Case{{5, 7, 3, 2, 17}, {2, 0, 3, 1, 4}}, Case{{3, 4, 5, 20}, {0, 2, 1, 3}},
                        Case{{64, 49, 3, 3, 32}, {2, 0, 3, 1, 4}}}) {
    for (const Tensor& x : TypedIota(c.dims)) {
      if (x.numel() > 100000 && x.type() != DataType::kFloat) continue;
      const size_t rank = c.dims.size();
      std::vector<int64_t> out_dims(rank);
      for (size_t d = 0; d < rank; ++d) out_dims[d] = x.dim(c.perm[d]);
      Tensor expected = NaiveGather(x, out_dims, [&](const std::vector<int64_t>& o) {
        std::vector<int64_t> in(rank);
        for (size_t d = 0; d < rank; ++d) in[c.perm[d]] = o[d];
        return in;
      });
      ExpectSame(Run1("Transpose", 13, {x}, {IntsAttr("perm", c.perm)}), expected);
    }
  }
}

TEST(DataMovementTest, PadModes) {
  Tensor x = FloatTensor({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  // The spec's examples.
  ExpectTensor(Run1("Pad", 13, {x, Ints({0, 2, 0, 0}), FloatTensor({}, {0})}), DataType::kFloat,
               {3, 4}, {0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f});
  ExpectTensor(Run1("Pad", 13, {x, Ints({0, 2, 0, 0})}, {StringAttr("mode", "reflect")}),
               DataType::kFloat, {3, 4},
               {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f});
  ExpectTensor(Run1("Pad", 13, {x, Ints({0, 2, 0, 0})}, {StringAttr("mode", "edge")}),
               DataType::kFloat, {3, 4},
               {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f});
  // Reflect past a whole period, numpy-style; negative pads crop.
  ExpectTensor(Run1("Pad", 13, {Iota({3}), Ints({5, 3})}, {StringAttr("mode", "reflect")}),
               DataType::kFloat, {11}, {1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1});
  ExpectTensor(Run1("Pad", 13, {Iota({2, 3}), Ints({-1, 1, 0, -1}), FloatTensor({}, {9})}),
               DataType::kFloat, {1, 3}, {9, 3, 4});
  ExpectTensor(Run1("Pad", 2, {Iota({2})}, {IntsAttr("pads", {1, 1}), FloatAttr("value", 7)}),
               DataType::kFloat, {4}, {7, 0, 1, 7});
  ExpectTensor(Run1("Pad", 18, {Iota({2, 2}), Ints({1, 0}), Tensor(), Ints({-1})}),
               DataType::kFloat, {2, 3}, {0, 0, 1, 0, 2, 3});
  ExpectError("Pad", 13, {Iota({2}), Ints({-2, -1})});
  ExpectError("Pad", 13, {Iota({2}), Ints({1})});
  ExpectError("Pad", 13, {Iota({0}), Ints({1, 1})}, {StringAttr("mode", "edge")});
  ExpectError("Pad", 13, {Iota({2}), Ints({1, 1})}, {StringAttr("mode", "wrapped")});
  ExpectError("Pad", 13, {Iota({2}), Ints({INT64_MAX, INT64_MAX})});
}

TEST(DataMovementTest, PadAllTypes) {
  for (const Tensor& x : TypedIota({2, 3})) {
    Tensor y = Run1("Pad", 13, {x, Ints({1, 2, 0, 1})}, {StringAttr("mode", "reflect")});
    ExpectSame(y, NaiveGather(x, {3, 6}, [](const std::vector<int64_t>& c) {
                 const int64_t j = c[1] - 2;
                 return std::vector<int64_t>{c[0] == 0 ? 1 : c[0] - 1, j < 0 ? -j : j > 2 ? 1 : j};
               }));
  }
  Tensor s = Run1("Pad", 13, {Tensor({1}, {"x"}), Ints({1, 0}), Tensor({}, {"pad"})});
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"pad", "x"}));
  Tensor h = Run1("Pad", 11, {Tensor(DataType::kFloat16, {1}), Ints({0, 1})}, {});
  EXPECT_EQ(h.type(), DataType::kFloat16);
  EXPECT_EQ(h.dims(), (std::vector<int64_t>{2}));
}

// ---------------------------------------------------------------------------------------
// Gather, GatherElements, GatherND, ScatterND, ScatterElements, Scatter

TEST(GatherScatterTest, Gather) {
  Tensor data = FloatTensor({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  ExpectTensor(Run1("Gather", 13, {data, Ints({2, 2}, {0, 1, 1, 2})}), DataType::kFloat, {2, 2, 2},
               {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f});
  ExpectTensor(Run1("Gather", 13, {data, Ints({-1, 0})}, {IntAttr("axis", 1)}), DataType::kFloat,
               {3, 2}, {1.2f, 1.0f, 3.4f, 2.3f, 5.7f, 4.5f});
  ExpectTensor(Run1("Gather", 13, {Ints({4, 5, 6}), Int64Scalar(-1)}), DataType::kInt64, {}, {6});
  Tensor int32_indices = Tensor::FromVector<int32_t>(DataType::kInt32, {1}, {2});
  ExpectTensor(Run1("Gather", 13, {data, int32_indices}), DataType::kFloat, {1, 2}, {4.5f, 5.7f});
  for (const Tensor& x : TypedIota({3, 4})) {
    ExpectSame(Run1("Gather", 13, {x, Ints({3, -4})}, {IntAttr("axis", -1)}),
               NaiveGather(x, {3, 2}, [](const std::vector<int64_t>& c) {
                 return std::vector<int64_t>{c[0], c[1] == 0 ? 3 : 0};
               }));
  }
  EXPECT_EQ(Run1("Gather", 13, {data, Ints({0}, {})}).dims(), (std::vector<int64_t>{0, 2}));
  ExpectError("Gather", 13, {data, Ints({3})});
  ExpectError("Gather", 13, {data, Ints({-4})});
  ExpectError("Gather", 13, {data, Ints({0})}, {IntAttr("axis", 2)});
  ExpectError("Gather", 13, {Iota({0, 2}), Ints({0})});
  ExpectError("Gather", 13, {data, FloatTensor({1}, {0})});
}

TEST(GatherScatterTest, GatherElements) {
  Tensor data = FloatTensor({2, 2}, {1, 2, 3, 4});
  ExpectTensor(Run1("GatherElements", 13, {data, Ints({2, 2}, {0, 0, 1, 0})}, {IntAttr("axis", 1)}),
               DataType::kFloat, {2, 2}, {1, 1, 4, 3});
  Tensor data3 = Iota({3, 3});
  ExpectTensor(Run1("GatherElements", 13, {data3, Ints({2, 3}, {-1, -2, 0, -2, 0, 0})}),
               DataType::kFloat, {2, 3}, {6, 4, 2, 3, 1, 2});
  ExpectError("GatherElements", 13, {data, Ints({1, 1}, {2})});
  ExpectError("GatherElements", 13, {data, Ints({3, 1}, {0, 0, 0})}, {IntAttr("axis", 1)});
  ExpectError("GatherElements", 13, {data, Ints({2}, {0, 0})});
}

TEST(GatherScatterTest, GatherND) {
  Tensor data = Ints({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  ExpectTensor(Run1("GatherND", 13, {data, Ints({2, 2}, {0, 1, 1, 0})}), DataType::kInt64, {2, 2},
               {2, 3, 4, 5});
  ExpectTensor(Run1("GatherND", 13, {data, Ints({2, 1, 1}, {1, 0})}), DataType::kInt64,
               {2, 1, 2, 2}, {4, 5, 6, 7, 0, 1, 2, 3});
  ExpectTensor(Run1("GatherND", 13, {data, Ints({2, 1}, {1, 0})}, {IntAttr("batch_dims", 1)}),
               DataType::kInt64, {2, 2}, {2, 3, 4, 5});
  ExpectTensor(Run1("GatherND", 13, {data, Ints({1, 3}, {-1, -1, -1})}), DataType::kInt64, {1},
               {7});
  ExpectError("GatherND", 13, {data, Ints({1, 3}, {0, 2, 0})});
  ExpectError("GatherND", 13, {data, Ints({1, 4}, {0, 0, 0, 0})});
  ExpectError("GatherND", 13, {data, Ints({3, 1}, {0, 0, 0})}, {IntAttr("batch_dims", 1)});
}

TEST(GatherScatterTest, ScatterND) {
  Tensor data = Iota({4, 2});
  Tensor updates = FloatTensor({2, 2}, {10, 11, 12, 13});
  ExpectTensor(Run1("ScatterND", 16, {data, Ints({2, 1}, {-1, 1}), updates}), DataType::kFloat,
               {4, 2}, {0, 1, 12, 13, 4, 5, 10, 11});
  ExpectTensor(Run1("ScatterND", 16, {data, Ints({2, 1}, {1, 1}), updates},
                    {StringAttr("reduction", "add")}),
               DataType::kFloat, {4, 2}, {0, 1, 24, 27, 4, 5, 6, 7});
  ExpectTensor(Run1("ScatterND", 16, {data, Ints({2, 1}, {1, 1}), updates},
                    {StringAttr("reduction", "mul")}),
               DataType::kFloat, {4, 2}, {0, 1, 240, 429, 4, 5, 6, 7});
  ExpectTensor(Run1("ScatterND", 18, {data, Ints({2, 2}, {0, 0, 3, 1}), FloatTensor({2}, {-1, -1})},
                    {StringAttr("reduction", "max")}),
               DataType::kFloat, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // float16 add rounds each result to half.
  Tensor half(DataType::kFloat16, {1});
  half.data<uint16_t>()[0] = FloatToHalfBits(2048);
  Tensor one(DataType::kFloat16, {1});
  one.data<uint16_t>()[0] = FloatToHalfBits(1);
  Tensor sum =
      Run1("ScatterND", 16, {half, Ints({1, 1}, {0}), one}, {StringAttr("reduction", "add")});
  EXPECT_EQ(HalfBitsToFloat(sum.data<uint16_t>()[0]), 2048.0f);  // 2049 is not a half
  Tensor strings =
      Run1("ScatterND", 16, {Tensor({2}, {"a", "b"}), Ints({1, 1}, {1}), Tensor({1}, {"z"})});
  EXPECT_EQ(strings.strings(), (std::vector<std::string>{"a", "z"}));
  ExpectError("ScatterND", 16, {data, Ints({1, 1}, {4}), FloatTensor({1, 2}, {0, 0})});
  ExpectError("ScatterND", 16, {data, Ints({1, 1}, {0}), FloatTensor({1, 3}, {0, 0, 0})});
  ExpectError("ScatterND", 16, {data, Ints({1, 1}, {0}), FloatTensor({1, 2}, {0, 0})},
              {StringAttr("reduction", "sub")});
  ExpectError("ScatterND", 16, {Tensor({1}, {"a"}), Ints({1, 1}, {0}), Tensor({1}, {"b"})},
              {StringAttr("reduction", "add")});
}

TEST(GatherScatterTest, ScatterElements) {
  Tensor data = FloatTensor({1, 5}, {1, 2, 3, 4, 5});
  Tensor indices = Ints({1, 2}, {1, 3});
  Tensor updates = FloatTensor({1, 2}, {1.1f, 2.1f});
  ExpectTensor(Run1("ScatterElements", 16, {data, indices, updates}, {IntAttr("axis", 1)}),
               DataType::kFloat, {1, 5}, {1, 1.1f, 3, 2.1f, 5});
  ExpectTensor(Run1("ScatterElements", 16, {data, Ints({1, 2}, {1, 1}), updates},
                    {IntAttr("axis", 1), StringAttr("reduction", "add")}),
               DataType::kFloat, {1, 5}, {1, 2 + 1.1f + 2.1f, 3, 4, 5});
  ExpectTensor(Run1("Scatter", 10, {data, Ints({1, 2}, {-1, -5}), updates}, {IntAttr("axis", 1)}),
               DataType::kFloat, {1, 5}, {2.1f, 2, 3, 4, 1.1f});
  Tensor data3 = Iota({3, 3});
  ExpectTensor(
      Run1("ScatterElements", 11,
           {data3, Ints({2, 3}, {1, 0, 2, 0, 2, 1}), FloatTensor({2, 3}, {1, 1, 1, 2, 2, 2})}),
      DataType::kFloat, {3, 3}, {2, 1, 2, 1, 4, 2, 6, 2, 1});
  ExpectError("ScatterElements", 16, {data, Ints({1, 2}, {1, 5}), updates}, {IntAttr("axis", 1)});
  ExpectError("ScatterElements", 16, {data, Ints({1, 2}, {1, 2}), FloatTensor({2}, {0, 0})},
              {IntAttr("axis", 1)});
  ExpectError("ScatterElements", 16, {data, Ints({2, 1}, {0, 0}), FloatTensor({2, 1}, {0, 0})},
              {IntAttr("axis", 1)});
}

// ---------------------------------------------------------------------------------------
// Generators and the rest

TEST(GeneratorsTest, ConstantOfShapeAndRange) {
  ExpectTensor(Run1("ConstantOfShape", 9, {Ints({2, 3})}), DataType::kFloat, {2, 3},
               {0, 0, 0, 0, 0, 0});
  ExpectTensor(Run1("ConstantOfShape", 9,
                    {
                        Ints({2}),
                    },
                    {TensorAttr("value", Ints({1}, {-7}))}),
               DataType::kInt64, {2}, {-7, -7});
  ExpectTensor(Run1("ConstantOfShape", 9, {Ints({0}, {})}, {TensorAttr("value", Iota({1}))}),
               DataType::kFloat, {}, {0});
  ExpectTensor(Run1("ConstantOfShape", 9, {Ints({0})}), DataType::kFloat, {0}, {});
  ExpectError("ConstantOfShape", 9, {Ints({-1})});
  ExpectError("ConstantOfShape", 9, {Ints({int64_t{1} << 40, 1 << 20})});
  ExpectError("ConstantOfShape", 9, {Ints({1})}, {TensorAttr("value", Iota({2}))});

  ExpectTensor(
      Run1("Range", 11, {FloatTensor({}, {1}), FloatTensor({}, {5}), FloatTensor({}, {2})}),
      DataType::kFloat, {2}, {1, 3});
  auto i32 = [](int32_t v) { return Tensor::FromVector<int32_t>(DataType::kInt32, {}, {v}); };
  ExpectTensor(Run1("Range", 11, {i32(10), i32(4), i32(-3)}), DataType::kInt32, {2}, {10, 7});
  ExpectTensor(Run1("Range", 11, {i32(10), i32(4), i32(3)}), DataType::kInt32, {0}, {});
  ExpectTensor(
      Run1("Range", 11, {Int64Scalar(INT64_MIN), Int64Scalar(INT64_MAX), Int64Scalar(INT64_MAX)}),
      DataType::kInt64, {3}, {double(INT64_MIN), -1, double(INT64_MAX - 1)});
  ExpectError("Range", 11, {i32(0), i32(4), i32(0)});
  ExpectError("Range", 11, {FloatTensor({}, {0}), FloatTensor({}, {1e30f}), FloatTensor({}, {1})});
  ExpectError("Range", 11, {i32(0), Int64Scalar(4), i32(1)});
}

TEST(GeneratorsTest, NonZeroAndOneHot) {
  ExpectTensor(Run1("NonZero", 13, {FloatTensor({2, 2}, {1, 0, -0.0f, 3})}), DataType::kInt64,
               {2, 2}, {0, 1, 0, 1});
  ExpectTensor(Run1("NonZero", 13, {FloatTensor({}, {3})}), DataType::kInt64, {1, 1}, {0});
  ExpectTensor(Run1("NonZero", 13, {Iota({0, 3})}), DataType::kInt64, {2, 0}, {});
  Tensor half(DataType::kFloat16, {3});
  half.data<uint16_t>()[1] = 0x8000;  // -0
  half.data<uint16_t>()[2] = 0x0001;  // the smallest subnormal
  ExpectTensor(Run1("NonZero", 13, {half}), DataType::kInt64, {1, 1}, {2});

  Tensor values = FloatTensor({2}, {0, 1});
  ExpectTensor(Run1("OneHot", 11, {Ints({3}, {0, -1, 5}), Int64Scalar(3), values}),
               DataType::kFloat, {3, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 0});
  ExpectTensor(
      Run1("OneHot", 11, {FloatTensor({2}, {1.7f, 0}), FloatTensor({}, {2}), Ints({-5, 5})},
           {IntAttr("axis", 0)}),
      DataType::kInt64, {2, 2}, {-5, 5, 5, -5});
  ExpectError("OneHot", 11, {Ints({1}), Int64Scalar(-2), values});
  ExpectError("OneHot", 11, {Ints({1}), Int64Scalar(2), values}, {IntAttr("axis", 2)});
  ExpectError("OneHot", 11, {Ints({1}), Int64Scalar(2), FloatTensor({3}, {0, 1, 2})});
}

TEST(GeneratorsTest, TriluAndEyeLike) {
  Tensor x = Iota({2, 3, 4});
  ExpectTensor(Run1("Trilu", 14, {x}), DataType::kFloat, {2, 3, 4},
               {0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11, 12, 13, 14, 15, 0, 17, 18, 19, 0, 0, 22, 23});
  ExpectTensor(Run1("Trilu", 14, {Iota({3, 3}), Int64Scalar(-1)}, {IntAttr("upper", 0)}),
               DataType::kFloat, {3, 3}, {0, 0, 0, 3, 0, 0, 6, 7, 0});
  ExpectTensor(Run1("Trilu", 14, {Iota({2, 2}), Int64Scalar(INT64_MAX)}, {IntAttr("upper", 0)}),
               DataType::kFloat, {2, 2}, {0, 1, 2, 3});
  ExpectTensor(Run1("Trilu", 14, {Iota({2, 2}), Int64Scalar(INT64_MIN)}), DataType::kFloat, {2, 2},
               {0, 1, 2, 3});
  Tensor s = Run1("Trilu", 14, {Tensor({2, 2}, {"a", "b", "c", "d"})});
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"a", "b", "", "d"}));
  ExpectError("Trilu", 14, {Iota({3})});

  ExpectTensor(Run1("EyeLike", 9, {Iota({3, 4})}, {IntAttr("k", 1)}), DataType::kFloat, {3, 4},
               {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  ExpectTensor(Run1("EyeLike", 9, {Iota({2, 2})}, {IntAttr("dtype", 7), IntAttr("k", -1)}),
               DataType::kInt64, {2, 2}, {0, 0, 1, 0});
  Tensor h = Run1("EyeLike", 9, {Tensor(DataType::kFloat16, {1, 1})});
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3c00);
  ExpectError("EyeLike", 9, {Iota({2})});
  ExpectError("EyeLike", 9, {Iota({2, 2})}, {IntAttr("dtype", 99)});
}

TEST(GeneratorsTest, Compress) {
  Tensor x = Iota({3, 2});
  auto cond = [](std::vector<uint8_t> v) {
    return Tensor::FromVector<uint8_t>(DataType::kBool, {static_cast<int64_t>(v.size())}, v);
  };
  ExpectTensor(Run1("Compress", 11, {x, cond({0, 1, 1})}, {IntAttr("axis", 0)}), DataType::kFloat,
               {2, 2}, {2, 3, 4, 5});
  ExpectTensor(Run1("Compress", 11, {x, cond({0, 1})}, {IntAttr("axis", -1)}), DataType::kFloat,
               {3, 1}, {1, 3, 5});
  ExpectTensor(Run1("Compress", 11, {x, cond({0, 1, 0, 0, 1})}), DataType::kFloat, {2}, {1, 4});
  ExpectTensor(Run1("Compress", 11, {x, cond({0, 0, 0, 0})}, {IntAttr("axis", 0)}),
               DataType::kFloat, {0, 2}, {});
  ExpectError("Compress", 11, {x, cond({0, 0, 0, 1})}, {IntAttr("axis", 0)});
}

TEST(GeneratorsTest, DepthToSpaceAndBack) {
  // The spec's DCR and CRD examples: [1, 8, 2, 3] with blocksize 2.
  Tensor x = Iota({1, 8, 2, 3});
  ExpectTensor(
      Run1("DepthToSpace", 13, {x}, {IntAttr("blocksize", 2)}), DataType::kFloat, {1, 2, 4, 6},
      {0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38, 3, 15, 4,  16, 5,  17, 27, 39, 28, 40, 29, 41,
       6, 18, 7, 19, 8, 20, 30, 42, 31, 43, 32, 44, 9, 21, 10, 22, 11, 23, 33, 45, 34, 46, 35, 47});
  ExpectTensor(Run1("DepthToSpace", 13, {x}, {IntAttr("blocksize", 2), StringAttr("mode", "CRD")}),
               DataType::kFloat, {1, 2, 4, 6},
               {0,  6,  1,  7,  2,  8,  12, 18, 13, 19, 14, 20, 3,  9,  4,  10,
                5,  11, 15, 21, 16, 22, 17, 23, 24, 30, 25, 31, 26, 32, 36, 42,
                37, 43, 38, 44, 27, 33, 28, 34, 29, 35, 39, 45, 40, 46, 41, 47});
  // SpaceToDepth undoes DCR DepthToSpace.
  for (const Tensor& t : TypedIota({2, 8, 3, 5})) {
    Tensor space = Run1("DepthToSpace", 13, {t}, {IntAttr("blocksize", 2)});
    ExpectSame(Run1("SpaceToDepth", 13, {space}, {IntAttr("blocksize", 2)}), t);
  }
  ExpectError("DepthToSpace", 13, {Iota({1, 6, 2, 2})}, {IntAttr("blocksize", 2)});
  ExpectError("DepthToSpace", 13, {Iota({1, 4, 2, 2})}, {IntAttr("blocksize", 0)});
  ExpectError("SpaceToDepth", 13, {Iota({1, 1, 3, 2})}, {IntAttr("blocksize", 2)});
  ExpectError("SpaceToDepth", 13, {Iota({1, 4, 2})}, {IntAttr("blocksize", 2)});
}

TEST(GeneratorsTest, ReverseSequence) {
  Tensor x = Iota({4, 4});
  // time_axis 0: column b reverses its first lens[b] rows.
  ExpectTensor(Run1("ReverseSequence", 10, {x, Ints({4, 3, 2, 1})}), DataType::kFloat, {4, 4},
               {12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15});
  ExpectTensor(Run1("ReverseSequence", 10, {x, Ints({1, 2, 3, 4})},
                    {IntAttr("time_axis", 1), IntAttr("batch_axis", 0)}),
               DataType::kFloat, {4, 4}, {0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12});
  ExpectError("ReverseSequence", 10, {x, Ints({5, 1, 1, 1})});
  ExpectError("ReverseSequence", 10, {x, Ints({1, 1})});
  ExpectError("ReverseSequence", 10, {x, Ints({1, 1, 1, 1})}, {IntAttr("time_axis", 1)});
}

TEST(GeneratorsTest, Unique) {
  Tensor x = FloatTensor({6}, {2, 1, 1, 3, 4, 3});
  auto out = RunOp("Unique", 11, {x}, {IntAttr("sorted", 0)}, 4);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DataType::kFloat, {4}, {2, 1, 3, 4});
  ExpectTensor((*out)[1], DataType::kInt64, {4}, {0, 1, 3, 4});
  ExpectTensor((*out)[2], DataType::kInt64, {6}, {0, 1, 1, 2, 3, 2});
  ExpectTensor((*out)[3], DataType::kInt64, {4}, {1, 2, 2, 1});
  out = RunOp("Unique", 11, {x}, {}, 4);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DataType::kFloat, {4}, {1, 2, 3, 4});
  ExpectTensor((*out)[1], DataType::kInt64, {4}, {1, 0, 3, 4});
  ExpectTensor((*out)[2], DataType::kInt64, {6}, {1, 0, 0, 2, 3, 2});
  ExpectTensor((*out)[3], DataType::kInt64, {4}, {2, 1, 2, 1});
  // Unique rows of [[1, 0, 0], [1, 0, 0], [2, 3, 4]].
  out = RunOp("Unique", 11, {FloatTensor({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4})},
              {IntAttr("axis", 0)}, 4);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DataType::kFloat, {2, 3}, {1, 0, 0, 2, 3, 4});
  ExpectTensor((*out)[1], DataType::kInt64, {2}, {0, 2});
  ExpectTensor((*out)[2], DataType::kInt64, {3}, {0, 0, 1});
  ExpectTensor((*out)[3], DataType::kInt64, {2}, {2, 1});
  // Unique columns, compared lexicographically down the column.
  out = RunOp("Unique", 11, {FloatTensor({2, 3}, {2, 1, 2, 0, 5, 0})}, {IntAttr("axis", -1)}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DataType::kFloat, {2, 2}, {1, 2, 5, 0});
  out = RunOp("Unique", 11, {Tensor({3}, {"b", "a", "b"})}, {}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].strings(), (std::vector<std::string>{"a", "b"}));
  out = RunOp("Unique", 11, {Iota({0})}, {}, 4);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
