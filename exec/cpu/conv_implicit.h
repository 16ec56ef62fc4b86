// Convolution as a GEMM that reads its columns in place (no im2col). The image is copied, a
// band of output rows at a time, into a zero-padded buffer whose rows are
// Wp = Wo + (KW - 1) * dilation wide. Output position (oh, ow) of the band is then "virtual
// column" (oh - oh0) * Wp + ow, and row k = (c, kh, kw) of the column matrix is the buffer
// itself from offset c * channel_stride + kh * dilation_h * Wp + kw * dilation_w: the
// micro-kernel loads its B vectors straight from there. The Wp - Wo virtual columns at the end
// of each row are computed and not stored. With strides each channel is held as phase planes
// (pixels (y * stride_h + a, x * stride_w + b) for phase (a, b)), in which every tap reads
// with unit strides; Wp and the offsets are then counted in phase pixels.
#pragma once

#include <cstdint>

#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/gemm.h"
#include "exec/thread_pool.h"

namespace ovfix::exec {

// Whether ImplicitConv takes this geometry (maps x depth weights) with the current GEMM
// micro-kernel: 1-D or 2-D, output rows wide enough to fill the register tile, and the
// AVX-512 or AVX2 kernel.
bool ImplicitConvApplies(const Spatial3& s, int64_t depth);

// The depth blocks to pack the weights in for ImplicitConv: deeper than the GEMM's (each
// block ends in a round trip of the tile's sums through memory).
int64_t ImplicitConvDepthBlock(int64_t depth);

// out (weights.rows() maps x s.out_size() positions) = weights (maps x channels * kernel
// size, packed) times the column matrix of `image` (channels x s.in_size()), with the
// epilogue's bias and activation (its alpha and beta must be 1 and 0). Output row bands are
// taken by the pool's threads as they come free.
void ImplicitConv(const PackedA& weights, const float* image, int64_t channels, const Spatial3& s,
                  const GemmEpilogue& epilogue, float* out, ThreadPool* pool);

}  // namespace ovfix::exec
