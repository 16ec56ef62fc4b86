// Conv, ConvTranspose and ConvInteger checked against naive direct convolution over shapes
// with groups, depthwise (with a channel multiplier), pads, strides, dilations, auto_pad,
// 1-D/2-D/3-D, constant weights packed once and kept, and every GEMM micro-kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "exec/cpu/conv_channels_last.h"
#include "exec/cpu/conv_depthwise.h"
#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/conv_implicit.h"
#include "exec/cpu/gemm.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

// ---- Conv ----

struct ConvCase {
  ConvCase(Dims x, Dims w, int64_t group = 1, Dims strides = {}, Dims dilations = {},
           Dims pads = {}, std::string auto_pad = "", bool bias = false)
      : x(std::move(x)),
        w(std::move(w)),
        group(group),
        strides(std::move(strides)),
        dilations(std::move(dilations)),
        pads(std::move(pads)),
        auto_pad(std::move(auto_pad)),
        bias(bias) {}
  Dims x, w;
  int64_t group;
  Dims strides, dilations, pads;
  std::string auto_pad;
  bool bias;
};

struct Resolved {
  Dims out, pads_begin;
};

Resolved ResolveConv(const ConvCase& c) {
  const size_t rank = c.x.size() - 2;
  Resolved r;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t in = c.x[i + 2], s = c.strides.empty() ? 1 : c.strides[i];
    const int64_t d = c.dilations.empty() ? 1 : c.dilations[i];
    const int64_t extent = (c.w[i + 2] - 1) * d + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
      r.out.push_back(out);
      r.pads_begin.push_back(c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2);
    } else {
      const int64_t pb = c.pads.empty() ? 0 : c.pads[i], pe = c.pads.empty() ? 0 : c.pads[i + rank];
      r.out.push_back((in + pb + pe - extent) / s + 1);
      r.pads_begin.push_back(pb);
    }
  }
  return r;
}

std::vector<double> NaiveConv(const ConvCase& c, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& b,
                              const Resolved& r) {
  const size_t rank = c.x.size() - 2;
  const Dims in = Pad3(Dims(c.x.begin() + 2, c.x.end()), rank, 1);
  const Dims k = Pad3(Dims(c.w.begin() + 2, c.w.end()), rank, 1);
  const Dims out = Pad3(r.out, rank, 1), pad = Pad3(r.pads_begin, rank, 0);
  const Dims s = Pad3(c.strides.empty() ? Dims(rank, 1) : c.strides, rank, 1);
  const Dims d = Pad3(c.dilations.empty() ? Dims(rank, 1) : c.dilations, rank, 1);
  const int64_t batch = c.x[0], channels = c.x[1], maps = c.w[0];
  const int64_t cg = channels / c.group, mg = maps / c.group;
  std::vector<double> y;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < maps; ++m) {
      const int64_t g = m / mg;
      for (int64_t o0 = 0; o0 < out[0]; ++o0) {
        for (int64_t o1 = 0; o1 < out[1]; ++o1) {
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double sum = c.bias ? b[m] : 0.0;
            for (int64_t ci = 0; ci < cg; ++ci) {
              for (int64_t k0 = 0; k0 < k[0]; ++k0) {
                for (int64_t k1 = 0; k1 < k[1]; ++k1) {
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = o0 * s[0] - pad[0] + k0 * d[0];
                    const int64_t i1 = o1 * s[1] - pad[1] + k1 * d[1];
                    const int64_t i2 = o2 * s[2] - pad[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) {
                      continue;
                    }
                    const int64_t xi =
                        (((n * channels + g * cg + ci) * in[0] + i0) * in[1] + i1) * in[2] + i2;
                    const int64_t wi = (((m * cg + ci) * k[0] + k0) * k[1] + k1) * k[2] + k2;
                    sum += double(x[xi]) * w[wi];
                  }
                }
              }
            }
            y.push_back(sum);
          }
        }
      }
    }
  }
  return y;
}

std::vector<onnx::AttributeProto> ConvAttributes(const ConvCase& c) {
  std::vector<onnx::AttributeProto> attributes = {IntAttr("group", c.group)};
  if (!c.strides.empty()) attributes.push_back(IntsAttr("strides", c.strides));
  if (!c.dilations.empty()) attributes.push_back(IntsAttr("dilations", c.dilations));
  if (!c.pads.empty()) attributes.push_back(IntsAttr("pads", c.pads));
  if (!c.auto_pad.empty()) attributes.push_back(StringAttr("auto_pad", c.auto_pad));
  return attributes;
}

// Random inputs of a case (x, w, and b when it has a bias) drawn from `seed`, and the output
// the naive convolution computes from them.
struct ConvRun {
  std::vector<Tensor> inputs;
  Dims out_dims;
  std::vector<double> expected;
};

ConvRun RandomConvRun(const ConvCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto x = RandomFloats(Tensor::NumElements(c.x), rng);
  const auto w = RandomFloats(Tensor::NumElements(c.w), rng);
  const auto b = RandomFloats(c.w[0], rng);
  ConvRun run;
  run.inputs = {FloatTensor(c.x, x), FloatTensor(c.w, w)};
  if (c.bias) run.inputs.push_back(FloatTensor({c.w[0]}, b));
  const Resolved r = ResolveConv(c);
  run.out_dims = {c.x[0], c.w[0]};
  run.out_dims.insert(run.out_dims.end(), r.out.begin(), r.out.end());
  run.expected = NaiveConv(c, x, w, b, r);
  return run;
}

void CheckConv(const ConvCase& c, bool constant_weights) {
  const auto [inputs, out_dims, expected] = RandomConvRun(c, 17);
  std::shared_ptr<void> state;
  NodeRun run;
  run.constant = {false, constant_weights, constant_weights};
  run.state = &state;
  std::string what = "Conv x" + ::testing::PrintToString(c.x) + " w" +
                     ::testing::PrintToString(c.w) + " group " + std::to_string(c.group);
  // Twice: the second run uses the weights packed by the first when they are constant.
  for (int pass = 0; pass < 2; ++pass) {
    auto out = RunNode("Conv", 11, inputs, ConvAttributes(c), run);
    ASSERT_TRUE(out.ok()) << what << ": " << out.status();
    ExpectNear((*out)[0], out_dims, expected, 2e-5, what);
  }
  // Only constant weights may be kept across runs (the depthwise path keeps nothing).
  if (!constant_weights) {
    EXPECT_EQ(state, nullptr) << what;
  }
}

TEST(ConvTest, MatchesNaive) {
  const std::vector<ConvCase> cases = {
      // 2-D: plain, pads, strides, dilations, asymmetric pads, bias.
      {{1, 3, 9, 11}, {4, 3, 3, 3}},
      {{2, 5, 13, 10}, {7, 5, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 4, 17, 15}, {6, 4, 5, 3}, 1, {2, 3}, {}, {2, 1, 0, 2}, "", true},
      {{1, 3, 16, 16}, {5, 3, 3, 3}, 1, {1, 1}, {2, 3}, {2, 3, 2, 3}},
      {{1, 3, 30, 30}, {64, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, "", true},
      // Pointwise (no im2col), 1x1 with stride, and a single output pixel.
      {{1, 40, 12, 12}, {24, 40, 1, 1}, 1, {}, {}, {}, "", true},
      {{1, 8, 9, 9}, {16, 8, 1, 1}, 1, {2, 2}},
      {{2, 6, 5, 5}, {10, 6, 5, 5}, 1, {}, {}, {}, "", true},
      {{1, 24, 1, 1}, {40, 24, 1, 1}, 1, {}, {}, {}, "", true},
      // Strided 1x1 (ResNet's downsampling shortcuts, the pixels gathered first): the
      // transposed product (7x7 out), the direct one (28x28 out), unequal strides, 3-D, 1-D,
      // a single output pixel of a 2x2 image, batch 2.
      {{1, 64, 14, 14}, {96, 64, 1, 1}, 1, {2, 2}, {}, {}, "", true},
      {{2, 16, 56, 55}, {32, 16, 1, 1}, 1, {2, 2}, {}, {}, "", true},
      {{1, 12, 9, 10}, {20, 12, 1, 1}, 1, {3, 1}},
      {{1, 6, 5, 6, 7}, {10, 6, 1, 1, 1}, 1, {2, 1, 3}, {}, {}, "", true},
      {{1, 5, 20}, {7, 5, 1}, 1, {4}},
      {{1, 9, 2, 2}, {11, 9, 1, 1}, 1, {2, 2}, {}, {}, "", true},
      // 1x1 kernels padded at the end only (the padded row and column are the bias alone), and
      // with a stride reaching into the end padding.
      {{1, 4, 5, 5}, {3, 4, 1, 1}, 1, {}, {}, {0, 0, 1, 1}, "", true},
      {{2, 6, 7, 8}, {5, 6, 1, 1}, 1, {2, 3}, {}, {0, 0, 1, 2}, "", true},
      // Groups, depthwise (with and without a channel multiplier), strides and pads.
      {{1, 8, 10, 10}, {6, 4, 3, 3}, 2, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{2, 6, 11, 9}, {6, 1, 3, 3}, 6, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 5, 14, 14}, {5, 1, 5, 5}, 5, {2, 2}, {}, {2, 2, 2, 2}, "", true},
      {{1, 4, 9, 12}, {8, 1, 3, 3}, 4, {2, 1}, {2, 1}, {2, 0, 1, 3}},
      {{1, 3, 7, 7}, {3, 1, 5, 5}, 3, {}, {}, {2, 2, 2, 2}},
      {{1, 16, 15, 15}, {16, 1, 3, 3}, 16, {3, 3}, {}, {1, 1, 1, 1}, "", true},
      // Depthwise as in MobileNetV3 (5x5, stride 2) and ConvNeXt (7x7), more channels,
      // dilation with asymmetric pads, wide rows, batch 2.
      {{1, 8, 9, 9}, {8, 1, 3, 3}, 8, {}, {}, {1, 1, 1, 1}, "", true},
      {{2, 24, 13, 30}, {24, 1, 3, 3}, 24, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 40, 14, 14}, {40, 1, 5, 5}, 40, {2, 2}, {}, {2, 2, 2, 2}, "", true},
      {{1, 48, 14, 14}, {48, 1, 7, 7}, 48, {}, {}, {3, 3, 3, 3}, "", true},
      {{1, 17, 12, 11}, {17, 1, 3, 3}, 17, {2, 1}, {2, 3}, {0, 2, 3, 1}},
      // auto_pad.
      {{1, 2, 7, 8}, {3, 2, 3, 4}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
      {{1, 2, 7, 8}, {3, 2, 3, 4}, 1, {2, 2}, {}, {}, "SAME_LOWER", true},
      {{1, 2, 7, 8}, {3, 2, 3, 2}, 1, {}, {}, {}, "VALID"},
      {{1, 4, 7, 8}, {4, 1, 4, 4}, 4, {}, {}, {}, "SAME_LOWER"},
      // 1-D and 3-D.
      {{2, 3, 20}, {5, 3, 4}, 1, {3}, {2}, {1, 2}, "", true},
      {{1, 4, 20}, {4, 1, 3}, 4, {1}, {}, {1, 1}},
      {{1, 2, 5, 6, 7}, {3, 2, 3, 2, 3}, 1, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 1, 1, 0}, "", true},
      {{1, 4, 4, 5, 6}, {4, 2, 2, 2, 2}, 2, {}, {}, {}, "SAME_UPPER"},
      // Few output positions and many maps (late layers): the transposed product, whose
      // columns are gathered per register tile of positions: position counts that leave a
      // partial tile, two depth blocks, strides, dilations, asymmetric pads, 1-D, 3-D, batch.
      {{1, 40, 7, 7}, {64, 40, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true},
      {{2, 24, 13, 11}, {48, 24, 3, 3}, 1, {2, 2}, {1, 2}, {2, 1, 0, 2}, "", true},
      {{1, 16, 40}, {64, 16, 5}, 1, {2}, {}, {2, 1}},
      {{1, 4, 5, 6, 7}, {32, 4, 3, 2, 3}, 1, {}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}, "", true},
      // Pointwise, deep: the transposed product (partial tiles of positions and of maps);
      // shallow: the direct one.
      {{1, 576, 7, 7}, {100, 576, 1, 1}, 1, {}, {}, {}, "", true},
      {{1, 48, 14, 14}, {288, 48, 1, 1}, 1, {}, {}, {}, "", true},
      // Wide enough to use several threads and blocks.
      {{1, 32, 40, 40}, {48, 32, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 64, 9, 9}, {300, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}},
      // Dilations as large as the map (DeepLab's ASPP) with groups and a batch: taps that read
      // only padding for a whole tile of positions are skipped.
      {{2, 16, 8, 9}, {64, 8, 3, 3}, 2, {1, 1}, {5, 5}, {5, 5, 5, 5}, "", true},
      {{2, 12, 10, 10}, {40, 12, 3, 3}, 1, {1, 1}, {12, 12}, {12, 12, 12, 12}, "", true},
  };
  for (const ConvCase& c : cases) {
    CheckConv(c, false);
    CheckConv(c, true);
  }
}

TEST(ConvTest, EveryGemmKernel) {
  for (const std::string& name : AvailableGemmKernels()) {
    ASSERT_TRUE(SelectGemmKernelForTesting(name));
    CheckConv({{1, 5, 13, 10}, {7, 5, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true}, true);
    CheckConv({{1, 16, 6, 6}, {20, 16, 1, 1}}, true);
    // The depthwise kernels follow the same instruction-set choice.
    CheckConv({{1, 5, 14, 14}, {5, 1, 5, 5}, 5, {2, 2}, {}, {2, 2, 2, 2}, "", true}, true);
    CheckConv({{2, 6, 11, 9}, {6, 1, 3, 3}, 6, {1, 1}, {}, {1, 1, 1, 1}, "", true}, true);
    CheckConv({{1, 4, 9, 12}, {8, 1, 3, 3}, 4, {2, 1}, {2, 1}, {2, 0, 1, 3}}, true);
  }
  SelectGemmKernelForTesting(AvailableGemmKernels().front());
}

// A convolution path called directly: `run` computes case c (bias and activation from the
// epilogue) into y. Every case it applies to, with and without the pool, with no activation,
// a clamp and a hard swish, against naive convolution. Returns whether any case ran.
using DirectConv =
    std::function<void(const ConvCase& c, const Spatial3& s, const float* x, const float* w,
                       const GemmEpilogue& epilogue, float* y, ThreadPool* pool)>;
bool MatchesNaiveDirectly(const std::vector<ConvCase>& cases, const std::string& name,
                          const std::function<bool(const Spatial3& s, int64_t depth)>& applies,
                          const DirectConv& run) {
  struct Fused {
    bool clamp, hard_swish;
    float a, b;
  };
  const std::vector<Fused> activations = {
      {false, false, 0, 0}, {true, false, -0.25f, 0.5f}, {false, true, 1.0f / 6.0f, 0.5f}};
  bool ran = false;
  for (const ConvCase& c : cases) {
    const Resolved r = ResolveConv(c);
    SpatialGeometry g;
    const size_t rank = c.x.size() - 2;
    g.input.assign(c.x.begin() + 2, c.x.end());
    g.kernel.assign(c.w.begin() + 2, c.w.end());
    g.strides = c.strides.empty() ? Dims(rank, 1) : c.strides;
    g.dilations = c.dilations.empty() ? Dims(rank, 1) : c.dilations;
    g.pads_begin = r.pads_begin;
    g.pads_end = c.pads.empty() ? Dims(rank, 0) : Dims(c.pads.begin() + rank, c.pads.end());
    g.output = r.out;
    const Spatial3 s(g);
    const int64_t maps = c.w[0], depth = c.x[1] * s.kernel_size();
    if (!applies(s, depth)) continue;
    ran = true;
    std::mt19937 rng(29);
    const auto x = RandomFloats(Tensor::NumElements(c.x), rng);
    const auto w = RandomFloats(Tensor::NumElements(c.w), rng);
    const auto b = RandomFloats(maps, rng);
    Dims out_dims = {1, maps};
    out_dims.insert(out_dims.end(), r.out.begin(), r.out.end());
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &MathPool()}) {
      for (const Fused& f : activations) {
        std::vector<double> expected = NaiveConv(c, x, w, b, r);
        for (double& v : expected) {
          if (f.clamp) v = std::min<double>(std::max<double>(v, f.a), f.b);
          if (f.hard_swish) v *= std::max(0.0, std::min(1.0, f.a * v + f.b));
        }
        GemmEpilogue epilogue{{f.clamp, f.a, f.b, f.hard_swish, f.a, f.b}};
        epilogue.row_bias = c.bias ? b.data() : nullptr;
        std::vector<float> y(maps * s.out_size(), std::numeric_limits<float>::quiet_NaN());
        run(c, s, x.data(), w.data(), epilogue, y.data(), pool);
        const std::string what = name + " Conv x" + ::testing::PrintToString(c.x) + " w" +
                                 ::testing::PrintToString(c.w) +
                                 (pool != nullptr ? " pool" : " no pool") +
                                 (f.clamp ? " clamp" : "") + (f.hard_swish ? " hard swish" : "");
        ExpectNear(FloatTensor(out_dims, y), out_dims, expected, 2e-5, what);
      }
    }
  }
  return ran;
}

// The convolution that reads its columns in place (unit strides), called directly so that each
// case surely takes it, against naive convolution: with and without the pool (bands of rows
// taken by threads, and runs of map panels when the rows are few), several depth blocks, map
// counts that leave a partial register tile, rows narrower than a tile (a tile then spans
// several output rows), a kernel one column wide (no padding columns), dilations, asymmetric
// pads, strides, 1-D, a fused clamp or hard swish, and weights packed in the GEMM's depth
// blocks (without the pool) or the deeper ones of ImplicitConvDepthBlock (with it).
TEST(ConvTest, ImplicitGemmMatchesNaive) {
  const std::vector<ConvCase> cases = {
      {{1, 40, 30, 30}, {13, 40, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 3, 9, 11}, {4, 3, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 5, 12, 10}, {7, 5, 3, 3}, 1, {1, 1}, {}, {}, "", true},
      {{1, 4, 17, 19}, {6, 4, 3, 3}, 1, {1, 1}, {2, 2}, {2, 1, 0, 3}, "", true},
      {{1, 6, 10, 9}, {5, 6, 3, 1}, 1, {1, 1}, {}, {1, 0, 1, 0}},
      {{1, 3, 50}, {5, 3, 4}, 1, {1}, {2}, {1, 2}, "", true},
      {{1, 16, 64, 70}, {32, 16, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 8, 20, 33}, {24, 8, 5, 5}, 1, {1, 1}, {}, {2, 2, 2, 2}},
      // Strides: phase planes.
      {{1, 3, 30, 30}, {16, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, "", true},
      {{1, 8, 19, 21}, {13, 8, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true},
      {{1, 16, 20, 33}, {24, 16, 1, 1}, 1, {2, 2}},
      {{1, 4, 25, 40}, {6, 4, 3, 3}, 1, {3, 2}, {2, 3}, {2, 1, 0, 3}, "", true},
      {{1, 3, 60}, {5, 3, 4}, 1, {2}, {2}, {1, 2}, "", true},
      {{1, 24, 40, 48}, {40, 24, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true},
      // Too few rows for the threads: they split the maps as well, each band copied once per
      // thread.
      {{1, 16, 6, 40}, {40, 16, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 32, 7, 9}, {40, 32, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}},
      // Deeper than one block of either packing.
      {{1, 150, 12, 16}, {20, 150, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      // Bands too big for L2: the tiles prefetch.
      {{1, 200, 20, 40}, {8, 200, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
  };
  // The weights as the GEMM packs them (without the pool) and in the deeper blocks the
  // convolution asks for (with it); with every GEMM micro-kernel that has the path (AVX-512,
  // AVX2).
  bool ran = false;
  for (const std::string& kernel : AvailableGemmKernels()) {
    ASSERT_TRUE(SelectGemmKernelForTesting(kernel));
    ran |= MatchesNaiveDirectly(
        cases, "implicit " + kernel, ImplicitConvApplies,
        [](const ConvCase& c, const Spatial3& s, const float* x, const float* w,
           const GemmEpilogue& epilogue, float* y, ThreadPool* pool) {
          const int64_t maps = c.w[0], channels = c.x[1], depth = channels * s.kernel_size();
          const PackedA packed(w, depth, false, maps, depth,
                               pool != nullptr ? ImplicitConvDepthBlock(depth) : 0);
          ImplicitConv(packed, x, channels, s, epilogue, y, pool);
        });
  }
  SelectGemmKernelForTesting(AvailableGemmKernels().front());
  if (!ran) GTEST_SKIP() << "no AVX-512 or AVX2 GEMM kernel here";
}

// The channels-last transposed convolution (late layers), called directly: rows of one to
// several tiles (up to 12 positions each), channel counts that leave a partial block of 16,
// map counts that leave a partial panel of 32, depths of one block and of several whose
// pieces cross kernel taps, strides, dilations, asymmetric pads, pads wider than the kernel
// reaches (tiles whose taps all read padding, skipped: bias alone), 1-D, 1x1 with stride 2,
// more positions than the items split evenly.
TEST(ConvTest, ChannelsLastMatchesNaive) {
  const std::vector<ConvCase> cases = {
      {{1, 64, 14, 14}, {64, 64, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 32, 28, 28}, {48, 32, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 37, 7, 7}, {45, 37, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      // Tiles that span output rows: rows of 3 (a tile over 2-4 rows), of 14 (a tile over the
      // end of one row and the start of the next), strided, with padding on the sides.
      {{1, 16, 5, 3}, {24, 16, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 40, 14, 14}, {36, 40, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 24, 14, 14}, {20, 24, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}},
      {{1, 8, 6, 7}, {16, 8, 3, 3}, 1, {1, 1}, {}, {0, 2, 1, 0}, "", true},
      {{1, 130, 9, 5}, {33, 130, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}},
      {{1, 20, 30, 27}, {70, 20, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true},
      {{1, 24, 13, 25}, {16, 24, 1, 1}, 1, {2, 2}, {}, {}, "", true},
      {{1, 9, 11, 15}, {40, 9, 3, 3}, 1, {1, 1}, {2, 2}, {2, 1, 0, 3}, "", true},
      {{1, 12, 10, 12}, {32, 12, 5, 3}, 1, {2, 3}, {1, 2}, {3, 0, 1, 2}},
      {{1, 8, 4, 4}, {20, 8, 3, 3}, 1, {1, 1}, {}, {3, 4, 3, 4}, "", true},
      {{1, 50, 40}, {48, 50, 5}, 1, {2}, {2}, {3, 1}, "", true},
      {{1, 300, 6, 6}, {100, 300, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{1, 3, 16, 16}, {64, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}},
      // Dilations as large as the map (DeepLab's ASPP): only the padded pixels that taps not
      // skipped read are copied; here the image alone (rate 12 on 8x8: the centre tap), part
      // of the padding (rate 6 on 9x10), and with strides and asymmetric pads.
      {{1, 17, 8, 8}, {19, 17, 3, 3}, 1, {1, 1}, {12, 12}, {12, 12, 12, 12}, "", true},
      {{1, 20, 9, 10}, {24, 20, 3, 3}, 1, {1, 1}, {6, 6}, {6, 6, 6, 6}, "", true},
      {{1, 10, 12, 11}, {18, 10, 3, 3}, 1, {2, 1}, {4, 5}, {5, 2, 3, 6}},
  };
  // With every GEMM micro-kernel that has the path (AVX-512, AVX2).
  bool ran = false;
  for (const std::string& kernel : AvailableGemmKernels()) {
    ASSERT_TRUE(SelectGemmKernelForTesting(kernel));
    ran |= MatchesNaiveDirectly(
        cases, "channels-last " + kernel,
        [](const Spatial3& s, int64_t) { return ChannelsLastConvApplies(s); },
        [](const ConvCase& c, const Spatial3& s, const float* x, const float* w,
           const GemmEpilogue& epilogue, float* y, ThreadPool* pool) {
          const ChannelsLastWeights packed(w, c.w[0], c.x[1], s);
          ChannelsLastConv(packed, x, c.x[1], s, epilogue, y, pool);
        });
  }
  SelectGemmKernelForTesting(AvailableGemmKernels().front());
  if (!ran) GTEST_SKIP() << "no AVX-512 or AVX2 GEMM kernel here";
}

// Runs of tiles cut so that their pixels fit in the L2 (ResNet-50's 3x3 stride-2 convolution
// of 128 channels at 56x56: a padded image of 1.6 MB) give the sums of the runs as the threads
// alone cut them, bit for bit, planes and channels-last, with and without the pool, with a
// residual; and the naive convolution's within 2e-5.
TEST(ConvTest, ChannelsLastRunsThatFitTheCacheChangeNoSum) {
  const ConvCase c{{1, 128, 56, 56}, {128, 128, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true};
  const Resolved r = ResolveConv(c);
  SpatialGeometry g;
  g.input = {56, 56};
  g.kernel = {3, 3};
  g.strides = {2, 2};
  g.dilations = {1, 1};
  g.pads_begin = r.pads_begin;
  g.pads_end = {1, 1};
  g.output = r.out;
  const Spatial3 s(g);
  if (!ChannelsLastConvApplies(s)) GTEST_SKIP() << "no AVX-512 or AVX2 GEMM kernel here";
  std::mt19937 rng(31);
  const auto x = RandomFloats(Tensor::NumElements(c.x), rng);
  const auto w = RandomFloats(Tensor::NumElements(c.w), rng);
  const auto b = RandomFloats(128, rng);
  const auto residual = RandomFloats(128 * s.out_size(), rng);
  const ChannelsLastWeights packed(w.data(), 128, 128, s);
  const std::vector<double> naive = NaiveConv(c, x, w, b, r);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &MathPool()}) {
    for (const bool channels_last : {false, true}) {
      GemmEpilogue epilogue{{true, 0.0f, std::numeric_limits<float>::infinity()}};
      epilogue.row_bias = b.data();
      if (channels_last) epilogue.residual = residual.data();
      std::vector<float> cut(128 * s.out_size()), whole(cut.size());
      ChannelsLastConv(packed, x.data(), 128, s, epilogue, cut.data(), pool,
                       {channels_last, channels_last, /*runs_fit_l2=*/true});
      ChannelsLastConv(packed, x.data(), 128, s, epilogue, whole.data(), pool,
                       {channels_last, channels_last, /*runs_fit_l2=*/false});
      const std::string what = std::string(pool != nullptr ? "pool" : "no pool") +
                               (channels_last ? ", channels-last" : ", planes");
      ASSERT_EQ(0, std::memcmp(cut.data(), whole.data(), cut.size() * sizeof(float))) << what;
      if (channels_last) continue;  // the image was read as pixels: another convolution
      std::vector<double> expected = naive;
      for (double& v : expected) v = std::max(v, 0.0);
      ExpectNear(FloatTensor({1, 128, 28, 28}, cut), {1, 128, 28, 28}, expected, 2e-5, what);
    }
  }
}

// Depthwise convolution by blocks of 16 channels, called directly so that each case surely
// takes it, against naive convolution, with and without the pool (bands of output rows when
// there are fewer blocks than threads want): channel counts that leave a partial block, runs
// of 1 to 8 output pixels in a row, strides 1, 2 and 3, dilations, asymmetric pads (more rows
// and columns of padding than the kernel reaches, and inputs wider than the taps read),
// batches, and a wide image whose bands must be cut to stay in cache (its rows of padding
// differ from band to band in one thread's image).
TEST(ConvTest, DepthwiseBlocksMatchNaive) {
  const std::vector<ConvCase> cases = {
      {{1, 16, 7, 7}, {16, 1, 5, 5}, 16, {1, 1}, {}, {2, 2, 2, 2}, "", true},
      {{1, 40, 14, 14}, {40, 1, 5, 5}, 40, {2, 2}, {}, {2, 2, 2, 2}, "", true},
      {{2, 17, 12, 11}, {17, 1, 3, 3}, 17, {2, 1}, {2, 3}, {0, 2, 3, 1}, "", true},
      {{1, 33, 28, 28}, {33, 1, 7, 7}, 33, {1, 1}, {}, {3, 3, 3, 3}},
      {{1, 5, 19, 23}, {5, 1, 3, 3}, 5, {3, 3}, {}, {1, 1, 1, 1}, "", true},
      {{1, 1, 9, 16}, {1, 1, 1, 3}, 1, {1, 2}, {}, {0, 1, 0, 1}, "", true},
      {{1, 20, 10, 12}, {20, 1, 3, 3}, 20, {1, 1}, {}, {3, 0, 0, 4}, "", true},
      {{1, 24, 20, 21}, {24, 1, 3, 3}, 24, {2, 2}, {}, {0, 0, 0, 0}},
      {{1, 3, 40, 300}, {3, 1, 7, 7}, 3, {1, 1}, {}, {3, 3, 3, 3}, "", true},
  };
  bool ran = false;
  for (const ConvCase& c : cases) {
    const Resolved r = ResolveConv(c);
    DepthwiseShape d;
    d.batch = c.x[0];
    d.channels = c.x[1];
    d.in_h = c.x[2], d.in_w = c.x[3], d.out_h = r.out[0], d.out_w = r.out[1];
    d.kernel_h = c.w[2], d.kernel_w = c.w[3];
    d.stride_h = c.strides[0], d.stride_w = c.strides[1];
    d.dilation_h = c.dilations.empty() ? 1 : c.dilations[0];
    d.dilation_w = c.dilations.empty() ? 1 : c.dilations[1];
    d.pad_top = r.pads_begin[0], d.pad_left = r.pads_begin[1];
    if (!DepthwiseBlockedApplies(d)) continue;
    ran = true;
    std::mt19937 rng(31);
    const auto x = RandomFloats(Tensor::NumElements(c.x), rng);
    const auto w = RandomFloats(Tensor::NumElements(c.w), rng);
    const auto b = RandomFloats(c.w[0], rng);
    const std::vector<double> expected = NaiveConv(c, x, w, b, r);
    const Dims out_dims = {c.x[0], c.w[0], r.out[0], r.out[1]};
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &MathPool()}) {
      std::vector<float> y(Tensor::NumElements(out_dims), std::numeric_limits<float>::quiet_NaN());
      DepthwiseConv2DBlocked(x.data(), w.data(), c.bias ? b.data() : nullptr, y.data(), d, pool);
      const std::string what = "depthwise blocks x" + ::testing::PrintToString(c.x) + " w" +
                               ::testing::PrintToString(c.w) +
                               (pool != nullptr ? " pool" : " no pool");
      ExpectNear(FloatTensor(out_dims, y), out_dims, expected, 2e-5, what);
    }
  }
  if (!ran) GTEST_SKIP() << "no AVX-512 here";
}

// A Relu, Clip or hard swish fused into the convolution (what the session asks for when one
// alone reads its output): every path (im2col GEMM over several depth blocks, pointwise, the
// transposed product of small maps, depthwise, one output pixel, groups, batch) clamps what it
// writes.
TEST(ConvTest, FusedActivationMatchesNaiveThenActivation) {
  const std::vector<ConvCase> cases = {
      {{1, 3, 9, 11}, {4, 3, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{2, 5, 13, 10}, {7, 5, 3, 3}, 1, {2, 2}, {}, {1, 0, 1, 2}, "", true},
      {{1, 4, 17, 15}, {6, 4, 3, 3}, 1, {1, 1}, {2, 2}, {2, 2, 2, 2}},
      {{1, 40, 30, 30}, {24, 40, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}, "", true},  // 3 depth blocks
      {{1, 40, 12, 12}, {24, 40, 1, 1}, 1, {}, {}, {}, "", true},                // pointwise
      {{1, 48, 7, 7}, {64, 48, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true},        // transposed
      // Transposed pointwise (deep enough for its tiles to pay for the transposition).
      {{1, 576, 7, 7}, {96, 576, 1, 1}, 1, {}, {}, {}, "", true},
      {{2, 6, 11, 9}, {6, 1, 3, 3}, 6, {1, 1}, {}, {1, 1, 1, 1}, "", true},  // depthwise
      // Depthwise, activated plane by plane: a channel multiplier, wide rows, stride 2.
      {{1, 3, 9, 70}, {6, 1, 3, 3}, 3, {1, 1}, {}, {1, 1, 1, 1}, "", true},
      {{2, 5, 12, 13}, {5, 1, 5, 5}, 5, {2, 2}, {}, {2, 2, 2, 2}, "", true},
      {{1, 24, 1, 1}, {40, 24, 1, 1}, 1, {}, {}, {}, "", true},               // one pixel
      {{1, 8, 10, 10}, {6, 4, 3, 3}, 2, {2, 1}, {}, {1, 1, 1, 1}, "", true},  // groups
      {{2, 3, 20}, {5, 3, 4}, 1, {3}, {2}, {1, 2}, "", true},                 // 1-D
  };
  // (lo, hi) of a clamp, or (alpha, beta) of a hard swish when the third is set.
  struct Fused {
    float a, b;
    bool hard_swish;
  };
  const std::vector<Fused> activations = {
      {0.0f, std::numeric_limits<float>::infinity(), false},  // Relu
      {-0.25f, 0.5f, false},                                  // Clip
      {0.0f, 6.0f, false},                                    // Relu6
      {1.0f / 6.0f, 0.5f, true},                              // HardSwish
      {0.9f, 0.4f, true},  // HardSigmoid(alpha 0.9, beta 0.4) * x: both ends reached
  };
  for (const std::string& kernel : AvailableGemmKernels()) {
    ASSERT_TRUE(SelectGemmKernelForTesting(kernel));
    for (const ConvCase& c : cases) {
      for (const Fused& f : activations) {
        auto [inputs, out_dims, expected] = RandomConvRun(c, 23);
        for (double& v : expected) {
          v = f.hard_swish ? v * std::max(0.0, std::min(1.0, f.a * v + f.b))
                           : std::min<double>(std::max<double>(v, f.a), f.b);
        }
        std::shared_ptr<void> state;
        NodeRun run;
        run.constant = {false, true, true};
        run.state = &state;
        if (f.hard_swish) {
          run.fused.hard_swish = true;
          run.fused.hard_swish_alpha = f.a;
          run.fused.hard_swish_beta = f.b;
        } else {
          run.fused.clamp = true;
          run.fused.clamp_min = f.a;
          run.fused.clamp_max = f.b;
        }
        const std::string what = kernel + " Conv x" + ::testing::PrintToString(c.x) + " w" +
                                 ::testing::PrintToString(c.w) +
                                 (f.hard_swish ? " hard swish " : " clamp ") + std::to_string(f.a) +
                                 ", " + std::to_string(f.b);
        auto out = RunNode("Conv", 11, inputs, ConvAttributes(c), run);
        ASSERT_TRUE(out.ok()) << what << ": " << out.status();
        ExpectNear((*out)[0], out_dims, expected, 2e-5, what);
      }
    }
  }
  SelectGemmKernelForTesting(AvailableGemmKernels().front());
}

// NaN reaching a fused clamp stays NaN, as Relu and Clip keep it.
TEST(ConvTest, FusedClampKeepsNaN) {
  std::vector<float> x(1 * 4 * 8 * 8, 0.5f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> w(16 * 4, 1.0f);
  NodeRun run;
  run.fused.clamp = true;
  run.fused.clamp_min = 0.0f;
  run.fused.clamp_max = 1.0f;
  auto out =
      RunNode("Conv", 11, {FloatTensor({1, 4, 8, 8}, x), FloatTensor({16, 4, 1, 1}, w)}, {}, run);
  ASSERT_TRUE(out.ok()) << out.status();
  const float* y = (*out)[0].data<float>();
  for (int64_t m = 0; m < 16; ++m) {
    EXPECT_TRUE(std::isnan(y[m * 64 + 3])) << m;
    EXPECT_EQ(y[m * 64 + 4], 1.0f) << m;  // 4 * 0.5 clamped
  }
}

TEST(ConvTest, RejectsBadShapes) {
  const Tensor x = FloatTensor({1, 4, 5, 5}, std::vector<float>(100, 1));
  const Tensor w = FloatTensor({2, 3, 3, 3}, std::vector<float>(54, 1));
  EXPECT_EQ(RunNode("Conv", 11, {x, w}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  const Tensor w2 = FloatTensor({2, 4, 7, 7}, std::vector<float>(392, 1));
  EXPECT_FALSE(RunNode("Conv", 11, {x, w2}, {}).ok());  // kernel larger than the input
  const Tensor w3 = FloatTensor({3, 2, 3, 3}, std::vector<float>(54, 1));
  EXPECT_FALSE(RunNode("Conv", 11, {x, w3}, {IntAttr("group", 2)}).ok());  // 3 % 2 != 0
  const Tensor w4 = FloatTensor({2, 4, 3, 3}, std::vector<float>(72, 1));
  EXPECT_FALSE(RunNode("Conv", 11, {x, w4}, {IntsAttr("pads", {1, 1})}).ok());
  EXPECT_FALSE(RunNode("Conv", 11, {x, w4}, {IntsAttr("strides", {0, 1})}).ok());
  EXPECT_FALSE(RunNode("Conv", 11, {x, w4, FloatTensor({3}, {1, 2, 3})}, {}).ok());
}

// ---- ConvTranspose ----

TEST(ConvTransposeTest, MatchesNaive) {
  struct Case {
    Dims x, w;
    int64_t group;
    Dims strides, dilations, pads, output_padding;
  };
  const std::vector<Case> cases = {
      {{1, 3, 4, 5}, {3, 2, 3, 3}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {0, 0}},
      {{2, 4, 5, 4}, {4, 3, 3, 2}, 2, {2, 3}, {1, 1}, {1, 0, 1, 1}, {1, 2}},
      {{1, 2, 6, 6}, {2, 2, 3, 3}, 1, {2, 2}, {2, 1}, {2, 1, 0, 1}, {1, 0}},
      {{1, 2, 7}, {2, 3, 4}, 1, {3}, {1}, {1, 2}, {2}},
      {{1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, 1, {2, 1, 2}, {1, 2, 1}, {0, 1, 0, 1, 0, 0}, {1, 0, 0}},
  };
  std::mt19937 rng(23);
  for (const Case& c : cases) {
    const size_t rank = c.x.size() - 2;
    const auto x = RandomFloats(Tensor::NumElements(c.x), rng);
    const auto w = RandomFloats(Tensor::NumElements(c.w), rng);
    const int64_t maps = c.w[1] * c.group;
    const auto b = RandomFloats(maps, rng);
    Dims out;
    for (size_t i = 0; i < rank; ++i) {
      out.push_back(c.strides[i] * (c.x[i + 2] - 1) + c.output_padding[i] +
                    (c.w[i + 2] - 1) * c.dilations[i] + 1 - c.pads[i] - c.pads[i + rank]);
    }
    const Dims in3 = Pad3(Dims(c.x.begin() + 2, c.x.end()), rank, 1);
    const Dims k3 = Pad3(Dims(c.w.begin() + 2, c.w.end()), rank, 1);
    const Dims o3 = Pad3(out, rank, 1), s3 = Pad3(c.strides, rank, 1);
    const Dims d3 = Pad3(c.dilations, rank, 1);
    const Dims p3 = Pad3(Dims(c.pads.begin(), c.pads.begin() + rank), rank, 0);
    const int64_t batch = c.x[0], channels = c.x[1], cg = channels / c.group, mg = c.w[1];
    const int64_t out_size = o3[0] * o3[1] * o3[2], in_size = in3[0] * in3[1] * in3[2];
    std::vector<double> expected(batch * maps * out_size);
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t m = 0; m < maps; ++m) {
        for (int64_t i = 0; i < out_size; ++i) expected[(n * maps + m) * out_size + i] = b[m];
      }
      for (int64_t ch = 0; ch < channels; ++ch) {
        const int64_t g = ch / cg;
        for (int64_t mm = 0; mm < mg; ++mm) {
          for (int64_t i = 0; i < in_size; ++i) {
            const int64_t i0 = i / (in3[1] * in3[2]), i1 = (i / in3[2]) % in3[1], i2 = i % in3[2];
            for (int64_t t = 0; t < k3[0] * k3[1] * k3[2]; ++t) {
              const int64_t t0 = t / (k3[1] * k3[2]), t1 = (t / k3[2]) % k3[1], t2 = t % k3[2];
              const int64_t o0 = i0 * s3[0] - p3[0] + t0 * d3[0];
              const int64_t o1 = i1 * s3[1] - p3[1] + t1 * d3[1];
              const int64_t o2 = i2 * s3[2] - p3[2] + t2 * d3[2];
              if (o0 < 0 || o0 >= o3[0] || o1 < 0 || o1 >= o3[1] || o2 < 0 || o2 >= o3[2]) {
                continue;
              }
              const int64_t m = g * mg + mm;
              expected[(n * maps + m) * out_size + (o0 * o3[1] + o1) * o3[2] + o2] +=
                  double(x[(n * channels + ch) * in_size + i]) *
                  w[((ch * mg + mm) * k3[0] * k3[1] * k3[2]) + t];
            }
          }
        }
      }
    }
    auto result = RunNode("ConvTranspose", 11,
                          {FloatTensor(c.x, x), FloatTensor(c.w, w), FloatTensor({maps}, b)},
                          {IntAttr("group", c.group), IntsAttr("strides", c.strides),
                           IntsAttr("dilations", c.dilations), IntsAttr("pads", c.pads),
                           IntsAttr("output_padding", c.output_padding)});
    ASSERT_TRUE(result.ok()) << result.status();
    Dims out_dims = {batch, maps};
    out_dims.insert(out_dims.end(), out.begin(), out.end());
    ExpectNear((*result)[0], out_dims, expected, 1e-5, "ConvTranspose");
  }
}

TEST(ConvTransposeTest, OutputShapeAndAutoPad) {
  const Tensor x = FloatTensor({1, 1, 3, 3}, std::vector<float>(9, 1));
  const Tensor w = FloatTensor({1, 2, 3, 3}, std::vector<float>(18, 1));
  auto out = RunNode("ConvTranspose", 11, {x, w},
                     {IntsAttr("strides", {3, 2}), IntsAttr("output_shape", {10, 8})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{1, 2, 10, 8}));
  out = RunNode("ConvTranspose", 11, {x, w},
                {IntsAttr("strides", {2, 2}), StringAttr("auto_pad", "SAME_UPPER")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{1, 2, 6, 6}));
  EXPECT_FALSE(
      RunNode("ConvTranspose", 11, {x, FloatTensor({2, 1, 3, 3}, std::vector<float>(18))}, {})
          .ok());
}

TEST(ConvTest, ConvIntegerMatchesWidenedFloatConv) {
  std::mt19937 rng(43);
  std::uniform_int_distribution<int> byte(0, 255);
  const ConvCase c = {{1, 4, 7, 6}, {6, 2, 3, 3}, 2, {2, 1}, {1, 1}, {1, 1, 0, 1}};
  std::vector<uint8_t> x(Tensor::NumElements(c.x)), w(Tensor::NumElements(c.w));
  for (auto& v : x) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  const uint8_t x_zero = 100;
  const std::vector<uint8_t> w_zero = {3, 7, 11, 13, 17, 19};
  std::vector<float> xf(x.size()), wf(w.size());
  for (size_t i = 0; i < x.size(); ++i) xf[i] = float(x[i]) - x_zero;
  for (size_t i = 0; i < w.size(); ++i) wf[i] = float(w[i]) - w_zero[i / 18];
  const Resolved r = ResolveConv(c);
  const std::vector<double> expected = NaiveConv(c, xf, wf, {}, r);
  auto out = RunNode(
      "ConvInteger", 10,
      {Tensor::FromVector(DataType::kUint8, c.x, x), Tensor::FromVector(DataType::kUint8, c.w, w),
       Tensor::FromVector<uint8_t>(DataType::kUint8, {}, {x_zero}),
       Tensor::FromVector(DataType::kUint8, {6}, w_zero)},
      ConvAttributes(c));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].type(), DataType::kInt32);
  Dims out_dims = {1, 6};
  out_dims.insert(out_dims.end(), r.out.begin(), r.out.end());
  ExpectNear((*out)[0], out_dims, expected, 0, "ConvInteger");
}

}  // namespace
}  // namespace ovfix::exec::math_testing
