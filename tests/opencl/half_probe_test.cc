// The check behind half arithmetic on devices that do not advertise cl_khr_fp16 (NVIDIA's):
// what a device that really computes in half returns passes, a device that computes `half`
// in float or has a broken math function is refused with the reason. Values are worked out
// on the host with the half rounding of ir/float16.h; no OpenCL device is needed.
#include <cmath>
#include <vector>

#include "exec/opencl/opencl_runtime.h"
#include "gtest/gtest.h"
#include "ir/float16.h"

namespace ovfix::exec::opencl {
namespace {

// What kernels/half_probe.cl computes on a device with half arithmetic, x = 0.5: every
// result rounded to half.
std::vector<float> HalfResults() {
  const float x = 0.5f;
  const float third = RoundToHalf(x / RoundToHalf(3.0f));
  return {1.0f,  // 1 + 2^-12 in half
          third,
          RoundToHalf(std::exp(x)),
          RoundToHalf(std::log(x)),
          RoundToHalf(std::sqrt(x)),
          RoundToHalf(std::tanh(x)),
          RoundToHalf(x * x),
          x,
          1.0f,
          1.0f,
          1.0f,
          RoundToHalf(std::erf(x)),
          1.0f};
}

TEST(HalfProbe, HalfResultsPass) {
  const std::vector<float> out = HalfResults();
  ASSERT_EQ(out.size(), kHalfProbeOutputs);
  EXPECT_TRUE(CheckHalfProbe(out).ok()) << CheckHalfProbe(out);
}

TEST(HalfProbe, HalfComputedInFloatIsRefused) {
  std::vector<float> out = HalfResults();
  out[0] = 1.0f + 1.0f / 4096;  // what float arithmetic keeps
  const absl::Status s = CheckHalfProbe(out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("computed in float"), std::string::npos) << s;
}

TEST(HalfProbe, AWrongMathFunctionIsNamed) {
  std::vector<float> out = HalfResults();
  out[2] = 2.0f;  // exp(0.5) is 1.6487
  const absl::Status s = CheckHalfProbe(out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exp"), std::string::npos) << s;
  out = HalfResults();
  out[12] = std::nanf("");  // a NaN from the vector conversions
  EXPECT_FALSE(CheckHalfProbe(out).ok());
}

TEST(HalfProbe, AShortResultIsAnError) {
  std::vector<float> out = HalfResults();
  out.pop_back();
  EXPECT_FALSE(CheckHalfProbe(out).ok());
}

}  // namespace
}  // namespace ovfix::exec::opencl
