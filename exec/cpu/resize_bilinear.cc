#include "exec/cpu/resize_bilinear.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ovfix::exec {
namespace {

// The two input positions an output position reads, and their weights: d1 is the distance to
// the first (the weight of the second), d2 the distance to the second. Float throughout.
struct Taps {
  std::vector<int64_t> first, second;
  std::vector<float> d1, d2;
};

float OriginalCoordinate(BilinearCoordinates mode, int64_t position, float scale, int64_t in_size,
                         int64_t out_size) {
  const float x = static_cast<float>(position);
  switch (mode) {
    case BilinearCoordinates::kHalfPixel:
      return (x + 0.5f) / scale - 0.5f;
    case BilinearCoordinates::kPytorchHalfPixel:
      return out_size > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case BilinearCoordinates::kAlignCorners:
      return out_size == 1 ? 0.0f
                           : x * static_cast<float>(in_size - 1) / static_cast<float>(out_size - 1);
    case BilinearCoordinates::kAsymmetric:
      return x / scale;
  }
  return 0.0f;
}

Taps MakeTaps(BilinearCoordinates mode, int64_t in_size, int64_t out_size, float scale) {
  Taps t;
  t.first.resize(out_size);
  t.second.resize(out_size);
  t.d1.resize(out_size);
  t.d2.resize(out_size);
  const float last = static_cast<float>(in_size - 1);
  for (int64_t j = 0; j < out_size; ++j) {
    const float x = std::clamp(OriginalCoordinate(mode, j, scale, in_size, out_size), 0.0f, last);
    const int64_t first = std::min(static_cast<int64_t>(x), in_size - 1);
    const int64_t second = std::min(first + 1, in_size - 1);
    t.first[j] = first;
    t.second[j] = second;
    // At the last position both taps are the same element: half of it twice.
    t.d1[j] = first == second ? 0.5f : std::fabs(x - static_cast<float>(first));
    t.d2[j] = first == second ? 0.5f : std::fabs(x - static_cast<float>(second));
  }
  return t;
}

}  // namespace

void ResizeBilinearFloat(const float* in, float* out, const BilinearShape& s,
                         BilinearCoordinates coordinates, ThreadPool* pool) {
  const Taps ys = MakeTaps(coordinates, s.in_height, s.out_height, s.height_scale);
  const Taps xs = MakeTaps(coordinates, s.in_width, s.out_width, s.width_scale);
  const int64_t rows = s.planes * s.out_height;
  ParallelFor(pool, rows, std::max<int64_t>(1, 2048 / std::max<int64_t>(s.out_width, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const int64_t plane = r / s.out_height, y = r % s.out_height;
                  const float* image = in + plane * s.in_height * s.in_width;
                  const float* row1 = image + ys.first[y] * s.in_width;
                  const float* row2 = image + ys.second[y] * s.in_width;
                  const float dy1 = ys.d1[y], dy2 = ys.d2[y];
                  float* dst = out + r * s.out_width;
                  for (int64_t x = 0; x < s.out_width; ++x) {
                    const int64_t x1 = xs.first[x], x2 = xs.second[x];
                    const float dx1 = xs.d1[x], dx2 = xs.d2[x];
                    // The weight products first, then the sum left to right, each step
                    // rounded to float (no fused multiply-add): onnxruntime's order.
                    const float t11 = (dx2 * dy2) * row1[x1];
                    const float t21 = (dx1 * dy2) * row1[x2];
                    const float t12 = (dx2 * dy1) * row2[x1];
                    const float t22 = (dx1 * dy1) * row2[x2];
                    dst[x] = ((t11 + t21) + t12) + t22;
                  }
                }
              });
}

}  // namespace ovfix::exec
