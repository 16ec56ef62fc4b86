#include "converter/calibration_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/data_inputs.h"
#include "converter/shape_range.h"
#include "exec/random_inputs.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

// input_K.pb files of `dir` for the graph's inputs; an input_K.pb beyond them is an error.
absl::StatusOr<InputFiles> SetFiles(const std::vector<const Value*>& inputs, const fs::path& dir) {
  InputFiles files;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const fs::path file = dir / absl::StrCat("input_", k, ".pb");
    if (fs::exists(file)) files[inputs[k]->name()] = file.string();
  }
  const fs::path extra = dir / absl::StrCat("input_", inputs.size(), ".pb");
  if (fs::exists(extra)) {
    return absl::InvalidArgumentError(
        absl::StrCat(extra.string(), ": the model has ", inputs.size(), " input(s), not more"));
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir.string(), ": no input_0.pb (expected input_K.pb, K the input's position)"));
  }
  return files;
}

}  // namespace

absl::StatusOr<std::vector<InputFiles>> FindCalibrationSets(const Graph& g,
                                                            const std::string& dir) {
  if (!fs::is_directory(dir)) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": not a folder"));
  }
  const std::vector<const Value*> inputs = DataInputs(g);
  std::vector<fs::path> set_dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) {
      set_dirs.push_back(e.path());
    }
  }
  std::sort(set_dirs.begin(), set_dirs.end());
  if (set_dirs.empty()) set_dirs.push_back(dir);
  std::vector<InputFiles> sets;
  for (const fs::path& d : set_dirs) {
    OVFIX_ASSIGN_OR_RETURN(InputFiles files, SetFiles(inputs, d));
    sets.push_back(std::move(files));
  }
  return sets;
}

absl::StatusOr<Tensor> ReadInputFile(const Value& v, const std::string& file, bool positional) {
  std::string recorded;
  absl::StatusOr<Tensor> t = ReadTensorFile(file, &recorded);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(file, ": ", t.status().message()));
  auto mismatch = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", what, " (input '", v.name(), "' is ", DescribeType(v), ")"));
  };
  if (positional && !recorded.empty() && recorded != v.name()) {
    return mismatch(absl::StrCat("holds tensor '", recorded, "', not '", v.name(), "'"));
  }
  const DataType want = v.elem_type();
  const bool both_float = IsFloatingPoint(want) && IsFloatingPoint(t->type());
  if (v.is_tensor() && want != DataType::kUndefined && want != t->type() && !both_float) {
    return mismatch(absl::StrCat("holds ", DescribeTensor(*t)));
  }
  if (std::optional<std::vector<Dim>> shape = v.shape()) {
    bool fits = shape->size() == t->dims().size();
    for (size_t i = 0; fits && i < shape->size(); ++i) {
      fits = !(*shape)[i].known() || (*shape)[i].value == t->dims()[i];
    }
    if (!fits) return mismatch(absl::StrCat("holds ", DescribeTensor(*t)));
  }
  return t;
}

namespace {

// The data of an input against the shape --batch or --input-shape fixes for it: the user's
// data and the user's option disagree, which the user must settle (not a bug of ovfix's).
absl::Status CheckAgainstFixedShape(const Value& v, const Tensor& t, const std::string& file,
                                    const rules::ConvertOptions& options) {
  if (auto it = options.input_shapes.find(v.name()); it != options.input_shapes.end()) {
    if (t.dims() != it->second) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": holds ", DescribeTensor(t), ", but --input-shape ", v.name(), "=",
          absl::StrJoin(it->second, "x"), " fixes input '", v.name(), "' to that shape"));
    }
    return absl::OkStatus();
  }
  const std::optional<std::vector<Dim>> shape = v.shape();
  const bool dynamic_first = shape.has_value() && !shape->empty() && !(*shape)[0].known();
  if (options.batch > 0 && dynamic_first && !t.dims().empty() && t.dims()[0] != options.batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": holds ", DescribeTensor(t), ", a batch of ", t.dims()[0], ", but --batch ",
        options.batch, " fixes the first dim of input '", v.name(), "' to ", options.batch));
  }
  return absl::OkStatus();
}

// MakeReferenceInputs, with `positional` files (ReadInputFile).
absl::StatusOr<exec::TensorMap> MakeInputs(const Model& model, const rules::ConvertOptions& options,
                                           bool positional) {
  const Graph& g = model.graph();
  for (const auto& [name, file] : options.input_files) {
    const Value* v = g.FindValue(name);
    if (v == nullptr || !v->is_graph_input()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input ", name, "=", file, ": the model has no input '", name, "'"));
    }
  }
  exec::RandomInputOptions random_options;
  random_options.ranges.int_high = 1;  // valid indices and counts for most models
  random_options.shapes = options.input_shapes;
  random_options.batch = options.batch;
  exec::SeededRandom random(random_options.seed);
  exec::TensorMap inputs;
  for (const Value* v : g.inputs()) {
    if (v->is_initializer()) continue;
    if (!v->is_tensor()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", v->name(), "' is ", DescribeType(*v),
          ", not a tensor: validation runs take tensors (--no-validate converts without)"));
    }
    if (auto it = options.input_files.find(v->name()); it != options.input_files.end()) {
      OVFIX_ASSIGN_OR_RETURN(Tensor t, ReadInputFile(*v, it->second, positional));
      OVFIX_RETURN_IF_ERROR(CheckAgainstFixedShape(*v, t, it->second, options));
      inputs.emplace(v->name(), std::move(t));
      continue;
    }
    OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, exec::RandomInputDims(*v, random_options));
    OVFIX_ASSIGN_OR_RETURN(Tensor t, exec::RandomTensor(v->elem_type(), dims, random, v->name(),
                                                        random_options.ranges));
    inputs.emplace(v->name(), std::move(t));
  }
  return inputs;
}

// Sets whose float inputs span magnitudes this many times apart are not samples of one
// distribution: one was likely not normalized (0..255 beside -1..1) or is blank.
constexpr double kUnlikeRatio = 16;

// "; input 'x' differs widely between sets: ..." for the first float input whose largest
// magnitude differs by kUnlikeRatio between two sets, or "".
std::string UnlikeSets(const Graph& g, const std::vector<exec::TensorMap>& sets) {
  if (sets.size() < 2) return "";
  for (const Value* v : g.inputs()) {
    if (v->is_initializer()) continue;
    std::vector<double> largest;
    for (const exec::TensorMap& set : sets) {
      auto it = set.find(v->name());
      if (it == set.end() || !IsFloatingPoint(it->second.type())) break;
      double m = 0;
      for (int64_t i = 0; i < it->second.numel(); ++i) {
        const double x = std::fabs(it->second.GetAsDouble(i));
        if (std::isfinite(x)) m = std::max(m, x);
      }
      largest.push_back(m);
    }
    if (largest.size() != sets.size()) continue;
    const auto [low, high] = std::minmax_element(largest.begin(), largest.end());
    if (!(*high > kUnlikeRatio * *low)) continue;
    return absl::StrFormat(
        "; input '%s' differs widely between sets: max |x| %.3g in set %d, %.3g in set %d (is "
        "one not normalized like the others? each set is judged on its own)",
        v->name(), *high, static_cast<int>(high - largest.begin()), *low,
        static_cast<int>(low - largest.begin()));
  }
  return "";
}

}  // namespace

absl::StatusOr<CalibrationSets> LoadCalibrationSets(const Model& model,
                                                    const std::vector<std::string>& folders,
                                                    std::vector<InputFiles> input_sets,
                                                    const rules::ConvertOptions& convert) {
  const Graph& g = model.graph();
  CalibrationSets result;
  std::vector<InputFiles> sets;
  for (const std::string& dir : folders) {
    OVFIX_ASSIGN_OR_RETURN(std::vector<InputFiles> found, FindCalibrationSets(g, dir));
    sets.insert(sets.end(), found.begin(), found.end());
  }
  const size_t positional_sets = sets.size();  // the folders'; then the --input sets
  if (!convert.input_files.empty()) input_sets.push_back(convert.input_files);
  sets.insert(sets.end(), input_sets.begin(), input_sets.end());
  std::vector<exec::TensorMap> read;
  if (sets.empty()) {
    OVFIX_ASSIGN_OR_RETURN(exec::TensorMap random, MakeReferenceInputs(model, convert));
    read.push_back(std::move(random));
    result.description =
        "no calibration data: validating on random inputs (give --calibration-data DIR or "
        "--input NAME=FILE.pb for real ranges)";
  } else {
    for (size_t i = 0; i < sets.size(); ++i) {
      rules::ConvertOptions with_files = convert;
      with_files.input_files = sets[i];
      OVFIX_ASSIGN_OR_RETURN(exec::TensorMap set,
                             MakeInputs(model, with_files, i < positional_sets));
      read.push_back(std::move(set));
    }
    result.description =
        absl::StrCat("calibration: ", sets.size(), " input set(s)", folders.empty() ? "" : " from ",
                     absl::StrJoin(folders, ", "));
  }
  if (!sets.empty()) absl::StrAppend(&result.description, UnlikeSets(g, read));
  OVFIX_ASSIGN_OR_RETURN(RangedSets ranged, ExpandOverShapeRanges(g, std::move(read), convert));
  result.sets = std::move(ranged.sets);
  result.labels = std::move(ranged.labels);
  if (!result.labels.empty()) {
    const std::set<std::string> shapes(result.labels.begin(), result.labels.end());
    absl::StrAppend(&result.description, "; over --shape-range: ", result.sets.size(),
                    " set(s) at ", shapes.size(), " shape(s)");
  }
  return result;
}

absl::StatusOr<exec::TensorMap> MakeReferenceInputs(const Model& model,
                                                    const rules::ConvertOptions& options) {
  return MakeInputs(model, options, /*positional=*/false);
}

}  // namespace ovfix::converter
