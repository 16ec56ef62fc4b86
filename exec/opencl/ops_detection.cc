// The ops of detector heads on the device: TopK, NonZero, NonMaxSuppression and RoiAlign, with
// the CPU kernels' attribute coverage and error checks (exec/cpu/arg_topk.cc, generators.cc,
// detection.cc, grid_sample.cc). NonZero's and NonMaxSuppression's output sizes depend on the
// data: the device counts, the host reads the counts back (a sync) and sizes the output.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "exec/cpu/roi_align_attributes.h"
#include "exec/cpu/topk_count.h"
#include "exec/opencl/host_upload.h"
#include "exec/opencl/kernel_args.h"
#include "exec/opencl/op_context.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

absl::StatusOr<int64_t> NormalizeAxis(const OpContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return ctx.Error("axis ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

// ---- TopK ----

absl::Status TopK(OpContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const ClValue& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  OVFIX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.node.GetInt("axis", -1), rank));
  const Tensor* k_input = nullptr;
  if (ctx.opset >= 10 && ctx.has_input(1)) {
    OVFIX_ASSIGN_OR_RETURN(k_input, ctx.Host(1));
  }
  OVFIX_ASSIGN_OR_RETURN(const int64_t k,
                         ReadTopKCount(KernelContext::For(ctx.node, ctx.opset), k_input));
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : d == axis ? n : inner) *= x.dims[d];
  if (k < 0 || k > n) {
    return ctx.Error("k = ", k, " is out of range for axis ", axis, " of size ", n);
  }
  if (ctx.outputs.size() < 2) return ctx.Error("expects two outputs");
  if (!IsFloat(x)) return ctx.Unsupported("TopK of ", std::string(DataTypeName(x.type)));
  const bool largest = ctx.opset < 11 || ctx.node.GetInt("largest", 1) != 0;
  std::vector<int64_t> out_dims = x.dims;
  out_dims[axis] = k;
  OVFIX_ASSIGN_OR_RETURN(auto values, ctx.NewOutput(0, x.type, out_dims));
  OVFIX_ASSIGN_OR_RETURN(auto indices, ctx.NewOutput(1, DataType::kInt64, out_dims));
  if (k == 0 || outer * inner == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  const std::string options =
      absl::StrCat(WordOption(x), x.half ? " -DA_HALF" : "", " -DLARGEST=", largest ? 1 : 0);
  OVFIX_ASSIGN_OR_RETURN(auto kernel, ctx.Kernel("topk.cl", "topk", options));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, kernel, *dx, *values->device, *indices->device, cl_long{n},
                                cl_long{inner}, cl_long{k}));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(n), static_cast<size_t>(outer * inner)));
}

// ---- NonZero ----

// The bits that make an element non-zero (all but a float's sign: -0 is zero).
std::string MaskOption(const ClValue& v) {
  switch (v.type) {
    case DataType::kFloat:
      return v.half ? "-DMASK=0x7fff" : "-DMASK=0x7fffffff";
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return "-DMASK=0x7fff";
    case DataType::kDouble:
      return "-DMASK=0x7fffffffffffffffUL";
    default:
      return "-DMASK=0xffffffffffffffffUL";
  }
}

absl::Status NonZero(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (x.type == DataType::kString) return ctx.Unsupported("string tensors");
  if (x.dims.size() > kMaxBroadcastRank) return ctx.Unsupported("rank above 8");
  // A scalar counts as one dim of size 1, as numpy does.
  const std::vector<int64_t> dims = x.dims.empty() ? std::vector<int64_t>{1} : x.dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t n = x.numel();
  constexpr int kChunk = 256;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<cl_long> offsets(static_cast<size_t>(chunks) + 1, 0);
  const std::string options = absl::StrCat(WordOption(x), " ", MaskOption(x));
  cl::Buffer* dx = nullptr;
  if (n > 0) {
    OVFIX_ASSIGN_OR_RETURN(dx, ctx.Device(0));
    OVFIX_ASSIGN_OR_RETURN(auto counts, ctx.rt.AllocateShared(chunks * sizeof(cl_int)));
    OVFIX_ASSIGN_OR_RETURN(auto count, ctx.Kernel("nonzero.cl", "nonzero_count", options));
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, count, *dx, *counts, cl_long{n}, cl_int{kChunk}));
    OVFIX_RETURN_IF_ERROR(ctx.Run(count, cl::NDRange(static_cast<size_t>(chunks))));
    std::vector<cl_int> host(static_cast<size_t>(chunks));
    OVFIX_RETURN_IF_ERROR(ctx.rt.Read(*counts, host.data(), host.size() * sizeof(cl_int)));
    for (size_t c = 0; c < host.size(); ++c) offsets[c + 1] = offsets[c] + host[c];
  }
  const int64_t nnz = offsets.back();
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, DataType::kInt64, {rank, nnz}));
  if (nnz == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto starts, UploadVector(ctx, offsets));
  OVFIX_ASSIGN_OR_RETURN(auto write, ctx.Kernel("nonzero.cl", "nonzero_write", options));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, write, *dx, *starts, *y->device, cl_long{n}, cl_int{kChunk},
                                cl_long{nnz}, PaddedDims(dims), static_cast<cl_int>(rank)));
  return ctx.Run(write, cl::NDRange(static_cast<size_t>(chunks)));
}

// ---- NonMaxSuppression ----

// An optional scalar input: nullopt when omitted or empty (both mean the default).
absl::StatusOr<std::optional<double>> OptionalScalar(OpContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return std::nullopt;
  OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.Host(i));
  if (t->numel() != 1) return ctx.Error(name, " must be a scalar, got ", DescribeTensor(*t));
  return t->GetAsDouble(0);
}

absl::Status NonMaxSuppression(OpContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects boxes and scores");
  const ClValue& boxes = ctx.input(0);
  const ClValue& scores = ctx.input(1);
  if (boxes.type != DataType::kFloat && boxes.type != DataType::kDouble) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(boxes.type)));
  }
  if (scores.type != boxes.type) return ctx.Error("scores differ in type from boxes");
  if (boxes.dims.size() != 3 || boxes.dims[2] != 4) {
    return ctx.Error("boxes must be [num_batches, spatial_dimension, 4]");
  }
  if (scores.dims.size() != 3 || scores.dims[0] != boxes.dims[0] ||
      scores.dims[2] != boxes.dims[1]) {
    return ctx.Error("scores must be [", boxes.dims[0], ", num_classes, ", boxes.dims[1], "]");
  }
  int64_t max_per_class = 0;
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.Host(2));
    if (t->numel() != 1) {
      return ctx.Error("max_output_boxes_per_class must be a scalar, got ", DescribeTensor(*t));
    }
    max_per_class = std::max<int64_t>(t->GetAsInt64(0), 0);  // negative: none
  }
  OVFIX_ASSIGN_OR_RETURN(std::optional<double> iou, OptionalScalar(ctx, 3, "iou_threshold"));
  const double iou_threshold = iou.value_or(0.0);
  if (!(iou_threshold >= 0 && iou_threshold <= 1)) {
    return ctx.Error("iou_threshold ", iou_threshold, " is outside [0, 1]");
  }
  OVFIX_ASSIGN_OR_RETURN(std::optional<double> score_threshold,
                         OptionalScalar(ctx, 4, "score_threshold"));
  const int64_t center_point_box = ctx.node.GetInt("center_point_box", 0);
  if (center_point_box != 0 && center_point_box != 1) {
    return ctx.Error("center_point_box must be 0 or 1, got ", center_point_box);
  }
  if (boxes.type != DataType::kFloat) return ctx.Unsupported("double boxes");
  const int64_t batches = scores.dims[0], classes = scores.dims[1], count = scores.dims[2];
  if (count > (int64_t{1} << 30)) return ctx.Unsupported("more than 2^30 boxes");
  const int64_t lists = batches * classes;
  const int64_t max_keep = std::min(max_per_class, count);
  std::vector<int64_t> selected;  // (batch, class, box) rows
  if (lists > 0 && max_keep > 0) {
    OVFIX_ASSIGN_OR_RETURN(auto db, ctx.Device(0));
    OVFIX_ASSIGN_OR_RETURN(auto ds, ctx.Device(1));
    OVFIX_ASSIGN_OR_RETURN(auto order, ctx.rt.AllocateShared(lists * count * sizeof(cl_int)));
    OVFIX_ASSIGN_OR_RETURN(auto candidates,
                           UploadVector(ctx, std::vector<cl_int>(static_cast<size_t>(lists), 0)));
    OVFIX_ASSIGN_OR_RETURN(auto kept, ctx.rt.AllocateShared(lists * max_keep * sizeof(cl_int)));
    OVFIX_ASSIGN_OR_RETURN(auto kept_count, ctx.rt.AllocateShared(lists * sizeof(cl_int)));
    // Scores and boxes are read as stored, compared in float.
    const std::string options =
        absl::StrCat(scores.half ? "-DA_HALF" : "", boxes.half ? " -DB_HALF" : "");
    OVFIX_ASSIGN_OR_RETURN(auto rank, ctx.Kernel("detection.cl", "nms_order", options));
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, rank, *ds, *order, *candidates, static_cast<cl_int>(count),
                                  cl_int{score_threshold.has_value()},
                                  static_cast<float>(score_threshold.value_or(0))));
    OVFIX_RETURN_IF_ERROR(
        ctx.Run(rank, cl::NDRange(static_cast<size_t>(count), static_cast<size_t>(lists))));
    OVFIX_ASSIGN_OR_RETURN(auto select, ctx.Kernel("detection.cl", "nms_select", options));
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, select, *db, *order, *candidates, *kept, *kept_count,
                                  static_cast<cl_int>(count), static_cast<cl_int>(classes),
                                  static_cast<cl_int>(max_keep), static_cast<float>(iou_threshold),
                                  static_cast<cl_int>(center_point_box)));
    OVFIX_RETURN_IF_ERROR(ctx.Run(select, cl::NDRange(static_cast<size_t>(lists))));
    std::vector<cl_int> counts(static_cast<size_t>(lists));
    std::vector<cl_int> boxes_kept(static_cast<size_t>(lists * max_keep));
    OVFIX_RETURN_IF_ERROR(ctx.rt.Read(*kept_count, counts.data(), counts.size() * sizeof(cl_int)));
    OVFIX_RETURN_IF_ERROR(
        ctx.rt.Read(*kept, boxes_kept.data(), boxes_kept.size() * sizeof(cl_int)));
    for (int64_t list = 0; list < lists; ++list) {
      for (int64_t t = 0; t < counts[list]; ++t) {
        selected.insert(selected.end(),
                        {list / classes, list % classes, boxes_kept[list * max_keep + t]});
      }
    }
  }
  // A few rows of indices, put back on the device: they are data, not shape arithmetic, so the
  // Gathers and Slices that read them run on the device as on a GPU backend (an integer value
  // with a host copy would send them to the host).
  const int64_t rows = static_cast<int64_t>(selected.size()) / 3;
  Tensor t(DataType::kInt64, {rows, 3});
  std::copy(selected.begin(), selected.end(), t.data<int64_t>());
  ClValue& out = ctx.outputs[0];
  out = ClValue{};
  out.type = DataType::kInt64;
  out.dims = t.dims();
  out.host = std::move(t);
  OVFIX_RETURN_IF_ERROR(EnsureDevice(ctx.rt, out));
  out.host.reset();
  return absl::OkStatus();
}

// ---- RoiAlign ----

absl::Status RoiAlign(OpContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) {
    return ctx.Error("needs inputs X, rois and batch_indices");
  }
  const ClValue& x = ctx.input(0);
  const ClValue& rois = ctx.input(1);
  const ClValue& batch_indices = ctx.input(2);
  if (!RoiAlignShapesFit(x.dims, rois.dims, batch_indices.dims)) {
    return ctx.Error(kRoiAlignShapes);
  }
  const int64_t num_rois = rois.dims[0];
  OVFIX_ASSIGN_OR_RETURN(const RoiAlignAttributes attributes,
                         ReadRoiAlignAttributes(KernelContext::For(ctx.node, ctx.opset)));
  const auto& [mode, half_pixel, out_h, out_w, sampling_ratio, spatial_scale] = attributes;
  if (!IsFloat(x) || !IsFloat(rois)) return ctx.Unsupported("non-float RoiAlign");
  if (batch_indices.type != DataType::kInt64) return ctx.Unsupported("non-int64 batch_indices");
  const int64_t batch = x.dims[0], channels = x.dims[1], height = x.dims[2], width = x.dims[3];
  OVFIX_ASSIGN_OR_RETURN(const Tensor* indices, ctx.Host(2));
  for (int64_t r = 0; r < num_rois; ++r) {
    const int64_t b = indices->GetAsInt64(r);
    if (b < 0 || b >= batch) return ctx.Error("batch index ", b, " out of range");
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, {num_rois, channels, out_h, out_w}));
  if (y->numel() == 0) return absl::OkStatus();
  if (height == 0 || width == 0) return ctx.Error("cannot sample an empty image");
  // Each box's sampling grid, worked out in double and checked as the CPU kernel does.
  OVFIX_ASSIGN_OR_RETURN(const Tensor* boxes, ctx.Host(1));
  const double offset = half_pixel ? 0.5 : 0.0;
  std::vector<cl_float4> geometry(static_cast<size_t>(num_rois));
  std::vector<cl_int2> grid(static_cast<size_t>(num_rois));
  for (int64_t r = 0; r < num_rois; ++r) {
    const double start_w = boxes->GetAsDouble(r * 4) * spatial_scale - offset;
    const double start_h = boxes->GetAsDouble(r * 4 + 1) * spatial_scale - offset;
    double roi_w = boxes->GetAsDouble(r * 4 + 2) * spatial_scale - offset - start_w;
    double roi_h = boxes->GetAsDouble(r * 4 + 3) * spatial_scale - offset - start_h;
    if (!half_pixel) {  // the old behaviour: boxes at least one pixel wide
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(out_h);
    const double bin_w = roi_w / static_cast<double>(out_w);
    const double grid_h = sampling_ratio > 0 ? sampling_ratio : std::ceil(bin_h);
    const double grid_w = sampling_ratio > 0 ? sampling_ratio : std::ceil(bin_w);
    if (!std::isfinite(start_h + start_w + bin_h + bin_w) || grid_h * grid_w > 1e8) {
      return ctx.Error("box ", r, " is not finite or too large");
    }
    geometry[r] = {{static_cast<float>(start_h), static_cast<float>(start_w),
                    static_cast<float>(bin_h), static_cast<float>(bin_w)}};
    grid[r] = {
        {static_cast<cl_int>(std::max(grid_h, 0.0)), static_cast<cl_int>(std::max(grid_w, 0.0))}};
  }
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto di, ctx.Device(2));
  OVFIX_ASSIGN_OR_RETURN(auto geometry_buffer, UploadVector(ctx, geometry));
  OVFIX_ASSIGN_OR_RETURN(auto grid_buffer, UploadVector(ctx, grid));
  OVFIX_ASSIGN_OR_RETURN(auto k,
                         ctx.Kernel("detection.cl", "roi_align",
                                    ctx.Options({{"A", &x}, {"Y", y}},
                                                absl::StrCat("-DMODE=", mode == "avg" ? 0 : 1))));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *dx, *geometry_buffer, *grid_buffer, *di, *y->device,
                                static_cast<cl_int>(channels), static_cast<cl_int>(height),
                                static_cast<cl_int>(width), static_cast<cl_int>(out_h),
                                static_cast<cl_int>(out_w)));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y->numel())));
}

}  // namespace

void AddDetectionOps(std::vector<OpDef>& table) {
  table.push_back({"TopK", 1, kOpenVersion, TopK});
  table.push_back({"NonZero", 9, kOpenVersion, NonZero});
  table.push_back({"NonMaxSuppression", 10, kOpenVersion, NonMaxSuppression});
  table.push_back({"RoiAlign", 10, kOpenVersion, RoiAlign});
}

}  // namespace ovfix::exec::opencl
