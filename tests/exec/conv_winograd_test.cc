// Winograd F(2x2, 3x3) convolution (exec/cpu/conv_winograd.h), called directly so that every
// case surely takes it. What is asserted, and why:
//  - accuracy: every output within 1e-6 of the output's range (max - min) of a direct 3x3
//    convolution computed here in double (pads, bias, residual, then the activation), the bound
//    the header promises, over square and odd, rectangular outputs (8x8 to 56x56), pads 0, 1,
//    2 and asymmetric ones, channel counts 8 to 256 and map counts 8 to 64 (whole vectors and
//    not), normal data and data around a thousand (the bound is relative: nothing absolute may
//    creep into the transforms), with every GEMM micro-kernel this CPU has (the transformed
//    weights are packed for the kernel in use, so they are packed anew for each);
//  - the four layouts of image and output (planes, channels-last) give the same floats bit for
//    bit: a chain kept channels-last (ovfix.fused.NhwcConv) and one in planes (Conv) must
//    compute the same model, with and without bias, with a residual (channels-last outputs),
//    a clamp and a hard swish; without bias the sums are rounded as adding a bias of 0.0f
//    rounds them (AddBiasToMaps, TransposeAddBiasMaps), so that no output is -0.0;
//  - no pool and pools of 2 and 3 threads give the same bits: how the tiles are cut into runs
//    for the threads must not change any sum;
//  - the direct channels-last convolution (ChannelsLastConv) agrees within the same bound;
//  - WinogradConvApplies takes 2-D 3x3 convolutions with stride and dilation 1, pads up to 2,
//    one group, 8 or more channels and maps and outputs of 7x7 or more, and refuses the rest.
// The kernel must write nothing outside its output and read nothing outside its image (both
// lie between guards; the image's are NaN).
#include "exec/cpu/conv_winograd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/conv_channels_last.h"
#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/conv_nhwc.h"
#include "exec/cpu/gemm.h"
#include "exec/fused_activation.h"
#include "exec/thread_pool.h"
#include "gtest/gtest.h"

namespace ovfix::exec {
namespace {

// A 3x3 convolution with stride and dilation 1 of one image: `channels` planes of in_h x in_w
// to `maps` planes.
struct Case {
  int64_t channels, maps, in_h, in_w;
  int64_t pad_top = 1, pad_left = 1, pad_bottom = 1, pad_right = 1;
};

Spatial3 MakeSpatial(const std::vector<int64_t>& input, const std::vector<int64_t>& kernel,
                     int64_t stride, int64_t dilation, const std::vector<int64_t>& pads_begin,
                     const std::vector<int64_t>& pads_end) {
  SpatialGeometry g;
  g.input = input;
  g.kernel = kernel;
  g.strides.assign(input.size(), stride);
  g.dilations.assign(input.size(), dilation);
  g.pads_begin = pads_begin;
  g.pads_end = pads_end;
  g.auto_pad = "NOTSET";
  for (size_t i = 0; i < input.size(); ++i) {
    g.output.push_back((input[i] + pads_begin[i] + pads_end[i] - g.extent(i)) / stride + 1);
  }
  return Spatial3(g);
}

Spatial3 SpatialOf(const Case& c) {
  return MakeSpatial({c.in_h, c.in_w}, {3, 3}, 1, 1, {c.pad_top, c.pad_left},
                     {c.pad_bottom, c.pad_right});
}

std::string Describe(const Case& c) {
  const Spatial3 s = SpatialOf(c);
  return "c" + std::to_string(c.channels) + " m" + std::to_string(c.maps) + " " +
         std::to_string(c.in_h) + "x" + std::to_string(c.in_w) + " -> " + std::to_string(s.out[1]) +
         "x" + std::to_string(s.out[2]) + " pads " + std::to_string(c.pad_top) + "," +
         std::to_string(c.pad_left) + "," + std::to_string(c.pad_bottom) + "," +
         std::to_string(c.pad_right);
}

std::string Describe(ChannelsLastIo io) {
  return std::string(io.input_channels_last ? "NHWC" : "NCHW") + " in, " +
         (io.output_channels_last ? "NHWC" : "NCHW") + " out";
}

// The image (channels planes), weights (maps x channels x 3 x 3) and bias (maps) of a case:
// normal, the image and bias times `scale` plus `offset`.
struct Data {
  std::vector<float> x, w, b;
};

std::vector<float> Normal(int64_t n, std::mt19937& rng, float scale = 1.0f, float offset = 0.0f) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = offset + scale * normal(rng);
  return v;
}

Data RandomData(const Case& c, uint32_t seed, float scale = 1.0f, float offset = 0.0f) {
  std::mt19937 rng(seed);
  Data d;
  d.x = Normal(c.channels * c.in_h * c.in_w, rng, scale, offset);
  d.w = Normal(c.maps * c.channels * 9, rng);
  d.b = Normal(c.maps, rng, scale, offset);
  return d;
}

// [rows][cols] to [cols][rows]: planes to channels-last and back.
std::vector<float> Transpose(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  }
  return t;
}

// The convolution without bias in double: maps planes of the output. A loop of its own, not
// the executor's.
std::vector<double> DirectConv(const Case& c, const Spatial3& s, const Data& d) {
  const int64_t oh = s.out[1], ow = s.out[2];
  std::vector<double> y(c.maps * oh * ow, 0.0);
  for (int64_t m = 0; m < c.maps; ++m) {
    double* ym = y.data() + m * oh * ow;
    for (int64_t ch = 0; ch < c.channels; ++ch) {
      const float* plane = d.x.data() + ch * c.in_h * c.in_w;
      for (int64_t kh = 0; kh < 3; ++kh) {
        for (int64_t kw = 0; kw < 3; ++kw) {
          const double wt = d.w[((m * c.channels + ch) * 3 + kh) * 3 + kw];
          // Output column j reads input column j - pad_left + kw.
          const int64_t j0 = std::max<int64_t>(0, c.pad_left - kw);
          const int64_t j1 = std::min<int64_t>(ow, c.in_w + c.pad_left - kw);
          for (int64_t i = 0; i < oh; ++i) {
            const int64_t r = i - c.pad_top + kh;
            if (r < 0 || r >= c.in_h) continue;
            const float* row = plane + r * c.in_w - c.pad_left + kw;
            double* yr = ym + i * ow;
            for (int64_t j = j0; j < j1; ++j) yr[j] += wt * row[j];
          }
        }
      }
    }
  }
  return y;
}

// The direct convolution finished: + bias[m] (if given) + the residual (if given, in planes),
// then the activation, in double.
std::vector<double> Finish(std::vector<double> y, int64_t positions, const float* bias,
                           const float* residual_planes, const FusedActivation& act) {
  for (size_t i = 0; i < y.size(); ++i) {
    double v = y[i];
    if (bias != nullptr) v += bias[i / positions];
    if (residual_planes != nullptr) v += residual_planes[i];
    if (act.clamp) v = std::min<double>(std::max<double>(v, act.clamp_min), act.clamp_max);
    if (act.hard_swish) {
      v *= std::max(0.0, std::min(1.0, double{act.hard_swish_alpha} * v + act.hard_swish_beta));
    }
    y[i] = v;
  }
  return y;
}

// Every element of `got` (maps planes of `positions`) within 1e-6 of the range of `expected`.
void ExpectWithinRange(const std::vector<float>& got, const std::vector<double>& expected,
                       int64_t positions, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  const auto [lo, hi] = std::minmax_element(expected.begin(), expected.end());
  const double range = *hi - *lo, bound = 1e-6 * range;
  ASSERT_GT(range, 0.0) << what;
  int64_t failures = 0, worst = -1;
  double worst_error = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(double{got[i]} - expected[i]);
    if (error <= bound) continue;
    ++failures;
    if (worst < 0 || !(error <= worst_error)) worst = static_cast<int64_t>(i), worst_error = error;
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << got.size()
                         << " outputs off by more than 1e-6 of the range " << range
                         << "; the worst, map " << worst / positions << " position "
                         << worst % positions << ", is " << got[std::max<int64_t>(worst, 0)]
                         << " for " << expected[std::max<int64_t>(worst, 0)] << " ("
                         << worst_error / range << " of the range)";
}

std::vector<double> Widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Floats kept around the image and the output, to see the kernel stays inside them.
constexpr int64_t kGuard = 64;
constexpr float kOutputGuard = 12345.0f;

// WinogradConv of the image `x_planes` (channels planes) given to it laid out as io says; the
// output brought back to maps planes. The epilogue's residual, if any, is the caller's (laid
// out as the output).
std::vector<float> RunWinograd(const WinogradWeights& weights, const std::vector<float>& x_planes,
                               const Spatial3& s, const GemmEpilogue& epilogue, ThreadPool* pool,
                               ChannelsLastIo io, const std::string& what) {
  const int64_t channels = weights.channels(), maps = weights.maps();
  const int64_t in_size = s.in_size(), out_size = s.out_size();
  std::vector<float> x(kGuard, std::numeric_limits<float>::quiet_NaN());
  const std::vector<float> laid =
      io.input_channels_last ? Transpose(x_planes, channels, in_size) : x_planes;
  x.insert(x.end(), laid.begin(), laid.end());
  x.resize(x.size() + kGuard, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> y(maps * out_size + 2 * kGuard, kOutputGuard);
  WinogradConv(weights, x.data() + kGuard, s, epilogue, y.data() + kGuard, pool, io);
  for (int64_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(y[i], kOutputGuard) << what << ": wrote before the output";
    EXPECT_EQ(y[kGuard + maps * out_size + i], kOutputGuard) << what << ": wrote past the output";
  }
  std::vector<float> out(y.begin() + kGuard, y.end() - kGuard);
  return io.output_channels_last ? Transpose(out, out_size, maps) : out;
}

struct Epilogue {
  std::string name;
  bool bias;
  FusedActivation act;
};

FusedActivation Relu() {
  FusedActivation a;
  a.clamp = true;
  a.clamp_min = 0.0f;
  a.clamp_max = std::numeric_limits<float>::infinity();
  return a;
}

FusedActivation HardSwish() {
  FusedActivation a;
  a.hard_swish = true;
  a.hard_swish_alpha = 1.0f / 6.0f;
  a.hard_swish_beta = 0.5f;
  return a;
}

std::vector<Epilogue> Epilogues() {
  return {{"no bias", false, {}},
          {"bias", true, {}},
          {"bias relu", true, Relu()},
          {"no bias hard swish", false, HardSwish()},
          {"bias hard swish", true, HardSwish()}};
}

GemmEpilogue MakeEpilogue(const Epilogue& e, const Data& d, const float* residual = nullptr) {
  GemmEpilogue g;
  static_cast<FusedActivation&>(g) = e.act;
  g.row_bias = e.bias ? d.b.data() : nullptr;
  g.residual = residual;
  return g;
}

const std::vector<ChannelsLastIo>& AllIo() {
  static const std::vector<ChannelsLastIo> io = {
      {false, false}, {true, false}, {false, true}, {true, true}};
  return io;
}

// Selects the first (best) GEMM micro-kernel again on leaving, even after a failed assertion.
struct RestoreBestGemmKernel {
  ~RestoreBestGemmKernel() { SelectGemmKernelForTesting(AvailableGemmKernels().front()); }
};

TEST(WinogradConvTest, AppliesToIntendedGeometries) {
  const auto conv2d = [](int64_t in, int64_t pad) {
    return MakeSpatial({in, in}, {3, 3}, 1, 1, {pad, pad}, {pad, pad});
  };
  // ResNet's 3x3 convolutions on 56x56, and the edges of what it takes.
  EXPECT_TRUE(WinogradConvApplies(conv2d(56, 1), 1, 64, 64));
  EXPECT_TRUE(WinogradConvApplies(conv2d(8, 1), 1, 8, 8));      // 8x8 outputs, 8 channels
  EXPECT_TRUE(WinogradConvApplies(conv2d(10, 0), 1, 64, 64));   // pad 0: 8x8
  EXPECT_TRUE(WinogradConvApplies(conv2d(14, 2), 1, 13, 17));   // pad 2
  EXPECT_TRUE(WinogradConvApplies(conv2d(9, 1), 1, 256, 512));  // odd outputs
  EXPECT_TRUE(WinogradConvApplies(conv2d(7, 1), 1, 512, 512));  // ResNet's last maps, 7x7
  EXPECT_TRUE(WinogradConvApplies(MakeSpatial({10, 11}, {3, 3}, 1, 1, {1, 1}, {0, 0}), 1, 64, 17));
  EXPECT_TRUE(WinogradConvApplies(MakeSpatial({12, 9}, {3, 3}, 1, 1, {2, 0}, {1, 1}), 1, 8, 8));

  EXPECT_FALSE(WinogradConvApplies(MakeSpatial({57, 57}, {3, 3}, 2, 1, {1, 1}, {1, 1}), 1, 64, 64))
      << "stride 2";
  EXPECT_FALSE(WinogradConvApplies(MakeSpatial({56, 56}, {3, 3}, 1, 2, {2, 2}, {2, 2}), 1, 64, 64))
      << "dilation 2";
  EXPECT_FALSE(WinogradConvApplies(MakeSpatial({56, 56}, {5, 5}, 1, 1, {2, 2}, {2, 2}), 1, 64, 64))
      << "5x5 kernel";
  EXPECT_FALSE(WinogradConvApplies(MakeSpatial({56, 56}, {1, 3}, 1, 1, {0, 1}, {0, 1}), 1, 64, 64))
      << "1x3 kernel";
  EXPECT_FALSE(WinogradConvApplies(MakeSpatial({56}, {3}, 1, 1, {1}, {1}), 1, 64, 64)) << "1-D";
  EXPECT_FALSE(WinogradConvApplies(MakeSpatial({16, 16, 16}, {3, 3, 3}, 1, 1, {1, 1, 1}, {1, 1, 1}),
                                   1, 64, 64))
      << "3-D";
  EXPECT_FALSE(WinogradConvApplies(conv2d(56, 1), 2, 64, 64)) << "group 2";
  EXPECT_FALSE(WinogradConvApplies(conv2d(6, 1), 1, 512, 512)) << "6x6 outputs";
  EXPECT_FALSE(WinogradConvApplies(conv2d(56, 1), 1, 4, 64)) << "4 channels";
  EXPECT_FALSE(WinogradConvApplies(conv2d(56, 1), 1, 3, 64)) << "3 channels (an RGB image)";
  EXPECT_FALSE(WinogradConvApplies(conv2d(56, 1), 1, 64, 7)) << "7 maps";
  EXPECT_FALSE(WinogradConvApplies(conv2d(56, 3), 1, 64, 64)) << "pads 3";
  EXPECT_FALSE(WinogradConvApplies(MakeSpatial({20, 20}, {3, 3}, 1, 1, {1, 1}, {3, 3}), 1, 64, 64))
      << "end pads 3";
}

// The Conv kernel takes Winograd's path for constant weights only: weights computed on every
// run (a modulated convolution's) would pay their transform each time.
TEST(WinogradConvTest, ConvKernelTakesItForConstantWeightsOnly) {
  const Spatial3 s = MakeSpatial({56, 56}, {3, 3}, 1, 1, {1, 1}, {1, 1});
  EXPECT_EQ(ChooseConvPath(s, 2, 1, 64, 64, /*constant_weights=*/true), ConvPath::kWinograd);
  EXPECT_NE(ChooseConvPath(s, 2, 1, 64, 64, /*constant_weights=*/false), ConvPath::kWinograd);
}

// The accuracy cases: square and odd, rectangular outputs, pads 0, 1, 2 and asymmetric,
// channels and maps that fill whole vectors and ones that do not.
std::vector<Case> AccuracyCases() {
  return {
      {8, 8, 8, 8},                  // the smallest it takes: 8x8, 8 channels, 8 maps
      {13, 17, 9, 13},               // odd rows and columns: half tiles on two sides
      {64, 32, 14, 14},              // 14x14
      {128, 32, 16, 15},             // 16x15
      {128, 64, 28, 28},             // 28x28
      {64, 64, 56, 56},              // ResNet's 56x56
      {256, 17, 8, 8},               // deep, few positions
      {256, 64, 7, 7},               // ResNet's last maps: 16 tiles, the maps shared out
      {256, 64, 14, 13},             // deep, odd columns
      {13, 8, 12, 11, 0, 0, 0, 0},   // pad 0: 10x9
      {8, 17, 9, 10, 2, 2, 2, 2},    // pad 2: 11x12
      {64, 17, 10, 11, 1, 1, 0, 0},  // pads top/left 1, bottom/right 0: 9x10
      {13, 32, 9, 9, 1, 1, 2, 2},    // pads top/left 1, bottom/right 2: 10x10
      {8, 8, 12, 9, 2, 0, 1, 1},     // pads top 2, left 0: 13x8
      {64, 8, 15, 17, 0, 2, 2, 0},   // pads top 0, left 2, bottom 2, right 0: 15x17
  };
}

// Against the direct convolution in double, with every GEMM micro-kernel, the weights packed
// anew for each; no activation and a clamp, with and without bias, image and output in planes.
TEST(WinogradConvTest, MatchesDoubleReferenceWithEveryGemmKernel) {
  RestoreBestGemmKernel restore;
  uint32_t seed = 1;
  for (const Case& c : AccuracyCases()) {
    const Spatial3 s = SpatialOf(c);
    ASSERT_TRUE(WinogradConvApplies(s, 1, c.channels, c.maps)) << Describe(c);
    const Data d = RandomData(c, seed++);
    const std::vector<double> raw = DirectConv(c, s, d);
    for (const std::string& kernel : AvailableGemmKernels()) {
      ASSERT_TRUE(SelectGemmKernelForTesting(kernel));
      const WinogradWeights weights(d.w.data(), c.maps, c.channels);
      ASSERT_EQ(weights.maps(), c.maps);
      ASSERT_EQ(weights.channels(), c.channels);
      for (const Epilogue& e : {Epilogues()[0], Epilogues()[1], Epilogues()[2]}) {
        const std::string what = kernel + " " + Describe(c) + " " + e.name;
        const std::vector<float> y =
            RunWinograd(weights, d.x, s, MakeEpilogue(e, d), nullptr, {}, what);
        ExpectWithinRange(y,
                          Finish(raw, s.out_size(), e.bias ? d.b.data() : nullptr, nullptr, e.act),
                          s.out_size(), what);
      }
    }
  }
}

// Images a thousand times larger than the weights, and images around a thousand (1000 + a
// normal: the transforms subtract nearly equal pixels): the bound is relative to the output's
// range, nothing absolute may enter.
TEST(WinogradConvTest, LargeMagnitudesKeepTheRelativeBound) {
  const std::vector<Case> cases = {{64, 32, 14, 14}, {13, 17, 9, 13}, {64, 8, 15, 17, 0, 2, 2, 0}};
  for (const Case& c : cases) {
    const Spatial3 s = SpatialOf(c);
    for (const auto& [scale, offset] : {std::pair{1000.0f, 0.0f}, std::pair{1.0f, 1000.0f}}) {
      const Data d = RandomData(c, 77, scale, offset);
      const WinogradWeights weights(d.w.data(), c.maps, c.channels);
      const std::vector<double> raw = DirectConv(c, s, d);
      for (const Epilogue& e : {Epilogues()[1], Epilogues()[3]}) {
        const std::string what = Describe(c) + " scale " + std::to_string(scale) + " offset " +
                                 std::to_string(offset) + " " + e.name;
        for (const ChannelsLastIo io : {ChannelsLastIo{false, false}, ChannelsLastIo{true, true}}) {
          const std::vector<float> y =
              RunWinograd(weights, d.x, s, MakeEpilogue(e, d), nullptr, io, what);
          ExpectWithinRange(
              y, Finish(raw, s.out_size(), e.bias ? d.b.data() : nullptr, nullptr, e.act),
              s.out_size(), what + " " + Describe(io));
        }
      }
    }
  }
}

// The cases of the layout and thread tests: odd outputs, asymmetric pads, more positions than
// a run of tiles, and an image with a block of -0.0 pixels (all channels), under which whole
// tiles sum to exact zeros.
std::vector<Case> LayoutCases() {
  return {{13, 17, 9, 13}, {64, 32, 16, 15}, {8, 8, 12, 9, 2, 0, 1, 1}, {16, 24, 12, 14}};
}

Data LayoutData(const Case& c, uint32_t seed) {
  Data d = RandomData(c, seed);
  if (c.channels == 16) {
    for (int64_t ch = 0; ch < c.channels; ++ch) {
      for (int64_t r = 3; r < 10; ++r) {
        for (int64_t col = 4; col < 12; ++col) d.x[(ch * c.in_h + r) * c.in_w + col] = -0.0f;
      }
    }
  }
  return d;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A float to 9 digits and its bits, for the messages.
std::string Bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  char text[64];
  std::snprintf(text, sizeof(text), "%.9g (0x%08x)", v, bits);
  return text;
}

// Where the bits of a and b (maps planes of `positions`) first differ, and how many do.
std::string FirstDifference(const std::vector<float>& a, const std::vector<float>& b,
                            int64_t positions) {
  if (a.size() != b.size()) {
    return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  }
  int64_t count = 0, first = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) == 0) continue;
    if (count++ == 0) first = static_cast<int64_t>(i);
  }
  if (first < 0) return "no difference";
  return std::to_string(count) + " of " + std::to_string(a.size()) + " differ, the first at map " +
         std::to_string(first / positions) + " position " + std::to_string(first % positions) +
         ": " + Bits(a[first]) + " vs " + Bits(b[first]);
}

// The four layouts of image and output give the same bits, each epilogue, with every GEMM
// micro-kernel; planes-to-planes within the bound of the reference; without bias or
// activation no output is -0.0.
TEST(WinogradConvTest, LayoutsGiveSameBits) {
  RestoreBestGemmKernel restore;
  uint32_t seed = 100;
  for (const Case& c : LayoutCases()) {
    const Spatial3 s = SpatialOf(c);
    const Data d = LayoutData(c, seed++);
    const std::vector<double> raw = DirectConv(c, s, d);
    for (const std::string& kernel : AvailableGemmKernels()) {
      ASSERT_TRUE(SelectGemmKernelForTesting(kernel));
      const WinogradWeights weights(d.w.data(), c.maps, c.channels);
      for (const Epilogue& e : Epilogues()) {
        const std::string what = kernel + " " + Describe(c) + " " + e.name;
        const std::vector<float> first =
            RunWinograd(weights, d.x, s, MakeEpilogue(e, d), nullptr, AllIo()[0], what);
        ExpectWithinRange(first,
                          Finish(raw, s.out_size(), e.bias ? d.b.data() : nullptr, nullptr, e.act),
                          s.out_size(), what);
        if (!e.bias && !e.act.any()) {
          int64_t negative_zeros = 0;
          for (const float v : first) negative_zeros += v == 0.0f && std::signbit(v);
          EXPECT_EQ(negative_zeros, 0) << what << ": sums not rounded as + 0.0f rounds them";
        }
        for (size_t k = 1; k < AllIo().size(); ++k) {
          const std::vector<float> y =
              RunWinograd(weights, d.x, s, MakeEpilogue(e, d), nullptr, AllIo()[k], what);
          EXPECT_TRUE(SameBits(y, first))
              << what << ": " << Describe(AllIo()[k]) << " differs from " << Describe(AllIo()[0])
              << ", " << FirstDifference(y, first, s.out_size());
        }
      }
    }
  }
}

// A residual (channels-last outputs only, laid out as the output): an image in planes and one
// channels-last give the same bits, within the bound of the reference plus the residual.
TEST(WinogradConvTest, ResidualGivesSameBitsFromEitherImageLayout) {
  uint32_t seed = 200;
  for (const Case& c : LayoutCases()) {
    const Spatial3 s = SpatialOf(c);
    const Data d = LayoutData(c, seed++);
    std::mt19937 rng(seed);
    const std::vector<float> residual = Normal(s.out_size() * c.maps, rng, 10.0f);
    const std::vector<float> residual_planes = Transpose(residual, s.out_size(), c.maps);
    const WinogradWeights weights(d.w.data(), c.maps, c.channels);
    const std::vector<double> raw = DirectConv(c, s, d);
    for (const Epilogue& e : Epilogues()) {
      const std::string what = Describe(c) + " residual " + e.name;
      const GemmEpilogue epilogue = MakeEpilogue(e, d, residual.data());
      const std::vector<float> from_planes =
          RunWinograd(weights, d.x, s, epilogue, nullptr, {false, true}, what);
      const std::vector<float> from_channels_last =
          RunWinograd(weights, d.x, s, epilogue, nullptr, {true, true}, what);
      ExpectWithinRange(
          from_planes,
          Finish(raw, s.out_size(), e.bias ? d.b.data() : nullptr, residual_planes.data(), e.act),
          s.out_size(), what);
      EXPECT_TRUE(SameBits(from_channels_last, from_planes))
          << what << ": NHWC in differs from NCHW in, "
          << FirstDifference(from_channels_last, from_planes, s.out_size());
    }
  }
}

// No pool and pools of 2 and 3 threads give the same bits, in planes and channels-last; an
// image in planes (copied channels-last in runs of pixels shared by the pool) gives the bits an
// image channels-last gives.
TEST(WinogradConvTest, ThreadCountGivesSameBits) {
  ThreadPool two_threads(2), three_threads(3);
  std::vector<Case> cases = LayoutCases();
  cases.push_back({64, 64, 56, 56});
  cases.push_back({128, 64, 28, 28});
  cases.push_back({256, 64, 7, 7});  // too few tiles for the threads: they share the maps
  uint32_t seed = 300;
  for (const Case& c : cases) {
    const Spatial3 s = SpatialOf(c);
    const Data d = LayoutData(c, seed++);
    const WinogradWeights weights(d.w.data(), c.maps, c.channels);
    const Epilogue e = Epilogues()[2];  // bias relu
    // The image channels-last with no pool, per output layout: what every run is held to.
    const ChannelsLastIo planes_out{true, false}, channels_last_out{true, true};
    const std::vector<float> want_planes = RunWinograd(weights, d.x, s, MakeEpilogue(e, d), nullptr,
                                                       planes_out, Describe(c) + " reference");
    const std::vector<float> want_channels_last =
        RunWinograd(weights, d.x, s, MakeEpilogue(e, d), nullptr, channels_last_out,
                    Describe(c) + " reference");
    for (const ChannelsLastIo io : {ChannelsLastIo{false, false}, ChannelsLastIo{false, true},
                                    planes_out, channels_last_out}) {
      const std::string what = Describe(c) + " " + e.name + " " + Describe(io);
      const std::vector<float>& want = io.output_channels_last ? want_channels_last : want_planes;
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two_threads, &three_threads}) {
        const std::vector<float> y =
            RunWinograd(weights, d.x, s, MakeEpilogue(e, d), pool, io, what);
        EXPECT_TRUE(SameBits(y, want)) << what << ": with " << (pool != nullptr ? pool->size() : 1)
                                       << " threads differs from an image channels-last on one, "
                                       << FirstDifference(y, want, s.out_size());
      }
    }
  }
}

// The direct channels-last convolution (ChannelsLastConv, same weights and epilogue) agrees
// within 1e-6 of its output's range (not bit for bit: the sums differ).
TEST(WinogradConvTest, AgreesWithChannelsLastConv) {
  const std::vector<Case> cases = {
      {64, 32, 14, 14}, {13, 17, 9, 13}, {8, 8, 12, 9, 2, 0, 1, 1}, {128, 64, 28, 28}};
  bool ran = false;
  uint32_t seed = 400;
  for (const Case& c : cases) {
    const Spatial3 s = SpatialOf(c);
    if (!ChannelsLastConvApplies(s)) continue;
    ran = true;
    const Data d = RandomData(c, seed++);
    const WinogradWeights weights(d.w.data(), c.maps, c.channels);
    const ChannelsLastWeights direct_weights(d.w.data(), c.maps, c.channels, s);
    for (const Epilogue& e : {Epilogues()[1], Epilogues()[2], Epilogues()[4]}) {
      for (const ChannelsLastIo io : {ChannelsLastIo{false, false}, ChannelsLastIo{true, true}}) {
        const std::string what = Describe(c) + " " + e.name + " " + Describe(io);
        const GemmEpilogue epilogue = MakeEpilogue(e, d);
        const std::vector<float> x =
            io.input_channels_last ? Transpose(d.x, c.channels, s.in_size()) : d.x;
        std::vector<float> direct(c.maps * s.out_size());
        ChannelsLastConv(direct_weights, x.data(), c.channels, s, epilogue, direct.data(), nullptr,
                         io);
        if (io.output_channels_last) direct = Transpose(direct, s.out_size(), c.maps);
        const std::vector<float> y = RunWinograd(weights, d.x, s, epilogue, nullptr, io, what);
        ExpectWithinRange(y, Widen(direct), s.out_size(), what + " vs ChannelsLastConv");
      }
    }
  }
  if (!ran) GTEST_SKIP() << "no AVX-512 or AVX2 GEMM kernel here";
}

}  // namespace
}  // namespace ovfix::exec
