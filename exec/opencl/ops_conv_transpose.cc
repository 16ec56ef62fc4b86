// ConvTranspose on the device: groups, strides, dilations, pads, output_padding, output_shape
// and auto_pad, 1-D to 3-D. The geometry is the CPU kernel's own
// (exec/cpu/conv_transpose_geometry.h), so both backends agree on every output size and pad.
#include <string>
#include <vector>

#include "exec/cpu/conv_transpose_geometry.h"
#include "exec/opencl/kernel_args.h"
#include "exec/opencl/op_context.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

absl::Status ConvTranspose(OpContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("needs inputs X and W");
  const ClValue& x = ctx.input(0);
  const ClValue& w = ctx.input(1);
  if (x.type != w.type) return ctx.Error("X and W have different element types");
  if (!IsFloat(x)) return ctx.Unsupported("element type ", std::string(DataTypeName(x.type)));
  if (x.dims.size() < 3 || x.dims.size() > 5 || w.dims.size() != x.dims.size()) {
    return ctx.Error("X and W must have the same rank with 1 to 3 spatial dims");
  }
  const int64_t group = ctx.node.GetInt("group", 1);
  const int64_t channels = x.dims[1];
  if (group <= 0 || channels % group != 0 || w.dims[0] != channels) {
    return ctx.Error("W must have the ", channels, " input channels in dim 0 and group ", group,
                     " must divide them");
  }
  const int64_t maps = w.dims[1] * group;
  const bool has_bias = ctx.has_input(2);
  if (has_bias) {
    const ClValue& b = ctx.input(2);
    if (b.type != x.type || b.dims.size() != 1 || b.dims[0] != maps) {
      return ctx.Error("bias must be a vector of ", maps, " elements");
    }
  }
  const KernelContext kc = KernelContext::For(ctx.node, ctx.opset);
  OVFIX_ASSIGN_OR_RETURN(SpatialGeometry g, ConvTransposeGeometry(kc, x.dims, w.dims));
  std::vector<int64_t> dims = {x.dims[0], maps};
  dims.insert(dims.end(), g.output.begin(), g.output.end());
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(kc, dims));
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, dims));
  if (y->numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto dw, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * db, ctx.DeviceOr(2, dw));
  OVFIX_ASSIGN_OR_RETURN(
      auto k,
      ctx.Kernel("conv_transpose.cl", "conv_transpose",
                 ctx.Options(
                     {{"A", &x}, {"W", &w}, {"C", has_bias ? &ctx.input(2) : nullptr}, {"Y", y}})));
  OVFIX_RETURN_IF_ERROR(
      SetArgs(ctx, k, *dx, *dw, *db, cl_int{has_bias}, *y->device, static_cast<cl_int>(channels),
              static_cast<cl_int>(maps), static_cast<cl_int>(group), Spatial3(g.input, 1),
              Spatial3(g.output, 1), Spatial3(g.kernel, 1), Spatial3(g.strides, 1),
              Spatial3(g.dilations, 1), Spatial3(g.pads_begin, 0)));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y->numel())));
}

}  // namespace

void AddConvTransposeOps(std::vector<OpDef>& table) {
  table.push_back({"ConvTranspose", 1, kOpenVersion, ConvTranspose});
}

}  // namespace ovfix::exec::opencl
