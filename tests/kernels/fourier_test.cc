// Tests of DFT and STFT (exec/cpu/fourier.cc) on signals small enough to transform by hand:
// the 4-point transform of [1, 2, 3, 4] is [10, -2 + 2i, -2, -2 - 2i] (e^(-2 pi i / 4) = -i).
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::HasSubstr;

Tensor Int64Scalar(int64_t v) { return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {v}); }

TEST(DftTest, RealSignalFourPoints) {
  auto out = RunNode("DFT", 17, {FloatTensor({1, 4, 1}, {1, 2, 3, 4})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}, 1e-6, "dft");
}

TEST(DftTest, OnesidedKeepsTheFirstHalf) {
  auto out = RunNode("DFT", 17, {FloatTensor({1, 4, 1}, {1, 2, 3, 4})}, {IntAttr("onesided", 1)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 3, 2}, {10, 0, -2, 2, -2, 0}, 1e-6, "onesided");
}

TEST(DftTest, InverseOfTheTransformIsTheSignal) {
  const Tensor spectrum = FloatTensor({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  auto out = RunNode("DFT", 17, {spectrum}, {IntAttr("inverse", 1)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 4, 2}, {1, 0, 2, 0, 3, 0, 4, 0}, 1e-6, "inverse");
}

TEST(DftTest, DftLengthCutsAndPads) {
  // Cut to [1, 2]: [3, -1]. Padded to [1, 2, 0]: 1 + 2 w^k with w = e^(-2 pi i / 3).
  auto cut = RunNode("DFT", 17, {FloatTensor({1, 4, 1}, {1, 2, 3, 4}), Int64Scalar(2)}, {});
  ASSERT_TRUE(cut.ok()) << cut.status();
  ExpectNear((*cut)[0], {1, 2, 2}, {3, 0, -1, 0}, 1e-6, "cut");
  auto padded = RunNode("DFT", 17, {FloatTensor({1, 2, 1}, {1, 2}), Int64Scalar(3)}, {});
  ASSERT_TRUE(padded.ok()) << padded.status();
  const double s = std::sqrt(3.0);  // 2 e^(-2 pi i / 3) = -1 - i sqrt(3)
  ExpectNear((*padded)[0], {1, 3, 2}, {3, 0, 0, -s, 0, s}, 1e-6, "padded");
}

TEST(DftTest, AlongTheSecondSignalAxis) {
  // Rows [1, 2] and [3, 4] transformed along axis 2: [3, -1] and [7, -1].
  auto out = RunNode("DFT", 17, {FloatTensor({1, 2, 2, 1}, {1, 2, 3, 4})}, {IntAttr("axis", 2)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 2, 2, 2}, {3, 0, -1, 0, 7, 0, -1, 0}, 1e-6, "axis 2");
}

TEST(DftTest, RefusesBadAxesAndLengths) {
  const Tensor x = FloatTensor({1, 4, 1}, {1, 2, 3, 4});
  auto axis = RunNode("DFT", 17, {x}, {IntAttr("axis", 2)});
  ASSERT_FALSE(axis.ok());
  EXPECT_THAT(axis.status().message(), HasSubstr("axis"));
  auto length = RunNode("DFT", 17, {x, Int64Scalar(0)}, {});
  ASSERT_FALSE(length.ok());
  EXPECT_THAT(length.status().message(), HasSubstr("dft_length"));
}

TEST(StftTest, FramesWithoutAndWithWindow) {
  // Frames [1, 2, 3, 4] and [3, 4, 5, 6] (step 2): [10, -2 + 2i, -2] and [18, -2 + 2i, -2].
  const Tensor signal = FloatTensor({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  auto plain = RunNode("STFT", 17, {signal, Int64Scalar(2), Tensor(), Int64Scalar(4)}, {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ExpectNear((*plain)[0], {1, 2, 3, 2}, {10, 0, -2, 2, -2, 0, 18, 0, -2, 2, -2, 0}, 1e-6,
             "no window");
  // Window [0, 1, 1, 0]: [0, 2, 3, 0] -> [5, -3 - 2i, 1]; [0, 4, 5, 0] -> [9, -5 - 4i, 1].
  auto windowed = RunNode("STFT", 17, {signal, Int64Scalar(2), FloatTensor({4}, {0, 1, 1, 0})}, {});
  ASSERT_TRUE(windowed.ok()) << windowed.status();
  ExpectNear((*windowed)[0], {1, 2, 3, 2}, {5, 0, -3, -2, 1, 0, 9, 0, -5, -4, 1, 0}, 1e-6,
             "window");
}

TEST(StftTest, TwoSidedKeepsEveryBin) {
  auto out = RunNode(
      "STFT", 17, {FloatTensor({1, 4, 1}, {1, 2, 3, 4}), Int64Scalar(4), Tensor(), Int64Scalar(4)},
      {IntAttr("onesided", 0)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}, 1e-6, "two-sided");
}

TEST(StftTest, RefusesAFrameLongerThanTheSignal) {
  auto out =
      RunNode("STFT", 17,
              {FloatTensor({1, 4, 1}, {1, 2, 3, 4}), Int64Scalar(1), Tensor(), Int64Scalar(5)}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("frame_length"));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
