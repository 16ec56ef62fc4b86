// The verdict on a model's final outputs that `convert`, `run --test-data` and `compare` share:
// the same criteria (converter/accuracy.h), the same defaults for the precision involved, the
// same statistics line. A file that convert calls preserved thus passes `run --test-data`
// against the original's test data, and the three commands never disagree about one file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "converter/accuracy.h"
#include "ir/tensor.h"

namespace ovfix::converter {

// The error whose share of elements every output reports (beyond@ criteria add others).
constexpr double kReportedBeyondError = 0.01;

// The criteria an output of `elements` elements is judged by when --accuracy names none:
// with float16 involved (a model that holds float16 data, a run in fp16 or fp16-storage)
// convert's default for fp16 conversions, else the worst element within 1e-4 of the range
// (convert's default for targets that keep fp32). docs/validation.md says why.
Criteria DefaultCriteriaFor(bool float16, int64_t elements);
// The default criteria of a bfloat16 conversion (docs/validation.md argues them): bfloat16
// rounds 4 times coarser than float16, so each bound is looser.
Criteria DefaultBfloat16Criteria(int64_t elements);

// The resolution errors are measured at: float16's where float16 is involved (an output of
// zeros rounds to zeros, and a range is never finer than what float16 can hold).
double ResolutionFor(bool float16);

// One output judged against its reference.
struct OutputVerdict {
  std::string name;
  OutputStatistics stats;
  Criteria criteria;
  double score = 0;   // <= 1 meets the criteria
  bool meets = true;  // and no NaN or infinity the reference lacks
};

// Judges `actual` against `expected` by `spec`'s criteria for `name`, else the default.
OutputVerdict JudgeOutput(const std::string& name, const Tensor& actual, const Tensor& expected,
                          bool float16, const AccuracySpec& spec);

// What convert prints of an output after its name: "STATISTICS; score S (CRITERIA)".
std::string DescribeVerdict(const OutputVerdict& verdict);

// --accuracy names outputs of the model (`outputs`: name and the reference tensor), with
// criteria that fit their shapes; else a one-line error.
absl::Status CheckAccuracySpec(const AccuracySpec& spec,
                               const std::vector<std::pair<std::string, Tensor>>& outputs);

}  // namespace ovfix::converter
