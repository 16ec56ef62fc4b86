#include "exec/cpu/resize_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// The input coordinate that output position x maps to. `out_width` is scale * in_size as a
// real number (the reference uses it, not the rounded size, for align_corners).
double OriginalCoordinate(const ResizeAttributes& a, int64_t x, double scale, int64_t in_size,
                          int64_t out_size, double out_width, double roi_start, double roi_end) {
  const double xd = static_cast<double>(x);
  switch (a.coordinate_mode) {
    case ResizeCoordinateMode::kHalfPixel:
      return (xd + 0.5) / scale - 0.5;
    case ResizeCoordinateMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_size) / out_width;
      const double center = static_cast<double>(in_size) / 2;
      return center * (1 - adjustment) + (xd + 0.5) / scale - 0.5;
    }
    case ResizeCoordinateMode::kPytorchHalfPixel:
      return out_size > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
    case ResizeCoordinateMode::kAlignCorners:
      return out_width == 1 ? 0.0 : xd * static_cast<double>(in_size - 1) / (out_width - 1);
    case ResizeCoordinateMode::kAsymmetric:
      return xd / scale;
    case ResizeCoordinateMode::kTfHalfPixelForNearest:
      return (xd + 0.5) / scale;
    case ResizeCoordinateMode::kTfCropAndResize: {
      const double span = static_cast<double>(in_size - 1);
      const double start = roi_start * span;
      if (out_size == 1) return start + (roi_end - roi_start) * span / 2;
      return start + xd * (roi_end - roi_start) * span / (out_width - 1);
    }
  }
  return 0.0;
}

int64_t NearestIndex(ResizeNearestMode mode, double x, double scale) {
  const double base = std::floor(x);
  const double fraction = x - base;
  switch (mode) {
    case ResizeNearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(fraction <= 0.5 ? base : base + 1);
    case ResizeNearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(fraction < 0.5 ? base : base + 1);
    case ResizeNearestMode::kFloor:
      return static_cast<int64_t>(base);
    case ResizeNearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case ResizeNearestMode::kSimple:
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

absl::Status FromScales(const KernelContext& ctx, const std::vector<int64_t>& in_dims,
                        const std::vector<double>& scales, const std::vector<int64_t>& axes,
                        ResizeGeometry& g) {
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
                       const Tensor& sizes_tensor, const std::vector<int64_t>& axes,
                       ResizeGeometry& g) {
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

// An attribute's value, by name, in the opsets [since, until] that define that name.
template <typename E>
struct NamedMode {
  std::string_view name;
  E mode;
  int64_t since = 0;
  int64_t until = std::numeric_limits<int64_t>::max();
};

template <typename E, size_t N>
std::optional<E> ModeNamed(const NamedMode<E> (&modes)[N], std::string_view name, int64_t opset) {
  for (const NamedMode<E>& m : modes) {
    if (m.name == name && opset >= m.since && opset <= m.until) return m.mode;
  }
  return std::nullopt;
}

using Coordinate = ResizeCoordinateMode;
constexpr NamedMode<Coordinate> kCoordinateModes[] = {
    {"half_pixel", Coordinate::kHalfPixel},
    {"half_pixel_symmetric", Coordinate::kHalfPixelSymmetric, 19},
    {"pytorch_half_pixel", Coordinate::kPytorchHalfPixel},
    {"align_corners", Coordinate::kAlignCorners},
    {"asymmetric", Coordinate::kAsymmetric},
    {"tf_half_pixel_for_nearest", Coordinate::kTfHalfPixelForNearest, 0, 17},
    {"tf_crop_and_resize", Coordinate::kTfCropAndResize}};
constexpr NamedMode<ResizeNearestMode> kNearestModes[] = {
    {"round_prefer_floor", ResizeNearestMode::kRoundPreferFloor},
    {"round_prefer_ceil", ResizeNearestMode::kRoundPreferCeil},
    {"floor", ResizeNearestMode::kFloor},
    {"ceil", ResizeNearestMode::kCeil}};

std::vector<double> ReadDoubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

}  // namespace

absl::StatusOr<ResizeAttributes> ParseResizeAttributes(const KernelContext& ctx, bool legacy) {
  ResizeAttributes a;
  const std::string mode = ctx.node.GetString("mode", "nearest");
  if (mode == "nearest") {
    a.mode = ResizeMode::kNearest;
  } else if (mode == "linear" || (legacy && mode == "bilinear")) {
    a.mode = ResizeMode::kLinear;
  } else if (mode == "cubic" && !legacy) {
    a.mode = ResizeMode::kCubic;
  } else {
    return ctx.Error("unsupported mode '", mode, "'");
  }
  if (legacy) {  // Upsample and Resize-10 have no coordinate attributes
    a.coordinate_mode = ResizeCoordinateMode::kAsymmetric;
    a.nearest_mode = ResizeNearestMode::kSimple;
    return a;
  }
  const std::string coordinate = ctx.node.GetString("coordinate_transformation_mode", "half_pixel");
  const std::optional<Coordinate> coordinate_mode =
      ModeNamed(kCoordinateModes, coordinate, ctx.opset);
  if (!coordinate_mode) {
    return ctx.Error("unsupported coordinate_transformation_mode '", coordinate, "'");
  }
  a.coordinate_mode = *coordinate_mode;
  const std::string nearest = ctx.node.GetString("nearest_mode", "round_prefer_floor");
  const std::optional<ResizeNearestMode> nearest_mode =
      ModeNamed(kNearestModes, nearest, ctx.opset);
  if (!nearest_mode) return ctx.Error("unsupported nearest_mode '", nearest, "'");
  a.nearest_mode = *nearest_mode;
  a.cubic_coeff_a = ctx.node.GetFloat("cubic_coeff_a", -0.75f);
  a.exclude_outside = ctx.node.GetInt("exclude_outside", 0) != 0;
  a.extrapolation_value = ctx.node.GetFloat("extrapolation_value", 0.0f);
  a.antialias = ctx.opset >= 18 && ctx.node.GetInt("antialias", 0) != 0;
  return a;
}

// An antialiased downscaling axis (scale < 1): the linear (tent, half-width 1) or cubic
// (half-width 2) kernel stretched to half-width support = w / scale around each output
// position's original coordinate x. The taps are the positions j in
// [floor(x + 1 - support), floor(x + 1 + support)) (onnxruntime's window), weighted
// kernel((j - x) * scale) and normalized to sum 1; taps outside the input read the edge
// element, or with exclude_outside are dropped before normalizing.
AxisPlan MakeAntialiasAxisPlan(const ResizeAttributes& a, int64_t in_size, int64_t out_size,
                               double scale, double out_width, double roi_start, double roi_end) {
  AxisPlan p;
  p.in_size = in_size;
  p.out_size = out_size;
  const double half_width = a.mode == ResizeMode::kLinear ? 1.0 : 2.0;
  const double support = half_width / scale;
  const auto kernel = [&](double d) {
    d = std::fabs(d);
    return a.mode == ResizeMode::kLinear ? std::max(0.0, 1.0 - d) : CubicWeight(d, a.cubic_coeff_a);
  };
  std::vector<std::vector<std::pair<int64_t, double>>> taps(out_size);
  size_t widest = 1;
  for (int64_t j = 0; j < out_size; ++j) {
    const double x =
        OriginalCoordinate(a, j, scale, in_size, out_size, out_width, roi_start, roi_end);
    if (!std::isfinite(x)) continue;
    const int64_t first = static_cast<int64_t>(std::floor(x + 1 - support));
    const int64_t last = static_cast<int64_t>(std::floor(x + 1 + support));
    double total = 0;
    for (int64_t i = first; i < last; ++i) {
      const bool inside = i >= 0 && i < in_size;
      if (!inside && a.exclude_outside) continue;
      const double w = kernel((static_cast<double>(i) - x) * scale);
      taps[j].emplace_back(std::clamp<int64_t>(i, 0, in_size - 1), w);
      total += w;
    }
    if (total != 0) {
      for (auto& tap : taps[j]) tap.second /= total;
    }
    widest = std::max(widest, taps[j].size());
  }
  p.taps = static_cast<int>(widest);
  p.index.assign(out_size * p.taps, 0);
  p.weight.assign(out_size * p.taps, 0.0);
  p.outside.assign(out_size, 0);
  for (int64_t j = 0; j < out_size; ++j) {
    for (size_t t = 0; t < taps[j].size(); ++t) {
      p.index[j * p.taps + t] = taps[j][t].first;
      p.weight[j * p.taps + t] = taps[j][t].second;
    }
  }
  return p;
}

AxisPlan MakeAxisPlan(const ResizeAttributes& a, int64_t in_size, int64_t out_size, double scale,
                      double out_width, double roi_start, double roi_end) {
  if (a.antialias && a.mode != ResizeMode::kNearest && scale < 1 && scale > 0 &&
      a.coordinate_mode != ResizeCoordinateMode::kTfCropAndResize) {
    return MakeAntialiasAxisPlan(a, in_size, out_size, scale, out_width, roi_start, roi_end);
  }
  AxisPlan p;
  p.in_size = in_size;
  p.out_size = out_size;
  p.taps = a.mode == ResizeMode::kNearest ? 1 : a.mode == ResizeMode::kLinear ? 2 : 4;
  p.index.assign(out_size * p.taps, 0);
  p.weight.assign(out_size * p.taps, 0.0);
  p.outside.assign(out_size, 0);
  const auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_size - 1); };
  for (int64_t j = 0; j < out_size; ++j) {
    const double x =
        OriginalCoordinate(a, j, scale, in_size, out_size, out_width, roi_start, roi_end);
    int64_t* index = &p.index[j * p.taps];
    double* weight = &p.weight[j * p.taps];
    if (a.coordinate_mode == ResizeCoordinateMode::kTfCropAndResize &&
        (x < 0 || x > static_cast<double>(in_size - 1))) {
      p.outside[j] = 1;
      p.any_outside = true;
      continue;
    }
    if (!std::isfinite(x)) continue;  // degenerate scale; reads index 0 with weight 0
    const double base = std::floor(x);
    const double t = x - base;
    const int64_t b = static_cast<int64_t>(base);
    if (a.mode == ResizeMode::kNearest) {
      index[0] = clamp(NearestIndex(a.nearest_mode, x, scale));
      weight[0] = 1;
    } else if (a.mode == ResizeMode::kLinear) {
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

absl::StatusOr<ResizeGeometry> ComputeResizeGeometry(const KernelContext& ctx, ResizeForm form,
                                                     const std::vector<int64_t>& in_dims,
                                                     const ResizeInputs& inputs) {
  const size_t rank = in_dims.size();
  ResizeGeometry g;
  g.out_dims = in_dims;
  g.scales.assign(rank, 1.0);
  g.out_widths.resize(rank);
  for (size_t i = 0; i < rank; ++i) g.out_widths[i] = static_cast<double>(in_dims[i]);
  g.roi.assign(rank * 2, 0.0);
  for (size_t i = 0; i < rank; ++i) g.roi[rank + i] = 1.0;
  std::vector<int64_t> axes(rank);
  for (size_t i = 0; i < rank; ++i) axes[i] = static_cast<int64_t>(i);

  if (form == ResizeForm::kScalesAttribute) {
    const std::vector<float> attribute = ctx.node.GetFloats("scales");
    const std::vector<double> scales(attribute.begin(), attribute.end());
    OVFIX_RETURN_IF_ERROR(FromScales(ctx, in_dims, scales, axes, g));
    return g;
  }
  if (form == ResizeForm::kScalesInput) {
    if (inputs.scales == nullptr) return ctx.Error("missing scales input");
    if (absl::Status s = FromScales(ctx, in_dims, ReadDoubles(*inputs.scales), axes, g); !s.ok()) {
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
  if (inputs.roi != nullptr && inputs.roi->numel() > 0) {
    const std::vector<double> roi = ReadDoubles(*inputs.roi);
    if (roi.size() != 2 * axes.size()) {
      return ctx.Error("roi has ", roi.size(), " values, expected ", 2 * axes.size());
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      g.roi[axes[i]] = roi[i];
      g.roi[rank + axes[i]] = roi[axes.size() + i];
    }
  }
  const bool has_scales = inputs.scales != nullptr && inputs.scales->numel() > 0;
  const bool has_sizes = inputs.sizes != nullptr && inputs.sizes->numel() > 0;
  if (has_scales == has_sizes) return ctx.Error("exactly one of scales and sizes must be given");
  absl::Status status = has_scales ? FromScales(ctx, in_dims, ReadDoubles(*inputs.scales), axes, g)
                                   : FromSizes(ctx, in_dims, *inputs.sizes, axes, g);
  if (!status.ok()) return status;
  return g;
}

std::optional<BilinearPlan> BilinearFloatPlan(const ResizeAttributes& a, const ResizeGeometry& g,
                                              const std::vector<int64_t>& in_dims) {
  const size_t rank = in_dims.size();
  if (a.mode != ResizeMode::kLinear || (rank != 2 && rank != 4)) return std::nullopt;
  if (a.antialias &&
      std::any_of(g.scales.begin(), g.scales.end(), [](double s) { return s < 1; })) {
    return std::nullopt;  // the antialias taps are the generic plan's
  }
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (g.out_dims[i] != in_dims[i] || g.scales[i] != 1.0) return std::nullopt;
  }
  BilinearCoordinates coordinates;
  switch (a.coordinate_mode) {
    case ResizeCoordinateMode::kHalfPixel:
      coordinates = BilinearCoordinates::kHalfPixel;
      break;
    case ResizeCoordinateMode::kPytorchHalfPixel:
      coordinates = BilinearCoordinates::kPytorchHalfPixel;
      break;
    case ResizeCoordinateMode::kAsymmetric:
      coordinates = BilinearCoordinates::kAsymmetric;
      break;
    case ResizeCoordinateMode::kAlignCorners:  // the same only when the output width is whole
      if (g.out_widths[rank - 1] != static_cast<double>(g.out_dims[rank - 1]) ||
          g.out_widths[rank - 2] != static_cast<double>(g.out_dims[rank - 2])) {
        return std::nullopt;
      }
      coordinates = BilinearCoordinates::kAlignCorners;
      break;
    default:
      return std::nullopt;
  }
  BilinearShape s;
  s.planes = rank == 4 ? in_dims[0] * in_dims[1] : 1;
  s.in_height = in_dims[rank - 2];
  s.in_width = in_dims[rank - 1];
  s.out_height = g.out_dims[rank - 2];
  s.out_width = g.out_dims[rank - 1];
  s.height_scale = static_cast<float>(g.scales[rank - 2]);
  s.width_scale = static_cast<float>(g.scales[rank - 1]);
  return BilinearPlan{s, coordinates};
}

}  // namespace ovfix::exec
