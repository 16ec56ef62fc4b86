// Slice and Pad: both pick, for every output index along each dim, an input index (or the pad
// value), so both are CopyByOffsets with one offset table per dim.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "exec/cpu/data_movement.h"
#include "exec/cpu/native_kernels.h"
#include "exec/cpu/slice_pad_geometry.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

namespace {

using namespace data_movement;  // NOLINT: the group's shared vocabulary

absl::Status Slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, x.type()));
  OVFIX_ASSIGN_OR_RETURN(const SliceGeometry g, PlanSliceOfNode(ctx, x.dims(), [&](size_t i) {
                           return absl::StatusOr<std::vector<int64_t>>(ToInt64s(ctx.input(i)));
                         }));
  if (g.IsWhole(x.dims())) {
    ctx.outputs[0] = x;  // the whole tensor: first is 0 everywhere
    return absl::OkStatus();
  }
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), g.dims);
  if (y.numel() == 0) return absl::OkStatus();
  CopyByOffsets(x, g.Offsets(x.dims()), nullptr, y, ctx.pool);
  return absl::OkStatus();
}

absl::Status Pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, x.type()));
  OVFIX_ASSIGN_OR_RETURN(
      const PadArguments args,
      PlanPadOfNode(
          ctx, x.type(), x.dims(),
          [&](size_t i) { return absl::StatusOr<std::vector<int64_t>>(ToInt64s(ctx.input(i))); },
          [&](size_t i) { return absl::StatusOr<const Tensor*>(&ctx.input(i)); }));
  const PadGeometry& g = args.geometry;
  if (g.dims == x.dims() &&
      std::all_of(g.before.begin(), g.before.end(), [](int64_t b) { return b == 0; })) {
    ctx.outputs[0] = x;  // no padding (Swin pads to a multiple of its window, often by 0)
    return absl::OkStatus();
  }
  const Tensor& value = args.value;
  if (!data_movement::IsAllocatable(g.dims, x.type())) return ctx.Error("output too large");
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), g.dims);
  if (y.numel() == 0) return absl::OkStatus();
  CopyByOffsets(x, g.Offsets(x.dims(), args.mode, kFill), value.defined() ? &value : nullptr, y,
                ctx.pool);
  return absl::OkStatus();
}

}  // namespace

void AddSlicePadKernels(std::vector<KernelDef>& table) {
  AddNativeKernels(table, {{"Slice", 1, Slice}, {"Pad", 1, Pad}});
}

}  // namespace ovfix::exec
