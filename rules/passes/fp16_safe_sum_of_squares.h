// fp16_safe_sum_of_squares: for backends that run every tensor in fp16 whatever the model's
// Casts say (OpenVINO GPU, ncnn on Vulkan with fp16 storage), a sum of squares whose
// calibrated value exceeds fp16's range is computed on x / s, with s = 2^k, and s is carried
// into the square root that consumes it (powers of two scale exactly in binary floating point):
//   sqrt(sum(x^2) + eps)       ->  s * sqrt(sum((x/s)^2) + eps/s^2)
//   (sum(x^2) + eps)^-1/2      ->  (sum((x/s)^2) + eps/s^2)^-1/2 / s
//   ReduceL2(x)                ->  s * ReduceL2(x/s)
// where sum is ReduceSum or ReduceMean of Pow(x, 2) or Mul(x, x), or ReduceSumSquare, and the
// square root is Sqrt or Pow(., 0.5) / Pow(., -0.5). This covers L2 and RMS norms, standard
// deviations (ReduceMean((x - m)^2)), StyleGAN's pixel norm x / sqrt(mean(x^2) + eps) and
// GFPGAN's weight demodulation rsqrt(sum(w^2) + eps). s is chosen from the calibrated |x| so
// that the scaled sum stays near 2^8. A sum with no square root after it (an energy output)
// is left alone: its own value exceeds fp16 and no rescaling inside the graph changes that.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

inline constexpr char kFp16SafeSumOfSquares[] = "fp16_safe_sum_of_squares";
absl::StatusOr<int> RescaleSumsOfSquares(PassContext& ctx);

}  // namespace ovfix::rules
