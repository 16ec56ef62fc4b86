// Sampling at fractional positions: GridSample (opset 16, 4-D; opset 20, N-D and the modes
// renamed linear/cubic) and RoiAlign (opsets 10, 16).
// Both follow the implementations their tests were generated from (PyTorch's grid_sampler,
// Detectron's RoIAlign as onnxruntime has it), computing in double precision.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "exec/cpu/misc_kernels.h"
#include "exec/cpu/roi_align_attributes.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

enum class Padding { kZeros, kBorder, kReflection };

// Loads a float or double tensor as doubles.
std::vector<double> ReadDoubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  if (t.type() == DataType::kFloat) {
    std::copy(t.data<float>(), t.data<float>() + t.numel(), v.begin());
  } else {
    std::copy(t.data<double>(), t.data<double>() + t.numel(), v.begin());
  }
  return v;
}

void WriteDoubles(const std::vector<double>& v, Tensor& t) {
  if (t.type() == DataType::kFloat) {
    std::transform(v.begin(), v.end(), t.data<float>(),
                   [](double x) { return static_cast<float>(x); });
  } else {
    std::copy(v.begin(), v.end(), t.data<double>());
  }
}

bool IsFloatOrDouble(const Tensor& t) {
  return t.type() == DataType::kFloat || t.type() == DataType::kDouble;
}

// Grid values in [-1, 1] to pixel coordinates.
double Unnormalize(double coordinate, int64_t size, bool align_corners) {
  return align_corners ? (coordinate + 1) / 2 * static_cast<double>(size - 1)
                       : ((coordinate + 1) * static_cast<double>(size) - 1) / 2;
}

// Reflects x into [twice_low / 2, twice_high / 2], the bounds given doubled so that they
// stay integers for both align_corners settings.
double Reflect(double x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  const double low = twice_low / 2, span = (twice_high - twice_low) / 2;
  x = std::fabs(x - low);
  const double extra = std::fmod(x, span);
  const int64_t flips = static_cast<int64_t>(std::floor(x / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

double ApplyPadding(double x, int64_t size, Padding padding, bool align_corners) {
  const double last = static_cast<double>(size - 1);
  if (padding == Padding::kBorder) return std::clamp(x, 0.0, last);
  if (padding == Padding::kReflection) {
    x = align_corners ? Reflect(x, 0, 2 * last) : Reflect(x, -1, 2 * static_cast<double>(size) - 1);
    return std::clamp(x, 0.0, last);
  }
  return x;
}

// A pixel index from a coordinate; far-away or non-finite coordinates give an index that is
// out of range even after adding 1.
int64_t ToIndex(double x) {
  return std::fabs(x) < 1e15 ? static_cast<int64_t>(x) : std::numeric_limits<int64_t>::min() / 2;
}

double CubicWeight(double d) {
  constexpr double a = -0.75;
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// Linear or nearest sampling of X [N, C, D_1, ..., D_r] at grid [N, O_1, ..., O_r, r] (opset
// 20's volumetric and other N-D forms; grid component k addresses spatial axis r - 1 - k, so
// (x, y, z) is (W, H, D) as in the 2-D case). Linear interpolates over the 2^r corners.
absl::Status GridSampleNd(KernelContext& ctx, bool linear, Padding padding, bool align_corners) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  const int64_t r = static_cast<int64_t>(x.rank()) - 2;
  if (r < 1 || static_cast<int64_t>(grid.rank()) != r + 2 || grid.dim(0) != x.dim(0) ||
      grid.dims().back() != r) {
    return ctx.Error("expected X [N,C,D1..Dr] and grid [N,O1..Or,r], got ", DescribeTensor(x),
                     " and ", DescribeTensor(grid));
  }
  const int64_t batch = x.dim(0), channels = x.dim(1);
  std::vector<int64_t> sizes(x.dims().begin() + 2, x.dims().end());
  std::vector<int64_t> out_dims = {batch, channels};
  out_dims.insert(out_dims.end(), grid.dims().begin() + 1, grid.dims().end() - 1);
  Tensor& y = ctx.Output(0, x.type(), out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  int64_t image_size = 1, points_per_image = 1;
  for (int64_t d = 0; d < r; ++d) {
    if (sizes[d] == 0) return ctx.Error("cannot sample an empty image");
    image_size *= sizes[d];
    points_per_image *= grid.dim(d + 1);
  }
  const std::vector<double> input = ReadDoubles(x), points = ReadDoubles(grid);
  std::vector<double> output(y.numel());
  ParallelFor(ctx.pool, batch * channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> coordinate(r), fraction(r);
    std::vector<int64_t> base(r);
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t n = nc / channels;
      const double* image = &input[nc * image_size];
      // The value at integer indices (row-major over D_1..D_r); 0 outside the image.
      const auto at = [&](const std::vector<int64_t>& index) {
        int64_t flat = 0;
        for (int64_t d = 0; d < r; ++d) {
          if (index[d] < 0 || index[d] >= sizes[d]) return 0.0;
          flat = flat * sizes[d] + index[d];
        }
        return image[flat];
      };
      std::vector<int64_t> index(r);
      for (int64_t p = 0; p < points_per_image; ++p) {
        const double* g = &points[(n * points_per_image + p) * r];
        for (int64_t d = 0; d < r; ++d) {
          coordinate[d] = ApplyPadding(Unnormalize(g[r - 1 - d], sizes[d], align_corners), sizes[d],
                                       padding, align_corners);
        }
        double value = 0;
        if (!linear) {
          for (int64_t d = 0; d < r; ++d) index[d] = ToIndex(std::nearbyint(coordinate[d]));
          value = at(index);
        } else {
          for (int64_t d = 0; d < r; ++d) {
            const double low = std::floor(coordinate[d]);
            base[d] = ToIndex(low);
            fraction[d] = coordinate[d] - low;
          }
          for (int64_t corner = 0; corner < (int64_t{1} << r); ++corner) {
            double weight = 1;
            for (int64_t d = 0; d < r; ++d) {
              const bool high = (corner >> d) & 1;
              index[d] = base[d] + (high ? 1 : 0);
              weight *= high ? fraction[d] : 1 - fraction[d];
            }
            if (weight != 0) value += weight * at(index);
          }
        }
        output[nc * points_per_image + p] = value;
      }
    }
  });
  WriteDoubles(output, y);
  return absl::OkStatus();
}

absl::Status GridSample(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("needs inputs X and grid");
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  if (!IsFloatOrDouble(x) || !IsFloatOrDouble(grid)) return ctx.Error("unsupported types");
  // Opset 20 renamed bilinear/bicubic to linear/cubic (they now cover N-D) and made linear
  // the default.
  const bool renamed = ctx.opset >= 20;
  std::string mode_name = ctx.node.GetString("mode", renamed ? "linear" : "bilinear");
  if (renamed ? (mode_name != "linear" && mode_name != "nearest" && mode_name != "cubic")
              : (mode_name != "bilinear" && mode_name != "nearest" && mode_name != "bicubic")) {
    return ctx.Error("unsupported mode '", mode_name, "' at opset ", ctx.opset,
                     renamed ? " (linear, nearest or cubic)" : " (bilinear, nearest or bicubic)");
  }
  if (mode_name == "linear") mode_name = "bilinear";
  if (mode_name == "cubic") mode_name = "bicubic";
  const std::string padding_name = ctx.node.GetString("padding_mode", "zeros");
  const bool align_corners = ctx.node.GetInt("align_corners", 0) != 0;
  Padding padding;
  if (padding_name == "zeros") {
    padding = Padding::kZeros;
  } else if (padding_name == "border") {
    padding = Padding::kBorder;
  } else if (padding_name == "reflection") {
    padding = Padding::kReflection;
  } else {
    return ctx.Error("unsupported padding_mode '", padding_name, "'");
  }
  if (renamed && x.rank() != 4) {
    if (mode_name == "bicubic") return ctx.Error("cubic mode needs a 4-D input");
    return GridSampleNd(ctx, mode_name == "bilinear", padding, align_corners);
  }
  if (x.rank() != 4 || grid.rank() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2) {
    return ctx.Error("expected X [N,C,H,W] and grid [N,H_out,W_out,2], got ", DescribeTensor(x),
                     " and ", DescribeTensor(grid));
  }
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t out_h = grid.dim(1), out_w = grid.dim(2);
  Tensor& y = ctx.Output(0, x.type(), {batch, channels, out_h, out_w});
  if (y.numel() == 0) return absl::OkStatus();
  if (height == 0 || width == 0) return ctx.Error("cannot sample an empty image");
  const std::vector<double> input = ReadDoubles(x), points = ReadDoubles(grid);
  std::vector<double> output(y.numel());

  ParallelFor(ctx.pool, batch * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t n = nc / channels;
      const double* image = &input[nc * height * width];
      const auto at = [&](int64_t row, int64_t col) {
        return row < 0 || row >= height || col < 0 || col >= width ? 0.0 : image[row * width + col];
      };
      for (int64_t p = 0; p < out_h * out_w; ++p) {
        const double gx = points[(n * out_h * out_w + p) * 2];
        const double gy = points[(n * out_h * out_w + p) * 2 + 1];
        double value = 0;
        if (mode_name == "bicubic") {
          // Padding applies to each tap's coordinate, not to the sampling point.
          const double ix = Unnormalize(gx, width, align_corners);
          const double iy = Unnormalize(gy, height, align_corners);
          const double x0 = std::floor(ix), y0 = std::floor(iy);
          for (int j = 0; j < 4; ++j) {
            const double wy = CubicWeight(iy - (y0 - 1 + j));
            const double row = ApplyPadding(y0 - 1 + j, height, padding, align_corners);
            for (int i = 0; i < 4; ++i) {
              const double wx = CubicWeight(ix - (x0 - 1 + i));
              const double col = ApplyPadding(x0 - 1 + i, width, padding, align_corners);
              value += wy * wx * at(ToIndex(row), ToIndex(col));
            }
          }
        } else {
          const double ix =
              ApplyPadding(Unnormalize(gx, width, align_corners), width, padding, align_corners);
          const double iy =
              ApplyPadding(Unnormalize(gy, height, align_corners), height, padding, align_corners);
          if (mode_name == "nearest") {
            value = at(ToIndex(std::nearbyint(iy)), ToIndex(std::nearbyint(ix)));
          } else {
            const double x0 = std::floor(ix), y0 = std::floor(iy);
            const double tx = ix - x0, ty = iy - y0;
            const int64_t c0 = ToIndex(x0), r0 = ToIndex(y0);
            value = (1 - ty) * ((1 - tx) * at(r0, c0) + tx * at(r0, c0 + 1)) +
                    ty * ((1 - tx) * at(r0 + 1, c0) + tx * at(r0 + 1, c0 + 1));
          }
        }
        output[nc * out_h * out_w + p] = value;
      }
    }
  });
  WriteDoubles(output, y);
  return absl::OkStatus();
}

// Bilinear sample of one channel as RoiAlign does it: points up to one pixel outside the image
// clamp to the edge, further ones count as 0. Returns the four weighted corner values.
struct Corners {
  double weighted[4] = {0, 0, 0, 0};
};

Corners SampleCorners(const double* image, int64_t height, int64_t width, double y, double x) {
  Corners c;
  if (!std::isfinite(x) || !std::isfinite(y)) return c;
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width)) {
    return c;
  }
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<double>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<double>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  c.weighted[0] = hy * hx * image[y_low * width + x_low];
  c.weighted[1] = hy * lx * image[y_low * width + x_high];
  c.weighted[2] = ly * hx * image[y_high * width + x_low];
  c.weighted[3] = ly * lx * image[y_high * width + x_high];
  return c;
}

absl::Status RoiAlign(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) {
    return ctx.Error("needs inputs X, rois and batch_indices");
  }
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& batch_indices = ctx.input(2);
  if (!IsFloatOrDouble(x) || !IsFloatOrDouble(rois)) return ctx.Error("unsupported types");
  if (!RoiAlignShapesFit(x.dims(), rois.dims(), batch_indices.dims())) {
    return ctx.Error(kRoiAlignShapes);
  }
  const int64_t num_rois = rois.dim(0);
  OVFIX_ASSIGN_OR_RETURN(const RoiAlignAttributes attributes, ReadRoiAlignAttributes(ctx));
  // Named copies, not a structured binding: the lambda below captures them (clang 14, which
  // builds the fuzz targets, cannot capture bindings).
  const std::string& mode = attributes.mode;
  const bool half_pixel = attributes.half_pixel;
  const int64_t out_h = attributes.output_height, out_w = attributes.output_width;
  const int64_t sampling_ratio = attributes.sampling_ratio;
  const double spatial_scale = attributes.spatial_scale;
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  for (int64_t r = 0; r < num_rois; ++r) {
    const int64_t b = batch_indices.GetAsInt64(r);
    if (b < 0 || b >= batch) return ctx.Error("batch index ", b, " out of range");
  }
  Tensor& y = ctx.Output(0, x.type(), {num_rois, channels, out_h, out_w});
  if (y.numel() == 0) return absl::OkStatus();
  if (height == 0 || width == 0) return ctx.Error("cannot sample an empty image");
  const std::vector<double> input = ReadDoubles(x), boxes = ReadDoubles(rois);
  std::vector<double> output(y.numel());
  const double offset = half_pixel ? 0.5 : 0.0;

  // Each box's sampling grid, checked before any work is done.
  struct Box {
    double start_h, start_w, bin_h, bin_w;
    int64_t grid_h, grid_w;
  };
  std::vector<Box> plan(num_rois);
  for (int64_t r = 0; r < num_rois; ++r) {
    const double* box = &boxes[r * 4];
    Box& p = plan[r];
    p.start_w = box[0] * spatial_scale - offset;
    p.start_h = box[1] * spatial_scale - offset;
    double roi_w = box[2] * spatial_scale - offset - p.start_w;
    double roi_h = box[3] * spatial_scale - offset - p.start_h;
    if (!half_pixel) {  // the old behaviour: boxes at least one pixel wide
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    p.bin_h = roi_h / static_cast<double>(out_h);
    p.bin_w = roi_w / static_cast<double>(out_w);
    const double grid_h = sampling_ratio > 0 ? sampling_ratio : std::ceil(p.bin_h);
    const double grid_w = sampling_ratio > 0 ? sampling_ratio : std::ceil(p.bin_w);
    if (!std::isfinite(p.start_h + p.start_w + p.bin_h + p.bin_w) || grid_h * grid_w > 1e8) {
      return ctx.Error("box ", r, " is not finite or too large");
    }
    p.grid_h = std::max<int64_t>(static_cast<int64_t>(grid_h), 0);
    p.grid_w = std::max<int64_t>(static_cast<int64_t>(grid_w), 0);
  }

  ParallelFor(ctx.pool, num_rois * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t rc = begin; rc < end; ++rc) {
      const int64_t r = rc / channels, c = rc % channels;
      const auto [start_h, start_w, bin_h, bin_w, grid_h, grid_w] = plan[r];
      const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
      const double* image = &input[(batch_indices.GetAsInt64(r) * channels + c) * height * width];
      for (int64_t ph = 0; ph < out_h; ++ph) {
        for (int64_t pw = 0; pw < out_w; ++pw) {
          double sum = 0, maximum = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            const double yy = start_h + static_cast<double>(ph) * bin_h +
                              (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const double xx =
                  start_w + static_cast<double>(pw) * bin_w +
                  (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              const Corners s = SampleCorners(image, height, width, yy, xx);
              sum += s.weighted[0] + s.weighted[1] + s.weighted[2] + s.weighted[3];
              // Max mode takes the largest weighted corner, as onnxruntime does.
              const double v =
                  std::max({s.weighted[0], s.weighted[1], s.weighted[2], s.weighted[3]});
              maximum = first ? v : std::max(maximum, v);
              first = false;
            }
          }
          output[(rc * out_h + ph) * out_w + pw] = mode == "avg" ? sum / count : maximum;
        }
      }
    }
  });
  WriteDoubles(output, y);
  return absl::OkStatus();
}

}  // namespace

void AddGridSampleKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "GridSample", 16, kLatestOpset, GridSample, Float16Mode::kAsFloat});
  table.push_back({"", "RoiAlign", 10, kLatestOpset, RoiAlign, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
