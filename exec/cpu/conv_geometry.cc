#include "exec/cpu/conv_geometry.h"

#include <utility>

#include "ir/node_check.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

int64_t SpatialGeometry::output_size() const {
  int64_t size = 1;
  for (int64_t d : output) size *= d;
  return size;
}

int64_t SpatialGeometry::kernel_size() const {
  int64_t size = 1;
  for (int64_t d : kernel) size *= d;
  return size;
}

absl::StatusOr<std::vector<int64_t>> KernelShape(const KernelContext& ctx,
                                                 const std::vector<int64_t>& weight_dims) {
  if (!ctx.node.HasAttribute("kernel_shape")) return weight_dims;
  std::vector<int64_t> kernel = ctx.node.GetInts("kernel_shape");
  if (kernel.size() != weight_dims.size()) {
    return ctx.Error("kernel_shape has ", kernel.size(), " dims, the weight has ",
                     weight_dims.size(), " spatial dims");
  }
  for (size_t i = 0; i < kernel.size(); ++i) {
    if (kernel[i] != weight_dims[i]) {
      return ctx.Error("kernel_shape ", kernel[i], " differs from the weight's ", weight_dims[i],
                       " on spatial axis ", i);
    }
  }
  return kernel;
}

absl::StatusOr<SpatialGeometry> ReadSpatialAttributes(const KernelContext& ctx,
                                                      std::vector<int64_t> input,
                                                      std::vector<int64_t> kernel) {
  const size_t rank = input.size();
  SpatialGeometry g;
  g.input = std::move(input);
  g.kernel = std::move(kernel);
  if (g.kernel.size() != rank) {
    return ctx.Error("kernel has ", g.kernel.size(), " dims for ", rank, " spatial dims");
  }
  if (absl::Status s = CheckSpatialAttributes(ctx.node, static_cast<int64_t>(rank)); !s.ok()) {
    return s;
  }
  g.strides = ctx.node.GetInts("strides", std::vector<int64_t>(rank, 1));
  g.dilations = ctx.node.GetInts("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = ctx.node.GetInts("pads", std::vector<int64_t>(2 * rank, 0));
  g.auto_pad = ctx.node.GetString("auto_pad", "NOTSET");
  if (g.auto_pad.empty()) g.auto_pad = "NOTSET";
  // The kernel dims come from the weight when kernel_shape is not given.
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (size_t i = 0; i < rank; ++i) {
    if (g.kernel[i] > kLimit) return ctx.Error("kernel, strides, dilations or pads too large");
    if (g.kernel[i] <= 0) return ctx.Error("kernel dims must be positive");
    if (g.input[i] < 0) return ctx.Error("negative input dim");
  }
  g.pads_begin.assign(pads.begin(), pads.begin() + rank);
  g.pads_end.assign(pads.begin() + rank, pads.end());
  return g;
}

absl::Status ComputeConvOutput(const KernelContext& ctx, SpatialGeometry& g, bool ceil_mode) {
  g.output.assign(g.rank(), 0);
  for (size_t i = 0; i < g.rank(); ++i) {
    const int64_t in = g.input[i], s = g.strides[i], extent = g.extent(i);
    int64_t out;
    if (g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER") {
      out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
      const int64_t small = total / 2;
      g.pads_begin[i] = g.auto_pad == "SAME_UPPER" ? small : total - small;
      g.pads_end[i] = total - g.pads_begin[i];
    } else {
      if (g.auto_pad == "VALID") g.pads_begin[i] = g.pads_end[i] = 0;
      const int64_t span = in + g.pads_begin[i] + g.pads_end[i] - extent;
      if (span < 0) {
        return ctx.Error("kernel extent ", extent, " exceeds the padded input ",
                         in + g.pads_begin[i] + g.pads_end[i], " on spatial axis ", i);
      }
      out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      // A window may not start in the end padding (it would see no input at all).
      if (ceil_mode && (out - 1) * s >= in + g.pads_begin[i]) --out;
    }
    g.output[i] = out;
  }
  return absl::OkStatus();
}

absl::Status CheckFloatConvOperands(const KernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs X and W");
  }
  const DataType type = ctx.input(0).type();
  if (type != ctx.input(1).type()) return ctx.Error("X and W have different element types");
  if (type != DataType::kFloat && type != DataType::kDouble) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(type)));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputSize(const KernelContext& ctx, const std::vector<int64_t>& dims) {
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d < 0) return ctx.Error("negative output dim");
    if (d > 0 && total > kMaxOutputElements / d) {
      return ctx.Error("output of more than ", kMaxOutputElements, " elements");
    }
    total *= d;
  }
  return absl::OkStatus();
}

absl::StatusOr<SpatialGeometry> ConvGeometry(const KernelContext& ctx, const Tensor& x,
                                             const Tensor& w) {
  OVFIX_ASSIGN_OR_RETURN(
      std::vector<int64_t> kernel,
      KernelShape(ctx, std::vector<int64_t>(w.dims().begin() + 2, w.dims().end())));
  OVFIX_ASSIGN_OR_RETURN(
      SpatialGeometry geometry,
      ReadSpatialAttributes(ctx, std::vector<int64_t>(x.dims().begin() + 2, x.dims().end()),
                            kernel));
  OVFIX_RETURN_IF_ERROR(ComputeConvOutput(ctx, geometry));
  return geometry;
}

}  // namespace ovfix::exec
