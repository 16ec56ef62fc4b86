// Slice's and Pad's index arithmetic: which input element each output dim starts from, its
// step, and the output dims, from the arguments as read. The CPU kernels and the OpenCL ones
// share it, so both backends agree on every clamp, negative step and negative pad.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "exec/kernel.h"

namespace ovfix::exec {

// Maps axes in [-rank, rank) to [0, rank) in place; fails on one out of range or repeated.
absl::Status NormalizeAxes(const KernelContext& ctx, std::vector<int64_t>& axes, int64_t rank);

struct SliceGeometry {
  std::vector<int64_t> first;  // per input dim: the first element taken
  std::vector<int64_t> step;   // per input dim: clamped to the dim's length
  std::vector<int64_t> dims;   // the output's
  // The whole input in order: the output is the input itself.
  bool IsWhole(const std::vector<int64_t>& input_dims) const;
};

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
};

// Pad of a tensor of `dims` in `mode`: `pads` ([begin_0, ..., end_0, ...] over `axes`) and
// `axes` as read (empty and not given: every axis).
absl::StatusOr<PadGeometry> PlanPad(const KernelContext& ctx, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& pads, std::vector<int64_t> axes,
                                    bool axes_given, const std::string& mode);

// Where output index `o` of a padded dim reads from, for an input dim of size `dim` with
// `before` pad entries ahead of it; data_movement::kFill for constant padding.
int64_t PadSource(int64_t o, int64_t before, int64_t dim, std::string_view mode);

}  // namespace ovfix::exec
