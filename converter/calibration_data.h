// Calibration data: the inputs that validation, fp16 calibration and repair run the model
// on. Real inputs show real ranges (an activation that overflows fp16 on a photo may not on
// random numbers), so ovfix reads them from ONNX test-data folders and --input files, and
// falls back to deterministic random inputs only when none are given.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/model.h"
#include "rules/pass.h"

namespace ovfix::converter {

// One set: graph input name -> file.
using InputFiles = std::map<std::string, std::string>;

// The sets in `dir`: its test_data_set_*/ folders in name order, or `dir` itself when it
// holds input_K.pb directly. input_K.pb is the K-th graph input that is not an initializer.
absl::StatusOr<std::vector<InputFiles>> FindCalibrationSets(const Graph& g, const std::string& dir);

// Reads the tensor for graph input `v` from `file` and checks it: the element type (any float
// type for a float input), the rank and every declared dim, and for a `positional` file (a
// folder's input_K.pb, taken for the K-th input) the name it records, when it records one.
// A file the command line names for `v` (--input NAME=FILE) is `v`'s whatever name it
// records, as `ovfix run` takes it. Errors name the file and the problem in one line.
absl::StatusOr<Tensor> ReadInputFile(const Value& v, const std::string& file,
                                     bool positional = false);

// Inputs for reference and calibration runs: the --input files, else deterministic random
// tensors (fixed seed) shaped as declared, with --input-shape dims where given and other
// symbolic dims set to --batch (first dim) or 1.
absl::StatusOr<exec::TensorMap> MakeReferenceInputs(const Model& model,
                                                    const rules::ConvertOptions& options);

struct CalibrationSets {
  std::vector<exec::TensorMap> sets;
  std::string description;  // one line for the console and the report
  // With --shape-range, per set the shape it is at ("opt x=1x3x64x64"; shape_range.h).
  std::vector<std::string> labels;
};

// Every set of the --calibration-data folders and the --input sets (`convert.input_files`
// is one more), in that order; inputs a set lacks are random. Without any: one set of
// random inputs (MakeReferenceInputs), and the description says so. With --shape-range, the
// sets over the range (ExpandOverShapeRanges).
absl::StatusOr<CalibrationSets> LoadCalibrationSets(const Model& model,
                                                    const std::vector<std::string>& folders,
                                                    std::vector<InputFiles> input_sets,
                                                    const rules::ConvertOptions& convert);

}  // namespace ovfix::converter
