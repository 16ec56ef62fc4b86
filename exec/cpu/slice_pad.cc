// Slice and Pad: both pick, for every output index along each dim, an input index (or the pad
// value), so both are CopyByOffsets with one offset table per dim.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "exec/cpu/data_movement.h"
#include "exec/cpu/slice_pad_geometry.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

namespace {

using namespace data_movement;  // NOLINT: the group's shared vocabulary

absl::Status Slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (!StorageSupported(x.type())) return ctx.Error("unsupported element type");
  std::vector<int64_t> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.node.GetInts("starts");
    ends = ctx.node.GetInts("ends");
    if (ctx.node.HasAttribute("axes")) axes = ctx.node.GetInts("axes");
  } else {
    if (!ctx.has_input(1) || !ctx.has_input(2)) return ctx.Error("starts and ends are required");
    starts = ToInt64s(ctx.input(1));
    ends = ToInt64s(ctx.input(2));
    if (ctx.has_input(3)) axes = ToInt64s(ctx.input(3));
    if (ctx.has_input(4)) steps = ToInt64s(ctx.input(4));
  }
  OVFIX_ASSIGN_OR_RETURN(const SliceGeometry g,
                         PlanSlice(ctx, x.dims(), starts, ends, std::move(axes), std::move(steps)));
  if (g.IsWhole(x.dims())) {
    ctx.outputs[0] = x;  // the whole tensor: first is 0 everywhere
    return absl::OkStatus();
  }
  const std::vector<int64_t>& first = g.first;
  const std::vector<int64_t>& step = g.step;
  const std::vector<int64_t>& out_dims = g.dims;
  Tensor& y = ctx.Output(0, x.type(), out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  const std::vector<int64_t> strides = Strides(x.dims());
  std::vector<std::vector<int64_t>> offsets(rank);
  for (int64_t d = 0; d < rank; ++d) {
    offsets[d].resize(out_dims[d]);
    for (int64_t i = 0; i < out_dims[d]; ++i) {
      offsets[d][i] = (first[d] + i * step[d]) * strides[d];
    }
  }
  CopyByOffsets(x, std::move(offsets), nullptr, y, ctx.pool);
  return absl::OkStatus();
}

absl::Status Pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (!StorageSupported(x.type())) return ctx.Error("unsupported element type");
  const std::string mode = ctx.node.GetString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return ctx.Error("unsupported mode '", mode, "'");
  }
  std::vector<int64_t> pads, axes;
  Tensor value;
  if (ctx.opset < 11) {
    pads = ctx.node.GetInts(ctx.node.HasAttribute("pads") ? "pads" : "paddings");
    value = data_movement::ScalarOfType(x.type(), ctx.node.GetFloat("value", 0.0f));
    if (!value.defined()) return ctx.Error("no pad value for ", DescribeTensor(x));
  } else {
    if (!ctx.has_input(1)) return ctx.Error("pads is required");
    pads = ToInt64s(ctx.input(1));
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
      value = ctx.input(2);
      if (value.type() != x.type()) return ctx.Error("constant_value type differs from data");
    }
    if (ctx.has_input(3)) axes = ToInt64s(ctx.input(3));
  }
  OVFIX_ASSIGN_OR_RETURN(const PadGeometry g, PlanPad(ctx, x.dims(), pads, std::move(axes),
                                                      ctx.opset >= 18 && ctx.has_input(3), mode));
  const std::vector<int64_t>& before = g.before;
  const std::vector<int64_t>& out_dims = g.dims;
  if (!data_movement::IsAllocatable(out_dims, x.type())) return ctx.Error("output too large");
  Tensor& y = ctx.Output(0, x.type(), out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  const std::vector<int64_t> strides = Strides(x.dims());
  std::vector<std::vector<int64_t>> offsets(rank);
  for (int64_t d = 0; d < rank; ++d) {
    offsets[d].resize(out_dims[d]);
    for (int64_t o = 0; o < out_dims[d]; ++o) {
      const int64_t i = PadSource(o, before[d], x.dim(d), mode);
      offsets[d][o] = i == kFill ? kFill : i * strides[d];
    }
  }
  CopyByOffsets(x, std::move(offsets), value.defined() ? &value : nullptr, y, ctx.pool);
  return absl::OkStatus();
}

}  // namespace

void AddSlicePadKernels(std::vector<KernelDef>& table) {
  constexpr Float16Mode kNative = Float16Mode::kNative;
  table.push_back({"", "Slice", 1, kLatestOpset, Slice, kNative});
  table.push_back({"", "Pad", 1, kLatestOpset, Pad, kNative});
}

}  // namespace ovfix::exec
