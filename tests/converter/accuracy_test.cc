// Accuracy criteria (converter/accuracy.h), each on a case worked by hand: the statistic it
// bounds, the score against its bound, NaN/inf failing every criterion, the spec's parsing
// and its one-line errors, and several input sets judged each (the worst set is reported).
#include "converter/accuracy.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "converter/validation.h"
#include "exec/compare.h"
#include "gtest/gtest.h"

namespace ovfix::converter {
namespace {

Tensor Floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  return Tensor::FromVector(DataType::kFloat, std::move(dims), v);
}

Criteria Parse(const std::string& text) {
  absl::StatusOr<Criteria> c = ParseCriteria(text);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : Criteria{};
}

OutputStatistics Measure(const Tensor& actual, const Tensor& expected, const std::string& criteria,
                         double resolution = 0, double beyond = 0.01) {
  return MeasureOutput(actual, expected, resolution, Parse(criteria), beyond);
}

// Range 4 (0..4); the last element is off by 1: a quarter of the range.
TEST(AccuracyCriteria, MaxIsTheWorstElementRelativeToTheRange) {
  const Tensor expected = Floats({5}, {0, 1, 2, 3, 4});
  const Tensor actual = Floats({5}, {0, 1, 2, 3, 5});
  const OutputStatistics s = Measure(actual, expected, "max:0.2");
  EXPECT_DOUBLE_EQ(s.max, 0.25);
  EXPECT_EQ(s.max, exec::RelativeError(actual, expected));  // the metric validation used
  EXPECT_DOUBLE_EQ(CriteriaScore(Parse("max:0.2"), s), 1.25);
  EXPECT_DOUBLE_EQ(CriteriaScore(Parse("max:0.5"), s), 0.5);
}

// One element of five off by 0.4 on a range of 4: mean 0.4 / 4 / 5 = 0.02.
TEST(AccuracyCriteria, MeanIsTheAverageErrorRelativeToTheRange) {
  const OutputStatistics s =
      Measure(Floats({5}, {0, 1.4f, 2, 3, 4}), Floats({5}, {0, 1, 2, 3, 4}), "mean:0.01");
  EXPECT_NEAR(s.mean, 0.02, 1e-8);
  EXPECT_NEAR(CriteriaScore(Parse("mean:0.01"), s), 2, 1e-6);
}

// 100 elements 0..99 (range 99), element k off by 0.099 k: its error is k / 1000. Nearest
// rank: p99 is the 99th smallest (k = 98), p99.9 the 100th (k = 99), p50 the 50th (k = 49);
// beyond 0.0505: k = 51..99, 49 elements (bounds between two elements' errors: no rounding
// decides).
TEST(AccuracyCriteria, PercentilesAndShareBeyondAnError) {
  std::vector<float> e(100), a(100);
  for (int k = 0; k < 100; ++k) {
    e[k] = static_cast<float>(k);
    a[k] = static_cast<float>(k + 0.099 * k);
  }
  const OutputStatistics s =
      Measure(Floats({100}, a), Floats({100}, e), "p50:1,beyond@0.0505:0.5", 0, 0.0105);
  EXPECT_NEAR(s.PercentileValue(99), 0.098, 1e-6);
  EXPECT_NEAR(s.PercentileValue(99.9), 0.099, 1e-6);
  EXPECT_NEAR(s.PercentileValue(50), 0.049, 1e-6);
  EXPECT_NEAR(CriterionMeasure(Parse("beyond@0.0505:0.5")[0], s), 0.49, 1e-12);
  EXPECT_NEAR(CriteriaScore(Parse("beyond@0.0505:0.5"), s), 0.98, 1e-12);
  EXPECT_NEAR(CriteriaScore(Parse("p99:0.049"), s), 2, 1e-4);
  // The general share every output reports (here beyond 0.0105 of the range): k = 11..99.
  ASSERT_FALSE(s.beyond.empty());
  EXPECT_EQ(s.beyond[0].error, 0.0105);
  EXPECT_EQ(s.beyond[0].count, 89);
}

// Two rows of three classes. Row 0: the top class moves from 1 to 2 (0.5 vs 0.3 in the
// original: no tie); row 1 keeps it. Top-1: 1 of 2 rows differs; top-2: the sets {1, 2}
// agree.
TEST(AccuracyCriteria, TopKAgreementAlongTheLastAxis) {
  const Tensor expected = Floats({2, 3}, {0.1f, 0.5f, 0.3f, 1, 0, 0});
  const Tensor actual = Floats({2, 3}, {0.1f, 0.3f, 0.5f, 0.9f, 0, 0});
  const OutputStatistics s = Measure(actual, expected, "top1:0.5,top2:0");
  EXPECT_DOUBLE_EQ(CriterionMeasure(Parse("top1:0.5")[0], s), 0.5);
  EXPECT_DOUBLE_EQ(CriterionMeasure(Parse("top2:0")[0], s), 0);
  EXPECT_DOUBLE_EQ(CriteriaScore(Parse("top1:0.5"), s), 1);
  // A bound of 0: one differing row scores 1 + 1.
  EXPECT_DOUBLE_EQ(CriteriaScore(Parse("top1:0"), s), 2);
  EXPECT_DOUBLE_EQ(CriteriaScore(Parse("top2:0"), s), 0);
}

// Two classes the original ranks 1e-5 apart (below float16's resolution of the row): a
// swap is a tie, not a changed answer, when float16 is involved; without it, a change.
TEST(AccuracyCriteria, TopKSwapOfATieIsNoDisagreement) {
  const Tensor expected = Floats({1, 3}, {0.50001f, 0.5f, 0});
  const Tensor actual = Floats({1, 3}, {0.5f, 0.50001f, 0});
  EXPECT_EQ(CriterionMeasure(Parse("top1:0")[0],
                             Measure(actual, expected, "top1:0", exec::kFloat16Resolution)),
            0);
  EXPECT_EQ(CriterionMeasure(Parse("top1:0")[0], Measure(actual, expected, "top1:0")), 1);
}

// Threshold 0.5: elements 1 (0.6 -> 0.4) and 2 (0.49 -> 0.51) change sides, 3 does not.
TEST(AccuracyCriteria, MaskAgreementCountsElementsThatChangeSides) {
  const OutputStatistics s = Measure(Floats({4}, {0.2f, 0.4f, 0.51f, 0.52f}),
                                     Floats({4}, {0.2f, 0.6f, 0.49f, 0.51f}), "mask@0.5:0.25");
  ASSERT_EQ(s.masks.size(), 1u);
  EXPECT_EQ(s.masks[0].flipped, 2);
  EXPECT_DOUBLE_EQ(CriteriaScore(Parse("mask@0.5:0.25"), s), 2);
}

// Rows x1, y1, x2, y2, score, label; the last row is padding. The converted model lists the
// same two detections in the other order, one box a pixel taller (IoU 100/110): the sets
// agree, though element by element the outputs differ by the whole range.
TEST(AccuracyCriteria, DetectionsCompareAsSetsMatchedByIoU) {
  const Tensor expected =
      Floats({1, 3, 6}, {0, 0, 10, 10, 0.9f, 1, 20, 20, 30, 30, 0.8f, 2, 0, 0, 0, 0, 0, 0});
  const Tensor reordered =
      Floats({1, 3, 6}, {20, 20, 30, 31, 0.79f, 2, 0, 0, 10, 10, 0.9f, 1, 0, 0, 0, 0, 0, 0});
  OutputStatistics s = Measure(reordered, expected, "boxes@0.5:0");
  ASSERT_EQ(s.boxes.size(), 1u);
  EXPECT_EQ(s.boxes[0].reference, 2);
  EXPECT_EQ(s.boxes[0].converted, 2);
  EXPECT_EQ(s.boxes[0].unmatched_reference + s.boxes[0].unmatched_converted, 0);
  EXPECT_NEAR(s.boxes[0].worst_score_difference, 0.01, 1e-6);
  EXPECT_EQ(CriteriaScore(Parse("boxes@0.5:0"), s), 0);
  EXPECT_GT(s.max, 0.5);
  // At IoU 0.95 the taller box no longer matches: 1 of 2 unmatched on each side.
  s = Measure(reordered, expected, "boxes@0.95:0.5");
  EXPECT_DOUBLE_EQ(CriterionMeasure(Parse("boxes@0.95:0.5")[0], s), 0.5);
  // Another label, or a score off by more than 5% of the largest: not the same detection.
  const Tensor relabelled =
      Floats({1, 3, 6}, {20, 20, 30, 30, 0.8f, 3, 0, 0, 10, 10, 0.7f, 1, 0, 0, 0, 0, 0, 0});
  s = Measure(relabelled, expected, "boxes@0.5:0");
  EXPECT_EQ(s.boxes[0].unmatched_reference, 2);
  EXPECT_EQ(s.boxes[0].unmatched_converted, 2);
  EXPECT_DOUBLE_EQ(CriteriaScore(Parse("boxes@0.5:0"), s), 5);  // 1 + 4 unmatched
}

// A NaN where the original is finite fails every criterion, even one it does not move.
TEST(AccuracyCriteria, NonFiniteTheOriginalHasNotFailsEveryCriterion) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor expected = Floats({4}, {0.1f, 0.2f, 0.3f, 0.4f});
  const Tensor actual = Floats({4}, {0.1f, 0.2f, 0.3f, nan});
  for (const char* text : {"max:1", "mean:1", "p50:1", "beyond@0.5:1", "top1:1", "mask@0.9:1"}) {
    const OutputStatistics s = Measure(actual, expected, text);
    EXPECT_EQ(s.non_finite, 1) << text;
    EXPECT_TRUE(std::isinf(CriteriaScore(Parse(text), s))) << text;
  }
  // The same NaN in both is no difference.
  const Tensor both = Floats({2}, {0.1f, nan});
  EXPECT_EQ(CriteriaScore(Parse("max:0"), Measure(both, both, "max:0")), 0);
}

// String outputs: equal strings meet every criterion; words that differ meet none; strings
// that spell numbers (a Cast to string) are judged as the numbers: 0.4699707 for 0.47 on a
// range of 0.5 is 6e-5 of it.
TEST(AccuracyCriteria, StringOutputsCompareExactlyOrAsTheNumbersTheySpell) {
  const Tensor a({2}, {"monday", "tuesday"});
  const Tensor b({2}, {"monday", "Tuesday"});
  EXPECT_EQ(CriteriaScore(Parse("max:0"), Measure(a, a, "max:0")), 0);
  EXPECT_TRUE(std::isinf(CriteriaScore(Parse("mean:1"), Measure(b, a, "mean:1"))));
  const OutputStatistics s =
      Measure(Tensor({2}, {"0.4699707", "-0.03"}), Tensor({2}, {"0.47", "-0.03"}), "max:1");
  EXPECT_NEAR(s.max, 0.0000293 / 0.5, 1e-7);
}

TEST(AccuracyCriteria, ParsesSpecsAndNamesWhatIsWrongInOneLine) {
  const Criteria c = Parse(
      "max:0.1, p99.9:0.01,mean:2e-3,beyond@0.01:1e-3,top5:0,mask@0.3:1e-4,"
      "boxes@0.5:0.01");
  ASSERT_EQ(c.size(), 7u);
  EXPECT_EQ(CriteriaToString(c),
            "max:0.1,p99.9:0.01,mean:0.002,beyond@0.01:0.001,top5:0,mask@0.3:0.0001,"
            "boxes@0.5:0.01");
  AccuracySpec spec;
  ASSERT_TRUE(AddAccuracyOption("prob=mask@0.3:1e-4", spec).ok());
  ASSERT_TRUE(AddAccuracyOption("p99:0.01", spec).ok());
  ASSERT_NE(spec.Find("prob"), nullptr);
  EXPECT_EQ(CriteriaToString(*spec.Find("prob")), "mask@0.3:0.0001");
  ASSERT_NE(spec.Find("logits"), nullptr);
  EXPECT_EQ(CriteriaToString(*spec.Find("logits")), "p99:0.01");
  for (const char* bad : {"max", "max:x", "max:-1", "maen:0.1", "p101:0.1", "top0:0", "mask:0.1",
                          "boxes@2:0", "beyond@0.1:2", "max@3:0.1", "=max:0.1", "y=max:0.1,"}) {
    const absl::Status s = AddAccuracyOption(bad, spec);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
    EXPECT_EQ(s.message().rfind(std::string("--accuracy ") + bad + ": ", 0), 0u) << s.message();
  }
  EXPECT_FALSE(CheckApplies(Parse("boxes@0.5:0")[0], {1, 10, 3}).ok());
  EXPECT_TRUE(CheckApplies(Parse("boxes@0.5:0")[0], {1, 10, 6}).ok());
}

// Two input sets: output 'a' scores worse on the second, 'b' on the first. Each output keeps
// the statistics of its worse set, and the result's score is the worst of all.
// The default for fp16: an output of fewer than 100 elements is judged by its worst element
// (1% of it is less than one element); a larger one by its tail and its typical error.
TEST(AccuracyCriteria, DefaultFollowsTheOutputsSize) {
  EXPECT_EQ(CriteriaToString(DefaultPrecisionCriteria(1)), "max:0.01");
  EXPECT_EQ(CriteriaToString(DefaultPrecisionCriteria(99)), "max:0.01");
  EXPECT_EQ(CriteriaToString(DefaultPrecisionCriteria(1000)), "max:0.1,p99:0.01,mean:0.002");
}

TEST(AccuracyCriteria, CalibrationSetsAreJudgedEach) {
  auto result = [](double score_a, double score_b, size_t set) {
    EndToEndResult r;
    for (auto [name, score] : {std::pair{"a", score_a}, std::pair{"b", score_b}}) {
      OutputComparison c;
      c.name = name;
      c.score = score;
      c.error = score / 10;
      c.meets = score <= 1;
      c.set = set;
      c.stats.mean = score / 100;
      r.outputs.push_back(c);
      r.score = std::max(r.score, score);
      r.max_error = std::max(r.max_error, c.error);
    }
    return r;
  };
  EndToEndResult worst = result(0.5, 3, 0);
  KeepWorst(worst, result(2, 0.1, 1));
  EXPECT_EQ(worst.outputs[0].set, 1u);
  EXPECT_DOUBLE_EQ(worst.outputs[0].stats.mean, 0.02);
  EXPECT_EQ(worst.outputs[1].set, 0u);
  EXPECT_DOUBLE_EQ(worst.score, 3);
  EXPECT_FALSE(worst.meets());
  EndToEndResult fine = result(0.5, 0.9, 0);
  KeepWorst(fine, result(0.2, 1, 1));
  EXPECT_TRUE(fine.meets());
}

}  // namespace
}  // namespace ovfix::converter
