// Reduce* kernels (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare) and AddReduceKernels, which also
// lists the kernels of softmax.cc, normalization.cc and arg_topk.cc.
//
// Floats accumulate in double and integers in 64 bits (wrapping as the element type would),
// so a sum of squares near 1e6 comes out exact and fp16-storage emulation rounds it to inf
// only where the session rounds outputs, as a real fp16 backend would.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "exec/cpu/dispatch.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

// The other files of this group (declared here rather than in kernel.h, which only knows
// the group as a whole).
void AddSoftmaxKernels(std::vector<KernelDef>& table);
void AddNormalizationKernels(std::vector<KernelDef>& table);
void AddArgTopKKernels(std::vector<KernelDef>& table);

namespace {

// Floats sum in double; integers in uint64, where overflow wraps like the element type's
// own arithmetic would after truncation (and is defined behaviour, unlike int64 overflow).
template <typename T>
using WideAcc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
WideAcc<T> Widen(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(x);
  } else {
    return static_cast<uint64_t>(
        static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(x));
  }
}

template <typename T>
T Narrow(WideAcc<T> a) {
  return static_cast<T>(a);  // modular for integers since C++20
}

template <typename T>
WideAcc<T> Magnitude(T x) {
  if constexpr (std::is_unsigned_v<T>) {
    return Widen(x);
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(static_cast<double>(x));
  } else {
    return x < 0 ? uint64_t{0} - Widen(x) : Widen(x);  // no overflow at the type's minimum
  }
}

// Each reduction: an accumulator type, its start value, how one element enters it, and the
// final value from the accumulator and the number of elements reduced.
// A reduction over the wide accumulator that starts at 0 and ends narrowed back to T.
template <typename T>
struct WideReduction {
  using Acc = WideAcc<T>;
  static Acc Init() { return 0; }
  static T Finish(Acc a, int64_t) { return Narrow<T>(a); }
};

template <typename T>
struct SumOp : WideReduction<T> {
  static void Add(WideAcc<T>& a, T x) { a += Widen(x); }
};

template <typename T>
struct MeanOp : SumOp<T> {
  static T Finish(WideAcc<T> a, int64_t count) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(a / static_cast<double>(count));  // NaN over an empty set
    } else if constexpr (std::is_signed_v<T>) {
      return count == 0 ? T{0} : static_cast<T>(static_cast<int64_t>(a) / count);
    } else {
      return count == 0 ? T{0} : static_cast<T>(a / static_cast<uint64_t>(count));
    }
  }
};

template <typename T>
struct SumSquareOp : WideReduction<T> {
  static void Add(WideAcc<T>& a, T x) { a += Widen(x) * Widen(x); }
};

template <typename T>
struct ProdOp : WideReduction<T> {
  static WideAcc<T> Init() { return 1; }
  static void Add(WideAcc<T>& a, T x) { a *= Widen(x); }
};

template <typename T>
struct L1Op : WideReduction<T> {
  static void Add(WideAcc<T>& a, T x) { a += Magnitude(x); }
};

template <typename T>
struct L2Op {
  using Acc = double;
  static Acc Init() { return 0; }
  static void Add(Acc& a, T x) { a += static_cast<double>(x) * static_cast<double>(x); }
  static T Finish(Acc a, int64_t) { return static_cast<T>(std::sqrt(a)); }
};

template <typename T>
struct LogSumOp {
  using Acc = double;
  static Acc Init() { return 0; }
  static void Add(Acc& a, T x) { a += static_cast<double>(x); }
  static T Finish(Acc a, int64_t) { return static_cast<T>(std::log(a)); }
};

// Streams log(sum(exp(x))) in one pass: the running maximum and the sum of exp(x - maximum),
// rescaled when the maximum grows, so no exp overflows.
struct LogSumExpAcc {
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
};

template <typename T>
struct LogSumExpOp {
  using Acc = LogSumExpAcc;
  static Acc Init() { return {}; }
  static void Add(Acc& a, T value) {
    const double x = static_cast<double>(value);
    if (x > a.max) {
      a.sum = a.sum * std::exp(a.max - x) + 1.0;
      a.max = x;
    } else if (x == a.max) {
      a.sum += 1.0;  // also covers +-inf, where x - max would be NaN
    } else {
      a.sum += std::exp(x - a.max);  // NaN in either propagates
    }
  }
  static T Finish(Acc a, int64_t) {
    if (std::isinf(a.max) && !std::isnan(a.sum)) return static_cast<T>(a.max);
    return static_cast<T>(a.max + std::log(a.sum));
  }
};

template <typename T>
struct MaxOp {
  using Acc = T;
  static Acc Init() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
  static void Add(Acc& a, T x) {
    if (x > a || x != x) a = x;  // NaN sticks: nothing compares greater than it
  }
  static T Finish(Acc a, int64_t) { return a; }
};

template <typename T>
struct MinOp {
  using Acc = T;
  static Acc Init() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();
  }
  static void Add(Acc& a, T x) {
    if (x < a || x != x) a = x;
  }
  static T Finish(Acc a, int64_t) { return a; }
};

// The input's dims with size-1 dims dropped and neighbours of the same kind (both kept or
// both reduced) merged, so every reduction is a few strided loops.
struct ReducePlan {
  std::vector<int64_t> output_dims;
  std::vector<int64_t> sizes, strides;
  std::vector<bool> reduced;
  int64_t output_count = 1;
  int64_t reduce_count = 1;
};

ReducePlan MakePlan(const std::vector<int64_t>& dims, const std::vector<bool>& reduce_axis,
                    bool keepdims) {
  ReducePlan plan;
  const size_t rank = dims.size();
  for (size_t d = 0; d < rank; ++d) {
    if (reduce_axis[d]) {
      plan.reduce_count *= dims[d];
      if (keepdims) plan.output_dims.push_back(1);
    } else {
      plan.output_count *= dims[d];
      plan.output_dims.push_back(dims[d]);
    }
  }
  std::vector<int64_t> strides(rank);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    strides[d] = stride;
    stride *= dims[d];
  }
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] == 1) continue;
    if (!plan.sizes.empty() && plan.reduced.back() == reduce_axis[d]) {
      plan.sizes.back() *= dims[d];  // same kind as the group before it: merge
      plan.strides.back() = strides[d];
    } else {
      plan.sizes.push_back(dims[d]);
      plan.strides.push_back(strides[d]);
      plan.reduced.push_back(reduce_axis[d]);
    }
  }
  if (plan.sizes.empty()) {  // a single element
    plan.sizes = {1};
    plan.strides = {1};
    plan.reduced = {false};
  }
  return plan;
}

// Offsets of a row-major walk over several (size, stride) dims.
class OffsetWalker {
 public:
  OffsetWalker(std::vector<int64_t> sizes, std::vector<int64_t> strides)
      : sizes_(std::move(sizes)), strides_(std::move(strides)), index_(sizes_.size(), 0) {}
  int64_t offset() const { return offset_; }
  void Reset() {
    std::fill(index_.begin(), index_.end(), 0);
    offset_ = 0;
  }
  void Next() {
    for (size_t d = sizes_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < sizes_[d]) return;
      offset_ -= strides_[d] * sizes_[d];
      index_[d] = 0;
    }
  }

 private:
  std::vector<int64_t> sizes_, strides_, index_;
  int64_t offset_ = 0;
};

// Input offset of the first element of the `index`-th combination of the kept dims.
int64_t KeptOffset(int64_t index, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    offset += (index % sizes[d]) * strides[d];
    index /= sizes[d];
  }
  return offset;
}

constexpr int64_t kColumnBlock = 1024;

template <typename Op, typename T>
void RunReduction(const ReducePlan& plan, const T* x, T* y, ThreadPool* pool) {
  const int64_t count = plan.reduce_count;
  std::vector<int64_t> kept_sizes, kept_strides, reduced_sizes, reduced_strides;
  const size_t groups = plan.sizes.size();
  const bool last_reduced = plan.reduced.back();
  // The last group is walked by the innermost loop; the others by walkers.
  for (size_t g = 0; g + 1 < groups; ++g) {
    (plan.reduced[g] ? reduced_sizes : kept_sizes).push_back(plan.sizes[g]);
    (plan.reduced[g] ? reduced_strides : kept_strides).push_back(plan.strides[g]);
  }
  const int64_t inner = plan.sizes.back();
  const int64_t outer_reduced = count / (last_reduced ? inner : 1);
  if (last_reduced) {
    // Each output reduces contiguous runs of `inner` elements.
    const int64_t min_chunk = std::max<int64_t>(1, 32768 / std::max<int64_t>(count, 1));
    ParallelFor(pool, plan.output_count, min_chunk, [&](int64_t begin, int64_t end) {
      OffsetWalker walker(reduced_sizes, reduced_strides);
      for (int64_t o = begin; o < end; ++o) {
        const T* base = x + KeptOffset(o, kept_sizes, kept_strides);
        typename Op::Acc acc = Op::Init();
        walker.Reset();
        for (int64_t r = 0; r < outer_reduced; ++r, walker.Next()) {
          const T* run = base + walker.offset();
          for (int64_t i = 0; i < inner; ++i) Op::Add(acc, run[i]);
        }
        y[o] = Op::Finish(acc, count);
      }
    });
    return;
  }
  // The last group is kept: accumulate whole rows of it at once, split into column blocks so
  // that even a single output row spreads over the threads.
  const int64_t rows = plan.output_count / inner;
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t work = std::max<int64_t>(1, count * std::min(inner, kColumnBlock));
  ParallelFor(pool, rows * blocks, std::max<int64_t>(1, 32768 / work),
              [&](int64_t begin, int64_t end) {
                std::vector<typename Op::Acc> acc;
                OffsetWalker walker(reduced_sizes, reduced_strides);
                for (int64_t task = begin; task < end; ++task) {
                  const int64_t row = task / blocks;
                  const int64_t column = (task % blocks) * kColumnBlock;
                  const int64_t width = std::min(kColumnBlock, inner - column);
                  const T* base = x + KeptOffset(row, kept_sizes, kept_strides) + column;
                  acc.assign(width, Op::Init());
                  walker.Reset();
                  for (int64_t r = 0; r < outer_reduced; ++r, walker.Next()) {
                    const T* run = base + walker.offset();
                    for (int64_t i = 0; i < width; ++i) Op::Add(acc[i], run[i]);
                  }
                  T* out = y + row * inner + column;
                  for (int64_t i = 0; i < width; ++i) out[i] = Op::Finish(acc[i], count);
                }
              });
}

template <template <typename> class Op, typename T>
absl::Status ReduceTyped(KernelContext& ctx, const ReducePlan& plan) {
  const Tensor& input = ctx.input(0);
  Tensor& output = ctx.Output(0, input.type(), plan.output_dims);
  if (plan.output_count == 0) return absl::OkStatus();
  T* y = output.data<T>();
  if (plan.reduce_count == 0) {  // every output reduces an empty set
    std::fill(y, y + plan.output_count, Op<T>::Finish(Op<T>::Init(), 0));
    return absl::OkStatus();
  }
  RunReduction<Op<T>>(plan, input.data<T>(), y, ctx.pool);
  return absl::OkStatus();
}

// The axes to reduce, from the attribute (older opsets) or the optional second input.
absl::StatusOr<std::vector<bool>> ReducedAxes(const KernelContext& ctx, int axes_input_since) {
  const int64_t rank = static_cast<int64_t>(ctx.input(0).rank());
  std::vector<int64_t> axes;
  if (ctx.opset >= axes_input_since) {
    if (ctx.has_input(1)) {
      const Tensor& t = ctx.input(1);
      if (t.type() != DataType::kInt64 && t.type() != DataType::kInt32) {
        return ctx.Error("axes must be int64, got ", std::string(DataTypeName(t.type())));
      }
      if (t.rank() > 1) return ctx.Error("axes must be 1-D, got ", DescribeTensor(t));
      for (int64_t i = 0; i < t.numel(); ++i) axes.push_back(t.GetAsInt64(i));
    }
  } else {
    axes = ctx.node.GetInts("axes");
  }
  std::vector<bool> reduce_axis(rank, false);
  if (axes.empty()) {
    // No axes: reduce everything, or with noop_with_empty_axes reduce each element alone
    // (which makes the op its element-wise part: ReduceSumSquare squares, ReduceL1 abs...).
    if (ctx.node.GetInt("noop_with_empty_axes", 0) == 0) reduce_axis.assign(rank, true);
    return reduce_axis;
  }
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return ctx.Error("axis ", axis, " is out of range for rank ", rank);
    }
    if (axis < 0) axis += rank;
    if (reduce_axis[axis]) return ctx.Error("axis ", axis, " is repeated in axes");
    reduce_axis[axis] = true;
  }
  return reduce_axis;
}

template <template <typename> class Op, int kAxesInputSince>
absl::Status ReduceKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input data");
  OVFIX_ASSIGN_OR_RETURN(std::vector<bool> reduce_axis, ReducedAxes(ctx, kAxesInputSince));
  const Tensor& input = ctx.input(0);
  const ReducePlan plan = MakePlan(input.dims(), reduce_axis, ctx.node.GetInt("keepdims", 1));
  if constexpr (std::is_same_v<Op<uint8_t>, MaxOp<uint8_t>> ||
                std::is_same_v<Op<uint8_t>, MinOp<uint8_t>>) {
    // ReduceMax/ReduceMin-20 take bool: bytes 0/1, so max is any and min is all. The empty
    // set gives false (max) and true (min), the identities of or/and.
    if (input.type() == DataType::kBool && ctx.opset >= 20) {
      Tensor& output = ctx.Output(0, DataType::kBool, plan.output_dims);
      if (plan.output_count == 0) return absl::OkStatus();
      uint8_t* y = output.data<uint8_t>();
      if (plan.reduce_count == 0) {
        std::fill(y, y + plan.output_count, std::is_same_v<Op<uint8_t>, MinOp<uint8_t>> ? 1 : 0);
        return absl::OkStatus();
      }
      RunReduction<Op<uint8_t>>(plan, input.data<uint8_t>(), y, ctx.pool);
      return absl::OkStatus();
    }
  }
  return Dispatch(ctx, input.type(), kNumericTypes, [&](auto tag) {
    return ReduceTyped<Op, typename decltype(tag)::type>(ctx, plan);
  });
}

}  // namespace

void AddReduceKernels(std::vector<KernelDef>& table) {
  // ReduceSum takes axes as an input from opset 13, the others from opset 18.
  table.push_back({"", "ReduceSum", 1, 12, &ReduceKernel<SumOp, 13>});
  table.push_back({"", "ReduceSum", 13, kLatestOpset, &ReduceKernel<SumOp, 13>});
  const struct {
    std::string_view op_type;
    KernelFn fn;
  } axes_input_since_18[] = {
      {"ReduceMean", &ReduceKernel<MeanOp, 18>},
      {"ReduceMax", &ReduceKernel<MaxOp, 18>},
      {"ReduceMin", &ReduceKernel<MinOp, 18>},
      {"ReduceProd", &ReduceKernel<ProdOp, 18>},
      {"ReduceL1", &ReduceKernel<L1Op, 18>},
      {"ReduceL2", &ReduceKernel<L2Op, 18>},
      {"ReduceLogSum", &ReduceKernel<LogSumOp, 18>},
      {"ReduceLogSumExp", &ReduceKernel<LogSumExpOp, 18>},
      {"ReduceSumSquare", &ReduceKernel<SumSquareOp, 18>},
  };
  for (const auto& entry : axes_input_since_18) {
    table.push_back({"", entry.op_type, 1, 17, entry.fn});
    table.push_back({"", entry.op_type, 18, kLatestOpset, entry.fn});
  }
  AddSoftmaxKernels(table);
  AddNormalizationKernels(table);
  AddArgTopKKernels(table);
}

}  // namespace ovfix::exec
