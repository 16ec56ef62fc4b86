// 3x3 convolutions with stride 1 by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2016): each 2x2 block of outputs of a
// map is read from the 4x4 patch of input pixels under it as
//
//   Y = A^T [ sum_c (G g_c G^T) .* (B^T d_c B) ] A
//
// with B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2;
// 0 0 1] and A^T = [1 1 1 0; 0 1 -1 -1]: the sum over channels is 16 matrix products (one per
// element of the 4x4 transformed patch, positions by channels times channels by maps), 16
// multiply-adds per 2x2 outputs and channel where the direct convolution does 36. The input
// and output transforms only add and subtract, and the weights' transform is made in double,
// so the outputs are the direct convolution's to a few units of the last place of the sums
// (tests/exec/conv_winograd_test.cc bounds them at 1e-6 of the output's range).
//
// The image is read channels-last (NHWC); an image in planes is copied into that layout first.
// The tiles (2x2 output blocks, row-major) are cut into runs sized so that a run's transformed
// patches and products stay in L2; a thread transforms a run's patches, multiplies them by the
// 16 transformed weight matrices (packed once, gemm.h) and transforms the products back. The
// arithmetic is the same whichever layout the image and output have: a convolution gives the
// same floats in a chain kept channels-last (ovfix.fused.NhwcConv) and in planes (Conv).
#pragma once

#include <array>
#include <cstdint>

#include "exec/cpu/conv_channels_last.h"
#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/gemm.h"
#include "exec/thread_pool.h"

namespace ovfix::exec {

// Whether the Conv kernel takes F(2x2, 3x3) for this geometry: 2-D, a 3x3 kernel, stride and
// dilation 1, pads of at most 2 on each side, one group, at least 8 channels and 8 maps, outputs of
// 7x7 or more (ResNet's last maps, 16 tiles for 49 outputs, still do 0.6x the multiply-adds;
// smaller maps would stream 16/9 the weights for little).
bool WinogradConvApplies(const Spatial3& s, int64_t group, int64_t channels, int64_t maps);

// W (maps x channels x 3 x 3, ONNX's layout) transformed (U = G g G^T, in double) and packed as
// 16 B matrices of channels x maps, one per element of the 4x4 transformed patch.
class WinogradWeights {
 public:
  WinogradWeights(const float* w, int64_t maps, int64_t channels);
  int64_t maps() const { return maps_; }
  int64_t channels() const { return channels_; }
  const PackedB& element(int xi) const { return elements_[xi]; }

 private:
  int64_t maps_ = 0, channels_ = 0;
  std::array<PackedB, 16> elements_;
};

// out = the convolution of `image` (one image: `channels` planes of s.in_size(), or s.in_size()
// pixels of `channels` floats when io.input_channels_last) with the weights, then the
// epilogue's row_bias (per map), residual (a channels-last output's only, laid out as it) and
// activation; out is maps planes of s.out_size(), or s.out_size() pixels of maps floats when
// io.output_channels_last. The bias, residual and activation round as AddBiasToMaps and
// TransposeAddBiasMaps round them.
void WinogradConv(const WinogradWeights& weights, const float* image, const Spatial3& s,
                  const GemmEpilogue& epilogue, float* out, ThreadPool* pool,
                  ChannelsLastIo io = {});

}  // namespace ovfix::exec
