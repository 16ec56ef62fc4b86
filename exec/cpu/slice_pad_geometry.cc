#include "exec/cpu/slice_pad_geometry.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_join.h"
#include "exec/cpu/data_movement.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

absl::Status NormalizeAxes(const KernelContext& ctx, std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return ctx.Error("axis ", a, " out of range for rank ", rank);
    if (a < 0) a += rank;
    if (seen[a]) return ctx.Error("repeated axis ", a);
    seen[a] = true;
  }
  return absl::OkStatus();
}

bool SliceGeometry::IsWhole(const std::vector<int64_t>& input_dims) const {
  return dims == input_dims &&
         std::all_of(step.begin(), step.end(), [](int64_t s) { return s == 1; });
}

std::vector<std::vector<int64_t>> SliceGeometry::Offsets(
    const std::vector<int64_t>& input_dims) const {
  const std::vector<int64_t> strides = data_movement::Strides(input_dims);
  std::vector<std::vector<int64_t>> offsets(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    offsets[d].resize(dims[d]);
    for (int64_t i = 0; i < dims[d]; ++i) offsets[d][i] = (first[d] + i * step[d]) * strides[d];
  }
  return offsets;
}

std::vector<std::vector<int64_t>> PadGeometry::Offsets(const std::vector<int64_t>& input_dims,
                                                       std::string_view mode, int64_t fill) const {
  const std::vector<int64_t> strides = data_movement::Strides(input_dims);
  std::vector<std::vector<int64_t>> offsets(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    offsets[d].resize(dims[d]);
    for (int64_t o = 0; o < dims[d]; ++o) {
      const int64_t i = PadSource(o, before[d], input_dims[d], mode);
      offsets[d][o] = i == data_movement::kFill ? fill : i * strides[d];
    }
  }
  return offsets;
}

absl::StatusOr<SliceGeometry> PlanSlice(const KernelContext& ctx, const std::vector<int64_t>& dims,
                                        const std::vector<int64_t>& starts,
                                        const std::vector<int64_t>& ends,
                                        std::optional<std::vector<int64_t>> axes,
                                        std::optional<std::vector<int64_t>> steps) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const size_t n = starts.size();
  if (!axes) {
    axes.emplace(n);
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps) steps.emplace(n, 1);
  if (ends.size() != n || axes->size() != n || steps->size() != n) {
    return ctx.Error("starts, ends, axes and steps differ in length");
  }
  OVFIX_RETURN_IF_ERROR(NormalizeAxes(ctx, *axes, rank));

  SliceGeometry g;
  g.first.assign(rank, 0);
  g.step.assign(rank, 1);
  g.dims = dims;
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = (*axes)[i], dim = dims[a];
    if ((*steps)[i] == 0) return ctx.Error("step is 0 on axis ", a);
    // A step longer than the axis takes one element at most; clamping it keeps -step finite.
    const int64_t st =
        std::clamp<int64_t>((*steps)[i], -std::max<int64_t>(dim, 1), std::max<int64_t>(dim, 1));
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    int64_t count = 0;
    if (dim == 0) {
      b = 0;
    } else if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > b ? (e - b - 1) / st + 1 : 0;
    } else {
      // Going backwards the first element is at most dim - 1 and the (exclusive) end may be
      // -1, so that index 0 is included.
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = b > e ? (b - e - 1) / -st + 1 : 0;
    }
    g.first[a] = b;
    g.step[a] = st;
    g.dims[a] = count;
  }
  return g;
}

absl::StatusOr<PadGeometry> PlanPad(const KernelContext& ctx, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& pads, std::vector<int64_t> axes,
                                    bool axes_given, const std::string& mode) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axes.empty() && !axes_given) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  OVFIX_RETURN_IF_ERROR(NormalizeAxes(ctx, axes, rank));
  if (pads.size() != 2 * axes.size()) {
    return ctx.Error("pads has ", pads.size(), " entries, expected ", 2 * axes.size());
  }
  // pads is [begin_0, begin_1, ..., end_0, end_1, ...] over `axes`.
  PadGeometry g;
  g.before.assign(rank, 0);
  g.dims = dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], b = pads[i], e = pads[i + axes.size()];
    constexpr int64_t kMaxPad = int64_t{1} << 48;
    if (b < -kMaxPad || b > kMaxPad || e < -kMaxPad || e > kMaxPad) {
      return ctx.Error("pads out of range");
    }
    g.before[a] = b;
    g.dims[a] = dims[a] + b + e;
    if (g.dims[a] < 0) return ctx.Error("pads remove more than the whole of axis ", a);
    if (mode != "constant" && dims[a] == 0 && g.dims[a] > 0) {
      return ctx.Error("cannot ", mode, "-pad the empty axis ", a);
    }
  }
  return g;
}

int64_t PadSource(int64_t o, int64_t before, int64_t dim, std::string_view mode) {
  int64_t i = o - before;
  if (i >= 0 && i < dim) return i;
  if (mode == "constant") return data_movement::kFill;
  if (mode == "edge") return i < 0 ? 0 : dim - 1;
  if (mode == "wrap") return (i % dim + dim) % dim;  // the axis repeated, as on a torus
  // reflect: the axis mirrored about its end elements without repeating them, with period
  // 2 * (dim - 1); reflection of a single element is that element.
  if (dim == 1) return 0;
  const int64_t period = 2 * (dim - 1);
  i %= period;
  if (i < 0) i += period;
  return i < dim ? i : period - i;
}

absl::StatusOr<ExpandGeometry> PlanExpand(const KernelContext& ctx,
                                          const std::vector<int64_t>& dims,
                                          const std::vector<int64_t>& shape) {
  const size_t rank = std::max(dims.size(), shape.size());
  ExpandGeometry g{std::vector<int64_t>(rank, 1), std::vector<int64_t>(rank)};
  std::copy(dims.begin(), dims.end(), g.input_dims.begin() + (rank - dims.size()));
  for (size_t d = 0; d < rank; ++d) {
    const int64_t want = d + shape.size() >= rank ? shape[d + shape.size() - rank] : 1;
    const int64_t have = g.input_dims[d];
    if (want < 0) return ctx.Error("negative dim ", want, " in shape");
    if (have == want || want == 1) {
      g.dims[d] = have;
    } else if (have == 1) {
      g.dims[d] = want;
    } else {
      return ctx.Error("cannot broadcast [", absl::StrJoin(dims, ","), "] to the shape [",
                       absl::StrJoin(shape, ","), "]");
    }
  }
  return g;
}

}  // namespace ovfix::exec
