// Tests of the misc kernel group (AddMiscKernels): Resize/Upsample, Einsum, Det, the
// quantization ops, GridSample, RoiAlign and the random generators. Each test runs one kernel
// on a one-node graph through KernelContext; expected values come from the ONNX operator
// documentation's examples or from a naive implementation written here.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/cpu/resize_bilinear.h"
#include "exec/kernel.h"
#include "exec/thread_pool.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/status_macros.h"
#include "onnx/defs/attr_proto_util.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec {
namespace {

using math_testing::Int64s;
using math_testing::Values;
using onnx::MakeAttribute;

const KernelDef* FindMiscKernel(const std::string& op, int opset) {
  static const std::vector<KernelDef>* table = [] {
    auto* t = new std::vector<KernelDef>();
    AddMiscKernels(*t);
    return t;
  }();
  for (const KernelDef& k : *table) {
    if (k.op_type == op && k.since_version <= opset && opset <= k.until_version) return &k;
  }
  return nullptr;
}

// Runs `op` at `opset` on `inputs` (nullptr: omitted) and returns its outputs.
absl::StatusOr<std::vector<Tensor>> RunOp(const std::string& op, int opset,
                                          const std::vector<const Tensor*>& inputs,
                                          const std::vector<onnx::AttributeProto>& attributes = {},
                                          int num_outputs = 1) {
  const KernelDef* def = FindMiscKernel(op, opset);
  if (def == nullptr) return absl::NotFoundError(op + " has no kernel");
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(inputs[i] ? graph.CreateValue("in" + std::to_string(i)) : nullptr);
  }
  std::vector<std::string> output_names;
  for (int i = 0; i < num_outputs; ++i) output_names.push_back("out" + std::to_string(i));
  Node* node = graph.AddNode(op, values, output_names, "node");
  for (const onnx::AttributeProto& a : attributes) node->SetAttribute(a);
  static ThreadPool pool(3);
  KernelContext ctx = KernelContext::For(*node, opset);
  ctx.inputs = inputs;
  ctx.outputs.resize(num_outputs);
  ctx.pool = &pool;
  OVFIX_RETURN_IF_ERROR(def->fn(ctx));
  return ctx.outputs;
}

Tensor Floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  return Tensor::FromVector(DataType::kFloat, std::move(dims), v);
}
Tensor Doubles(std::vector<int64_t> dims, const std::vector<double>& v) {
  return Tensor::FromVector(DataType::kDouble, std::move(dims), v);
}
Tensor Uint8s(std::vector<int64_t> dims, const std::vector<uint8_t>& v) {
  return Tensor::FromVector(DataType::kUint8, std::move(dims), v);
}

void ExpectTensorNear(const Tensor& t, const std::vector<int64_t>& dims,
                      const std::vector<double>& expected, double tolerance = 1e-5) {
  ASSERT_EQ(t.dims(), dims);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    EXPECT_NEAR(t.GetAsDouble(i), expected[i], tolerance * std::max(1.0, std::fabs(expected[i])))
        << "at element " << i;
  }
}

// --- Resize / Upsample -----------------------------------------------------------------------

// Resize (opset 13) of x by scales, with the mode and coordinate transformation given, checked
// element by element against values worked out from the ONNX documentation.
void ExpectScaled(const Tensor& x, const std::vector<float>& scales, const std::string& mode,
                  const std::string& coordinates, const std::vector<int64_t>& dims,
                  const std::vector<double>& expected) {
  const Tensor scale_tensor = Floats({static_cast<int64_t>(scales.size())}, scales);
  std::vector<onnx::AttributeProto> attributes = {MakeAttribute("mode", mode)};
  if (!coordinates.empty()) {
    attributes.push_back(MakeAttribute("coordinate_transformation_mode", coordinates));
  }
  auto y = RunOp("Resize", 13, {&x, nullptr, &scale_tensor}, attributes);
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], dims, expected);
}

TEST(ResizeTest, UpsampleScalesNearest) {
  ExpectScaled(Floats({1, 1, 2, 2}, {1, 2, 3, 4}), {1, 1, 2, 3}, "nearest", "", {1, 1, 4, 6},
               {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

TEST(ResizeTest, DownsampleScalesNearest) {
  // No mode attribute: nearest is the default.
  const Tensor x = Floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor scales = Floats({4}, {1, 1, 0.6f, 0.6f});
  auto y = RunOp("Resize", 13, {&x, nullptr, &scales});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 1, 2}, {1, 3});
}

TEST(ResizeTest, UpsampleScalesLinear) {
  ExpectScaled(Floats({1, 1, 2, 2}, {1, 2, 3, 4}), {1, 1, 2, 2}, "linear", "", {1, 1, 4, 4},
               {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
}

TEST(ResizeTest, LinearAlignCorners) {
  const double t = 1.0 / 3, u = 2.0 / 3;
  ExpectScaled(
      Floats({1, 1, 2, 2}, {1, 2, 3, 4}), {1, 1, 2, 2}, "linear", "align_corners", {1, 1, 4, 4},
      {1, 1 + t, 1 + u, 2, 1 + u, 2, 2 + t, 2 + u, 2 + t, 2 + u, 3, 3 + t, 3, 3 + t, 3 + u, 4});
}

TEST(ResizeTest, DownsampleLinear) {
  const Tensor x = Floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  ExpectScaled(x, {1, 1, 0.6f, 0.6f}, "linear", "", {1, 1, 1, 2}, {2.6666665, 4.3333331});
  // align_corners uses scale * size (2.4), not the rounded size, as the reference does.
  ExpectScaled(x, {1, 1, 0.6f, 0.6f}, "linear", "align_corners", {1, 1, 1, 2}, {1, 3.142857});
}

// ParallelForEach calls every item exactly once, with any pool (or none) and item count; the
// items of one call may run on several threads at once.
TEST(ThreadPoolTest, ParallelForEachCallsEveryItemOnce) {
  ThreadPool one(1), two(2), three(3);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &one, &two, &three}) {
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> calls(n);
      for (auto& c : calls) c = 0;
      ParallelForEach(pool, n, [&](int64_t i) { ++calls[i]; });
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(calls[i].load(), 1)
            << "item " << i << " of " << n << ", pool of " << (pool != nullptr ? pool->size() : 0);
      }
    }
  }
}

// The float bilinear path (16 outputs at a time where the CPU has AVX-512) against its formula
// written out here in float: bit for bit, with widths that leave a partial vector, up and
// down, half_pixel and asymmetric coordinates, several planes.
TEST(ResizeTest, BilinearFloatMatchesFormulaBitForBit) {
  struct Case {
    int64_t planes, in_h, in_w, out_h, out_w;
    bool half_pixel;
  };
  const std::vector<Case> cases = {{3, 5, 7, 10, 14, true},
                                   {2, 9, 21, 18, 42, true},
                                   {1, 12, 40, 5, 17, true},
                                   {2, 6, 19, 13, 37, false},
                                   {1, 3, 64, 6, 128, true}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (const Case& c : cases) {
    std::vector<float> in(c.planes * c.in_h * c.in_w);
    for (float& v : in) v = uniform(rng);
    BilinearShape shape;
    shape.planes = c.planes;
    shape.in_height = c.in_h;
    shape.in_width = c.in_w;
    shape.out_height = c.out_h;
    shape.out_width = c.out_w;
    shape.height_scale = static_cast<float>(c.out_h) / static_cast<float>(c.in_h);
    shape.width_scale = static_cast<float>(c.out_w) / static_cast<float>(c.in_w);
    std::vector<float> out(c.planes * c.out_h * c.out_w, -1.0f);
    ThreadPool pool(2);
    ResizeBilinearFloat(
        in.data(), out.data(), shape,
        c.half_pixel ? BilinearCoordinates::kHalfPixel : BilinearCoordinates::kAsymmetric, &pool);
    // Input position, weight of the first tap (d2) and of the second (d1) along one axis.
    struct Tap {
      int64_t first, second;
      float d1, d2;
    };
    auto tap = [&](int64_t j, float scale, int64_t in_size) {
      const float x = static_cast<float>(j);
      float original = c.half_pixel ? (x + 0.5f) / scale - 0.5f : x / scale;
      original = std::min(std::max(original, 0.0f), static_cast<float>(in_size - 1));
      Tap t;
      t.first = std::min(static_cast<int64_t>(original), in_size - 1);
      t.second = std::min(t.first + 1, in_size - 1);
      const bool same = t.first == t.second;
      t.d1 = same ? 0.5f : std::fabs(original - static_cast<float>(t.first));
      t.d2 = same ? 0.5f : std::fabs(original - static_cast<float>(t.second));
      return t;
    };
    for (int64_t p = 0; p < c.planes; ++p) {
      const float* image = in.data() + p * c.in_h * c.in_w;
      for (int64_t y = 0; y < c.out_h; ++y) {
        const Tap ty = tap(y, shape.height_scale, c.in_h);
        for (int64_t x = 0; x < c.out_w; ++x) {
          const Tap tx = tap(x, shape.width_scale, c.in_w);
          const float* r1 = image + ty.first * c.in_w;
          const float* r2 = image + ty.second * c.in_w;
          volatile float t11 = (tx.d2 * ty.d2) * r1[tx.first];
          volatile float t21 = (tx.d1 * ty.d2) * r1[tx.second];
          volatile float t12 = (tx.d2 * ty.d1) * r2[tx.first];
          volatile float t22 = (tx.d1 * ty.d1) * r2[tx.second];
          const float expected = ((t11 + t21) + t12) + t22;
          const int64_t at = (p * c.out_h + y) * c.out_w + x;
          ASSERT_EQ(out[at], expected) << "case " << c.in_w << "->" << c.out_w << " at " << at;
        }
      }
    }
  }
}

TEST(ResizeTest, SizesNearestWithModes) {
  const Tensor x = Floats({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor sizes = Int64s({4}, {1, 1, 7, 8});
  auto y = RunOp("Resize", 13, {&x, nullptr, nullptr, &sizes});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].dims(), (std::vector<int64_t>{1, 1, 7, 8}));
  const std::vector<double> v = Values((*y)[0]);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[4], 2);
  EXPECT_EQ(v[4 * 8], 3);
  EXPECT_EQ(v[3 * 8 + 7], 2);
  // asymmetric + round_prefer_ceil: x / 2 rounds half up.
  const Tensor sizes2 = Int64s({2}, {1, 4});
  const Tensor row = Floats({1, 2}, {10, 20});
  y = RunOp("Resize", 13, {&row, nullptr, nullptr, &sizes2},
            {MakeAttribute("coordinate_transformation_mode", std::string("asymmetric")),
             MakeAttribute("nearest_mode", std::string("round_prefer_ceil"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 4}, {10, 20, 20, 20});
  y = RunOp("Resize", 13, {&row, nullptr, nullptr, &sizes2},
            {MakeAttribute("coordinate_transformation_mode", std::string("asymmetric")),
             MakeAttribute("nearest_mode", std::string("floor"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 4}, {10, 10, 20, 20});
}

TEST(ResizeTest, CubicKeepsConstantsAndIsIdentityAtScaleOne) {
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[i] = static_cast<float>(i);
  const Tensor x = Floats({1, 1, 4, 4}, ramp);
  const Tensor one = Floats({4}, {1, 1, 1, 1});
  auto y = RunOp("Resize", 13, {&x, nullptr, &one}, {MakeAttribute("mode", std::string("cubic"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 4, 4}, Values(x));
  const Tensor constant = Floats({1, 1, 3, 3}, std::vector<float>(9, 5.0f));
  const Tensor sizes = Int64s({4}, {1, 1, 7, 5});
  for (int exclude : {0, 1}) {
    y = RunOp("Resize", 13, {&constant, nullptr, nullptr, &sizes},
              {MakeAttribute("mode", std::string("cubic")),
               MakeAttribute("exclude_outside", int64_t{exclude})});
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectTensorNear((*y)[0], {1, 1, 7, 5}, std::vector<double>(35, 5.0));
  }
}

TEST(ResizeTest, CubicMatchesKeysKernel) {
  // Upsampling [0, 1, 2, 3] by 2 with half_pixel: output 2 maps to 0.75, between 0 and 1.
  const Tensor x = Floats({4}, {0, 10, 0, 0});
  const Tensor scales = Floats({1}, {2});
  auto y =
      RunOp("Resize", 13, {&x, nullptr, &scales}, {MakeAttribute("mode", std::string("cubic"))});
  ASSERT_TRUE(y.ok()) << y.status();
  const auto keys = [](double d) {
    const double a = -0.75;
    d = std::fabs(d);
    return d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  };
  EXPECT_NEAR((*y)[0].GetAsDouble(2), 10 * keys(0.25), 1e-5);
}

TEST(ResizeTest, TfCropAndResizeExtrapolates) {
  const Tensor x = Floats({1, 4}, {1, 2, 3, 4});
  const Tensor roi = Floats({4}, {0, 0.5f, 1, 1.5f});
  const Tensor sizes = Int64s({2}, {1, 3});
  auto y =
      RunOp("Resize", 13, {&x, &roi, nullptr, &sizes},
            {MakeAttribute("mode", std::string("linear")),
             MakeAttribute("coordinate_transformation_mode", std::string("tf_crop_and_resize")),
             MakeAttribute("extrapolation_value", 10.0f)});
  ASSERT_TRUE(y.ok()) << y.status();
  // Coordinates 1.5, 3.0, 4.5: the last is outside.
  ExpectTensorNear((*y)[0], {1, 3}, {2.5, 4, 10});
}

TEST(ResizeTest, IntegerNearestAndLinear) {
  const Tensor x = Uint8s({1, 2}, {0, 255});
  const Tensor scales = Floats({2}, {1, 2});
  auto y = RunOp("Resize", 13, {&x, nullptr, &scales});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kUint8);
  ExpectTensorNear((*y)[0], {1, 4}, {0, 0, 255, 255});
  y = RunOp("Resize", 13, {&x, nullptr, &scales}, {MakeAttribute("mode", std::string("linear"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 4}, {0, 64, 191, 255});
}

TEST(ResizeTest, LegacyForms) {
  const Tensor x = Floats({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor scales = Floats({4}, {1, 1, 2, 3});
  const std::vector<double> expected = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                        3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  auto y = RunOp("Upsample", 9, {&x, &scales});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 4, 6}, expected);
  y = RunOp("Upsample", 7, {&x}, {MakeAttribute("scales", std::vector<float>{1, 1, 2, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 4, 6}, expected);
  y = RunOp("Resize", 10, {&x, &scales});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 4, 6}, expected);
  // Resize-10 linear is asymmetric: the last column repeats the edge.
  const Tensor two = Floats({4}, {1, 1, 1, 2});
  y = RunOp("Resize", 10, {&x, &two}, {MakeAttribute("mode", std::string("linear"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 2, 4}, {1, 1.5, 2, 2, 3, 3.5, 4, 4});
}

TEST(ResizeTest, Opset18Axes) {
  const Tensor x = Floats({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor sizes = Int64s({2}, {4, 4});
  auto y = RunOp("Resize", 18, {&x, nullptr, nullptr, &sizes},
                 {MakeAttribute("axes", std::vector<int64_t>{2, -1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].dims(), (std::vector<int64_t>{1, 1, 4, 4}));
  const Tensor wide = Int64s({2}, {8, 3});
  y = RunOp("Resize", 18, {&x, nullptr, nullptr, &wide},
            {MakeAttribute("axes", std::vector<int64_t>{2, 3}),
             MakeAttribute("keep_aspect_ratio_policy", std::string("not_larger"))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].dims(), (std::vector<int64_t>{1, 1, 3, 3}));
}

TEST(ResizeTest, EmptyAndBadInputs) {
  const Tensor x = Floats({1, 0, 2}, {});
  const Tensor scales = Floats({3}, {1, 1, 2});
  auto y = RunOp("Resize", 13, {&x, nullptr, &scales});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].dims(), (std::vector<int64_t>{1, 0, 4}));

  const Tensor x2 = Floats({2, 2}, {1, 2, 3, 4});
  const Tensor short_scales = Floats({1}, {2});
  const Tensor sizes = Int64s({2}, {4, 4});
  const Tensor negative = Int64s({2}, {-1, 4});
  const Tensor zero_scale = Floats({2}, {0, 1});
  const Tensor empty_x = Floats({0, 2}, {});
  const Tensor two = Floats({2}, {2, 2});
  const Tensor roi_bad = Floats({3}, {0, 0, 1});
  EXPECT_FALSE(RunOp("Resize", 13, {&x2, nullptr, &short_scales}).ok());
  EXPECT_FALSE(RunOp("Resize", 13, {&x2, nullptr, &two, &sizes}).ok());
  EXPECT_FALSE(RunOp("Resize", 13, {&x2}).ok());
  EXPECT_FALSE(RunOp("Resize", 13, {&x2, nullptr, nullptr, &negative}).ok());
  EXPECT_FALSE(RunOp("Resize", 13, {&x2, nullptr, &zero_scale}).ok());
  EXPECT_FALSE(RunOp("Resize", 13, {&empty_x, nullptr, nullptr, &sizes}).ok());
  EXPECT_FALSE(RunOp("Resize", 13, {&x2, &roi_bad, &two}).ok());
  EXPECT_FALSE(
      RunOp("Resize", 13, {&x2, nullptr, &two}, {MakeAttribute("mode", std::string("x"))}).ok());
  EXPECT_FALSE(RunOp("Upsample", 9, {&x2}).ok());
}

// --- Einsum ----------------------------------------------------------------------------------

// A naive einsum over explicit single-letter equations ("ij,jk->ik"), for comparison.
std::vector<double> NaiveEinsum(const std::string& equation, const std::vector<Tensor>& inputs,
                                std::vector<int64_t>* out_dims) {
  const size_t arrow = equation.find("->");
  std::vector<std::string> terms;
  std::string lhs = equation.substr(0, arrow), output = equation.substr(arrow + 2);
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t a = 0; a < terms[i].size(); ++a) sizes[terms[i][a]] = inputs[i].dim(a);
  }
  std::vector<char> letters;
  for (const auto& [c, n] : sizes) letters.push_back(c);
  out_dims->clear();
  for (char c : output) out_dims->push_back(sizes[c]);
  std::vector<double> out(Tensor::NumElements(*out_dims), 0.0);
  std::map<char, int64_t> index;
  for (char c : letters) index[c] = 0;
  for (const auto& [c, n] : sizes) {
    if (n == 0) return out;  // nothing to sum: zeros
  }
  for (;;) {
    double product = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t offset = 0;
      for (size_t a = 0; a < terms[i].size(); ++a) {
        offset = offset * inputs[i].dim(a) + index[terms[i][a]];
      }
      product *= inputs[i].GetAsDouble(offset);
    }
    int64_t offset = 0;
    for (char c : output) offset = offset * sizes[c] + index[c];
    if (!out.empty()) out[offset] += product;
    int k = static_cast<int>(letters.size()) - 1;
    for (; k >= 0; --k) {
      if (++index[letters[k]] < sizes[letters[k]]) break;
      index[letters[k]] = 0;
    }
    if (k < 0) break;
  }
  return out;
}

Tensor RandomDoubles(std::vector<int64_t> dims, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(Tensor::NumElements(dims));
  for (double& x : v) x = d(rng);
  return Doubles(std::move(dims), v);
}

TEST(EinsumTest, MatchesNaiveEinsum) {
  struct Case {
    std::string equation;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"ij->ji", {{3, 4}}},
      {"ij->i", {{3, 4}}},
      {"ij->", {{3, 4}}},
      {"i,i->", {{5}, {5}}},
      {"i,j->ij", {{3}, {4}}},
      {"ii->i", {{4, 4}}},
      {"ii->", {{4, 4}}},
      {"bii->bi", {{2, 3, 3}}},
      {"iji->j", {{3, 2, 3}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"abcd,cdbe->ae", {{2, 3, 4, 2}, {4, 2, 3, 3}}},
      {"bhqd,bhkd->bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}},
      {"ij,ij->ij", {{3, 4}, {3, 4}}},
      {"ij,kj->", {{3, 4}, {2, 4}}},
      {"ik,k->i", {{3, 0}, {0}}},
      {"ij,jk->ik", {{0, 4}, {4, 5}}},
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    std::vector<Tensor> inputs;
    for (const auto& shape : c.shapes) inputs.push_back(RandomDoubles(shape, rng));
    std::vector<const Tensor*> pointers;
    for (const Tensor& t : inputs) pointers.push_back(&t);
    std::vector<int64_t> dims;
    const std::vector<double> expected = NaiveEinsum(c.equation, inputs, &dims);
    auto y = RunOp("Einsum", 12, pointers, {MakeAttribute("equation", c.equation)});
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectTensorNear((*y)[0], dims, expected, 1e-9);
    // The same in float goes through the float GEMM.
    std::vector<Tensor> floats;
    for (const Tensor& t : inputs) {
      std::vector<float> v(t.numel());
      for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.GetAsDouble(i));
      floats.push_back(Floats(t.dims(), v));
    }
    pointers.clear();
    for (const Tensor& t : floats) pointers.push_back(&t);
    y = RunOp("Einsum", 12, pointers, {MakeAttribute("equation", c.equation)});
    ASSERT_TRUE(y.ok()) << y.status();
    ExpectTensorNear((*y)[0], dims, expected, 1e-4);
  }
}

TEST(EinsumTest, ImplicitOutputAndSpaces) {
  std::mt19937 rng(3);
  const Tensor a = RandomDoubles({3, 4}, rng), b = RandomDoubles({4, 5}, rng);
  std::vector<int64_t> dims;
  const std::vector<double> expected = NaiveEinsum("ij,jk->ik", {a, b}, &dims);
  auto y = RunOp("Einsum", 12, {&a, &b}, {MakeAttribute("equation", std::string("ij, jk"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], dims, expected, 1e-9);
  // Implicit output sorts labels: "ba" -> "ab" is a transpose.
  y = RunOp("Einsum", 12, {&a}, {MakeAttribute("equation", std::string("ba"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {4, 3}, NaiveEinsum("ba->ab", {a}, &dims), 1e-9);
  // "ii" is the trace.
  const Tensor square = RandomDoubles({3, 3}, rng);
  y = RunOp("Einsum", 12, {&square}, {MakeAttribute("equation", std::string("ii"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {}, NaiveEinsum("ii->", {square}, &dims), 1e-9);
}

TEST(EinsumTest, EllipsisBroadcasts) {
  std::mt19937 rng(5);
  // [2,1,3,4] x [5,4,2]: batch dims [2,1] and [5] broadcast to [2,5].
  const Tensor a = RandomDoubles({2, 1, 3, 4}, rng), b = RandomDoubles({5, 4, 2}, rng);
  auto y =
      RunOp("Einsum", 12, {&a, &b}, {MakeAttribute("equation", std::string("...ij,...jk->...ik"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].dims(), (std::vector<int64_t>{2, 5, 3, 2}));
  for (int64_t p = 0; p < 2; ++p) {
    for (int64_t q = 0; q < 5; ++q) {
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t k = 0; k < 2; ++k) {
          double sum = 0;
          for (int64_t j = 0; j < 4; ++j) {
            sum += a.GetAsDouble((p * 3 + i) * 4 + j) * b.GetAsDouble((q * 4 + j) * 2 + k);
          }
          EXPECT_NEAR((*y)[0].GetAsDouble(((p * 5 + q) * 3 + i) * 2 + k), sum, 1e-9);
        }
      }
    }
  }
  // Batch diagonal as in the conformance test.
  const Tensor c = RandomDoubles({3, 5, 5}, rng);
  y = RunOp("Einsum", 12, {&c}, {MakeAttribute("equation", std::string("...ii ->...i"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].dims(), (std::vector<int64_t>{3, 5}));
  EXPECT_DOUBLE_EQ((*y)[0].GetAsDouble(7), c.GetAsDouble(1 * 25 + 2 * 5 + 2));
  // Implicit output with an ellipsis keeps the broadcast dims first.
  y = RunOp("Einsum", 12, {&c}, {MakeAttribute("equation", std::string("...ij"))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].dims(), (std::vector<int64_t>{3, 5, 5}));
}

TEST(EinsumTest, IntegerTypes) {
  const Tensor a = Int64s({2, 2}, {1, 2, 3, 4});
  auto y = RunOp("Einsum", 12, {&a, &a}, {MakeAttribute("equation", std::string("ij,jk->ik"))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kInt64);
  ExpectTensorNear((*y)[0], {2, 2}, {7, 10, 15, 22});
}

TEST(EinsumTest, RejectsBadEquations) {
  const Tensor a = Floats({2, 3}, std::vector<float>(6, 1));
  const Tensor b = Floats({4, 3}, std::vector<float>(12, 1));
  for (const std::string& eq : {"ij,jk->ik", "ijk->i", "ij", "i.j->i", "ij->k", "ij->ii",
                                "ij,ij,ij->", "i1->i", "....ij->"}) {
    SCOPED_TRACE(eq);
    std::vector<const Tensor*> inputs = {&a, &b};
    if (eq == "ijk->i" || eq == "ij" || eq == "i.j->i" || eq == "ij->k" || eq == "ij->ii" ||
        eq == "i1->i" || eq == "....ij->") {
      inputs = {&a};
      if (eq == "ij") inputs = {&a, &b};  // one term, two inputs
    }
    EXPECT_FALSE(RunOp("Einsum", 12, inputs, {MakeAttribute("equation", eq)}).ok());
  }
  const Tensor square = Floats({2, 3}, std::vector<float>(6, 1));
  EXPECT_FALSE(
      RunOp("Einsum", 12, {&square}, {MakeAttribute("equation", std::string("ii->i"))}).ok());
}

// --- Det -------------------------------------------------------------------------------------

TEST(DetTest, SmallMatrices) {
  const Tensor x = Floats({3, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 3, 1, 2, 2, 4});
  auto y = RunOp("Det", 11, {&x});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {3}, {-2, 6, 0});
  const Tensor m = Doubles({3, 3}, {0, 2, 1, 3, 1, 4, 5, 2, 0});
  y = RunOp("Det", 11, {&m});
  ASSERT_TRUE(y.ok()) << y.status();
  // 0*(0-8) - 2*(0-20) + 1*(6-5) = 41
  ExpectTensorNear((*y)[0], {}, {41});
  const Tensor bad = Floats({2, 3}, std::vector<float>(6, 0));
  EXPECT_FALSE(RunOp("Det", 11, {&bad}).ok());
}

// --- Quantization ----------------------------------------------------------------------------

TEST(QuantizeTest, QuantizeAndDequantize) {
  const Tensor x = Floats({6}, {0, 2, 3, 1000, -254, -1000});
  const Tensor scale = Floats({}, {2});
  const Tensor zero = Uint8s({}, {128});
  auto y = RunOp("QuantizeLinear", 13, {&x, &scale, &zero});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kUint8);
  ExpectTensorNear((*y)[0], {6}, {128, 129, 130, 255, 1, 0});  // 1.5 rounds to even 2
  y = RunOp("DequantizeLinear", 13, {&(*y)[0], &scale, &zero});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {6}, {0, 2, 4, 254, -254, -256});
  // Per-axis.
  const Tensor x2 = Floats({1, 2, 2}, {1, 2, 3, 4});
  const Tensor scales = Floats({2}, {1, 2});
  const Tensor zeros = Tensor::FromVector<int8_t>(DataType::kInt8, {2}, {0, -1});
  y = RunOp("QuantizeLinear", 13, {&x2, &scales, &zeros});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kInt8);
  ExpectTensorNear((*y)[0], {1, 2, 2}, {1, 2, 1, 1});
  EXPECT_FALSE(RunOp("QuantizeLinear", 10, {&x2, &scales, &zeros}).ok());
  const Tensor scales3 = Floats({3}, {1, 2, 3});
  EXPECT_FALSE(RunOp("QuantizeLinear", 13, {&x2, &scales3}).ok());
}

TEST(QuantizeTest, DynamicQuantizeLinear) {
  const Tensor x = Floats({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f});
  auto y = RunOp("DynamicQuantizeLinear", 11, {&x}, {}, 3);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_NEAR((*y)[1].GetAsDouble(0), 0.0196078438, 1e-7);
  EXPECT_EQ((*y)[2].GetAsDouble(0), 153);
  ExpectTensorNear((*y)[0], {6}, {153, 255, 0, 26, 221, 179});
  const Tensor zeros = Floats({2}, {0, 0});
  y = RunOp("DynamicQuantizeLinear", 11, {&zeros}, {}, 3);
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {2}, {0, 0});
}

TEST(QuantizeTest, MatMulInteger) {
  // The ONNX documentation's example.
  const Tensor a = Uint8s({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  const Tensor b = Uint8s({3, 2}, {1, 4, 2, 5, 3, 6});
  const Tensor a_zero = Uint8s({}, {12});
  const Tensor b_zero = Uint8s({}, {0});
  auto y = RunOp("MatMulInteger", 10, {&a, &b, &a_zero, &b_zero});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kInt32);
  ExpectTensorNear((*y)[0], {4, 2}, {-38, -83, -44, -98, -50, -113, -56, -128});
  // Batch broadcasting and a per-row zero point.
  const Tensor a3 = Uint8s({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor rows = Uint8s({1}, {1});
  y = RunOp("MatMulInteger", 10, {&a3, &b, &rows});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear(
      (*y)[0], {2, 1, 2},
      {0 * 1 + 1 * 2 + 2 * 3, 0 * 4 + 1 * 5 + 2 * 6, 3 * 1 + 4 * 2 + 5 * 3, 3 * 4 + 4 * 5 + 5 * 6});
  const Tensor wrong = Uint8s({2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(RunOp("MatMulInteger", 10, {&a, &wrong}).ok());
}

TEST(QuantizeTest, QLinearMatMul) {
  // The ONNX documentation's 2-D example.
  const Tensor a = Uint8s({2, 4}, {208, 236, 0, 238, 3, 214, 255, 29});
  const Tensor a_scale = Floats({}, {0.0066f});
  const Tensor a_zero = Uint8s({}, {113});
  const Tensor b = Uint8s({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247});
  const Tensor b_scale = Floats({}, {0.00705f});
  const Tensor b_zero = Uint8s({}, {114});
  const Tensor y_scale = Floats({}, {0.0107f});
  const Tensor y_zero = Uint8s({}, {118});
  auto y =
      RunOp("QLinearMatMul", 10, {&a, &a_scale, &a_zero, &b, &b_scale, &b_zero, &y_scale, &y_zero});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {2, 3}, {168, 115, 255, 1, 66, 151});
}

TEST(QuantizeTest, QLinearConvMatchesFloatConvolution) {
  // 1x1x3x3 input, 1x1x2x2 kernel, pads 1, stride 2.
  const Tensor x = Uint8s({1, 1, 3, 3}, {10, 20, 30, 40, 50, 60, 70, 80, 90});
  const Tensor w = Uint8s({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor x_scale = Floats({}, {0.5f});
  const Tensor x_zero = Uint8s({}, {10});
  const Tensor w_scale = Floats({1}, {1.0f});
  const Tensor w_zero = Uint8s({1}, {1});
  const Tensor y_scale = Floats({}, {1.0f});
  const Tensor y_zero = Uint8s({}, {5});
  auto y =
      RunOp("QLinearConv", 10, {&x, &x_scale, &x_zero, &w, &w_scale, &w_zero, &y_scale, &y_zero},
            {MakeAttribute("pads", std::vector<int64_t>{1, 1, 1, 1}),
             MakeAttribute("strides", std::vector<int64_t>{2, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  // Real x = (x - 10) * 0.5; real w = w - 1 = {0, 1, 2, 3}.
  // out(0,0) reads only x(0,0) with w(1,1)=3: 0 * 3 = 0 -> 5.
  // out(0,1) reads x(0,1), x(0,2) with w(1,0)=2, w(1,1)=3: 5*2 + 10*3 = 40 -> 45.
  // out(1,0) reads x(1,0), x(2,0) with w(0,1)=1, w(1,1)=3: 15*1 + 30*3 = 105 -> 110.
  // out(1,1): 20*0 + 25*1 + 35*2 + 40*3 = 215 -> 220.
  ExpectTensorNear((*y)[0], {1, 1, 2, 2}, {5, 45, 110, 220});
}

// --- GridSample / RoiAlign -------------------------------------------------------------------

TEST(GridSampleTest, BilinearZerosPadding) {
  std::vector<float> image(16);
  for (int i = 0; i < 16; ++i) image[i] = static_cast<float>(i);
  const Tensor x = Floats({1, 1, 4, 4}, image);
  const std::vector<float> coords = {-1, -0.6f, -0.2f, 0.2f, 0.6f, 1};
  std::vector<float> grid;
  for (float gy : coords) {
    for (float gx : coords) {
      grid.push_back(gx);
      grid.push_back(gy);
    }
  }
  const Tensor g = Floats({1, 6, 6, 2}, grid);
  auto y = RunOp("GridSample", 16, {&x, &g});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 6, 6},
                   {0,   0.15, 0.55, 0.95, 1.35, 0.75, 0.6, 1.5,  2.3,  3.1,  3.9,  2.1,
                    2.2, 4.7,  5.5,  6.3,  7.1,  3.7,  3.8, 7.9,  8.7,  9.5,  10.3, 5.3,
                    5.4, 11.1, 11.9, 12.7, 13.5, 6.9,  3.0, 6.15, 6.55, 6.95, 7.35, 3.75},
                   1e-4);
  // Border padding clamps: far outside reads the corner.
  const Tensor far = Floats({1, 1, 1, 2}, {-5, -5});
  y = RunOp("GridSample", 16, {&x, &far}, {MakeAttribute("padding_mode", std::string("border"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 1, 1}, {0});
  y = RunOp("GridSample", 16, {&x, &far}, {MakeAttribute("mode", std::string("nearest"))});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {1, 1, 1, 1}, {0});
  const Tensor nan = Floats({1, 1, 1, 2}, {NAN, 1e30f});
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    EXPECT_TRUE(
        RunOp("GridSample", 16, {&x, &nan}, {MakeAttribute("mode", std::string(mode))}).ok());
  }
  EXPECT_FALSE(RunOp("GridSample", 16, {&x, &x}).ok());
}

TEST(RoiAlignTest, AverageOfConstantImage) {
  const Tensor x = Floats({1, 2, 5, 5}, std::vector<float>(50, 3.0f));
  const Tensor rois = Floats({2, 4}, {0, 0, 4, 4, 1, 1, 3, 2});
  const Tensor batch = Int64s({2}, {0, 0});
  auto y = RunOp(
      "RoiAlign", 16, {&x, &rois, &batch},
      {MakeAttribute("output_height", int64_t{2}), MakeAttribute("output_width", int64_t{3})});
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorNear((*y)[0], {2, 2, 2, 3}, std::vector<double>(24, 3.0));
  const Tensor bad_batch = Int64s({2}, {0, 1});
  EXPECT_FALSE(RunOp("RoiAlign", 16, {&x, &rois, &bad_batch}).ok());
}

// --- Random ----------------------------------------------------------------------------------

TEST(RandomTest, ShapesTypesAndRanges) {
  auto y = RunOp("RandomUniform", 1, {},
                 {MakeAttribute("shape", std::vector<int64_t>{2, 3}), MakeAttribute("low", 2.0f),
                  MakeAttribute("high", 3.0f), MakeAttribute("dtype", int64_t{11})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kDouble);
  EXPECT_EQ((*y)[0].dims(), (std::vector<int64_t>{2, 3}));
  for (double v : Values((*y)[0])) {
    EXPECT_GE(v, 2.0);
    EXPECT_LE(v, 3.0);
  }
  const Tensor like = Floats({4}, {0, 0, 0, 0});
  y = RunOp("RandomNormalLike", 1, {&like}, {MakeAttribute("dtype", int64_t{10})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kFloat16);
  const Tensor p = Floats({5}, {0, 1, 0, 1, 1});
  y = RunOp("Bernoulli", 15, {&p},
            {MakeAttribute("dtype", int64_t{9}), MakeAttribute("seed", 1.0f)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].type(), DataType::kBool);
  ExpectTensorNear((*y)[0], {5}, {0, 1, 0, 1, 1});
  EXPECT_FALSE(
      RunOp("RandomUniform", 1, {}, {MakeAttribute("shape", std::vector<int64_t>{-1})}).ok());
}

// --- Bad inputs: errors, never crashes ---------------------------------------------------------

TEST(MiscKernelsTest, BadInputsGiveErrors) {
  const Tensor image = Floats({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor nan_scales = Floats({4}, {1, 1, NAN, 2});
  const Tensor float_sizes = Floats({4}, {1, 1, 4, 4});
  const Tensor huge_sizes = Int64s({4}, {1, 1, int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_FALSE(RunOp("Resize", 13, {&image, nullptr, &nan_scales}).ok());
  EXPECT_FALSE(RunOp("Resize", 13, {&image, nullptr, nullptr, &float_sizes}).ok());
  EXPECT_FALSE(RunOp("Resize", 13, {&image, nullptr, nullptr, &huge_sizes}).ok());
  const Tensor nan_roi = Floats({8}, {NAN, 0, 0, 0, 1, 1, 1, 1e30f});
  const Tensor sizes = Int64s({4}, {1, 1, 3, 3});
  EXPECT_TRUE(
      RunOp("Resize", 13, {&image, &nan_roi, nullptr, &sizes},
            {MakeAttribute("mode", std::string("cubic")),
             MakeAttribute("coordinate_transformation_mode", std::string("tf_crop_and_resize"))})
          .ok());

  const Tensor wide = Floats({1000000, 1}, std::vector<float>(1000000, 1));
  const Tensor tall = Floats({1, 1000000}, std::vector<float>(1000000, 1));
  EXPECT_FALSE(
      RunOp("Einsum", 12, {&wide, &tall}, {MakeAttribute("equation", std::string("...,...->..."))})
          .ok());

  const Tensor grid = Floats({2, 1, 1, 2}, {0, 0, 0, 0});
  EXPECT_FALSE(RunOp("GridSample", 16, {&image, &grid}).ok());
  EXPECT_FALSE(
      RunOp("GridSample", 16, {&image, &grid}, {MakeAttribute("mode", std::string("area"))}).ok());

  const Tensor nan_boxes = Floats({1, 4}, {NAN, 0, 1e30f, 1});
  const Tensor batch = Int64s({1}, {0});
  EXPECT_FALSE(RunOp("RoiAlign", 16, {&image, &nan_boxes, &batch}).ok());
  const Tensor boxes = Floats({1, 4}, {0, 0, 1, 1});
  const Tensor two_batches = Int64s({2}, {0, 0});
  EXPECT_FALSE(RunOp("RoiAlign", 16, {&image, &boxes, &two_batches}).ok());

  const Tensor x = Uint8s({1, 2, 3, 3}, std::vector<uint8_t>(18, 1));
  const Tensor w = Uint8s({2, 1, 2, 2}, std::vector<uint8_t>(8, 1));
  const Tensor scale = Floats({}, {1});
  const Tensor zero = Uint8s({}, {0});
  EXPECT_FALSE(RunOp("QLinearConv", 10, {&x, &scale, &zero, &w, &scale, &zero, &scale, &zero})
                   .ok());  // group 1 needs w with 2 input channels
  EXPECT_TRUE(RunOp("QLinearConv", 10, {&x, &scale, &zero, &w, &scale, &zero, &scale, &zero},
                    {MakeAttribute("group", int64_t{2})})
                  .ok());
  EXPECT_FALSE(RunOp("QLinearConv", 10, {&x, &scale, &zero, &w, &scale, &zero, &scale, &zero},
                     {MakeAttribute("group", int64_t{2}),
                      MakeAttribute("strides", std::vector<int64_t>{0, 1})})
                   .ok());
  EXPECT_FALSE(RunOp("QLinearMatMul", 10, {&x, &scale, &zero}).ok());
  const Tensor float_x = Floats({2}, {1, 2});
  EXPECT_FALSE(RunOp("DequantizeLinear", 13, {&float_x, &scale}).ok());
  EXPECT_FALSE(RunOp("Det", 11, {&zero}).ok());
  EXPECT_FALSE(RunOp("Bernoulli", 15, {&x}).ok());
  EXPECT_FALSE(RunOp("RandomNormal", 1, {}).ok());
}

}  // namespace
}  // namespace ovfix::exec
