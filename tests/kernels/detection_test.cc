// Tests of NonMaxSuppression (exec/cpu/detection.cc) on boxes worked by hand: suppression by
// IoU on either side of the threshold, both box formats, score_threshold, the per-class limit,
// the (batch, class, score) order of the rows, and malformed inputs.
#include <cstdint>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Tensor Int64Scalar(int64_t v) { return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {v}); }
Tensor FloatScalar(float v) { return FloatTensor({}, {v}); }

// Boxes 0 and 1 ([y1, x1, y2, x2]) overlap with IoU 0.9 / 1.1 = 0.818; box 2 is apart.
const std::vector<float> kCorners = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3};
// The same boxes as [x_center, y_center, width, height].
const std::vector<float> kCenters = {0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1, 2.5f, 0.5f, 1, 1};
const std::vector<float> kScores = {0.9f, 0.8f, 0.7f};

// Runs NMS (opset 11) and returns the rows of selected_indices, flattened.
std::vector<int64_t> Select(const std::vector<Tensor>& inputs, int64_t center_point_box = 0) {
  auto out =
      RunNode("NonMaxSuppression", 11, inputs, {IntAttr("center_point_box", center_point_box)});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  const Tensor& y = (*out)[0];
  EXPECT_EQ(y.type(), DataType::kInt64);
  EXPECT_EQ(y.rank(), 2u);
  EXPECT_EQ(y.dim(1), 3);
  std::vector<int64_t> rows(y.numel());
  for (int64_t i = 0; i < y.numel(); ++i) rows[i] = y.GetAsInt64(i);
  return rows;
}

TEST(NonMaxSuppressionTest, OverlappingBoxIsSuppressed) {
  const Tensor boxes = FloatTensor({1, 3, 4}, kCorners);
  const Tensor scores = FloatTensor({1, 1, 3}, kScores);
  EXPECT_THAT(Select({boxes, scores, Int64Scalar(3), FloatScalar(0.5f)}),
              ElementsAreArray<int64_t>({0, 0, 0, 0, 0, 2}));
  // Above the pair's IoU of 0.818 every box stays.
  EXPECT_THAT(Select({boxes, scores, Int64Scalar(3), FloatScalar(0.9f)}),
              ElementsAreArray<int64_t>({0, 0, 0, 0, 0, 1, 0, 0, 2}));
}

TEST(NonMaxSuppressionTest, IouThresholdIsStrict) {
  // IoU of [0,0,1,1] and [0,0.5,1,1.5]: 0.5 / 1.5 = 1/3.
  const Tensor third = FloatTensor({1, 2, 4}, {0, 0, 1, 1, 0, 0.5f, 1, 1.5f});
  const Tensor scores = FloatTensor({1, 1, 2}, {0.9f, 0.8f});
  EXPECT_THAT(Select({third, scores, Int64Scalar(5), FloatScalar(0.33f)}),
              ElementsAreArray<int64_t>({0, 0, 0}));
  EXPECT_THAT(Select({third, scores, Int64Scalar(5), FloatScalar(0.34f)}),
              ElementsAreArray<int64_t>({0, 0, 0, 0, 0, 1}));
  // IoU of [0,0,1,3] and [0,1,1,4]: 2 / 4 = 0.5 exactly; equal to the threshold is kept.
  const Tensor half = FloatTensor({1, 2, 4}, {0, 0, 1, 3, 0, 1, 1, 4});
  EXPECT_THAT(Select({half, scores, Int64Scalar(5), FloatScalar(0.5f)}),
              ElementsAreArray<int64_t>({0, 0, 0, 0, 0, 1}));
  // The default threshold 0 suppresses any overlap, not boxes that only touch.
  const Tensor touching = FloatTensor({1, 2, 4}, {0, 0, 1, 1, 0, 1, 1, 2});
  EXPECT_THAT(Select({third, scores, Int64Scalar(5)}), ElementsAreArray<int64_t>({0, 0, 0}));
  EXPECT_THAT(Select({touching, scores, Int64Scalar(5)}),
              ElementsAreArray<int64_t>({0, 0, 0, 0, 0, 1}));
}

TEST(NonMaxSuppressionTest, CenterPointBoxesAndFlippedCornersMatchCorners) {
  const Tensor scores = FloatTensor({1, 1, 3}, kScores);
  const std::vector<int64_t> expected = {0, 0, 0, 0, 0, 2};
  EXPECT_THAT(
      Select({FloatTensor({1, 3, 4}, kCenters), scores, Int64Scalar(3), FloatScalar(0.5f)}, 1),
      ElementsAreArray(expected));
  // Each box given by its other corners, in the other order.
  const Tensor flipped = FloatTensor({1, 3, 4}, {1, 1, 0, 0, 1, 1.1f, 0, 0.1f, 0, 3, 1, 2});
  EXPECT_THAT(Select({flipped, scores, Int64Scalar(3), FloatScalar(0.5f)}),
              ElementsAreArray(expected));
}

TEST(NonMaxSuppressionTest, ScoreThresholdKeepsOnlyHigherScores) {
  const Tensor boxes = FloatTensor({1, 3, 4}, kCorners);
  const Tensor scores = FloatTensor({1, 1, 3}, kScores);
  EXPECT_THAT(Select({boxes, scores, Int64Scalar(3), FloatScalar(0.9f), FloatScalar(0.75f)}),
              ElementsAreArray<int64_t>({0, 0, 0, 0, 0, 1}));
  // A score equal to the threshold is filtered out (as the reference implementation does).
  EXPECT_THAT(Select({boxes, scores, Int64Scalar(3), FloatScalar(0.9f), FloatScalar(0.7f)}),
              ElementsAreArray<int64_t>({0, 0, 0, 0, 0, 1}));
  EXPECT_THAT(Select({boxes, scores, Int64Scalar(3), FloatScalar(0.9f), FloatScalar(0.95f)}),
              ElementsAreArray<int64_t>({}));
}

TEST(NonMaxSuppressionTest, MaxOutputBoxesPerClassLimits) {
  const Tensor boxes = FloatTensor({1, 3, 4}, kCorners);
  const Tensor scores = FloatTensor({1, 1, 3}, kScores);
  EXPECT_THAT(Select({boxes, scores, Int64Scalar(1), FloatScalar(0.9f)}),
              ElementsAreArray<int64_t>({0, 0, 0}));
  // Omitted, the limit is 0: no boxes, an output of shape [0, 3].
  EXPECT_THAT(Select({boxes, scores}), ElementsAreArray<int64_t>({}));
}

TEST(NonMaxSuppressionTest, RowsGoByBatchClassThenScore) {
  // Two batches of the same two separate boxes, two classes each.
  const Tensor boxes = FloatTensor({2, 2, 4}, {0, 0, 1, 1, 0, 2, 1, 3, 0, 0, 1, 1, 0, 2, 1, 3});
  const Tensor scores = FloatTensor({2, 2, 2}, {0.1f, 0.9f,    // batch 0, class 0
                                                0.8f, 0.2f,    // batch 0, class 1
                                                0.5f, 0.5f,    // batch 1, class 0: a tie
                                                0.3f, 0.6f});  // batch 1, class 1
  EXPECT_THAT(Select({boxes, scores, Int64Scalar(2), FloatScalar(0.5f)}),
              ElementsAreArray<int64_t>({0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 1,     //
                                         1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0}));  //
}

TEST(NonMaxSuppressionTest, MalformedInputsAreErrors) {
  const Tensor boxes = FloatTensor({1, 3, 4}, kCorners);
  const Tensor scores = FloatTensor({1, 1, 3}, kScores);
  auto error = [](const std::vector<Tensor>& inputs, int64_t center_point_box = 0) {
    auto out =
        RunNode("NonMaxSuppression", 11, inputs, {IntAttr("center_point_box", center_point_box)});
    EXPECT_FALSE(out.ok());
    return out.ok() ? std::string() : std::string(out.status().message());
  };
  EXPECT_THAT(error({FloatTensor({1, 4, 3}, kCorners), scores}),
              HasSubstr("boxes must be [num_batches, spatial_dimension, 4]"));
  EXPECT_THAT(error({FloatTensor({3, 4}, kCorners), scores}), HasSubstr("boxes must be"));
  EXPECT_THAT(error({boxes, FloatTensor({1, 1, 2}, {0.9f, 0.8f})}),
              HasSubstr("scores must be [1, num_classes, 3]"));
  EXPECT_THAT(error({boxes, FloatTensor({2, 1, 3}, {1, 2, 3, 4, 5, 6})}),
              HasSubstr("scores must be"));
  EXPECT_THAT(error({boxes, scores, Int64Scalar(3), FloatScalar(1.5f)}),
              HasSubstr("iou_threshold 1.5 is outside [0, 1]"));
  EXPECT_THAT(error({boxes, scores, Int64Scalar(3), FloatTensor({2}, {0.1f, 0.2f})}),
              HasSubstr("iou_threshold must be a scalar"));
  EXPECT_THAT(error({boxes, scores}, 2), HasSubstr("center_point_box must be 0 or 1"));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
