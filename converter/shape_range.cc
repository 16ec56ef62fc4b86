#include "converter/shape_range.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/data_type.h"
#include "ir/status_macros.h"

namespace ovfix::converter {
namespace {

using ShapeRange = rules::ConvertOptions::ShapeRange;

std::string DimsText(const std::vector<int64_t>& dims) { return absl::StrJoin(dims, "x"); }

// `t` with every dim brought to `dims` by repeating cyclically or cutting (any element type).
Tensor RepeatOrCut(const Tensor& t, const std::vector<int64_t>& dims) {
  Tensor out = Tensor::Uninitialized(t.type(), dims);
  const size_t element = ElementSize(t.type());
  const size_t rank = dims.size();
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t a = rank; a-- > 1;) in_strides[a - 1] = in_strides[a] * t.dim(a);
  std::vector<int64_t> index(rank, 0);
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t offset = 0;
    for (size_t a = 0; a < rank; ++a) offset += (index[a] % t.dim(a)) * in_strides[a];
    std::memcpy(dst + k * element, src + offset * element, element);
    for (size_t a = rank; a-- > 0;) {
      if (++index[a] < dims[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

// The last two dims of a float32 NCHW tensor resized bilinearly, half-pixel centres.
Tensor ResizeBilinear(const Tensor& t, int64_t height, int64_t width) {
  const int64_t n = t.dim(0), c = t.dim(1), h = t.dim(2), w = t.dim(3);
  Tensor out = Tensor::Uninitialized(DataType::kFloat, {n, c, height, width});
  const float* in = t.data<float>();
  float* o = out.data<float>();
  // Source coordinate of output index i, clamped to the edge pixels.
  auto source = [](int64_t i, int64_t from, int64_t to, int64_t& lo, int64_t& hi, double& f) {
    const double x = std::clamp((i + 0.5) * from / to - 0.5, 0.0, from - 1.0);
    lo = static_cast<int64_t>(std::floor(x));
    hi = std::min(lo + 1, from - 1);
    f = x - lo;
  };
  for (int64_t plane = 0; plane < n * c; ++plane) {
    const float* p = in + plane * h * w;
    for (int64_t y = 0; y < height; ++y) {
      int64_t y0, y1;
      double fy;
      source(y, h, height, y0, y1, fy);
      for (int64_t x = 0; x < width; ++x) {
        int64_t x0, x1;
        double fx;
        source(x, w, width, x0, x1, fx);
        const double top = p[y0 * w + x0] * (1 - fx) + p[y0 * w + x1] * fx;
        const double bottom = p[y1 * w + x0] * (1 - fx) + p[y1 * w + x1] * fx;
        *o++ = static_cast<float>(top * (1 - fy) + bottom * fy);
      }
    }
  }
  return out;
}

// What the model declares of an input's dims: the value, or -1 (symbolic or unknown), and the
// symbol's name where it has one.
struct DeclaredDim {
  int64_t value = -1;
  std::string symbol;
};
std::vector<DeclaredDim> Declared(const Value& v) {
  std::vector<DeclaredDim> dims;
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return dims;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    dims.push_back({d.has_dim_value() ? d.dim_value() : -1, d.dim_param()});
  }
  return dims;
}

// The dims `convert` fixes for input `v` (its --input-shape, --batch on a dynamic first dim,
// what the model declares), -1 where none.
std::vector<int64_t> FixedDims(const Value& v, const rules::ConvertOptions& convert) {
  std::vector<int64_t> fixed;
  for (const DeclaredDim& d : Declared(v)) fixed.push_back(d.value);
  if (auto it = convert.input_shapes.find(v.name()); it != convert.input_shapes.end()) {
    if (it->second.size() == fixed.size()) fixed = it->second;
  } else if (convert.batch > 0 && !fixed.empty() && fixed[0] < 0) {
    fixed[0] = convert.batch;
  }
  return fixed;
}

}  // namespace

absl::StatusOr<Tensor> BringToShape(const Tensor& t, const std::vector<int64_t>& dims) {
  if (dims.size() != t.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("a tensor of shape ", DimsText(t.dims()),
                                                   " cannot be brought to ", DimsText(dims)));
  }
  if (t.dims() == dims) return t;
  if (t.numel() == 0 || ElementSize(t.type()) == 0) {
    return absl::InvalidArgumentError(absl::StrCat("a tensor of shape ", DimsText(t.dims()),
                                                   " cannot be brought to ", DimsText(dims)));
  }
  const bool image = t.rank() == 4 && t.type() == DataType::kFloat;
  if (!image || (t.dim(2) == dims[2] && t.dim(3) == dims[3])) return RepeatOrCut(t, dims);
  // Batch and channels first, then the picture itself.
  const Tensor planes = RepeatOrCut(t, {dims[0], dims[1], t.dim(2), t.dim(3)});
  return ResizeBilinear(planes, dims[2], dims[3]);
}

absl::StatusOr<RangedSets> ExpandOverShapeRanges(const Graph& g, std::vector<exec::TensorMap> sets,
                                                 const rules::ConvertOptions& convert) {
  RangedSets result;
  if (convert.shape_ranges.empty()) {
    result.sets = std::move(sets);
    return result;
  }
  // Each range checked against the model and what the options fix; fixed dims are taken.
  std::map<std::string, ShapeRange> ranges;
  for (const auto& [name, given] : convert.shape_ranges) {
    const Value* v = nullptr;
    for (const Value* in : g.inputs()) {
      if (in->name() == name && !in->is_initializer()) v = in;
    }
    if (v == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shape-range ", name, ": the model has no input '", name, "'"));
    }
    const std::vector<int64_t> fixed = FixedDims(*v, convert);
    if (!fixed.empty() && fixed.size() != given.opt.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shape-range ", name, ": the range has rank ", given.opt.size(),
                       " but the model declares rank ", fixed.size()));
    }
    ShapeRange range = given;
    const std::vector<DeclaredDim> declared = Declared(*v);
    for (size_t i = 0; i < fixed.size(); ++i) {
      if (fixed[i] < 0) continue;
      if (i < declared.size() && declared[i].value >= 0 &&
          (given.min[i] != fixed[i] || given.max[i] != fixed[i])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--shape-range ", name, ": dim ", i, " is ", fixed[i], " in the model, not ",
            given.min[i], ":", given.opt[i], ":", given.max[i]));
      }
      range.min[i] = range.opt[i] = range.max[i] = fixed[i];  // --batch, --input-shape
    }
    ranges[name] = std::move(range);
  }
  struct Point {
    const char* name;
    std::vector<int64_t> ShapeRange::*dims;
  };
  const Point points[] = {
      {"opt", &ShapeRange::opt}, {"min", &ShapeRange::min}, {"max", &ShapeRange::max}};
  std::vector<std::map<std::string, std::vector<int64_t>>> done;
  for (const Point& point : points) {
    std::map<std::string, std::vector<int64_t>> at;
    for (const auto& [name, range] : ranges) at[name] = range.*(point.dims);
    if (std::find(done.begin(), done.end(), at) != done.end()) continue;  // min == opt...
    done.push_back(at);
    // Symbolic dims of the ranged inputs, so that inputs sharing them follow (a mask with
    // its input_ids).
    std::map<std::string, int64_t> symbols;
    for (const auto& [name, dims] : at) {
      const std::vector<DeclaredDim> declared = Declared(*g.FindValue(name));
      for (size_t i = 0; i < declared.size() && i < dims.size(); ++i) {
        if (!declared[i].symbol.empty()) symbols.emplace(declared[i].symbol, dims[i]);
      }
    }
    std::vector<std::string> label_dims;
    for (const auto& [name, dims] : at)
      label_dims.push_back(absl::StrCat(name, "=", DimsText(dims)));
    const std::string label = absl::StrCat(point.name, " ", absl::StrJoin(label_dims, ", "));
    auto at_point = [&](const exec::TensorMap& set) {
      for (const auto& [name, dims] : at) {
        auto it = set.find(name);
        if (it == set.end() || it->second.dims() != dims) return false;
      }
      return true;
    };
    const size_t before = result.sets.size();
    for (const exec::TensorMap& set : sets) {
      if (!at_point(set)) continue;
      result.sets.push_back(set);
      result.labels.push_back(label);
    }
    if (result.sets.size() > before) continue;  // the user's own sets at this shape
    for (const exec::TensorMap& set : sets) {
      exec::TensorMap brought;
      for (const auto& [name, t] : set) {
        std::vector<int64_t> dims = t.dims();
        if (auto it = at.find(name); it != at.end()) {
          dims = it->second;
        } else if (const Value* v = g.FindValue(name); v != nullptr) {
          const std::vector<DeclaredDim> declared = Declared(*v);
          for (size_t i = 0; i < declared.size() && i < dims.size(); ++i) {
            auto s = symbols.find(declared[i].symbol);
            if (declared[i].value < 0 && s != symbols.end()) dims[i] = s->second;
          }
        }
        absl::StatusOr<Tensor> b = BringToShape(t, dims);
        if (!b.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("--shape-range: calibration input '", name,
                                                         "': ", b.status().message()));
        }
        brought.emplace(name, *std::move(b));
      }
      result.sets.push_back(std::move(brought));
      result.labels.push_back(label);
    }
  }
  return result;
}

std::string DynamicInputShapes(const Graph& g, const exec::TensorMap& set) {
  std::vector<std::string> shapes;
  for (const Value* v : g.inputs()) {
    if (v->is_initializer()) continue;
    const std::vector<DeclaredDim> declared = Declared(*v);
    const bool dynamic = std::any_of(declared.begin(), declared.end(),
                                     [](const DeclaredDim& d) { return d.value < 0; });
    auto it = set.find(v->name());
    if (dynamic && it != set.end()) {
      shapes.push_back(absl::StrCat(v->name(), "=", DimsText(it->second.dims())));
    }
  }
  return absl::StrJoin(shapes, ", ");
}

std::string TrtexecShapes(const rules::ConvertOptions& convert) {
  if (convert.shape_ranges.empty()) return "";
  std::vector<std::string> min, opt, max;
  for (const auto& [name, range] : convert.shape_ranges) {
    min.push_back(absl::StrCat(name, ":", DimsText(range.min)));
    opt.push_back(absl::StrCat(name, ":", DimsText(range.opt)));
    max.push_back(absl::StrCat(name, ":", DimsText(range.max)));
  }
  return absl::StrCat("--minShapes=", absl::StrJoin(min, ","),
                      " --optShapes=", absl::StrJoin(opt, ","),
                      " --maxShapes=", absl::StrJoin(max, ","));
}

}  // namespace ovfix::converter
