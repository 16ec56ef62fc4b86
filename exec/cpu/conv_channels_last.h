// Convolution with few output positions (late layers) as the transposed product
// Y^T = columns^T * W^T, the columns read in place. The image is copied once into a zero-padded
// channels-last buffer (pixel after pixel, the channels of a pixel contiguous), so that the row
// of columns^T for output position p through kernel tap (kh, kw) is the C channels of one
// pixel: the micro-kernel broadcasts them from there, no im2col. The weights are packed as B
// (panels of the GEMM tile's columns: 32 maps with AVX-512, 16 with AVX2) with their depth in
// (kh, kw, c) order. A tile is up to the GEMM tile's rows of positions (12 or 6) of one output
// row (their pixels stride_w * C floats apart) by a panel of maps; kernel taps that read only
// padding for every position of a tile are skipped. Each thread takes panels of
// maps for runs of positions and transposes its part of the product back into Y's planes with
// the bias and activation while it is still in cache.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/gemm.h"
#include "exec/thread_pool.h"

namespace ovfix::exec {

// Whether ChannelsLastConv takes this geometry: 1-D or 2-D, pads not negative, the AVX-512 or
// the AVX2 GEMM kernel.
bool ChannelsLastConvApplies(const Spatial3& s);

// W (maps x channels x kernel taps, ONNX's layout) packed for ChannelsLastConv with the GEMM
// kernel in use: panel after panel of its tile's columns of maps, each panel's whole depth (in
// (kh, kw, c) order) contiguous at a panel's width a step (maps past the last are 0), so that a
// thread streams its panels front to back.
class ChannelsLastWeights {
 public:
  ChannelsLastWeights(const float* w, int64_t maps, int64_t channels, const Spatial3& s);
  int64_t maps() const { return maps_; }
  int64_t depth() const { return depth_; }
  const float* panel(int64_t j) const { return data_.get() + j * panel_width_ * depth_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  int64_t maps_ = 0, depth_ = 0, panel_width_ = 0;
  std::unique_ptr<float[], Free> data_;
};

// How ChannelsLastConv's image and output lie: planes (NCHW: channel after channel), or
// channels-last (NHWC: pixel after pixel, the channels of a pixel contiguous), as
// ovfix.fused.NhwcConv keeps a chain of convolutions.
struct ChannelsLastIo {
  bool input_channels_last = false;
  bool output_channels_last = false;
  // Runs of tiles cut so that their pixels stay in the L2 where that reads less (the same
  // sums; false only for tests that compare the two).
  bool runs_fit_l2 = true;
};

// out (weights' maps x s.out_size() positions, or positions x maps when the output is
// channels-last) = the convolution of `image` (channels planes of s.in_size(), or s.in_size()
// pixels of `channels` floats) with the weights, then the epilogue's bias (row_bias, per map),
// its residual (a channels-last output's only) and activation.
void ChannelsLastConv(const ChannelsLastWeights& weights, const float* image, int64_t channels,
                      const Spatial3& s, const GemmEpilogue& epilogue, float* out, ThreadPool* pool,
                      ChannelsLastIo io = {});

// Pixels [0, count) of `image` (channels planes, `plane` floats apart) into `dst` channels-last
// (count pixels of `channels` floats): 16 or 8 channels by as many pixels at a time through an
// in-register transpose with the AVX-512 or AVX2 GEMM kernel, one by one otherwise.
void CopyPixelsChannelsLast(const float* image, int64_t channels, int64_t plane, int64_t count,
                            float* dst);

// dst[m * ldd + i] = activation(src[i * lds + m] + row_bias[m]) for i < rows and maps
// [m0, m1): a product of positions by maps back into planes of maps.
void TransposeAddBiasMaps(const float* src, int64_t lds, int64_t rows, int64_t m0, int64_t m1,
                          const GemmEpilogue& epilogue, float* dst, int64_t ldd);

// dst[i * ldd + m] = activation(src[i * lds + m] + row_bias[m] + residual[i * ldd + m]) for
// i < rows and maps [m0, m1): a product of positions by maps into a channels-last output (in
// place when dst is src), rounded as TransposeAddBiasMaps rounds; `residual` (laid out as dst)
// may be null.
void AddBiasToMaps(const float* src, int64_t lds, int64_t rows, int64_t m0, int64_t m1,
                   const GemmEpilogue& epilogue, const float* residual, float* dst, int64_t ldd);

}  // namespace ovfix::exec
