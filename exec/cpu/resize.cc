// Resize (opset 10-18) and Upsample (opset 7-9).
//
// Every mode is separable: an output coordinate along one axis reads a few input positions
// along that axis with fixed weights. So each axis gets a plan (input index and weight per
// tap, per output position), nearest mode gathers once through all plans, and linear/cubic
// interpolate one axis at a time in double precision, as onnx's reference does.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/misc_kernels.h"
#include "exec/cpu/resize_bilinear.h"
#include "exec/kernel.h"
#include "ir/data_type.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class CoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNearest,
  kTfCropAndResize,
};
// kSimple is what Upsample and Resize-10 did: truncate when upsampling, round up when
// downsampling (onnxruntime's behaviour for those opsets).
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeAttributes {
  Mode mode = Mode::kNearest;
  CoordinateMode coordinate_mode = CoordinateMode::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;
};

// One axis: for output position j, taps input indices index[j*taps + t] with weights.
struct AxisPlan {
  int64_t in_size = 0;
  int64_t out_size = 0;
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<char> outside;  // tf_crop_and_resize: position maps outside the input
  bool any_outside = false;
  bool identity = false;
};

absl::StatusOr<ResizeAttributes> ParseAttributes(const KernelContext& ctx, bool legacy) {
  ResizeAttributes a;
  const std::string mode = ctx.node.GetString("mode", "nearest");
  if (mode == "nearest") {
    a.mode = Mode::kNearest;
  } else if (mode == "linear" || (legacy && mode == "bilinear")) {
    a.mode = Mode::kLinear;
  } else if (mode == "cubic" && !legacy) {
    a.mode = Mode::kCubic;
  } else {
    return ctx.Error("unsupported mode '", mode, "'");
  }
  if (legacy) {  // Upsample and Resize-10 have no coordinate attributes
    a.coordinate_mode = CoordinateMode::kAsymmetric;
    a.nearest_mode = NearestMode::kSimple;
    return a;
  }
  const std::string coordinate = ctx.node.GetString("coordinate_transformation_mode", "half_pixel");
  if (coordinate == "half_pixel") {
    a.coordinate_mode = CoordinateMode::kHalfPixel;
  } else if (coordinate == "half_pixel_symmetric" && ctx.opset >= 18) {
    a.coordinate_mode = CoordinateMode::kHalfPixelSymmetric;
  } else if (coordinate == "pytorch_half_pixel") {
    a.coordinate_mode = CoordinateMode::kPytorchHalfPixel;
  } else if (coordinate == "align_corners") {
    a.coordinate_mode = CoordinateMode::kAlignCorners;
  } else if (coordinate == "asymmetric") {
    a.coordinate_mode = CoordinateMode::kAsymmetric;
  } else if (coordinate == "tf_half_pixel_for_nearest" && ctx.opset < 18) {
    a.coordinate_mode = CoordinateMode::kTfHalfPixelForNearest;
  } else if (coordinate == "tf_crop_and_resize") {
    a.coordinate_mode = CoordinateMode::kTfCropAndResize;
  } else {
    return ctx.Error("unsupported coordinate_transformation_mode '", coordinate, "'");
  }
  const std::string nearest = ctx.node.GetString("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") {
    a.nearest_mode = NearestMode::kRoundPreferFloor;
  } else if (nearest == "round_prefer_ceil") {
    a.nearest_mode = NearestMode::kRoundPreferCeil;
  } else if (nearest == "floor") {
    a.nearest_mode = NearestMode::kFloor;
  } else if (nearest == "ceil") {
    a.nearest_mode = NearestMode::kCeil;
  } else {
    return ctx.Error("unsupported nearest_mode '", nearest, "'");
  }
  a.cubic_coeff_a = ctx.node.GetFloat("cubic_coeff_a", -0.75f);
  a.exclude_outside = ctx.node.GetInt("exclude_outside", 0) != 0;
  a.extrapolation_value = ctx.node.GetFloat("extrapolation_value", 0.0f);
  if (ctx.node.GetInt("antialias", 0) != 0) return ctx.Error("antialias is not supported");
  return a;
}

// The input coordinate that output position x maps to. `out_width` is scale * in_size as a
// real number (the reference uses it, not the rounded size, for align_corners).
double OriginalCoordinate(const ResizeAttributes& a, int64_t x, double scale, int64_t in_size,
                          int64_t out_size, double out_width, double roi_start, double roi_end) {
  const double xd = static_cast<double>(x);
  switch (a.coordinate_mode) {
    case CoordinateMode::kHalfPixel:
      return (xd + 0.5) / scale - 0.5;
    case CoordinateMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_size) / out_width;
      const double center = static_cast<double>(in_size) / 2;
      return center * (1 - adjustment) + (xd + 0.5) / scale - 0.5;
    }
    case CoordinateMode::kPytorchHalfPixel:
      return out_size > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
    case CoordinateMode::kAlignCorners:
      return out_width == 1 ? 0.0 : xd * static_cast<double>(in_size - 1) / (out_width - 1);
    case CoordinateMode::kAsymmetric:
      return xd / scale;
    case CoordinateMode::kTfHalfPixelForNearest:
      return (xd + 0.5) / scale;
    case CoordinateMode::kTfCropAndResize: {
      const double span = static_cast<double>(in_size - 1);
      const double start = roi_start * span;
      if (out_size == 1) return start + (roi_end - roi_start) * span / 2;
      return start + xd * (roi_end - roi_start) * span / (out_width - 1);
    }
  }
  return 0.0;
}

int64_t NearestIndex(NearestMode mode, double x, double scale) {
  const double base = std::floor(x);
  const double fraction = x - base;
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(fraction <= 0.5 ? base : base + 1);
    case NearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(fraction < 0.5 ? base : base + 1);
    case NearestMode::kFloor:
      return static_cast<int64_t>(base);
    case NearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case NearestMode::kSimple:
      return static_cast<int64_t>(scale < 1 ? std::ceil(x) : base);
  }
  return 0;
}

// Keys' cubic convolution kernel at distance d (0 <= d <= 2).
double CubicWeight(double d, double a) {
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

AxisPlan MakeAxisPlan(const ResizeAttributes& a, int64_t in_size, int64_t out_size, double scale,
                      double out_width, double roi_start, double roi_end) {
  AxisPlan p;
  p.in_size = in_size;
  p.out_size = out_size;
  p.taps = a.mode == Mode::kNearest ? 1 : a.mode == Mode::kLinear ? 2 : 4;
  p.index.assign(out_size * p.taps, 0);
  p.weight.assign(out_size * p.taps, 0.0);
  p.outside.assign(out_size, 0);
  const auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_size - 1); };
  for (int64_t j = 0; j < out_size; ++j) {
    const double x =
        OriginalCoordinate(a, j, scale, in_size, out_size, out_width, roi_start, roi_end);
    int64_t* index = &p.index[j * p.taps];
    double* weight = &p.weight[j * p.taps];
    if (a.coordinate_mode == CoordinateMode::kTfCropAndResize &&
        (x < 0 || x > static_cast<double>(in_size - 1))) {
      p.outside[j] = 1;
      p.any_outside = true;
      continue;
    }
    if (!std::isfinite(x)) continue;  // degenerate scale; reads index 0 with weight 0
    const double base = std::floor(x);
    const double t = x - base;
    const int64_t b = static_cast<int64_t>(base);
    if (a.mode == Mode::kNearest) {
      index[0] = clamp(NearestIndex(a.nearest_mode, x, scale));
      weight[0] = 1;
    } else if (a.mode == Mode::kLinear) {
      index[0] = clamp(b);
      index[1] = clamp(b + 1);
      weight[0] = 1 - t;
      weight[1] = t;
    } else {
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t i = b - 1 + k;
        weight[k] = CubicWeight(std::fabs(t - (k - 1)), a.cubic_coeff_a);
        if (a.exclude_outside && (i < 0 || i >= in_size)) weight[k] = 0;
        sum += weight[k];
        index[k] = clamp(i);
      }
      if (a.exclude_outside && sum != 0) {
        for (int k = 0; k < 4; ++k) weight[k] /= sum;
      }
    }
  }
  // An axis whose every output position reads exactly its own input position is skipped.
  p.identity = in_size == out_size && !p.any_outside;
  for (int64_t j = 0; j < out_size && p.identity; ++j) {
    double own = 0;
    for (int k = 0; k < p.taps; ++k) {
      const double w = p.weight[j * p.taps + k];
      if (p.index[j * p.taps + k] == j) {
        own += w;
      } else if (w != 0) {
        p.identity = false;
      }
    }
    if (own != 1.0) p.identity = false;
  }
  return p;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

// Nearest: every output element copies one input element (any element type, by bytes).
template <typename Word>
void GatherNearest(const std::vector<AxisPlan>& plans, const Word* in, Word* out,
                   ThreadPool* pool) {
  const size_t rank = plans.size();
  std::vector<int64_t> in_dims(rank), out_dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    in_dims[i] = plans[i].in_size;
    out_dims[i] = plans[i].out_size;
  }
  const std::vector<int64_t> in_strides = Strides(in_dims);
  const int64_t width = out_dims[rank - 1];
  const int64_t rows = Tensor::NumElements(out_dims) / width;
  const AxisPlan& last = plans[rank - 1];
  ParallelFor(pool, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t rest = row;
      int64_t offset = 0;
      for (int d = static_cast<int>(rank) - 2; d >= 0; --d) {
        const int64_t j = rest % out_dims[d];
        rest /= out_dims[d];
        offset += plans[d].index[j] * in_strides[d];
      }
      Word* dst = out + row * width;
      for (int64_t j = 0; j < width; ++j) dst[j] = in[offset + last.index[j]];
    }
  });
}

// Interpolates along one axis: [outer, in, inner] -> [outer, out, inner].
void InterpolateAxis(const AxisPlan& plan, int64_t outer, int64_t inner, const double* in,
                     double* out, ThreadPool* pool) {
  const int64_t out_size = plan.out_size;
  ParallelFor(pool, outer * out_size, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const int64_t o = r / out_size, j = r % out_size;
                  double* dst = out + r * inner;
                  std::fill(dst, dst + inner, 0.0);
                  for (int k = 0; k < plan.taps; ++k) {
                    const double w = plan.weight[j * plan.taps + k];
                    if (w == 0) continue;
                    const double* src =
                        in + (o * plan.in_size + plan.index[j * plan.taps + k]) * inner;
                    for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
                  }
                }
              });
}

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v >= 0.5;
  } else {
    if (std::isnan(v)) return T{0};
    const double r = std::nearbyint(v);
    return static_cast<T>(std::clamp<double>(r, static_cast<double>(std::numeric_limits<T>::min()),
                                             static_cast<double>(std::numeric_limits<T>::max())));
  }
}

template <typename T>
void Load(const Tensor& t, std::vector<double>& v) {
  const T* src = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(src[i]);
}

template <typename T>
void Store(const std::vector<double>& v, Tensor& t) {
  T* dst = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) dst[i] = FromDouble<T>(v[i]);
}

std::vector<double> Interpolate(const std::vector<AxisPlan>& plans, std::vector<double> current,
                                ThreadPool* pool) {
  const size_t rank = plans.size();
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) dims[i] = plans[i].in_size;
  std::vector<double> next;
  // Innermost axis first, as the reference's recursion does.
  for (int axis = static_cast<int>(rank) - 1; axis >= 0; --axis) {
    const AxisPlan& plan = plans[axis];
    if (plan.identity) continue;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= dims[d];
    for (size_t d = axis + 1; d < rank; ++d) inner *= dims[d];
    next.assign(outer * plan.out_size * inner, 0.0);
    InterpolateAxis(plan, outer, inner, current.data(), next.data(), pool);
    current.swap(next);
    dims[axis] = plan.out_size;
  }
  return current;
}

// tf_crop_and_resize: an output element any of whose coordinates falls outside the input
// takes the extrapolation value.
void Extrapolate(const std::vector<AxisPlan>& plans, double value, std::vector<double>& out) {
  const size_t rank = plans.size();
  std::vector<int64_t> counter(rank, 0);
  for (size_t i = 0; i < out.size(); ++i) {
    bool outside = false;
    for (size_t d = 0; d < rank && !outside; ++d) outside = plans[d].outside[counter[d]] != 0;
    if (outside) out[i] = value;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      if (++counter[d] < plans[d].out_size) break;
      counter[d] = 0;
    }
  }
}

// Output sizes and per-axis scales from the scales/sizes inputs (or Upsample's attribute).
struct Geometry {
  std::vector<int64_t> out_dims;
  std::vector<double> scales;
  std::vector<double> out_widths;  // scale * in_size as a real number
  std::vector<double> roi;         // [starts..., ends...], rank * 2
};

absl::Status FromScales(const KernelContext& ctx, const std::vector<int64_t>& in_dims,
                        const std::vector<double>& scales, const std::vector<int64_t>& axes,
                        Geometry& g) {
  if (scales.size() != axes.size()) {
    return ctx.Error("scales has ", scales.size(), " values, expected ", axes.size());
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i];
    if (!(scales[i] > 0) || !std::isfinite(scales[i])) {
      return ctx.Error("scales must be positive and finite");
    }
    const double width = scales[i] * static_cast<double>(in_dims[axis]);
    if (width > 1e12) return ctx.Error("output too large");
    g.out_dims[axis] = static_cast<int64_t>(width);
    g.scales[axis] = scales[i];
    g.out_widths[axis] = width;
  }
  return absl::OkStatus();
}

absl::Status FromSizes(const KernelContext& ctx, const std::vector<int64_t>& in_dims,
                       const Tensor& sizes_tensor, const std::vector<int64_t>& axes, Geometry& g) {
  if (sizes_tensor.type() != DataType::kInt64) return ctx.Error("sizes must be int64");
  if (static_cast<size_t>(sizes_tensor.numel()) != axes.size()) {
    return ctx.Error("sizes has ", sizes_tensor.numel(), " values, expected ", axes.size());
  }
  std::vector<int64_t> sizes(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    sizes[i] = sizes_tensor.GetAsInt64(i);
    if (sizes[i] < 0) return ctx.Error("sizes must not be negative");
  }
  const std::string policy = ctx.node.GetString("keep_aspect_ratio_policy", "stretch");
  if (ctx.opset >= 18 && policy != "stretch") {
    if (policy != "not_larger" && policy != "not_smaller") {
      return ctx.Error("unsupported keep_aspect_ratio_policy '", policy, "'");
    }
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (in_dims[axes[i]] == 0) return ctx.Error("cannot keep the aspect ratio of an empty axis");
      const double s = static_cast<double>(sizes[i]) / static_cast<double>(in_dims[axes[i]]);
      scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t axis = axes[i];
      const double width = scale * static_cast<double>(in_dims[axis]);
      if (width > 1e12) return ctx.Error("output too large");
      g.out_dims[axis] = static_cast<int64_t>(std::nearbyint(width));
      g.scales[axis] = scale;
      g.out_widths[axis] = width;
    }
    return absl::OkStatus();
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i];
    g.out_dims[axis] = sizes[i];
    if (in_dims[axis] == 0) {
      g.scales[axis] = 1;
    } else {
      g.scales[axis] = static_cast<double>(sizes[i]) / static_cast<double>(in_dims[axis]);
    }
    g.out_widths[axis] = static_cast<double>(sizes[i]);
  }
  return absl::OkStatus();
}

std::vector<double> ReadDoubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

// Where the node takes its scales from.
enum class Form {
  kScalesAttribute,  // Upsample-7/8
  kScalesInput,      // Upsample-9, Resize-10: (X, scales)
  kResize,           // Resize-11+: (X, roi, scales, sizes)
};

absl::StatusOr<Geometry> ResizeGeometry(const KernelContext& ctx, Form form) {
  const std::vector<int64_t>& in_dims = ctx.input(0).dims();
  const size_t rank = in_dims.size();
  Geometry g;
  g.out_dims = in_dims;
  g.scales.assign(rank, 1.0);
  g.out_widths.resize(rank);
  for (size_t i = 0; i < rank; ++i) g.out_widths[i] = static_cast<double>(in_dims[i]);
  g.roi.assign(rank * 2, 0.0);
  for (size_t i = 0; i < rank; ++i) g.roi[rank + i] = 1.0;
  std::vector<int64_t> axes(rank);
  for (size_t i = 0; i < rank; ++i) axes[i] = static_cast<int64_t>(i);

  if (form == Form::kScalesAttribute) {
    const std::vector<float> attribute = ctx.node.GetFloats("scales");
    const std::vector<double> scales(attribute.begin(), attribute.end());
    OVFIX_RETURN_IF_ERROR(FromScales(ctx, in_dims, scales, axes, g));
    return g;
  }
  if (form == Form::kScalesInput) {
    if (!ctx.has_input(1)) return ctx.Error("missing scales input");
    if (absl::Status s = FromScales(ctx, in_dims, ReadDoubles(ctx.input(1)), axes, g); !s.ok()) {
      return s;
    }
    return g;
  }

  if (ctx.opset >= 18 && ctx.node.HasAttribute("axes")) {
    axes = ctx.node.GetInts("axes");
    std::vector<char> seen(rank, 0);
    for (int64_t& axis : axes) {
      if (axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank)) {
        return ctx.Error("axis ", axis, " out of range for rank ", rank);
      }
      if (axis < 0) axis += static_cast<int64_t>(rank);
      if (seen[axis]++) return ctx.Error("axis ", axis, " repeated");
    }
  }
  if (ctx.has_input(1) && ctx.input(1).numel() > 0) {
    const std::vector<double> roi = ReadDoubles(ctx.input(1));
    if (roi.size() != 2 * axes.size()) {
      return ctx.Error("roi has ", roi.size(), " values, expected ", 2 * axes.size());
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      g.roi[axes[i]] = roi[i];
      g.roi[rank + axes[i]] = roi[axes.size() + i];
    }
  }
  const bool has_scales = ctx.has_input(2) && ctx.input(2).numel() > 0;
  const bool has_sizes = ctx.has_input(3) && ctx.input(3).numel() > 0;
  if (has_scales == has_sizes) return ctx.Error("exactly one of scales and sizes must be given");
  absl::Status status = has_scales ? FromScales(ctx, in_dims, ReadDoubles(ctx.input(2)), axes, g)
                                   : FromSizes(ctx, in_dims, ctx.input(3), axes, g);
  if (!status.ok()) return status;
  return g;
}

// Float linear resizes of the last two axes (the outer ones kept) take onnxruntime's float
// arithmetic (resize_bilinear.h says why); false when the node is not of that kind.
bool TryBilinearFloat(const ResizeAttributes& a, const Geometry& g, const Tensor& x, Tensor& y,
                      ThreadPool* pool) {
  const size_t rank = x.rank();
  if (a.mode != Mode::kLinear || x.type() != DataType::kFloat || (rank != 2 && rank != 4)) {
    return false;
  }
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (g.out_dims[i] != x.dim(i) || g.scales[i] != 1.0) return false;
  }
  BilinearCoordinates coordinates;
  switch (a.coordinate_mode) {
    case CoordinateMode::kHalfPixel:
      coordinates = BilinearCoordinates::kHalfPixel;
      break;
    case CoordinateMode::kPytorchHalfPixel:
      coordinates = BilinearCoordinates::kPytorchHalfPixel;
      break;
    case CoordinateMode::kAsymmetric:
      coordinates = BilinearCoordinates::kAsymmetric;
      break;
    case CoordinateMode::kAlignCorners:  // the same only when the output width is whole
      if (g.out_widths[rank - 1] != static_cast<double>(g.out_dims[rank - 1]) ||
          g.out_widths[rank - 2] != static_cast<double>(g.out_dims[rank - 2])) {
        return false;
      }
      coordinates = BilinearCoordinates::kAlignCorners;
      break;
    default:
      return false;
  }
  BilinearShape s;
  s.planes = rank == 4 ? x.dim(0) * x.dim(1) : 1;
  s.in_height = x.dim(rank - 2);
  s.in_width = x.dim(rank - 1);
  s.out_height = g.out_dims[rank - 2];
  s.out_width = g.out_dims[rank - 1];
  s.height_scale = static_cast<float>(g.scales[rank - 2]);
  s.width_scale = static_cast<float>(g.scales[rank - 1]);
  ResizeBilinearFloat(x.data<float>(), y.data<float>(), s, coordinates, pool);
  return true;
}

absl::Status RunResize(KernelContext& ctx, Form form) {
  if (!ctx.has_input(0)) return ctx.Error("missing input X");
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) return ctx.Error("input must have rank >= 1");
  if (x.type() == DataType::kString) return ctx.Error("string tensors are not supported");
  OVFIX_ASSIGN_OR_RETURN(ResizeAttributes attributes, ParseAttributes(ctx, form != Form::kResize));
  OVFIX_ASSIGN_OR_RETURN(Geometry geometry, ResizeGeometry(ctx, form));
  const ResizeAttributes& a = attributes;
  const Geometry& g = geometry;
  const size_t rank = x.rank();

  double total = 1;
  for (int64_t d : g.out_dims) total *= static_cast<double>(d);
  if (total * ElementSize(x.type()) > 1e12) return ctx.Error("output too large");
  for (size_t i = 0; i < rank; ++i) {
    if (x.dim(i) == 0 && g.out_dims[i] > 0) {
      return ctx.Error("cannot resize an empty axis ", i, " to size ", g.out_dims[i]);
    }
  }
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), g.out_dims);
  if (y.numel() == 0) return absl::OkStatus();

  std::vector<AxisPlan> plans;
  plans.reserve(rank);
  bool identity = true, any_outside = false;
  for (size_t i = 0; i < rank; ++i) {
    plans.push_back(MakeAxisPlan(a, x.dim(i), g.out_dims[i], g.scales[i], g.out_widths[i], g.roi[i],
                                 g.roi[rank + i]));
    identity &= plans.back().identity;
    any_outside |= plans.back().any_outside;
  }
  if (identity) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    return absl::OkStatus();
  }
  if (a.mode == Mode::kNearest && !any_outside) {
    switch (ElementSize(x.type())) {
      case 1:
        GatherNearest(plans, x.data<uint8_t>(), y.data<uint8_t>(), ctx.pool);
        break;
      case 2:
        GatherNearest(plans, x.data<uint16_t>(), y.data<uint16_t>(), ctx.pool);
        break;
      case 4:
        GatherNearest(plans, x.data<uint32_t>(), y.data<uint32_t>(), ctx.pool);
        break;
      case 8:
        GatherNearest(plans, x.data<uint64_t>(), y.data<uint64_t>(), ctx.pool);
        break;
      default:
        return ctx.Error("unsupported element type ", std::string(DataTypeName(x.type())));
    }
    return absl::OkStatus();
  }
  if (!any_outside && TryBilinearFloat(a, g, x, y, ctx.pool)) return absl::OkStatus();
  const bool supported = VisitType(x.type(), kNumericTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<double> values(x.numel());
    Load<T>(x, values);
    values = Interpolate(plans, std::move(values), ctx.pool);
    if (any_outside) Extrapolate(plans, a.extrapolation_value, values);
    Store<T>(values, y);
  });
  if (!supported) {
    return ctx.Error("interpolation of ", std::string(DataTypeName(x.type())), " is not supported");
  }
  return absl::OkStatus();
}

absl::Status Resize(KernelContext& ctx) {
  return RunResize(ctx, ctx.opset < 11 ? Form::kScalesInput : Form::kResize);
}

absl::Status Upsample(KernelContext& ctx) {
  return RunResize(ctx, ctx.opset < 9 ? Form::kScalesAttribute : Form::kScalesInput);
}

}  // namespace

void AddResizeKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "Resize", 10, 18, Resize, Float16Mode::kAsFloat});
  table.push_back({"", "Upsample", 7, 9, Upsample, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
