// Kernels over any number of broadcast inputs: Max, Min, Sum, Mean; and three-way Where.
#include <cstring>
#include <string>
#include <type_traits>

#include "exec/cpu/elementwise.h"
#include "ir/status_macros.h"

namespace ovfix::exec::elementwise {
namespace {

constexpr Cost kCheap = Cost::kCheap;

// Folds every input into the output with `op`, broadcasting all of them together. Versions
// before 8 required equal shapes; broadcasting is a superset of that.
template <typename... Ts, typename Op>
absl::Status Fold(KernelContext& ctx, TypeList<Ts...> types, bool mean, Op op) {
  const size_t n = ctx.inputs.size();
  if (n == 0) return ctx.Error("needs at least one input");
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, n));
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < n; ++i) {
    if (ctx.input(i).type() != ctx.input(0).type()) {
      return ctx.Error("input ", i, " has another element type than input 0");
    }
    shapes.push_back(ctx.input(i).dims());
  }
  auto output_dims = BroadcastShape(shapes);
  if (!output_dims.ok()) return ctx.Error(output_dims.status().message());

  return Dispatch(ctx, ctx.input(0).type(), types, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if (n == 1) {
      ctx.outputs[0] = ctx.input(0);  // no copy: outputs never write into inputs
      return absl::OkStatus();
    }
    Tensor& y = ctx.Output(0, ctx.input(0).type(), *output_dims);
    T* out = y.data<T>();
    size_t next;
    auto first_pair = BroadcastPlan::Make(ctx.input(0).dims(), ctx.input(1).dims());
    if (first_pair.ok() && first_pair->output_dims() == *output_dims) {
      BroadcastBinary(*first_pair, ctx.input(0).data<T>(), ctx.input(1).data<T>(), out, ctx.pool,
                      kCheap, op);
      next = 2;
    } else {
      // Input 0 is smaller than the output: broadcast it in first.
      auto plan = BroadcastPlan::Make(*output_dims, ctx.input(0).dims());
      if (!plan.ok()) return ctx.Error(plan.status().message());
      BroadcastInPlace(*plan, out, ctx.input(0).data<T>(), ctx.pool, kCheap,
                       [](T, T v) { return v; });
      next = 1;
    }
    for (size_t i = next; i < n; ++i) {
      auto plan = BroadcastPlan::Make(*output_dims, ctx.input(i).dims());
      if (!plan.ok()) return ctx.Error(plan.status().message());
      BroadcastInPlace(*plan, out, ctx.input(i).data<T>(), ctx.pool, kCheap, op);
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (mean) {
        const T count = static_cast<T>(n);
        ParallelElements(ctx.pool, y.numel(), kCheap, [&](int64_t begin, int64_t end) {
          MapInPlaceScalar(out + begin, count, end - begin, [](T v, T c) { return v / c; });
        });
      }
    }
    return absl::OkStatus();
  });
}

// NaN wins in Max and Min, as in numpy.maximum / numpy.minimum.
absl::Status Max(KernelContext& ctx) {
  if (HasLowPrecisionFloatInput(ctx)) return RunInFloat(ctx, Max);
  return Fold(ctx, kNumericTypes, false, [](auto a, auto b) { return (a != a || a > b) ? a : b; });
}

absl::Status Min(KernelContext& ctx) {
  if (HasLowPrecisionFloatInput(ctx)) return RunInFloat(ctx, Min);
  return Fold(ctx, kNumericTypes, false, [](auto a, auto b) { return (a != a || a < b) ? a : b; });
}

absl::Status Sum(KernelContext& ctx) {
  if (HasLowPrecisionFloatInput(ctx)) return RunInFloat(ctx, Sum);
  return Fold(ctx, kNumericTypes, false, NumericAdd{});
}

absl::Status Mean(KernelContext& ctx) {
  if (HasLowPrecisionFloatInput(ctx)) return RunInFloat(ctx, Mean);
  return Fold(ctx, kFloatTypes, true, [](auto a, auto b) { return a + b; });
}

// Where moves elements without looking at them, so it works on raw bytes of any width.
template <typename T>
void SelectElements(const BroadcastPlan& plan, const bool* condition, const T* x, const T* y,
                    T* out, ThreadPool* pool) {
  const int64_t sc = plan.run_stride(0), sx = plan.run_stride(1), sy = plan.run_stride(2);
  ParallelElements(pool, plan.output_size(), kCheap, [&](int64_t begin, int64_t end) {
    plan.ForEachRun(begin, end, [&](int64_t o, const int64_t* offsets, int64_t count) {
      const bool* c = condition + offsets[0];
      const T* px = x + offsets[1];
      const T* py = y + offsets[2];
      T* po = out + o;
      if (sc == 1 && sx == 1 && sy == 1) {
        for (int64_t i = 0; i < count; ++i) po[i] = c[i] ? px[i] : py[i];
      } else {
        for (int64_t i = 0; i < count; ++i) po[i] = c[i * sc] ? px[i * sx] : py[i * sy];
      }
    });
  });
}

absl::Status Where(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const Tensor& condition = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (condition.type() != DataType::kBool) return ctx.Error("condition must be bool");
  if (x.type() != y.type()) return ctx.Error("X and Y have different element types");
  const std::vector<int64_t> shapes[] = {condition.dims(), x.dims(), y.dims()};
  auto plan = BroadcastPlan::Make(shapes);
  if (!plan.ok()) return ctx.Error(plan.status().message());
  const bool* c = condition.data<bool>();

  if (x.type() == DataType::kString) {
    if (x.strings().size() != static_cast<size_t>(x.numel()) ||
        y.strings().size() != static_cast<size_t>(y.numel())) {
      return ctx.Error("malformed string tensor");
    }
    std::vector<std::string> strings(static_cast<size_t>(plan->output_size()));
    const int64_t sc = plan->run_stride(0), sx = plan->run_stride(1), sy = plan->run_stride(2);
    plan->ForEachRun(0, plan->output_size(), [&](int64_t o, const int64_t* off, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        strings[o + i] =
            c[off[0] + i * sc] ? x.strings()[off[1] + i * sx] : y.strings()[off[2] + i * sy];
      }
    });
    ctx.outputs[0] = Tensor(plan->output_dims(), std::move(strings));
    return absl::OkStatus();
  }

  Tensor& out = ctx.Output(0, x.type(), plan->output_dims());
  switch (ElementSize(x.type())) {
    case 1:
      SelectElements(*plan, c, x.data<uint8_t>(), y.data<uint8_t>(), out.data<uint8_t>(), ctx.pool);
      return absl::OkStatus();
    case 2:
      SelectElements(*plan, c, x.data<uint16_t>(), y.data<uint16_t>(), out.data<uint16_t>(),
                     ctx.pool);
      return absl::OkStatus();
    case 4:
      SelectElements(*plan, c, x.data<uint32_t>(), y.data<uint32_t>(), out.data<uint32_t>(),
                     ctx.pool);
      return absl::OkStatus();
    case 8:
      SelectElements(*plan, c, x.data<uint64_t>(), y.data<uint64_t>(), out.data<uint64_t>(),
                     ctx.pool);
      return absl::OkStatus();
    case 16: {  // complex128: two 8-byte halves per element
      struct Pair {
        uint64_t low, high;
      };
      SelectElements(*plan, c, x.data<Pair>(), y.data<Pair>(), out.data<Pair>(), ctx.pool);
      return absl::OkStatus();
    }
    default:
      return ctx.Error("element type ", std::string(DataTypeName(x.type())), " is not supported");
  }
}

}  // namespace

void AddVariadicKernels(std::vector<KernelDef>& table) {
  static constexpr KernelDef kKernels[] = {
      {"", "Max", 1, kLatestOpset, Max},
      {"", "Min", 1, kLatestOpset, Min},
      {"", "Sum", 1, kLatestOpset, Sum},
      {"", "Mean", 1, kLatestOpset, Mean},
      {"", "Where", 9, kLatestOpset, Where, Float16Mode::kNative},
  };
  table.insert(table.end(), std::begin(kKernels), std::end(kKernels));
}

}  // namespace ovfix::exec::elementwise
