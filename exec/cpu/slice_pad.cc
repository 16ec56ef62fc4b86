// Slice and Pad: both pick, for every output index along each dim, an input index (or the pad
// value), so both are CopyByOffsets with one offset table per dim.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "exec/cpu/data_movement.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

namespace {

using namespace data_movement;  // NOLINT: the group's shared vocabulary

// Maps axes in [-rank, rank) to [0, rank) in place; fails on one out of range or repeated.
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

absl::Status Slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (!StorageSupported(x.type())) return ctx.Error("unsupported element type");
  std::vector<int64_t> starts, ends, axes, steps;
  bool have_axes = false, have_steps = false;
  if (ctx.opset < 10) {
    starts = ctx.node.GetInts("starts");
    ends = ctx.node.GetInts("ends");
    have_axes = ctx.node.HasAttribute("axes");
    axes = ctx.node.GetInts("axes");
  } else {
    if (!ctx.has_input(1) || !ctx.has_input(2)) return ctx.Error("starts and ends are required");
    starts = ToInt64s(ctx.input(1));
    ends = ToInt64s(ctx.input(2));
    if ((have_axes = ctx.has_input(3))) axes = ToInt64s(ctx.input(3));
    if ((have_steps = ctx.has_input(4))) steps = ToInt64s(ctx.input(4));
  }
  const size_t n = starts.size();
  if (!have_axes) {
    axes.resize(n);
    for (size_t i = 0; i < n; ++i) axes[i] = static_cast<int64_t>(i);
  }
  if (!have_steps) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n) {
    return ctx.Error("starts, ends, axes and steps differ in length");
  }
  OVFIX_RETURN_IF_ERROR(NormalizeAxes(ctx, axes, rank));

  std::vector<int64_t> first(rank, 0), step(rank, 1), out_dims = x.dims();
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = axes[i], dim = x.dim(a);
    if (steps[i] == 0) return ctx.Error("step is 0 on axis ", a);
    // A step longer than the axis takes one element at most; clamping it keeps -step finite.
    const int64_t st =
        std::clamp<int64_t>(steps[i], -std::max<int64_t>(dim, 1), std::max<int64_t>(dim, 1));
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
    first[a] = b;
    step[a] = st;
    out_dims[a] = count;
  }
  if (out_dims == x.dims() &&
      std::all_of(step.begin(), step.end(), [](int64_t s) { return s == 1; })) {
    ctx.outputs[0] = x;  // the whole tensor: first is 0 everywhere
    return absl::OkStatus();
  }
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

// Where output index `o` of a padded dim reads from, for an input dim of size `dim` with
// `before` pad entries ahead of it; kFill for constant padding.
int64_t PadSource(int64_t o, int64_t before, int64_t dim, std::string_view mode) {
  int64_t i = o - before;
  if (i >= 0 && i < dim) return i;
  if (mode == "constant") return kFill;
  if (mode == "edge") return i < 0 ? 0 : dim - 1;
  // reflect: the axis mirrored about its end elements without repeating them, with period
  // 2 * (dim - 1); reflection of a single element is that element.
  if (dim == 1) return 0;
  const int64_t period = 2 * (dim - 1);
  i %= period;
  if (i < 0) i += period;
  return i < dim ? i : period - i;
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
  if (axes.empty() && !(ctx.opset >= 18 && ctx.has_input(3))) {
    axes.resize(rank);
    for (int64_t d = 0; d < rank; ++d) axes[d] = d;
  }
  OVFIX_RETURN_IF_ERROR(NormalizeAxes(ctx, axes, rank));
  if (pads.size() != 2 * axes.size()) {
    return ctx.Error("pads has ", pads.size(), " entries, expected ", 2 * axes.size());
  }
  // pads is [begin_0, begin_1, ..., end_0, end_1, ...] over `axes`.
  std::vector<int64_t> before(rank, 0), out_dims = x.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], b = pads[i], e = pads[i + axes.size()];
    constexpr int64_t kMaxPad = int64_t{1} << 48;
    if (b < -kMaxPad || b > kMaxPad || e < -kMaxPad || e > kMaxPad)
      return ctx.Error("pads out of range");
    before[a] = b;
    out_dims[a] = x.dim(a) + b + e;
    if (out_dims[a] < 0) return ctx.Error("pads remove more than the whole of axis ", a);
    if (mode != "constant" && x.dim(a) == 0 && out_dims[a] > 0) {
      return ctx.Error("cannot ", mode, "-pad the empty axis ", a);
    }
  }
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
