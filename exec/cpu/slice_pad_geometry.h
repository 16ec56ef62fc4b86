// Slice's, Pad's and Expand's index arithmetic: which input element each output dim starts from,
// its step, and the output dims, from the arguments as read. The CPU kernels and the OpenCL ones
// share it, so both backends agree on every clamp, negative step and negative pad.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "exec/cpu/data_movement.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

// Maps axes in [-rank, rank) to [0, rank) in place; fails on one out of range or repeated.
absl::Status NormalizeAxes(const KernelContext& ctx, std::vector<int64_t>& axes, int64_t rank);

struct SliceGeometry {
  std::vector<int64_t> first;  // per input dim: the first element taken
  std::vector<int64_t> step;   // per input dim: clamped to the dim's length
  std::vector<int64_t> dims;   // the output's
  // The whole input in order: the output is the input itself.
  bool IsWhole(const std::vector<int64_t>& input_dims) const;
  // Per output dim, the offset (in elements) of each of its indices in the input.
  std::vector<std::vector<int64_t>> Offsets(const std::vector<int64_t>& input_dims) const;
};

// Slice's geometry from what the node states: attributes before opset 10, inputs 1 to 4 from
// then on, read by `read_ints(i)` (a host tensor on the CPU, read back on OpenCL).
template <typename Context, typename ReadInts>
absl::StatusOr<SliceGeometry> PlanSliceOfNode(const Context& ctx, const std::vector<int64_t>& dims,
                                              ReadInts read_ints) {
  std::vector<int64_t> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.node.GetInts("starts");
    ends = ctx.node.GetInts("ends");
    if (ctx.node.HasAttribute("axes")) axes = ctx.node.GetInts("axes");
  } else {
    if (!ctx.has_input(1) || !ctx.has_input(2)) return ctx.Error("starts and ends are required");
    OVFIX_ASSIGN_OR_RETURN(starts, read_ints(1));
    OVFIX_ASSIGN_OR_RETURN(ends, read_ints(2));
    if (ctx.has_input(3)) {
      OVFIX_ASSIGN_OR_RETURN(axes, read_ints(3));
    }
    if (ctx.has_input(4)) {
      OVFIX_ASSIGN_OR_RETURN(steps, read_ints(4));
    }
  }
  return PlanSlice(KernelContext::For(ctx.node, ctx.opset), dims, starts, ends, std::move(axes),
                   std::move(steps));
}

// Slice of a tensor of `dims`: starts and ends, and axes and steps where given (absent: all
// leading axes, steps of 1).
absl::StatusOr<SliceGeometry> PlanSlice(const KernelContext& ctx, const std::vector<int64_t>& dims,
                                        const std::vector<int64_t>& starts,
                                        const std::vector<int64_t>& ends,
                                        std::optional<std::vector<int64_t>> axes,
                                        std::optional<std::vector<int64_t>> steps);

struct PadGeometry {
  std::vector<int64_t> before;  // per dim: elements added in front (negative: removed)
  std::vector<int64_t> dims;    // the output's
  // Per output dim, the offset (in elements) in the input each index reads, or `fill` where it
  // takes the pad value.
  std::vector<std::vector<int64_t>> Offsets(const std::vector<int64_t>& input_dims,
                                            std::string_view mode, int64_t fill) const;
};

// Pad of a tensor of `dims` in `mode`: `pads` ([begin_0, ..., end_0, ...] over `axes`) and
// `axes` as read (empty and not given: every axis).
absl::StatusOr<PadGeometry> PlanPad(const KernelContext& ctx, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& pads, std::vector<int64_t> axes,
                                    bool axes_given, const std::string& mode);

struct ExpandGeometry {
  std::vector<int64_t> input_dims;  // the input's, padded in front with 1s to the output's rank
  std::vector<int64_t> dims;        // the output's
};

// Expand of a tensor of `dims` to `shape`: both right-aligned and padded with 1s, broadcast as
// numpy does.
absl::StatusOr<ExpandGeometry> PlanExpand(const KernelContext& ctx,
                                          const std::vector<int64_t>& dims,
                                          const std::vector<int64_t>& shape);

struct PadArguments {
  std::string mode;  // constant, reflect, edge, or wrap (opset 19)
  PadGeometry geometry;
  Tensor value;  // the constant pad value; undefined: zeros
};

// Pad's arguments from what the node states for a tensor of `type` and `dims`: attributes
// before opset 11, inputs 1 to 3 from then on, read by `read_ints(i)` and `read_tensor(i)`
// (host tensors on the CPU, read back on OpenCL).
template <typename Context, typename ReadInts, typename ReadTensor>
absl::StatusOr<PadArguments> PlanPadOfNode(const Context& ctx, DataType type,
                                           const std::vector<int64_t>& dims, ReadInts read_ints,
                                           ReadTensor read_tensor) {
  PadArguments args;
  args.mode = ctx.node.GetString("mode", "constant");
  if (args.mode != "constant" && args.mode != "reflect" && args.mode != "edge" &&
      (args.mode != "wrap" || ctx.opset < 19)) {
    return ctx.Error("unsupported mode '", args.mode, "'");
  }
  std::vector<int64_t> pads, axes;
  if (ctx.opset < 11) {
    pads = ctx.node.GetInts(ctx.node.HasAttribute("pads") ? "pads" : "paddings");
    args.value = data_movement::ScalarOfType(type, ctx.node.GetFloat("value", 0.0f));
    if (!args.value.defined()) {
      return ctx.Error("no pad value for element type ", std::string(DataTypeName(type)));
    }
  } else {
    if (!ctx.has_input(1)) return ctx.Error("pads is required");
    OVFIX_ASSIGN_OR_RETURN(pads, read_ints(1));
    if (ctx.has_input(2)) {
      OVFIX_ASSIGN_OR_RETURN(const Tensor* v, read_tensor(2));
      if (v->numel() > 0) {
        if (v->type() != type) return ctx.Error("constant_value type differs from data");
        args.value = *v;
      }
    }
    if (ctx.has_input(3)) {
      OVFIX_ASSIGN_OR_RETURN(axes, read_ints(3));
    }
  }
  OVFIX_ASSIGN_OR_RETURN(
      args.geometry, PlanPad(KernelContext::For(ctx.node, ctx.opset), dims, pads, std::move(axes),
                             ctx.opset >= 18 && ctx.has_input(3), args.mode));
  return args;
}

// Where output index `o` of a padded dim reads from, for an input dim of size `dim` with
// `before` pad entries ahead of it; data_movement::kFill for constant padding.
int64_t PadSource(int64_t o, int64_t before, int64_t dim, std::string_view mode);

}  // namespace ovfix::exec
