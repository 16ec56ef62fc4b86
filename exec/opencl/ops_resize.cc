// Resize (opsets 10-26; antialias on the CPU) and Upsample (7-9) on the device. Attributes, output
// sizes and each axis's taps come from the CPU kernel's own arithmetic (exec/cpu/resize_plan.h), so
// every mode, coordinate transformation and nearest rounding matches it by construction; the device
// gathers (nearest), interpolates one axis per launch (linear, cubic), or, for the bilinear
// resizes the CPU computes in onnxruntime's float arithmetic, does exactly that arithmetic.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/cpu/resize_bilinear.h"
#include "exec/cpu/resize_plan.h"
#include "exec/opencl/host_upload.h"
#include "exec/opencl/kernel_args.h"
#include "exec/opencl/op_context.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

// Per-axis tables laid end to end for the rank-8 kernels: axis k of the padded rank starts at
// starts.s[k]; the leading padded axes get one entry of `fill`.
template <typename T, typename Fn>
cl_int8 AxisTables(const std::vector<AxisPlan>& plans, T fill, Fn&& entries, std::vector<T>& out) {
  cl_int8 starts;
  const size_t shift = kMaxBroadcastRank - plans.size();
  for (size_t k = 0; k < kMaxBroadcastRank; ++k) {
    starts.s[k] = static_cast<cl_int>(out.size());
    if (k < shift) {
      out.push_back(fill);
    } else {
      entries(k - shift, out);
    }
  }
  return starts;
}

absl::Status Gather(OpContext& ctx, const std::vector<AxisPlan>& plans, cl::Buffer& x, ClValue& y) {
  const size_t rank = plans.size();
  std::vector<int64_t> in_strides(rank, 1);
  for (int d = static_cast<int>(rank) - 2; d >= 0; --d) {
    in_strides[d] = in_strides[d + 1] * plans[d + 1].in_size;
  }
  std::vector<cl_long> offsets;
  const cl_int8 starts = AxisTables<cl_long>(
      plans, 0,
      [&](size_t d, std::vector<cl_long>& out) {
        for (int64_t j = 0; j < plans[d].out_size; ++j) {
          out.push_back(plans[d].index[j] * in_strides[d]);
        }
      },
      offsets);
  OVFIX_ASSIGN_OR_RETURN(auto table, UploadVector(ctx, offsets));
  OVFIX_ASSIGN_OR_RETURN(auto k, ctx.Kernel("resize.cl", "resize_nearest", WordOption(y)));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, x, *y.device, *table, PaddedDims(y.dims), starts));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y.numel())));
}

// Float linear resizes of the last two axes that the CPU kernel computes as onnxruntime does
// (BilinearFloatPlan): the same arithmetic, from the same tables.
absl::Status Bilinear(OpContext& ctx, const BilinearPlan& plan, const ClValue& x, cl::Buffer& dx,
                      ClValue& y) {
  const BilinearShape& s = plan.shape;
  const BilinearTaps ys =
      MakeBilinearTaps(plan.coordinates, s.in_height, s.out_height, s.height_scale);
  const BilinearTaps xs =
      MakeBilinearTaps(plan.coordinates, s.in_width, s.out_width, s.width_scale);
  std::vector<cl_int> taps;
  std::vector<float> weights;
  for (const BilinearTaps* t : {&ys, &xs}) {
    taps.insert(taps.end(), t->first.begin(), t->first.end());
    taps.insert(taps.end(), t->second.begin(), t->second.end());
    weights.insert(weights.end(), t->d1.begin(), t->d1.end());
    weights.insert(weights.end(), t->d2.begin(), t->d2.end());
  }
  OVFIX_ASSIGN_OR_RETURN(auto taps_buffer, UploadVector(ctx, taps));
  OVFIX_ASSIGN_OR_RETURN(auto weights_buffer, UploadVector(ctx, weights));
  OVFIX_ASSIGN_OR_RETURN(
      auto k, ctx.Kernel("resize.cl", "resize_bilinear", ctx.Options({{"A", &x}, {"Y", &y}})));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, dx, *y.device, *taps_buffer, *weights_buffer,
                                cl_long{s.in_height}, cl_long{s.in_width}, cl_long{s.out_height},
                                cl_long{s.out_width}));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y.numel())));
}

// Linear and cubic (and nearest with tf_crop_and_resize's extrapolation): one launch per axis
// that is not the identity, innermost first as the CPU kernel goes, through float buffers.
absl::Status Interpolate(OpContext& ctx, const ResizeAttributes& a,
                         const std::vector<AxisPlan>& plans, const ClValue& x, cl::Buffer& dx,
                         ClValue& y, bool any_outside) {
  const size_t rank = plans.size();
  std::vector<int> axes;
  for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
    if (!plans[d].identity) axes.push_back(d);
  }
  const std::string arithmetic = ctx.HalfArithmetic(x.type) ? "-DUSE_HALF_ARITHMETIC" : "";
  std::vector<int64_t> dims = x.dims;
  std::shared_ptr<cl::Buffer> current;  // the last pass's float output
  for (size_t p = 0; p < axes.size(); ++p) {
    const int axis = axes[p];
    const AxisPlan& plan = plans[axis];
    const bool first = p == 0, last = p + 1 == axes.size();
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= dims[d];
    for (size_t d = axis + 1; d < rank; ++d) inner *= dims[d];
    std::vector<cl_int> index(plan.index.begin(), plan.index.end());
    std::vector<float> weight(plan.weight.begin(), plan.weight.end());
    OVFIX_ASSIGN_OR_RETURN(auto index_buffer, UploadVector(ctx, index));
    OVFIX_ASSIGN_OR_RETURN(auto weight_buffer, UploadVector(ctx, weight));
    const int64_t count = outer * plan.out_size * inner;
    std::shared_ptr<cl::Buffer> next;
    if (!last) {
      OVFIX_ASSIGN_OR_RETURN(next, ctx.rt.AllocateShared(static_cast<size_t>(count) * 4));
    }
    std::string options = arithmetic;
    if (first && x.half) options += " -DA_HALF";
    if (last && y.half) options += " -DY_HALF";
    OVFIX_ASSIGN_OR_RETURN(auto k, ctx.Kernel("resize.cl", "resize_axis", options));
    cl::Buffer& in = first ? dx : *current;
    cl::Buffer& out = last ? *y.device : *next;
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, in, out, *index_buffer, *weight_buffer,
                                  static_cast<cl_int>(plan.taps), cl_long{plan.in_size},
                                  cl_long{plan.out_size}, cl_long{inner}));
    OVFIX_RETURN_IF_ERROR(ctx.Run(k, cl::NDRange(static_cast<size_t>(count))));
    current = std::move(next);
    dims[axis] = plan.out_size;
  }
  if (!any_outside) return absl::OkStatus();
  std::vector<cl_uchar> outside;
  const cl_int8 starts = AxisTables<cl_uchar>(
      plans, 0,
      [&](size_t d, std::vector<cl_uchar>& out) {
        out.insert(out.end(), plans[d].outside.begin(), plans[d].outside.end());
      },
      outside);
  OVFIX_ASSIGN_OR_RETURN(auto table, UploadVector(ctx, outside));
  std::string options = arithmetic;
  if (y.half) options += " -DY_HALF";
  OVFIX_ASSIGN_OR_RETURN(auto k, ctx.Kernel("resize.cl", "resize_extrapolate", options));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *y.device, *table, PaddedDims(y.dims), starts,
                                static_cast<float>(a.extrapolation_value)));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y.numel())));
}

absl::Status RunResize(OpContext& ctx, ResizeForm form) {
  const ClValue& x = ctx.input(0);
  if (x.dims.empty()) return ctx.Error("input must have rank >= 1");
  if (x.type == DataType::kString) return ctx.Error("string tensors are not supported");
  if (x.dims.size() > kMaxBroadcastRank) return ctx.Unsupported("rank above 8");
  const KernelContext kc = KernelContext::For(ctx.node, ctx.opset);
  OVFIX_ASSIGN_OR_RETURN(ResizeAttributes a,
                         ParseResizeAttributes(kc, form != ResizeForm::kResize));
  // The small inputs the geometry reads, on the host.
  std::vector<const Tensor*> host(4, nullptr);
  for (size_t i = 1; i < 4; ++i) {
    if (ctx.has_input(i)) {
      OVFIX_ASSIGN_OR_RETURN(host[i], ctx.Host(i));
    }
  }
  ResizeInputs inputs;
  if (form == ResizeForm::kScalesInput) {
    inputs.scales = host[1];
  } else if (form == ResizeForm::kResize) {
    inputs = {host[1], host[2], host[3]};
  }
  OVFIX_ASSIGN_OR_RETURN(ResizeGeometry g, ComputeResizeGeometry(kc, form, x.dims, inputs));
  const size_t rank = x.dims.size();
  double total = 1;
  for (int64_t d : g.out_dims) total *= static_cast<double>(d);
  if (total * static_cast<double>(ElementSize(x.type)) > 1e12) {
    return ctx.Error("output too large");
  }
  for (size_t i = 0; i < rank; ++i) {
    if (x.dims[i] == 0 && g.out_dims[i] > 0) {
      return ctx.Error("cannot resize an empty axis ", i, " to size ", g.out_dims[i]);
    }
  }
  std::vector<AxisPlan> plans;
  bool identity = true, any_outside = false;
  for (size_t i = 0; i < rank; ++i) {
    plans.push_back(MakeAxisPlan(a, x.dims[i], g.out_dims[i], g.scales[i], g.out_widths[i],
                                 g.roi[i], g.roi[rank + i]));
    identity &= plans.back().identity;
    any_outside |= plans.back().any_outside;
  }
  const bool gather = a.mode == ResizeMode::kNearest && !any_outside;
  if (!identity && !gather && !IsFloat(x)) {
    return ctx.Unsupported("interpolation of ", std::string(DataTypeName(x.type)));
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, g.out_dims));
  if (y->numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  if (identity) return ctx.rt.Copy(*dx, 0, *y->device, 0, y->device_bytes());
  if (gather) return Gather(ctx, plans, *dx, *y);
  if (!any_outside) {
    if (const std::optional<BilinearPlan> plan = BilinearFloatPlan(a, g, x.dims)) {
      return Bilinear(ctx, *plan, x, *dx, *y);
    }
  }
  return Interpolate(ctx, a, plans, x, *dx, *y, any_outside);
}

// Resize and Upsample, in the form their opset gives them.
absl::Status Resize(OpContext& ctx) {
  // Antialiased taps (opset 18) vary in number per output: the CPU kernel's.
  if (ctx.opset >= 18 && ctx.node.GetInt("antialias", 0) != 0) {
    return ctx.Unsupported("antialias");
  }
  return RunResize(ctx, ResizeFormOf(ctx.node.op_type(), ctx.opset));
}

}  // namespace

void AddResizeOps(std::vector<OpDef>& table) {
  table.push_back({"Resize", 10, kLatestOpset, Resize});
  table.push_back({"Upsample", 7, 9, Resize});
}

}  // namespace ovfix::exec::opencl
