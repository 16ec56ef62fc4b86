// The session graph's keep_channels_last (converter/session_nhwc.h): convolution chains run
// channels-last between one Transpose in and one out, and compute what the graphs as written
// compute bit for bit, on odd sizes: channel counts and maps that are not multiples of the
// GEMM tiles, batches of two, strides, dilations, asymmetric pads. What the pass must leave
// alone stays: a lone convolution, a convolution the Conv kernel computes another way (its sums
// in another order), a convolution that reads a BatchNormalization the session folds into it,
// an op that broadcasts an operand along another axis. Which path the Conv kernel takes depends on
// the GEMM tile (how many maps pad a tile): the counts below are worked out by hand for the AVX2
// kernel's 6x16 tile, which the tests select where the CPU has it.
#include "converter/session_nhwc.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/model_builder.h"
#include "converter/session_graph.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu_session.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "tests/support/session_graph_check.h"

namespace ovfix::converter {
namespace {

using B = bench::ModelBuilder;

using test_support::Avx2Kernel;
using test_support::OpCounts;

std::map<std::string, int> OptimizedCounts(const onnx::ModelProto& proto) {
  std::unique_ptr<Model> m =
      test_support::OptimizeExpectingSameOutputs(proto, 0, {-2, 2, 0, 1}).optimized;
  EXPECT_NE(m, nullptr);
  return m != nullptr ? OpCounts(*m) : std::map<std::string, int>{};
}

std::string Conv(B& b, const std::string& x, int64_t in, int64_t out, std::vector<int64_t> kernel,
                 std::vector<B::Attr> attrs = {}) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(in * kernel[0] * kernel[1]));
  std::vector<int64_t> dims = {out, in};
  dims.insert(dims.end(), kernel.begin(), kernel.end());
  attrs.push_back(B::Ints("kernel_shape", kernel));
  return b.Op("Conv", {x, b.Weight(dims, scale), b.Weight({out}, 0.1f)}, attrs);
}

// A ResNet bottleneck stage as PyTorch exports it (BatchNormalization folded): 1x1, 3x3 and
// 1x1 convolutions with Relus, a strided shortcut, the residual Add and Relu, then a second
// block on the identity, and the global average pool ending the network.
onnx::ModelProto Bottlenecks(int64_t batch, int64_t channels, int64_t mid, int64_t height,
                             int64_t width, uint32_t seed) {
  B b(17, seed);
  const int64_t out = channels * 2 + 5;
  const std::string x = b.Input("x", {batch, channels, height, width});
  auto block = [&](const std::string& in, int64_t in_channels, int64_t stride) {
    std::string y = b.Op("Relu", {Conv(b, in, in_channels, mid, {1, 1})});
    y = b.Op("Relu", {Conv(b, y, mid, mid, {3, 3},
                           {B::Ints("pads", {1, 1, 1, 1}), B::Ints("strides", {stride, stride})})});
    y = Conv(b, y, mid, out, {1, 1});
    std::string shortcut = in;
    if (stride != 1 || in_channels != out) {
      shortcut = Conv(b, in, in_channels, out, {1, 1}, {B::Ints("strides", {stride, stride})});
    }
    return b.Op("Relu", {b.Op("Add", {y, shortcut})});
  };
  std::string y = block(x, channels, 2);
  y = block(y, out, 1);
  b.Output(b.Op("GlobalAveragePool", {y}));
  return b.model();
}

TEST(SessionNhwc, BottlenecksRunChannelsLast) {
  Avx2Kernel avx2;
  struct Case {
    int64_t batch, channels, mid, height, width;
    int nhwc_convs, convs, transposes;
  };
  // The 3x3 convolutions (stride 2, then 1) go channels-last where the transposed product
  // pads less than the direct one: 16 maps at 7x7 (49 positions x 16 maps against 18 x 64),
  // 24 at 5x4 (20 x 32 against 24 x 32); 40 at 11x9: the stride-2 one not (99 x 48 against
  // 42 x 112), the stride-1 one by Winograd's F(2x2, 3x3) (channels-last too), so that the
  // region is entered by x and the strided 3x3's output and left by what that 3x3 reads.
  for (const Case& c : {Case{1, 16, 16, 14, 14, 7, 0, 1}, Case{2, 13, 24, 9, 7, 7, 0, 1},
                        Case{1, 40, 40, 21, 17, 6, 1, 3}}) {
    SCOPED_TRACE(testing::Message() << c.batch << "x" << c.channels << "x" << c.height << "x"
                                    << c.width << " mid " << c.mid);
    std::map<std::string, int> counts = OptimizedCounts(
        Bottlenecks(c.batch, c.channels, c.mid, c.height, c.width, static_cast<uint32_t>(c.width)));
    if (!avx2.selected()) continue;  // the counts are the AVX2 tile's
    EXPECT_EQ(counts["ovfix.fused.NhwcConv"], c.nhwc_convs);
    EXPECT_EQ(counts["Conv"], c.convs);
    EXPECT_EQ(counts["GlobalAveragePool"], 0);
    EXPECT_EQ(counts["ovfix.fused.NhwcGlobalAveragePool"], 1);
    EXPECT_EQ(counts["Transpose"], c.transposes);
    // Both residual Adds fold into the 1x1 convolution before them, and the Relu after each
    // is left to the session to fold into it too: no element-wise chain is left.
    EXPECT_EQ(counts["Add"], 0);
    EXPECT_EQ(counts["ovfix.fused.Elementwise"], 0);
  }
}

// Kernels of every geometry the channels-last convolution takes, in one chain: dilation,
// asymmetric and zero pads, 5x5 and 1x3 kernels, strides on one axis, a 1x1 kernel with a
// stride; a value read outside the chain (a graph output in the middle) goes back to NCHW.
// 16 and 32 maps fill the AVX2 tile's 16 columns, so the Conv kernel computes each of them
// channels-last (x^T W^T pads less than W x: 18 or 36 rows of maps against 16 or 32).
onnx::ModelProto Geometries(uint32_t seed) {
  B b(17, seed);
  const std::string x = b.Input("x", {2, 11, 19, 23});
  std::string y =
      Conv(b, x, 11, 16, {3, 3}, {B::Ints("dilations", {2, 2}), B::Ints("pads", {2, 2, 2, 2})});
  y = b.Op("Relu", {y});
  const std::string middle = Conv(b, y, 16, 32, {5, 5}, {B::Ints("pads", {0, 1, 2, 3})});
  b.Output(middle);
  y = b.Op("Sigmoid", {middle});
  y = Conv(b, y, 32, 16, {1, 3}, {B::Ints("pads", {0, 1, 0, 1}), B::Ints("strides", {1, 2})});
  y = Conv(b, y, 16, 33, {1, 1}, {B::Ints("strides", {2, 3})});
  y = Conv(b, y, 33, 16, {3, 3}, {B::Ints("strides", {2, 1})});
  b.Output(b.Op("Mul", {y, b.Fill({}, 0.5f)}));
  return b.model();
}

TEST(SessionNhwc, EveryGeometryAgreesWithTheGraphAsWritten) {
  Avx2Kernel avx2;
  std::map<std::string, int> counts = OptimizedCounts(Geometries(3));
  if (!avx2.selected()) GTEST_SKIP() << "the counts are the AVX2 tile's";
  EXPECT_EQ(counts["Conv"], 0);
  EXPECT_EQ(counts["ovfix.fused.NhwcConv"], 5);
  // In, the middle output back, the last output back.
  EXPECT_EQ(counts["Transpose"], 3);
}

// 1x1 convolutions deeper than a GEMM depth block (400 channels: two blocks of 200), over
// more positions than the transposed product takes (30x30: W * X, the bias once C holds both
// blocks) and fewer (15x15 after a stride).
TEST(SessionNhwc, DeepPointwiseProductsAddTheBiasLast) {
  B b(17, 6);
  const std::string x = b.Input("x", {1, 400, 30, 30});
  std::string y = b.Op("Relu", {Conv(b, x, 400, 48, {1, 1})});
  y = b.Op("Add", {Conv(b, y, 48, 400, {1, 1}), x});
  y = Conv(b, y, 400, 64, {1, 1}, {B::Ints("strides", {2, 2})});
  b.Output(Conv(b, y, 64, 400, {1, 1}));
  std::map<std::string, int> counts = OptimizedCounts(b.model());
  EXPECT_EQ(counts["ovfix.fused.NhwcConv"], 4);
}

// A residual that nothing reads after its convolution lends the convolution its buffer
// (exec/session.cc OverwrittenInput), which the 1x1 product in one depth block writes over it
// and the others decline: a 3x3 convolution (Winograd, which writes its product before adding
// the residual), a 1x1 one deeper than a depth block (520 channels: two blocks of 260, partial
// sums in C), a shallow 1x1 one (24 channels) that takes it where the micro-kernel adds the
// residual in its tile (the AVX2 one; the portable and AVX-512 ones add it after their tiles
// and decline); all as the graph as written, bit for bit, with each micro-kernel.
TEST(SessionNhwc, ResidualBuffersAreWrittenOverOnlyWhereThatKeepsTheBits) {
  for (const std::string& kernel : exec::AvailableGemmKernels()) {
    SCOPED_TRACE(kernel);
    ASSERT_TRUE(exec::SelectGemmKernelForTesting(kernel));
    B b(17, 9);
    const std::string x = b.Input("x", {1, 24, 12, 12});
    const std::string a =
        b.Op("Relu", {Conv(b, x, 24, 24, {3, 3}, {B::Ints("pads", {1, 1, 1, 1})})});
    const std::string c = b.Op(
        "Relu", {b.Op("Add", {Conv(b, a, 24, 24, {3, 3}, {B::Ints("pads", {1, 1, 1, 1})}), a})});
    const std::string d = b.Op("Relu", {Conv(b, c, 24, 520, {1, 1})});
    const std::string e = b.Op("Relu", {b.Op("Add", {Conv(b, d, 520, 520, {1, 1}), d})});
    const std::string f = b.Op("Relu", {Conv(b, e, 520, 24, {1, 1})});
    b.Output(b.Op("Relu", {b.Op("Add", {Conv(b, f, 24, 520, {1, 1}), e})}));
    test_support::Optimized optimized =
        test_support::OptimizeExpectingSameOutputs(b.model(), 0, {-2, 2, 0, 1});
    ASSERT_NE(optimized.optimized, nullptr);
    EXPECT_EQ(test_support::OpCounts(*optimized.optimized)["Add"], 0);
    exec::SessionOptions options;
    options.threads = 2;
    absl::StatusOr<std::unique_ptr<exec::CpuSession>> session =
        exec::CpuSession::Create(*optimized.optimized, options);
    ASSERT_TRUE(session.ok()) << session.status();
    absl::StatusOr<exec::TensorMap> inputs = exec::RandomInputs(optimized.optimized->graph());
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    for (int run = 0; run < 2; ++run) {
      ASSERT_TRUE((*session)->Run(*inputs).ok());
      EXPECT_EQ((*session)->inputs_written_over(), exec::GemmResidualMayBeC(24) ? 1 : 0);
    }
  }
  exec::SelectGemmKernelForTesting(exec::AvailableGemmKernels().front());
}

// Depthwise convolutions (MobileNet's and ConvNeXt's, 3x3 to 7x7, strided) join the chains:
// the channels-last kernel sums as the NCHW one does.
onnx::ModelProto InvertedResiduals(uint32_t seed) {
  B b(17, seed);
  const std::string x = b.Input("x", {2, 24, 17, 15});
  auto depthwise = [&](const std::string& in, int64_t channels, int64_t kernel, int64_t stride) {
    const int64_t pad = kernel / 2;
    return b.Op(
        "Conv",
        {in, b.Weight({channels, 1, kernel, kernel}, 1.0f / kernel), b.Weight({channels}, 0.1f)},
        {B::Ints("kernel_shape", {kernel, kernel}), B::Int("group", channels),
         B::Ints("pads", {pad, pad, pad, pad}), B::Ints("strides", {stride, stride})});
  };
  std::string y = b.Op("Relu", {Conv(b, x, 24, 72, {1, 1})});
  y = b.Op("HardSwish", {depthwise(y, 72, 3, 1)});
  y = Conv(b, y, 72, 24, {1, 1});
  y = b.Op("Add", {y, x});
  std::string z = b.Op("Clip", {Conv(b, y, 24, 40, {1, 1}), b.Fill({}, 0.0f), b.Fill({}, 6.0f)});
  z = depthwise(z, 40, 5, 2);
  z = depthwise(z, 40, 7, 1);
  b.Output(Conv(b, z, 40, 16, {1, 1}));
  return b.model();
}

TEST(SessionNhwc, DepthwiseConvolutionsJoinTheChain) {
  std::map<std::string, int> counts = OptimizedCounts(InvertedResiduals(4));
  EXPECT_EQ(counts["Conv"], 0);
  EXPECT_EQ(counts["ovfix.fused.NhwcConv"], 7);
  EXPECT_EQ(counts["Transpose"], 2);
}

// With the portable GEMM kernel the Conv kernel has no channels-last path: only 1x1 and
// depthwise kernels go channels-last, and the results are still those of the graph as written.
TEST(SessionNhwc, PortableKernelKeepsOnlyWhatItComputesTheSame) {
  const std::string kernel = exec::CurrentGemmGeometry().name;
  ASSERT_TRUE(exec::SelectGemmKernelForTesting("portable"));
  // The five 1x1 convolutions and the second block's 3x3 (stride 1 at 7x7: Winograd's, which
  // reads channels-last with any GEMM kernel) form one region, entered by x and the strided
  // 3x3's output and left by what that 3x3 reads.
  std::map<std::string, int> counts = OptimizedCounts(Bottlenecks(1, 16, 16, 14, 14, 5));
  EXPECT_EQ(counts["ovfix.fused.NhwcConv"], 6);
  EXPECT_EQ(counts["Conv"], 1);
  EXPECT_EQ(counts["Transpose"], 3);
  counts = OptimizedCounts(InvertedResiduals(5));
  EXPECT_EQ(counts["ovfix.fused.NhwcConv"], 7);
  ASSERT_TRUE(exec::SelectGemmKernelForTesting(kernel));
}

TEST(SessionNhwc, LeavesWhatDoesNotPay) {
  Avx2Kernel avx2;
  {
    SCOPED_TRACE("a lone convolution");
    B b(17, 1);
    const std::string x = b.Input("x", {1, 8, 12, 12});
    b.Output(b.Op("Relu", {Conv(b, x, 8, 16, {3, 3}, {B::Ints("pads", {1, 1, 1, 1})})}));
    std::map<std::string, int> counts = OptimizedCounts(b.model());
    EXPECT_EQ(counts["Conv"], 1);
    EXPECT_EQ(counts["Transpose"], 0);
  }
  {
    SCOPED_TRACE("a Mul by a vector along the width between two convolutions");
    B b(17, 2);
    const std::string x = b.Input("x", {1, 8, 12, 12});
    std::string y = Conv(b, x, 8, 16, {1, 1});
    y = b.Op("Mul", {y, b.Weight({1, 12}, 1.0f)});
    b.Output(Conv(b, y, 16, 8, {1, 1}));
    std::map<std::string, int> counts = OptimizedCounts(b.model());
    EXPECT_EQ(counts["Conv"], 2);
    EXPECT_EQ(counts["Transpose"], 0);
  }
  {
    SCOPED_TRACE("a BatchNormalization and Relu the session folds into the convolution");
    B b(17, 3);
    const std::string x = b.Input("x", {1, 8, 12, 12});
    std::string y = Conv(b, x, 8, 16, {1, 1});
    y = b.Op("Concat", {y, x}, {B::Int("axis", 1)});
    y = b.Op("BatchNormalization", {y, b.Weight({24}, 1.0f), b.Weight({24}, 0.5f),
                                    b.Weight({24}, 0.5f), b.Fill({24}, 1.5f)});
    y = b.Op("Relu", {y});
    y = Conv(b, y, 24, 8, {1, 1});
    b.Output(Conv(b, y, 8, 8, {3, 3}, {B::Ints("pads", {1, 1, 1, 1})}));
    std::map<std::string, int> counts = OptimizedCounts(b.model());
    // The first and the third could join only through the second, which reads the folded
    // BatchNormalization: each is alone.
    EXPECT_EQ(counts["Conv"], 3);
    EXPECT_EQ(counts["BatchNormalization"], 1);
  }
}

// A session that rounds every float tensor to fp16 keeps each convolution's output a tensor
// (rounded before its residual Add, as written): no chain there.
TEST(SessionNhwc, Fp16StorageKeepsConvolutionsAsWritten) {
  for (exec::Precision precision : {exec::Precision::kFp32, exec::Precision::kFp16Storage}) {
    std::map<std::string, int> counts =
        test_support::SessionOpCounts(Bottlenecks(1, 16, 16, 14, 14, 8), precision);
    const bool fp32 = precision == exec::Precision::kFp32;
    EXPECT_EQ(counts["ovfix.fused.NhwcConv"] > 0, fp32);
    EXPECT_EQ(counts["Conv"] == 7, !fp32);
  }
}

// ConvNeXt's blocks as PyTorch exports them: the 7x7 depthwise convolution in NCHW, a permute
// to NHWC for the LayerNorm and the two Linear layers (MatMul), the layer scale, a permute
// back and the residual Add. The permutes are the region's own layout: they go, and the chain
// is entered and left once.
TEST(SessionNhwc, ConvNextPermutesGoWithTheChain) {
  B b(17, 9);
  const int64_t c = 24;
  const std::string x = b.Input("x", {2, c, 11, 9});
  auto block = [&](const std::string& in) {
    std::string y =
        b.Op("Conv", {in, b.Weight({c, 1, 7, 7}, 1.0f / 7), b.Weight({c}, 0.1f)},
             {B::Ints("kernel_shape", {7, 7}), B::Int("group", c), B::Ints("pads", {3, 3, 3, 3})});
    y = b.Op("Transpose", {y}, {B::Ints("perm", {0, 2, 3, 1})});
    y = b.Op("LayerNormalization", {y, b.Fill({c}, 1.0f), b.Fill({c}, 0.0f)},
             {B::Int("axis", -1), B::Float("epsilon", 1e-6f)});
    y = b.Op("Add", {b.Op("MatMul", {y, b.Weight({c, 4 * c}, 0.2f)}), b.Weight({4 * c}, 0.1f)});
    y = b.Op("Relu", {y});
    y = b.Op("Add", {b.Op("MatMul", {y, b.Weight({4 * c, c}, 0.1f)}), b.Weight({c}, 0.1f)});
    y = b.Op("Mul", {y, b.Fill({c}, 0.5f)});
    y = b.Op("Transpose", {y}, {B::Ints("perm", {0, 3, 1, 2})});
    return b.Op("Add", {in, y});
  };
  b.Output(block(block(x)));
  std::map<std::string, int> counts = OptimizedCounts(b.model());
  EXPECT_EQ(counts["ovfix.fused.NhwcConv"], 2);
  EXPECT_EQ(counts["Conv"], 0);
  // x in, the output back: the four permutes are gone.
  EXPECT_EQ(counts["Transpose"], 2);
}

// DeepLabV3's ASPP head: four branches over one feature map (a 1x1 and three dilated 3x3
// convolutions) and a pooled one (GlobalAveragePool, a 1x1 convolution over one pixel, Resized
// back), concatenated along the channels and projected by a 1x1 convolution. The Concat joins
// the chain along its last axis: the branches need not leave it.
TEST(SessionNhwc, ConcatAlongTheChannelsJoinsTheChain) {
  Avx2Kernel avx2;
  B b(17, 10);
  const std::string x = b.Input("x", {1, 40, 12, 12});
  std::string features = b.Op("Relu", {Conv(b, x, 40, 48, {1, 1})});
  std::vector<std::string> branches = {b.Op("Relu", {Conv(b, features, 48, 32, {1, 1})})};
  for (int64_t rate : {2, 3, 5}) {
    branches.push_back(b.Op("Relu", {Conv(b, features, 48, 32, {3, 3},
                                          {B::Ints("dilations", {rate, rate}),
                                           B::Ints("pads", {rate, rate, rate, rate})})}));
  }
  std::string pooled =
      b.Op("Relu", {Conv(b, b.Op("GlobalAveragePool", {features}), 48, 32, {1, 1})});
  branches.push_back(
      b.Op("Resize", {pooled, "", "", b.Int64s({1, 32, 12, 12})}, {B::String("mode", "nearest")}));
  const std::string all = b.Op("Concat", branches, {B::Int("axis", 1)});
  b.Output(b.Op("Relu", {Conv(b, all, 160, 32, {1, 1})}));
  std::map<std::string, int> counts = OptimizedCounts(b.model());
  if (!avx2.selected()) GTEST_SKIP() << "the counts are the AVX2 tile's";
  EXPECT_EQ(counts["ovfix.fused.NhwcConv"], 6);
  EXPECT_EQ(counts["Conv"], 1);  // over one pixel
  // x and the Resized branch in, the output back.
  EXPECT_EQ(counts["Transpose"], 3);
}

// Random convolution networks (seeded, so every run draws the same ones): 1x1, KxK and
// depthwise convolutions with strides, dilations and pads (asymmetric, at the end only),
// activations, residual Adds, squeeze-and-excitation scales, Concats along the channels, permutes
// to NHWC and back, a graph output in the middle. Whatever the pass makes of them, the session
// graph gives the graph's values bit for bit.
TEST(SessionNhwc, RandomNetworksKeepTheirValuesBitForBit) {
  std::mt19937 random(41);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  int converted = 0;
  for (int net = 0; net < 80; ++net) {
    SCOPED_TRACE(testing::Message() << "network " << net);
    B b(17, static_cast<uint32_t>(net + 1));
    struct Feature {
      std::string name;
      int64_t c, h, w;
    };
    const int64_t batch = pick(1, 2);
    std::vector<Feature> features = {{"", pick(3, 40), pick(5, 20), pick(5, 20)}};
    features[0].name = b.Input("x", {batch, features[0].c, features[0].h, features[0].w});
    const int layers = static_cast<int>(pick(3, 10));
    for (int l = 0; l < layers; ++l) {
      const Feature in = features.back();
      Feature out = in;
      switch (pick(0, 7)) {
        case 0:
        case 1: {  // a convolution, 1x1 or KxK
          const int64_t k = std::vector<int64_t>{1, 1, 3, 5}[pick(0, 3)];
          const int64_t stride = pick(1, 2), dilation = k > 1 ? pick(1, 2) : 1;
          std::vector<int64_t> pads(4, 0);
          for (int64_t& p : pads) p = pick(0, k / 2 * dilation + (k == 1 ? 1 : 0));
          if (pick(0, 2) == 0 && k > 1)
            pads = {k / 2 * dilation, k / 2 * dilation, k / 2 * dilation, k / 2 * dilation};
          const int64_t extent = (k - 1) * dilation + 1;
          if (in.h + pads[0] + pads[2] < extent || in.w + pads[1] + pads[3] < extent) continue;
          out.c = std::vector<int64_t>{16, 32, 24, 48, 13}[pick(0, 4)];
          out.h = (in.h + pads[0] + pads[2] - (k - 1) * dilation - 1) / stride + 1;
          out.w = (in.w + pads[1] + pads[3] - (k - 1) * dilation - 1) / stride + 1;
          out.name = Conv(b, in.name, in.c, out.c, {k, k},
                          {B::Ints("strides", {stride, stride}),
                           B::Ints("dilations", {dilation, dilation}), B::Ints("pads", pads)});
          break;
        }
        case 2: {  // depthwise
          const int64_t k = std::vector<int64_t>{3, 5, 7}[pick(0, 2)], stride = pick(1, 2);
          const int64_t pad = k / 2;
          out.h = (in.h + 2 * pad - k) / stride + 1;
          out.w = (in.w + 2 * pad - k) / stride + 1;
          out.name =
              b.Op("Conv", {in.name, b.Weight({in.c, 1, k, k}, 1.0f / k), b.Weight({in.c}, 0.1f)},
                   {B::Ints("kernel_shape", {k, k}), B::Int("group", in.c),
                    B::Ints("pads", {pad, pad, pad, pad}), B::Ints("strides", {stride, stride})});
          break;
        }
        case 3:  // an activation
          out.name =
              b.Op(std::vector<std::string>{"Relu", "Sigmoid", "HardSwish"}[pick(0, 2)], {in.name});
          break;
        case 4: {  // a residual Add of an earlier feature of the same shape, or a new 1x1
          std::string other;
          for (const Feature& f : features) {
            if (f.name != in.name && f.c == in.c && f.h == in.h && f.w == in.w) other = f.name;
          }
          if (other.empty()) other = Conv(b, in.name, in.c, in.c, {1, 1});
          out.name = b.Op("Relu", {b.Op("Add", {Conv(b, in.name, in.c, in.c, {1, 1}), other})});
          break;
        }
        case 5: {  // a squeeze-and-excitation scale
          std::string scale = Conv(b, b.Op("GlobalAveragePool", {in.name}), in.c, 8, {1, 1});
          scale = b.Op("Sigmoid", {Conv(b, b.Op("Relu", {scale}), 8, in.c, {1, 1})});
          out.name = b.Op("Mul", {in.name, scale});
          break;
        }
        case 6: {  // a Concat with an earlier feature of the same size
          std::string other;
          int64_t other_c = 0;
          for (const Feature& f : features) {
            if (f.h == in.h && f.w == in.w) other = f.name, other_c = f.c;
          }
          out.name = b.Op("Concat", {in.name, other}, {B::Int("axis", 1)});
          out.c = in.c + other_c;
          break;
        }
        default: {  // permutes to NHWC and back around an op
          std::string y = b.Op("Transpose", {in.name}, {B::Ints("perm", {0, 2, 3, 1})});
          y = b.Op("Mul", {y, b.Weight({in.c}, 1.0f)});
          out.name = b.Op("Transpose", {y}, {B::Ints("perm", {0, 3, 1, 2})});
          break;
        }
      }
      features.push_back(out);
      if (pick(0, 9) == 0) b.Output(out.name);  // read outside the chain too
    }
    b.Output(features.back().name);
    std::map<std::string, int> counts = OptimizedCounts(b.model());
    converted += counts["ovfix.fused.NhwcConv"] > 0 ? 1 : 0;
  }
  // The networks exercise the pass: a good part of them run channels-last somewhere (37 of the
  // 80 with the AVX2 kernel, 23 with the portable one, which has no channels-last path for KxK
  // kernels).
  EXPECT_GE(converted, 16) << converted;
}

TEST(SessionNhwc, CostDecidesARegion) {
  EXPECT_TRUE(KeepsChannelsLast(1001, 1000));
  EXPECT_FALSE(KeepsChannelsLast(1000, 1000));
  EXPECT_FALSE(KeepsChannelsLast(0, 0));
}

// A squeeze-and-excitation block (MobileNetV3's): the global average pool, two 1x1
// convolutions over one pixel (which stay NCHW) and a HardSigmoid make a scale per channel
// that multiplies the block's values; the Mul reads the scale as [N, 1, 1, C] and stays in the
// chain, so the chain is entered once and left once.
TEST(SessionNhwc, SqueezeExcitationScalesStayInTheChain) {
  B b(17, 7);
  const std::string x = b.Input("x", {2, 24, 13, 11});
  std::string y = b.Op("Relu", {Conv(b, x, 24, 48, {1, 1})});
  const std::string pooled = b.Op("GlobalAveragePool", {y});
  std::string scale = b.Op("Relu", {Conv(b, pooled, 48, 12, {1, 1})});
  scale = b.Op("HardSigmoid", {Conv(b, scale, 12, 48, {1, 1})},
               {B::Float("alpha", 1.0f / 6), B::Float("beta", 0.5f)});
  y = b.Op("Mul", {y, scale});
  y = b.Op("Mul", {y, b.Weight({48, 1, 1}, 1.0f)});  // a per-channel constant too
  y = Conv(b, y, 48, 24, {1, 1});
  b.Output(b.Op("Add", {y, x}));
  std::map<std::string, int> counts = OptimizedCounts(b.model());
  EXPECT_EQ(counts["ovfix.fused.NhwcConv"], 2);
  EXPECT_EQ(counts["Conv"], 2);  // over one pixel
  EXPECT_EQ(counts["ovfix.fused.NhwcGlobalAveragePool"], 1);
  // x in, the output back, the scale and the constant read per channel.
  EXPECT_EQ(counts["Transpose"], 4);
}

}  // namespace
}  // namespace ovfix::converter
