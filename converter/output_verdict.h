// The verdict on a model's final outputs that `convert`, `run --test-data` and `compare` share,
// and the files they write and the library's CompareModels/CompareBackends (api/run.cc) with
// them: the same criteria (converter/accuracy.h), the same defaults for the precision
// involved, the same statistics. A file that convert calls preserved thus passes
// `run --test-data` against the original's test data, and no command, file or call disagrees
// with another about one file.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "converter/accuracy.h"
#include "converter/json_writer.h"
#include "exec/executor.h"
#include "ir/model.h"
#include "ir/tensor.h"

namespace ovfix::converter {

// The precision a comparison's defaults follow: float16 where a run rounds to float16 (fp16,
// fp16-storage) or the model judged holds float16 data; bfloat16 where it holds bfloat16
// data and no float16 (a --precision bf16 conversion); float32 otherwise.
enum class JudgedPrecision { kFloat32, kFloat16, kBfloat16 };
// `candidate` is the model whose outputs are judged when it is not the reference's own
// (nullptr: one model on two sides), `runs` the precisions it ran at on either side.
JudgedPrecision JudgedPrecisionOf(const Model* candidate,
                                  std::initializer_list<exec::Precision> runs);

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

// convert's default criteria for an output of `elements` elements judged at `precision`.
Criteria DefaultCriteria(JudgedPrecision precision, int64_t elements);

// The resolution errors are measured at: float16's where float16 is involved (an output of
// zeros rounds to zeros, and a range is never finer than what float16 can hold).
double ResolutionFor(bool float16);

// One criterion and the measure it bounds (CriterionMeasure).
struct CriterionCheck {
  Criterion criterion;
  double measured = 0;
  bool meets = true;  // measured within the bound, and no NaN or infinity the reference lacks
};

// One output judged against its reference.
struct OutputVerdict {
  std::string name;
  bool computed = true;  // false: the candidate has no such output (it fails)
  OutputStatistics stats;
  Criteria criteria;
  std::vector<CriterionCheck> checks;  // one per criterion, in order
  double score = 0;                    // <= 1 meets the criteria
  bool meets = true;                   // and no NaN or infinity the reference lacks
};

// Judges `actual` against `expected` by `spec`'s criteria for `name`, else the default for
// `precision`.
OutputVerdict JudgeOutput(const std::string& name, const Tensor& actual, const Tensor& expected,
                          JudgedPrecision precision, const AccuracySpec& spec);

// Judges every output of `expected` against the output of that name in `actual`, in
// `expected`'s order; one that `actual` lacks fails, not computed.
using NamedOutputs = std::vector<std::pair<std::string, Tensor>>;
std::vector<OutputVerdict> JudgeOutputs(const NamedOutputs& expected, const NamedOutputs& actual,
                                        JudgedPrecision precision, const AccuracySpec& spec);

// What convert prints of an output after its name: "STATISTICS; score S (CRITERIA)".
std::string DescribeVerdict(const OutputVerdict& verdict);

// The statistics as JSON members, the same in every file ovfix writes (convert's report,
// run --json, compare --json): elements, max, max_abs_error, mean, pQ, beyond, non_finite,
// then topk, masks and boxes where criteria asked for them.
void WriteStatistics(cli::JsonWriter& json, const OutputStatistics& stats);
// One verdict as a JSON object: name, computed, criteria, score, meets, statistics (the
// console's words), checks (criterion, measured, bound, meets), then WriteStatistics.
void WriteVerdict(cli::JsonWriter& json, const OutputVerdict& verdict);
// The verdicts as an HTML table: output, criteria, each criterion's measure, the statistics,
// the score and meets/FAILS.
std::string VerdictTableHtml(const std::vector<OutputVerdict>& verdicts);

// --accuracy names outputs of the model (`outputs`: name and the reference tensor), with
// criteria that fit their shapes; else a one-line error.
absl::Status CheckAccuracySpec(const AccuracySpec& spec,
                               const std::vector<std::pair<std::string, Tensor>>& outputs);

}  // namespace ovfix::converter
