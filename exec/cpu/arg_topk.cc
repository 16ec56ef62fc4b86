// ArgMax, ArgMin, TopK and CumSum: kernels that walk the lines along one axis.
// Ties go to the lower index (ArgMax/ArgMin unless select_last_index; TopK always), and NaN
// is ordered as numpy (the spec's reference) orders it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "exec/cpu/dispatch.h"
#include "exec/cpu/opset_split_kernels.h"
#include "exec/cpu/topk_count.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// The input as [outer, n, inner] around `axis`: line (o, j) holds the n elements
// o * n * inner + k * inner + j.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  int64_t start(int64_t line) const { return (line / inner) * n * inner + line % inner; }
};

Lines SplitAt(const std::vector<int64_t>& dims, int64_t axis) {
  Lines lines;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    (d < axis ? lines.outer : d == axis ? lines.n : lines.inner) *= dims[d];
  }
  return lines;
}

absl::StatusOr<int64_t> NormalizeAxis(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return ctx.Error("axis ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

// Calls fn(T{}) for the element type, or fails for types these kernels do not handle.
template <typename Fn>
absl::Status DispatchNumeric(const KernelContext& ctx, DataType type, Fn&& fn) {
  return Dispatch(ctx, type, kNumericTypes,
                  [&](auto tag) { return fn(typename decltype(tag)::type{}); });
}

template <typename T>
bool IsNan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  return false;
}

// A strict weak order with NaN above every number (and NaNs equal to each other).
template <typename T>
bool Less(T a, T b) {
  if (IsNan(a)) return false;
  if (IsNan(b)) return true;
  return a < b;
}

// Whether v ranks strictly ahead of best: greater for ArgMax, smaller for ArgMin. NaN ranks
// ahead of every number in both, as numpy's argmax and argmin return the first NaN.
template <bool kMax, typename T>
bool Ahead(T v, T best) {
  if (IsNan(best)) return false;
  if (IsNan(v)) return true;
  return kMax ? v > best : v < best;
}

template <bool kMax, typename T>
absl::Status ArgTyped(KernelContext& ctx, const Lines& lines, std::vector<int64_t> out_dims,
                      bool select_last) {
  const T* x = ctx.input(0).data<T>();
  int64_t* y = ctx.Output(0, DataType::kInt64, std::move(out_dims)).data<int64_t>();
  ParallelFor(ctx.pool, lines.count(), std::max<int64_t>(1, 16384 / lines.n),
              [&](int64_t begin, int64_t end) {
                for (int64_t line = begin; line < end; ++line) {
                  const T* p = x + lines.start(line);
                  T best = p[0];
                  int64_t best_index = 0;
                  for (int64_t k = 1; k < lines.n; ++k) {
                    const T v = p[k * lines.inner];
                    const bool tie = !Ahead<kMax>(v, best) && !Ahead<kMax>(best, v);
                    if (Ahead<kMax>(v, best) || (select_last && tie)) {
                      best = v;
                      best_index = k;
                    }
                  }
                  y[line] = best_index;
                }
              });
  return absl::OkStatus();
}

template <bool kMax>
absl::Status ArgKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const Tensor& input = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(input.rank());
  OVFIX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.node.GetInt("axis", 0), rank));
  const Lines lines = SplitAt(input.dims(), axis);
  if (lines.n == 0) return ctx.Error("cannot take an arg over an empty axis ", axis);
  std::vector<int64_t> out_dims = input.dims();
  if (ctx.node.GetInt("keepdims", 1) != 0) {
    out_dims[axis] = 1;
  } else {
    out_dims.erase(out_dims.begin() + axis);
  }
  const bool select_last = ctx.opset >= 12 && ctx.node.GetInt("select_last_index", 0) != 0;
  return DispatchNumeric(ctx, input.type(), [&](auto zero) {
    return ArgTyped<kMax, decltype(zero)>(ctx, lines, out_dims, select_last);
  });
}

template <typename T>
void TopKTyped(KernelContext& ctx, const Lines& lines, int64_t k, bool largest,
               const std::vector<int64_t>& out_dims) {
  const T* x = ctx.input(0).data<T>();
  T* values = ctx.Output(0, ctx.input(0).type(), out_dims).data<T>();
  int64_t* indices = ctx.Output(1, DataType::kInt64, out_dims).data<int64_t>();
  if (k == 0 || lines.count() == 0) return;
  const Lines out_lines{lines.outer, k, lines.inner};
  ParallelFor(ctx.pool, lines.count(), std::max<int64_t>(1, 4096 / lines.n),
              [&](int64_t begin, int64_t end) {
                std::vector<std::pair<T, int64_t>> items(lines.n);
                // Sorted results (also when sorted=0, where any order is allowed).
                auto before = [largest](const auto& a, const auto& b) {
                  const bool a_first = largest ? Less(b.first, a.first) : Less(a.first, b.first);
                  const bool b_first = largest ? Less(a.first, b.first) : Less(b.first, a.first);
                  return a_first || (!b_first && a.second < b.second);
                };
                for (int64_t line = begin; line < end; ++line) {
                  const T* p = x + lines.start(line);
                  for (int64_t i = 0; i < lines.n; ++i) items[i] = {p[i * lines.inner], i};
                  std::partial_sort(items.begin(), items.begin() + k, items.end(), before);
                  const int64_t out = out_lines.start(line);
                  for (int64_t i = 0; i < k; ++i) {
                    values[out + i * lines.inner] = items[i].first;
                    indices[out + i * lines.inner] = items[i].second;
                  }
                }
              });
}

absl::Status TopKKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const Tensor& input = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(input.rank());
  OVFIX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.node.GetInt("axis", -1), rank));
  OVFIX_ASSIGN_OR_RETURN(
      const int64_t k,
      ReadTopKCount(ctx, ctx.opset >= 10 && ctx.has_input(1) ? &ctx.input(1) : nullptr));
  const Lines lines = SplitAt(input.dims(), axis);
  if (k < 0 || k > lines.n) {
    return ctx.Error("k = ", k, " is out of range for axis ", axis, " of size ", lines.n);
  }
  if (ctx.outputs.size() < 2) return ctx.Error("expects two outputs");
  const bool largest = ctx.opset < 11 || ctx.node.GetInt("largest", 1) != 0;
  std::vector<int64_t> out_dims = input.dims();
  out_dims[axis] = k;
  return DispatchNumeric(ctx, input.type(), [&](auto zero) {
    TopKTyped<decltype(zero)>(ctx, lines, k, largest, out_dims);
    return absl::OkStatus();
  });
}

template <typename T>
void CumSumTyped(KernelContext& ctx, const Lines& lines, bool exclusive, bool reverse) {
  const Tensor& input = ctx.input(0);
  const T* x = input.data<T>();
  T* y = ctx.Output(0, input.type(), input.dims()).data<T>();
  // Floats add in double; integers in uint64, wrapping like the element type.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  using Signed = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  ParallelFor(ctx.pool, lines.count(), std::max<int64_t>(1, 16384 / std::max<int64_t>(1, lines.n)),
              [&](int64_t begin, int64_t end) {
                for (int64_t line = begin; line < end; ++line) {
                  const int64_t start = lines.start(line);
                  Acc sum = 0;
                  for (int64_t step = 0; step < lines.n; ++step) {
                    const int64_t k = reverse ? lines.n - 1 - step : step;
                    const int64_t i = start + k * lines.inner;
                    Acc value;
                    if constexpr (std::is_floating_point_v<T>) {
                      value = static_cast<double>(x[i]);
                    } else {
                      value = static_cast<uint64_t>(static_cast<Signed>(x[i]));
                    }
                    if (!exclusive) sum += value;
                    y[i] = static_cast<T>(sum);
                    if (exclusive) sum += value;
                  }
                }
              });
}

absl::Status CumSumKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects inputs x and axis");
  const Tensor& input = ctx.input(0);
  const Tensor& axis_tensor = ctx.input(1);
  if (axis_tensor.numel() != 1 ||
      (axis_tensor.type() != DataType::kInt64 && axis_tensor.type() != DataType::kInt32)) {
    return ctx.Error("axis must be one int32 or int64, got ", DescribeTensor(axis_tensor));
  }
  const int64_t rank = static_cast<int64_t>(input.rank());
  OVFIX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, axis_tensor.GetAsInt64(0), rank));
  const Lines lines = SplitAt(input.dims(), axis);
  const bool exclusive = ctx.node.GetInt("exclusive", 0) != 0;
  const bool reverse = ctx.node.GetInt("reverse", 0) != 0;
  return DispatchNumeric(ctx, input.type(), [&](auto zero) {
    CumSumTyped<decltype(zero)>(ctx, lines, exclusive, reverse);
    return absl::OkStatus();
  });
}

}  // namespace

void AddArgTopKKernels(std::vector<KernelDef>& table) {
  // select_last_index appeared in opset 12; the kernel reads ctx.opset.
  AddOpsSplitAtOpset(table, 1, 12, {{"ArgMax", &ArgKernel<true>}, {"ArgMin", &ArgKernel<false>}});
  // k is an attribute before opset 10 and an input after; largest/sorted from opset 11.
  table.push_back({"", "TopK", 1, 9, &TopKKernel});
  table.push_back({"", "TopK", 10, 10, &TopKKernel});
  table.push_back({"", "TopK", 11, kLatestOpset, &TopKKernel});
  table.push_back({"", "CumSum", 11, kLatestOpset, &CumSumKernel});
}

}  // namespace ovfix::exec
