// Bilinear Resize of float planes, with onnxruntime's CPU arithmetic (all in float).
//
// The generic Resize path interpolates one axis at a time in double precision (as onnx's
// reference does) and rounds once at the end. onnxruntime instead forms each output in float
// as dx2*dy2*X11 + dx1*dy2*X21 + dx2*dy1*X12 + dx1*dy1*X22, so the two differ in the last bit
// for about half the outputs. On its own that is harmless, but a quantizing op downstream
// (DynamicQuantizeLinear) turns a last-bit difference at a rounding boundary into a whole
// quantization step, and the steps compound through every quantized layer after it: this was
// the 9% difference of an onnxruntime-quantized UNet. Doing what onnxruntime does makes
// bilinear Resize bit-identical with the peer that `compare` and the tests check against.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/thread_pool.h"

namespace ovfix::exec {

// How an output position maps to an input coordinate (the Resize modes this path covers).
enum class BilinearCoordinates { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric };

struct BilinearShape {
  int64_t planes = 1;  // product of the leading (not resized) dims
  int64_t in_height = 1, in_width = 1, out_height = 1, out_width = 1;
  float height_scale = 1, width_scale = 1;  // output / input, as onnxruntime reads them
};

// The two input positions an output position reads along one axis, and their weights: d1 is
// the distance to the first (the weight of the second), d2 the distance to the second. Float
// throughout, as onnxruntime computes them; the OpenCL kernel reads the same tables.
struct BilinearTaps {
  std::vector<int64_t> first, second;
  std::vector<int32_t> first32, second32;  // the same, for vector loads
  bool ascending = true;                   // first and second never decrease
  std::vector<float> d1, d2;
};

BilinearTaps MakeBilinearTaps(BilinearCoordinates mode, int64_t in_size, int64_t out_size,
                              float scale);

// in: planes x in_height x in_width; out: planes x out_height x out_width.
void ResizeBilinearFloat(const float* in, float* out, const BilinearShape& shape,
                         BilinearCoordinates coordinates, ThreadPool* pool);

}  // namespace ovfix::exec
