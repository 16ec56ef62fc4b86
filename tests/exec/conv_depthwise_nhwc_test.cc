// The channels-last depthwise convolution (exec/cpu/conv_depthwise_nhwc.h) against the NCHW
// one (DepthwiseConv2D) on the same data: the NHWC output must be the NHWC transpose of the
// NCHW output bit for bit (both sum the same products in the same order), for every CPU
// kernel (instruction set) this machine has, kernel sizes 3 to 7, strides, dilations,
// symmetric and asymmetric padding, channel counts that fill whole vectors and ones that do
// not, batches, with and without bias, the fused activations, one thread and pools of two and
// three (maps of a few rows, whose rows the pool cuts by channels).
#include "exec/cpu/conv_depthwise_nhwc.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec/cpu/conv_depthwise.h"
#include "exec/cpu/gemm.h"
#include "gtest/gtest.h"

namespace ovfix::exec {
namespace {

struct Case {
  int64_t batch, channels, in_h, in_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

DepthwiseShape ShapeOf(const Case& c) {
  DepthwiseShape s;
  s.batch = c.batch;
  s.channels = c.channels;
  s.in_h = c.in_h, s.in_w = c.in_w;
  s.kernel_h = c.kernel_h, s.kernel_w = c.kernel_w;
  s.stride_h = c.stride_h, s.stride_w = c.stride_w;
  s.dilation_h = s.dilation_w = c.dilation;
  s.pad_top = c.pad_top, s.pad_left = c.pad_left;
  s.out_h =
      (c.in_h + c.pad_top + c.pad_bottom - (c.kernel_h - 1) * c.dilation - 1) / c.stride_h + 1;
  s.out_w =
      (c.in_w + c.pad_left + c.pad_right - (c.kernel_w - 1) * c.dilation - 1) / c.stride_w + 1;
  return s;
}

std::string Describe(const Case& c) {
  return "n" + std::to_string(c.batch) + " c" + std::to_string(c.channels) + " " +
         std::to_string(c.in_h) + "x" + std::to_string(c.in_w) + " k" + std::to_string(c.kernel_h) +
         "x" + std::to_string(c.kernel_w) + " s" + std::to_string(c.stride_h) + "," +
         std::to_string(c.stride_w) + " d" + std::to_string(c.dilation) + " pads " +
         std::to_string(c.pad_top) + "," + std::to_string(c.pad_left) + "," +
         std::to_string(c.pad_bottom) + "," + std::to_string(c.pad_right);
}

// [batch, channels, h, w] to [batch, h, w, channels].
std::vector<float> ToNhwc(const std::vector<float>& nchw, int64_t batch, int64_t channels,
                          int64_t h, int64_t w) {
  std::vector<float> nhwc(nchw.size());
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t p = 0; p < h * w; ++p) {
        nhwc[(n * h * w + p) * channels + c] = nchw[(n * channels + c) * h * w + p];
      }
    }
  }
  return nhwc;
}

std::vector<float> RandomFloats(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

struct Activation {
  const char* name;
  FusedActivation fused;
};

std::vector<Activation> Activations() {
  FusedActivation relu, relu6, hard_swish;
  relu.clamp = relu6.clamp = true;
  relu.clamp_max = std::numeric_limits<float>::infinity();
  relu6.clamp_max = 6.0f;
  hard_swish.hard_swish = true;
  hard_swish.hard_swish_alpha = 1.0f / 6.0f;
  hard_swish.hard_swish_beta = 0.5f;
  return {{"none", {}}, {"relu", relu}, {"relu6", relu6}, {"hard swish", hard_swish}};
}

// Floats kept around the tensors a kernel reads and writes, to see it stays inside them.
constexpr int64_t kGuard = 64;

TEST(DepthwiseNhwcTest, MatchesNchwBitForBit) {
  const std::vector<Case> cases = {
      {2, 8, 10, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1},    // 3x3 stride 1 pad 1, batch 2
      {1, 13, 15, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1},   // 3x3 stride 2
      {2, 3, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1},      // 3 channels (no whole vector)
      {1, 5, 8, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1},     // half a vector of AVX2
      {1, 72, 12, 20, 5, 5, 1, 1, 1, 2, 2, 2, 2},   // 5x5 pad 2
      {1, 240, 14, 14, 7, 7, 1, 1, 1, 3, 3, 3, 3},  // 7x7 pad 3 (ConvNeXt)
      {2, 96, 7, 7, 7, 7, 1, 1, 1, 3, 3, 3, 3},     // 7x7 on a 7x7 map
      {1, 13, 11, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2},    // dilation 2
      {1, 12, 16, 13, 5, 5, 2, 2, 2, 4, 4, 4, 4},   // dilation 2, stride 2
      {1, 72, 14, 15, 3, 3, 2, 2, 1, 0, 1, 1, 0},   // pads top 0, left 1
      {2, 8, 13, 12, 5, 5, 2, 2, 1, 0, 1, 2, 0},    // pads top 0, left 1, stride 2
      {1, 240, 12, 40, 5, 5, 2, 1, 1, 2, 2, 2, 2},  // stride (2, 1)
      {1, 8, 5, 6, 3, 3, 1, 1, 1, 3, 3, 3, 3},      // padding past the taps' reach
      {1, 16, 9, 20, 3, 3, 3, 3, 1, 1, 1, 1, 1},    // stride 3
      {1, 24, 8, 30, 1, 3, 1, 2, 1, 0, 1, 0, 1},    // 1x3
      {2, 20, 12, 80, 5, 5, 1, 1, 1, 2, 2, 2, 2},   // wide rows
      // Fewer rows than a pool's threads have items: rows cut into ranges of channel groups.
      {1, 480, 3, 80, 5, 5, 1, 1, 1, 2, 2, 2, 2},   // a recognizer's 3-row map
      {1, 200, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1},   // a last group of one vector
      {1, 136, 2, 120, 3, 3, 1, 1, 1, 1, 1, 1, 1},  // groups of 64, 64 and 8
  };
  ThreadPool two_threads(2);
  ThreadPool three_threads(3);
  const std::vector<Activation> activations = Activations();
  for (const std::string& kernel : AvailableGemmKernels()) {
    ASSERT_TRUE(SelectGemmKernelForTesting(kernel));
    for (const Case& c : cases) {
      const DepthwiseShape s = ShapeOf(c);
      std::mt19937 rng(static_cast<uint32_t>(c.channels * 131 + c.in_w));
      const std::vector<float> x = RandomFloats(c.batch * c.channels * c.in_h * c.in_w, rng);
      const std::vector<float> w = RandomFloats(c.channels * c.kernel_h * c.kernel_w, rng);
      const std::vector<float> b = RandomFloats(c.channels, rng);
      const int64_t out_size = c.batch * c.channels * s.out_h * s.out_w;
      // x in NHWC between guards of NaN.
      std::vector<float> x_nhwc(kGuard, std::numeric_limits<float>::quiet_NaN());
      const std::vector<float> transposed = ToNhwc(x, c.batch, c.channels, c.in_h, c.in_w);
      x_nhwc.insert(x_nhwc.end(), transposed.begin(), transposed.end());
      x_nhwc.resize(x_nhwc.size() + kGuard, std::numeric_limits<float>::quiet_NaN());
      for (const bool bias : {true, false}) {
        for (const Activation& a : activations) {
          std::vector<float> y_nchw(out_size);
          DepthwiseConv2D(x.data(), w.data(), bias ? b.data() : nullptr, y_nchw.data(), s, nullptr,
                          a.fused);
          const std::vector<float> expected = ToNhwc(y_nchw, c.batch, c.channels, s.out_h, s.out_w);
          for (ThreadPool* pool :
               {static_cast<ThreadPool*>(nullptr), &two_threads, &three_threads}) {
            const std::string what = kernel + " " + Describe(c) + (bias ? " bias" : "") + " " +
                                     a.name + (pool != nullptr ? " pool" : "");
            std::vector<float> y(out_size + 2 * kGuard, 12345.0f);
            DepthwiseConv2DNhwc(x_nhwc.data() + kGuard, w.data(), bias ? b.data() : nullptr,
                                y.data() + kGuard, s, pool, a.fused);
            for (int64_t i = 0; i < kGuard; ++i) {
              ASSERT_EQ(y[i], 12345.0f) << what << ": wrote before y";
              ASSERT_EQ(y[kGuard + out_size + i], 12345.0f) << what << ": wrote past y";
            }
            for (int64_t i = 0; i < out_size; ++i) {
              const float got = y[kGuard + i];
              ASSERT_EQ(std::memcmp(&got, &expected[i], sizeof(float)), 0)
                  << what << ": output " << i << " (pixel " << i / c.channels << ", channel "
                  << i % c.channels << ") is " << got << ", NCHW gives " << expected[i];
            }
          }
        }
      }
    }
  }
  SelectGemmKernelForTesting(AvailableGemmKernels().front());
}

// Weights repacked once serve several calls, and give what the per-call repacking gives.
TEST(DepthwiseNhwcTest, KeptWeightsMatchPerCallWeights) {
  const Case c = {1, 40, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  const DepthwiseShape s = ShapeOf(c);
  std::mt19937 rng(7);
  const std::vector<float> w = RandomFloats(c.channels * 9, rng);
  const std::vector<float> b = RandomFloats(c.channels, rng);
  const DepthwiseNhwcWeights kept(w.data(), b.data(), c.channels, 3, 3);
  for (int round = 0; round < 2; ++round) {
    const std::vector<float> x = RandomFloats(c.channels * c.in_h * c.in_w, rng);
    const int64_t out_size = c.channels * s.out_h * s.out_w;
    std::vector<float> expected(out_size), y(out_size);
    DepthwiseConv2DNhwc(x.data(), w.data(), b.data(), expected.data(), s, nullptr);
    DepthwiseConv2DNhwc(x.data(), kept, y.data(), s, nullptr);
    EXPECT_EQ(std::memcmp(y.data(), expected.data(), out_size * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace ovfix::exec
