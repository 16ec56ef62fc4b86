#include "exec/random_inputs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/float16.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

template <typename T>
void FillIntegers(Tensor& t, SeededRandom& random, int64_t low, int64_t high) {
  T* data = t.data<T>();
  const uint64_t count = static_cast<uint64_t>(high - low + 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    data[i] = static_cast<T>(low + static_cast<int64_t>(random.Next() % count));
  }
}

}  // namespace

absl::StatusOr<Tensor> RandomTensor(DataType type, const std::vector<int64_t>& dims,
                                    SeededRandom& random, const std::string& name,
                                    const RandomRanges& ranges) {
  // Dims come from the model or the command line: checked before anything is allocated.
  const uint64_t element = std::max<uint64_t>(ElementSize(type), 1);
  uint64_t bytes = element;
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "': negative dim ", d, " for random values"));
    }
    if (d > 0 && bytes > kMaxRandomInputBytes / static_cast<uint64_t>(d)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' of dims [", absl::StrJoin(dims, ","), "] is too large for random ",
          "values (more than ", kMaxRandomInputBytes >> 30, " GiB): fix its dims with ",
          "--input-shape ", name, "=DIMS or give it with --input ", name, "=FILE.pb"));
    }
    bytes *= static_cast<uint64_t>(d);
  }
  Tensor t(type, dims);
  const int64_t lo = ranges.int_low, hi = ranges.int_high;
  if (IsFloatingPoint(type)) {
    const double width = ranges.float_high - ranges.float_low;
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.SetFromDouble(i, ranges.float_low + width * random.Uniform());
    }
  } else if (type == DataType::kBool) {
    FillIntegers<uint8_t>(t, random, 0, 1);
  } else if (!VisitType(type, kIntTypes, [&](auto tag) {
               FillIntegers<typename decltype(tag)::type>(t, random, lo, hi);
             })) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name, "' is ", std::string(DataTypeName(type)),
                     ": random values cannot be made for it; give it with --input"));
  }
  return t;
}

absl::StatusOr<std::vector<int64_t>> RandomInputDims(const Value& v,
                                                     const RandomInputOptions& options) {
  const std::optional<std::vector<Dim>> shape = v.shape();
  if (auto it = options.shapes.find(v.name()); it != options.shapes.end()) {
    const std::vector<int64_t>& dims = it->second;
    const std::string given =
        absl::StrCat("--input-shape ", v.name(), "=", absl::StrJoin(dims, "x"));
    for (size_t i = 0; shape && i < shape->size() && i < dims.size(); ++i) {
      if ((*shape)[i].known() && (*shape)[i].value != dims[i]) {
        return absl::InvalidArgumentError(absl::StrCat(given, ": dim ", i, " is ",
                                                       (*shape)[i].value, " in the model (",
                                                       DescribeType(v), ")"));
      }
    }
    if (shape && shape->size() != dims.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(given, ": the input has rank ", shape->size()));
    }
    return dims;
  }
  if (!v.is_tensor() || !shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", v.name(), "' has no declared shape: give it with --input ",
                     v.name(), "=FILE.pb or --input-shape ", v.name(), "=DIMS"));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim& d = (*shape)[i];
    dims.push_back(
        d.known() ? d.value : (i == 0 && options.batch > 0 ? options.batch : options.symbolic_dim));
  }
  return dims;
}

absl::StatusOr<TensorMap> RandomInputs(const Graph& graph, const RandomInputOptions& options) {
  SeededRandom random(options.seed);
  TensorMap inputs;
  for (const Value* v : graph.inputs()) {
    if (v->is_initializer()) continue;
    OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> dims, RandomInputDims(*v, options));
    OVFIX_ASSIGN_OR_RETURN(Tensor t,
                           RandomTensor(v->elem_type(), dims, random, v->name(), options.ranges));
    inputs.emplace(v->name(), std::move(t));
  }
  return inputs;
}

}  // namespace ovfix::exec
