// A softmax over {10, 11, 12} whose exp(12) = 162755 is beyond fp16 (65504), in two forms:
// converted (float16 in and out, the Exp and the sum kept in float32 between Casts, as a
// conversion's fp32 island does) and original (all float32). The fp16 precisions must keep
// the converted form's island in float32 and force the original into half, on the CPU and
// on OpenCL alike.
#pragma once

namespace ovfix::testing {

inline constexpr char kSoftmaxIsland[] = R"(
    m (float16[3] x) => (float16[3] y) {
      f = Cast<to = 1>(x)
      e = Exp(f)
      s = ReduceSum<keepdims = 1>(e)
      p = Div(e, s)
      y = Cast<to = 10>(p)
    })";
inline constexpr char kSoftmaxFloat[] = R"(
    m (float[3] x) => (float[3] y) {
      e = Exp(x)
      s = ReduceSum<keepdims = 1>(e)
      y = Div(e, s)
    })";
inline constexpr float kSoftmaxInput[3] = {10, 11, 12};
// exp(x_i - 12) / sum: worked out by hand.
inline constexpr float kSoftmaxExpected[3] = {0.0900306f, 0.2447285f, 0.6652410f};

}  // namespace ovfix::testing
