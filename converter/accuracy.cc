#include "converter/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "exec/compare.h"

namespace ovfix::converter {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// The general statistics every output gets, whatever its criteria.
constexpr double kReportedPercentiles[] = {99, 99.9};
constexpr double kDefaultBeyondError = 0.01;
// A matched box's score may differ by this share of the largest reference score.
constexpr double kBoxScoreTolerance = 0.05;

std::string Number(double v) { return absl::StrFormat("%g", v); }

constexpr absl::string_view kForms =
    "max:B, mean:B, p99:B, p99.9:B, beyond@E:S, top5:S, mask@T:S or boxes@IOU:S";

absl::StatusOr<Criterion> ParseOne(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' ", why, " (criteria: ", kForms, ", joined by ',')"));
  };
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) return bad("has no ':BOUND'");
  Criterion c;
  if (!absl::SimpleAtod(text.substr(colon + 1), &c.bound) || !std::isfinite(c.bound) ||
      c.bound < 0) {
    return bad("needs a bound of at least 0 after ':'");
  }
  absl::string_view head = text.substr(0, colon);
  absl::string_view name = head, parameter;
  const bool has_parameter = head.find('@') != absl::string_view::npos;
  if (has_parameter) {
    name = head.substr(0, head.find('@'));
    parameter = head.substr(head.find('@') + 1);
  }
  auto read_parameter = [&](absl::string_view what) -> absl::Status {
    if (!has_parameter || !absl::SimpleAtod(parameter, &c.parameter) ||
        !std::isfinite(c.parameter)) {
      return bad(absl::StrCat("needs ", what, " after '@'"));
    }
    return absl::OkStatus();
  };
  auto no_parameter = [&]() -> absl::Status {
    return has_parameter ? bad("takes no '@' parameter") : absl::OkStatus();
  };
  if (name == "max" || name == "mean") {
    c.kind = name == "max" ? CriterionKind::kMax : CriterionKind::kMean;
    if (absl::Status s = no_parameter(); !s.ok()) return s;
  } else if (name.size() > 1 && name[0] == 'p' && absl::ascii_isdigit(name[1])) {
    c.kind = CriterionKind::kPercentile;
    if (absl::Status s = no_parameter(); !s.ok()) return s;
    if (!absl::SimpleAtod(name.substr(1), &c.parameter) || !(c.parameter > 0) ||
        c.parameter > 100) {
      return bad("names a percentile outside (0, 100]");
    }
  } else if (absl::StartsWith(name, "top")) {
    c.kind = CriterionKind::kTopK;
    if (absl::Status s = no_parameter(); !s.ok()) return s;
    int64_t k = 0;
    if (!absl::SimpleAtoi(name.substr(3), &k) || k < 1) return bad("needs K >= 1 after 'top'");
    c.parameter = static_cast<double>(k);
  } else if (name == "beyond") {
    c.kind = CriterionKind::kBeyond;
    if (absl::Status s = read_parameter("the error relative to the range"); !s.ok()) return s;
    if (c.parameter < 0) return bad("needs an error of at least 0 after '@'");
  } else if (name == "mask") {
    c.kind = CriterionKind::kMask;
    if (absl::Status s = read_parameter("the threshold"); !s.ok()) return s;
  } else if (name == "boxes") {
    c.kind = CriterionKind::kBoxes;
    if (absl::Status s = read_parameter("the IoU that matches two boxes"); !s.ok()) return s;
    if (!(c.parameter > 0) || c.parameter > 1) return bad("needs an IoU in (0, 1] after '@'");
  } else {
    return bad("is not a criterion");
  }
  const bool share = c.kind == CriterionKind::kBeyond || c.kind == CriterionKind::kTopK ||
                     c.kind == CriterionKind::kMask || c.kind == CriterionKind::kBoxes;
  if (share && c.bound > 1) return bad("bounds a share: at most 1");
  return c;
}

double IoU(const float* a, const float* b) {
  auto area = [](double x1, double y1, double x2, double y2) {
    return std::max(0.0, x2 - x1) * std::max(0.0, y2 - y1);
  };
  const double ax1 = std::min(a[0], a[2]), ax2 = std::max(a[0], a[2]);
  const double ay1 = std::min(a[1], a[3]), ay2 = std::max(a[1], a[3]);
  const double bx1 = std::min(b[0], b[2]), bx2 = std::max(b[0], b[2]);
  const double by1 = std::min(b[1], b[3]), by2 = std::max(b[1], b[3]);
  const double inter =
      area(std::max(ax1, bx1), std::max(ay1, by1), std::min(ax2, bx2), std::min(ay2, by2));
  const double uni = area(ax1, ay1, ax2, ay2) + area(bx1, by1, bx2, by2) - inter;
  return uni > 0 ? inter / uni : (inter == 0 && std::equal(a, a + 4, b) ? 1.0 : 0.0);
}

// Rows of the last axis that hold no detection: all zeros, or a negative label.
bool IsPadding(const float* row, int64_t width) {
  if (width >= 6 && row[5] < 0) return true;
  return std::all_of(row, row + width, [](float v) { return v == 0; });
}

BoxAgreement MatchBoxes(const float* actual, const float* expected, int64_t images, int64_t boxes,
                        int64_t width, double iou) {
  BoxAgreement r;
  r.iou = iou;
  const bool scored = width >= 5, labelled = width >= 6;
  double largest_score = 0;
  for (int64_t i = 0; i < images * boxes; ++i) {
    if (scored && !IsPadding(expected + i * width, width)) {
      largest_score = std::max(largest_score, std::fabs(double{expected[i * width + 4]}));
    }
  }
  const double score_tolerance = kBoxScoreTolerance * largest_score;
  for (int64_t image = 0; image < images; ++image) {
    const float* ref = expected + image * boxes * width;
    const float* got = actual + image * boxes * width;
    std::vector<int64_t> ref_rows, got_rows;
    for (int64_t b = 0; b < boxes; ++b) {
      if (!IsPadding(ref + b * width, width)) ref_rows.push_back(b);
      if (!IsPadding(got + b * width, width)) got_rows.push_back(b);
    }
    r.reference += static_cast<int64_t>(ref_rows.size());
    r.converted += static_cast<int64_t>(got_rows.size());
    // The most confident reference boxes choose first, as a detector's NMS does.
    if (scored) {
      std::stable_sort(ref_rows.begin(), ref_rows.end(), [&](int64_t a, int64_t b) {
        return ref[a * width + 4] > ref[b * width + 4];
      });
    }
    std::vector<bool> taken(got_rows.size(), false);
    for (int64_t a : ref_rows) {
      const float* ra = ref + a * width;
      int best = -1;
      double best_iou = -1;
      for (size_t j = 0; j < got_rows.size(); ++j) {
        if (taken[j]) continue;
        const float* gb = got + got_rows[j] * width;
        if (labelled && std::lround(ra[5]) != std::lround(gb[5])) continue;
        if (scored && !(std::fabs(double{ra[4]} - gb[4]) <= score_tolerance)) continue;
        const double o = IoU(ra, gb);
        if (o > best_iou) {
          best_iou = o;
          best = static_cast<int>(j);
        }
      }
      if (best < 0 || best_iou < iou) {
        ++r.unmatched_reference;
        continue;
      }
      taken[best] = true;
      if (scored) {
        const float* gb = got + got_rows[best] * width;
        r.worst_score_difference =
            std::max(r.worst_score_difference, std::fabs(double{ra[4]} - gb[4]));
      }
    }
    r.unmatched_converted += std::count(taken.begin(), taken.end(), false);
  }
  return r;
}

// The rows of the last axis whose top-k indices differ as sets, beyond ties: an index the
// converted model ranks in its top k is fine when the original's value there is within
// `tie` times the row's largest magnitude of the original's k-th value.
TopKAgreement CompareTopK(const float* actual, const float* expected, int64_t rows, int64_t width,
                          int64_t k, double tie) {
  TopKAgreement r;
  r.k = k;
  r.rows = rows;
  const int64_t kk = std::min(k, width);
  std::vector<int64_t> ref_order(width), got_order(width);
  for (int64_t row = 0; row < rows; ++row) {
    const float* e = expected + row * width;
    const float* a = actual + row * width;
    auto top = [&](const float* v, std::vector<int64_t>& order) {
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + kk, order.end(), [&](int64_t x, int64_t y) {
        return v[x] > v[y] || (v[x] == v[y] && x < y);
      });
    };
    top(e, ref_order);
    top(a, got_order);
    const double kth = e[ref_order[kk - 1]];
    double largest = 0;
    for (int64_t i = 0; i < width; ++i) largest = std::max(largest, std::fabs(double{e[i]}));
    const double slack = tie * largest;
    bool differs = false;
    for (int64_t i = 0; i < kk && !differs; ++i) {
      const int64_t j = got_order[i];
      const bool in_reference =
          std::find(ref_order.begin(), ref_order.begin() + kk, j) != ref_order.begin() + kk;
      differs = !in_reference && !(kth - e[j] <= slack);
    }
    r.differing += differs ? 1 : 0;
  }
  return r;
}

// How many units (elements, rows, boxes) fail a criterion whose bound is 0, for a score
// that still orders results that fail it.
double FailingCount(const Criterion& c, const OutputStatistics& s) {
  switch (c.kind) {
    case CriterionKind::kBeyond:
      for (const ShareBeyond& b : s.beyond) {
        if (b.error == c.parameter) return static_cast<double>(b.count);
      }
      return 0;
    case CriterionKind::kTopK:
      for (const TopKAgreement& t : s.topk) {
        if (t.k == static_cast<int64_t>(c.parameter)) return static_cast<double>(t.differing);
      }
      return 0;
    case CriterionKind::kMask:
      for (const MaskAgreement& m : s.masks) {
        if (m.threshold == c.parameter) return static_cast<double>(m.flipped);
      }
      return 0;
    case CriterionKind::kBoxes:
      for (const BoxAgreement& b : s.boxes) {
        if (b.iou == c.parameter) {
          return static_cast<double>(b.unmatched_reference + b.unmatched_converted);
        }
      }
      return 0;
    default:
      // A continuous measure: graded in float32 epsilons of the range.
      return CriterionMeasure(c, s) / 0x1.0p-23;
  }
}

}  // namespace

std::string Criterion::ToString() const {
  switch (kind) {
    case CriterionKind::kMax:
      return absl::StrCat("max:", Number(bound));
    case CriterionKind::kMean:
      return absl::StrCat("mean:", Number(bound));
    case CriterionKind::kPercentile:
      return absl::StrCat("p", Number(parameter), ":", Number(bound));
    case CriterionKind::kBeyond:
      return absl::StrCat("beyond@", Number(parameter), ":", Number(bound));
    case CriterionKind::kTopK:
      return absl::StrCat("top", Number(parameter), ":", Number(bound));
    case CriterionKind::kMask:
      return absl::StrCat("mask@", Number(parameter), ":", Number(bound));
    case CriterionKind::kBoxes:
      return absl::StrCat("boxes@", Number(parameter), ":", Number(bound));
  }
  return "";
}

std::string CriteriaToString(const Criteria& criteria) {
  return absl::StrJoin(criteria, ",", [](std::string* out, const Criterion& c) {
    absl::StrAppend(out, c.ToString());
  });
}

absl::StatusOr<Criteria> ParseCriteria(absl::string_view text) {
  Criteria out;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    absl::StatusOr<Criterion> c = ParseOne(absl::StripAsciiWhitespace(piece));
    if (!c.ok()) return c.status();
    out.push_back(*c);
  }
  return out;
}

const Criteria* AccuracySpec::Find(const std::string& output) const {
  if (auto it = per_output.find(output); it != per_output.end()) return &it->second;
  return default_criteria ? &*default_criteria : nullptr;
}

absl::Status AddAccuracyOption(absl::string_view text, AccuracySpec& spec) {
  const size_t eq = text.rfind('=');
  absl::string_view criteria = eq == absl::string_view::npos ? text : text.substr(eq + 1);
  if (eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--accuracy ", text, ": expected NAME=CRITERIA or CRITERIA"));
  }
  absl::StatusOr<Criteria> parsed = ParseCriteria(criteria);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--accuracy ", text, ": ", parsed.status().message()));
  }
  if (eq == absl::string_view::npos) {
    spec.default_criteria = *std::move(parsed);
  } else {
    spec.per_output[std::string(text.substr(0, eq))] = *std::move(parsed);
  }
  return absl::OkStatus();
}

Criteria DefaultPrecisionCriteria(int64_t elements) {
  if (elements < kManyElements) return {{CriterionKind::kMax, 0, 0.01}};
  return {{CriterionKind::kMax, 0, 0.1},
          {CriterionKind::kPercentile, 99, 0.01},
          {CriterionKind::kMean, 0, 0.002}};
}

Criteria MaxErrorCriteria(double tolerance) { return {{CriterionKind::kMax, 0, tolerance}}; }

absl::Status CheckApplies(const Criterion& c, const std::vector<int64_t>& dims) {
  const int64_t last = dims.empty() ? 1 : dims.back();
  if (c.kind == CriterionKind::kTopK && (dims.empty() || last < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(c.ToString(), " ranks along the last axis, which a scalar has not"));
  }
  if (c.kind == CriterionKind::kBoxes && (dims.empty() || last < 4 || last > 7)) {
    return absl::InvalidArgumentError(absl::StrCat(
        c.ToString(),
        " needs a last axis of 4 to 7: x1, y1, x2, y2, then score and label where present"));
  }
  return absl::OkStatus();
}

double OutputStatistics::PercentileValue(double q) const {
  for (const Percentile& p : percentiles) {
    if (p.q == q) return p.value;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {

// Strings that all spell numbers (a Cast to string) as float numbers, so that they are judged
// as the numbers they hold; nullopt when one does not.
std::optional<Tensor> NumbersOf(const Tensor& t) {
  if (t.type() != DataType::kString) return std::nullopt;
  std::vector<float> values;
  for (const std::string& text : t.strings()) {
    double v = 0;
    if (!absl::SimpleAtod(text, &v)) return std::nullopt;
    values.push_back(static_cast<float>(v));
  }
  return Tensor::FromVector(DataType::kFloat, t.dims(), values);
}

}  // namespace

OutputStatistics MeasureOutput(const Tensor& actual, const Tensor& expected, double resolution,
                               const Criteria& criteria, double beyond_error) {
  if (actual.type() == DataType::kString && expected.type() == DataType::kString &&
      actual.strings() != expected.strings()) {
    std::optional<Tensor> a = NumbersOf(actual), e = NumbersOf(expected);
    if (a && e) return MeasureOutput(*a, *e, resolution, criteria, beyond_error);
  }
  OutputStatistics s;
  s.elements = expected.numel();
  std::vector<double> qs(std::begin(kReportedPercentiles), std::end(kReportedPercentiles));
  std::vector<double> errors_beyond = {beyond_error};
  for (const Criterion& c : criteria) {
    if (c.kind == CriterionKind::kPercentile &&
        std::find(qs.begin(), qs.end(), c.parameter) == qs.end()) {
      qs.push_back(c.parameter);
    }
    if (c.kind == CriterionKind::kBeyond &&
        std::find(errors_beyond.begin(), errors_beyond.end(), c.parameter) == errors_beyond.end()) {
      errors_beyond.push_back(c.parameter);
    }
  }
  const bool strings = actual.type() == DataType::kString || expected.type() == DataType::kString;
  if (strings && actual.type() == expected.type() && actual.dims() == expected.dims() &&
      actual.strings() == expected.strings()) {
    // Equal strings: nothing differs.
    for (double q : qs) s.percentiles.push_back({q, 0});
    for (double e : errors_beyond) s.beyond.push_back({e, 0, 0});
    return s;
  }
  s.max = strings ? kInfinity : exec::RelativeError(actual, expected, resolution);
  if (actual.dims() != expected.dims() || strings) {
    // Nothing to measure element by element: every statistic is infinite.
    s.mean = kInfinity;
    s.max_abs = kInfinity;
    s.non_finite = std::max<int64_t>(1, s.elements);
    for (double q : qs) s.percentiles.push_back({q, kInfinity});
    for (double e : errors_beyond) s.beyond.push_back({e, 1, s.elements});
    return s;
  }
  const Tensor a =
      actual.type() == DataType::kFloat ? actual : ConvertTensor(actual, DataType::kFloat);
  const Tensor e =
      expected.type() == DataType::kFloat ? expected : ConvertTensor(expected, DataType::kFloat);
  const float* pa = a.data<float>();
  const float* pe = e.data<float>();
  const int64_t n = s.elements;
  double lo = kInfinity, hi = -kInfinity, largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = pe[i];
    if (!std::isfinite(x)) continue;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    largest = std::max(largest, std::abs(x));
  }
  const double range = hi > lo ? hi - lo : 0;
  const double scale =
      std::max(range > 0 ? range : (largest > 0 ? largest : 1), resolution * largest);
  std::vector<float> errors(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = pe[i], y = pa[i];
    double err = 0;
    if (std::isfinite(x) && std::isfinite(y)) {
      s.max_abs = std::max(s.max_abs, std::abs(y - x));
      err = std::abs(y - x) / scale;
    } else if (!((std::isnan(x) && std::isnan(y)) || x == y)) {
      // Counted, and no error of 0: a NaN or infinity the original lacks is infinitely wrong.
      ++s.non_finite;
      s.max_abs = kInfinity;
      err = kInfinity;
    }
    errors[i] = static_cast<float>(err);
    sum += err;
  }
  s.mean = n > 0 ? sum / static_cast<double>(n) : 0;
  for (double err : errors_beyond) {
    const int64_t count =
        std::count_if(errors.begin(), errors.end(), [&](float v) { return v > err; });
    s.beyond.push_back({err, n > 0 ? static_cast<double>(count) / n : 0, count});
  }
  std::sort(qs.begin(), qs.end());
  for (double q : qs) {
    double value = 0;
    if (n > 0) {
      // Nearest rank: the smallest error that at least q% of the elements do not exceed.
      // (A hair below the product, so that 99% of 100 is rank 99 whatever the rounding.)
      const double at = q / 100 * static_cast<double>(n);
      const int64_t rank =
          std::clamp<int64_t>(static_cast<int64_t>(std::ceil(at - 1e-9 * at)) - 1, 0, n - 1);
      std::nth_element(errors.begin(), errors.begin() + rank, errors.end());
      value = errors[rank];
    }
    s.percentiles.push_back({q, value});
  }
  const int64_t width = expected.dims().empty() ? 1 : expected.dims().back();
  for (const Criterion& c : criteria) {
    if (c.kind == CriterionKind::kTopK && width > 0 && n > 0) {
      s.topk.push_back(
          CompareTopK(pa, pe, n / width, width, static_cast<int64_t>(c.parameter), resolution));
    } else if (c.kind == CriterionKind::kMask) {
      MaskAgreement m{c.parameter, n, 0};
      for (int64_t i = 0; i < n; ++i) m.flipped += (pa[i] > c.parameter) != (pe[i] > c.parameter);
      s.masks.push_back(m);
    } else if (c.kind == CriterionKind::kBoxes && CheckApplies(c, expected.dims()).ok()) {
      const int64_t boxes = expected.rank() >= 2 ? expected.dims()[expected.rank() - 2] : 1;
      const int64_t images = boxes * width > 0 ? n / (boxes * width) : 0;
      s.boxes.push_back(MatchBoxes(pa, pe, images, boxes, width, c.parameter));
    }
  }
  return s;
}

double CriterionMeasure(const Criterion& c, const OutputStatistics& s) {
  switch (c.kind) {
    case CriterionKind::kMax:
      return s.max;
    case CriterionKind::kMean:
      return s.mean;
    case CriterionKind::kPercentile: {
      const double v = s.PercentileValue(c.parameter);
      return std::isnan(v) ? kInfinity : v;
    }
    case CriterionKind::kBeyond:
      for (const ShareBeyond& b : s.beyond) {
        if (b.error == c.parameter) return b.share;
      }
      return kInfinity;
    case CriterionKind::kTopK:
      for (const TopKAgreement& t : s.topk) {
        if (t.k == static_cast<int64_t>(c.parameter)) {
          return t.rows > 0 ? static_cast<double>(t.differing) / t.rows : 0;
        }
      }
      return kInfinity;
    case CriterionKind::kMask:
      for (const MaskAgreement& m : s.masks) {
        if (m.threshold == c.parameter) {
          return m.elements > 0 ? static_cast<double>(m.flipped) / m.elements : 0;
        }
      }
      return kInfinity;
    case CriterionKind::kBoxes:
      for (const BoxAgreement& b : s.boxes) {
        if (b.iou == c.parameter) {
          const int64_t total = b.reference + b.converted;
          return total > 0
                     ? static_cast<double>(b.unmatched_reference + b.unmatched_converted) / total
                     : 0;
        }
      }
      return kInfinity;
  }
  return kInfinity;
}

double CriteriaScore(const Criteria& criteria, const OutputStatistics& stats) {
  if (stats.non_finite > 0) return kInfinity;
  double score = 0;
  for (const Criterion& c : criteria) {
    const double measure = CriterionMeasure(c, stats);
    double s;
    if (std::isnan(measure)) {
      s = kInfinity;
    } else if (c.bound > 0) {
      s = measure / c.bound;
    } else {
      s = measure > 0 ? 1 + FailingCount(c, stats) : 0;
    }
    score = std::max(score, s);
  }
  return score;
}

std::string ScoreText(double score, int digits) {
  std::string text = absl::StrFormat("%.*g", digits, score);
  for (int d = digits + 1; score > 1 && d <= 17; ++d) {
    double read = 0;
    if (absl::SimpleAtod(text, &read) && read > 1) break;
    text = absl::StrFormat("%.*g", d, score);
  }
  return text;
}

std::string DescribeStatistics(const OutputStatistics& s) {
  auto e = [](double v) { return absl::StrFormat("%.2g", v); };
  auto share = [](double v) { return absl::StrFormat("%.3g%%", 100 * v); };
  std::vector<std::string> parts = {absl::StrCat("max ", e(s.max)),
                                    absl::StrCat("mean ", e(s.mean))};
  for (const Percentile& p : s.percentiles) {
    parts.push_back(absl::StrCat("p", Number(p.q), " ", e(p.value)));
  }
  for (const ShareBeyond& b : s.beyond) {
    parts.push_back(absl::StrCat(">", Number(b.error), " ", share(b.share)));
  }
  for (const TopKAgreement& t : s.topk) {
    parts.push_back(absl::StrCat("top", t.k, " differs ", t.differing, "/", t.rows, " rows"));
  }
  for (const MaskAgreement& m : s.masks) {
    parts.push_back(absl::StrCat("mask@", Number(m.threshold), " flips ",
                                 share(m.elements > 0 ? 1.0 * m.flipped / m.elements : 0)));
  }
  for (const BoxAgreement& b : s.boxes) {
    parts.push_back(absl::StrCat("boxes@", Number(b.iou), " unmatched ", b.unmatched_reference, "/",
                                 b.reference, " ref, ", b.unmatched_converted, "/", b.converted,
                                 " new, score diff ", e(b.worst_score_difference)));
  }
  if (s.non_finite > 0) parts.push_back(absl::StrCat(s.non_finite, " NaN/inf"));
  return absl::StrJoin(parts, ", ");
}

}  // namespace ovfix::converter
