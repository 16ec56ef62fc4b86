// Accuracy criteria: how a converted model's output is judged against the original's. One
// element's error (the largest difference relative to the range) says little of a map of a
// million pixels a user thresholds, or of logits a user ranks; so each output is judged by
// the criteria that fit it (`--accuracy NAME=CRITERIA`, a default for the rest), and every
// statistic is measured and reported, so a user sees what the decision rested on.
//
// Criteria are written `KIND[@PARAMETER]:BOUND`, several joined by ',' (all must hold):
//   max:B          the largest |converted - original| relative to the range (exec::RelativeError)
//   mean:B         the mean of the same
//   pQ:B           its Q-th percentile (p99, p99.9; nearest rank)
//   beyond@E:S     the share of elements whose error exceeds E of the range
//   topK:S         the share of rows (along the last axis) whose K largest differ as a set
//   mask@T:S       the share of elements whose side of the threshold T changes
//   boxes@IOU:S    detections as sets: the share of boxes left unmatched (last axis
//                  x1, y1, x2, y2[, score[, label]]; matched by IoU, label and score)
// A NaN or infinity where the original has none (or another) fails every criterion.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/tensor.h"

namespace ovfix::converter {

enum class CriterionKind { kMax, kMean, kPercentile, kBeyond, kTopK, kMask, kBoxes };

struct Criterion {
  CriterionKind kind = CriterionKind::kMax;
  // The percentile (99, 99.9), the error of kBeyond, K of kTopK, the threshold of kMask,
  // the IoU of kBoxes; unused by kMax and kMean.
  double parameter = 0;
  double bound = 0;  // the largest measure that meets the criterion
  std::string ToString() const;
};

// The criteria of one output: every one must hold.
using Criteria = std::vector<Criterion>;
std::string CriteriaToString(const Criteria& criteria);

// `text` as written above ("p99:0.01,mean:1e-3"); the error says what is wrong in one line.
absl::StatusOr<Criteria> ParseCriteria(absl::string_view text);

// What `--accuracy` options say: criteria per output name and a default for the others.
struct AccuracySpec {
  std::optional<Criteria> default_criteria;  // unset: the conversion's default
  std::map<std::string, Criteria> per_output;
  // The criteria for `output`: its own, else the default; nullptr when neither is given.
  const Criteria* Find(const std::string& output) const;
};

// One `--accuracy` value: `NAME=CRITERIA` (split at the last '=') or `CRITERIA` (the default).
// Errors are one line that starts with "--accuracy TEXT: ".
absl::Status AddAccuracyOption(absl::string_view text, AccuracySpec& spec);

// The default for conversions that change precision, for an output of `elements` elements;
// why it is this is in docs/validation.md. From kManyElements on: the typical error and the
// tail bounded, no element beyond a tenth of the range (max:0.1,p99:0.01,mean:0.002); below,
// where 1% of the elements is less than one, the worst element at the tail's bound
// (max:0.01).
constexpr int64_t kManyElements = 100;
Criteria DefaultPrecisionCriteria(int64_t elements);
// Today's criterion: the worst element within `tolerance` of the range.
Criteria MaxErrorCriteria(double tolerance);

struct TopKAgreement {
  int64_t k = 0;
  int64_t rows = 0;
  int64_t differing = 0;  // rows whose top-k set changed beyond a tie
};

struct MaskAgreement {
  double threshold = 0;
  int64_t elements = 0;
  int64_t flipped = 0;  // elements on the other side of the threshold
};

struct BoxAgreement {
  double iou = 0;
  int64_t reference = 0, converted = 0;  // boxes, padding rows aside
  int64_t unmatched_reference = 0, unmatched_converted = 0;
  double worst_score_difference = 0;  // over matched boxes
};

struct Percentile {
  double q = 0;      // 99, 99.9
  double value = 0;  // the error at that rank
};

struct ShareBeyond {
  double error = 0;  // relative to the range
  double share = 0;  // of the elements whose error exceeds it
  int64_t count = 0;
};

// Everything measured of one output, errors relative to the original's range (never less
// than `resolution` times its largest magnitude, as exec::RelativeError). An element NaN or
// infinite where the original holds another value is counted in non_finite and its error is
// infinite (in max, mean, the percentiles it reaches and the shares beyond).
struct OutputStatistics {
  int64_t elements = 0;
  double max = 0;  // exec::RelativeError: infinite for any difference in a non-float output
  double mean = 0;
  // The largest |actual - expected| in the outputs' own units, float16 and other float types
  // compared as float; infinite where non_finite is not 0.
  double max_abs = 0;
  std::vector<Percentile> percentiles;  // 99 and 99.9, then those criteria name
  std::vector<ShareBeyond> beyond;      // the general error first, then those criteria name
  int64_t non_finite = 0;               // NaN/inf where the original holds another value
  std::vector<TopKAgreement> topk;
  std::vector<MaskAgreement> masks;
  std::vector<BoxAgreement> boxes;
  double PercentileValue(double q) const;  // NaN when not measured
};

// Whether `criterion` can be measured on an output shaped `dims`; else why not.
absl::Status CheckApplies(const Criterion& criterion, const std::vector<int64_t>& dims);

// Measures `actual` against `expected`: the general statistics, and those that `criteria`
// name (top-k, masks, boxes). `beyond_error` is the error beyond which elements are counted
// when no beyond@ criterion names one. A shape mismatch is infinite everywhere.
OutputStatistics MeasureOutput(const Tensor& actual, const Tensor& expected, double resolution,
                               const Criteria& criteria, double beyond_error);

// The measure a criterion bounds, from `stats`.
double CriterionMeasure(const Criterion& criterion, const OutputStatistics& stats);
// The worst measure over `criteria` divided by its bound: <= 1 meets them all. A bound of 0
// gives 0 when the measure is 0 and 1 plus the measure's count of failures otherwise (the
// elements, rows or boxes that fail: fewer is better). Non-finite differences: infinity.
double CriteriaScore(const Criteria& criteria, const OutputStatistics& stats);

// A score as a line prints it: `digits` significant digits, and as many more as it takes for
// a score above 1 (one that fails) not to read as 1 ("1.005 FAILS", never "1 FAILS" beside
// "at most 1 meets them"). A score of at most 1 never reads as more than 1.
std::string ScoreText(double score, int digits = 2);

// The statistics in a few words for a console line: "max 0.083, mean 7e-05, ...".
std::string DescribeStatistics(const OutputStatistics& stats);

}  // namespace ovfix::converter
