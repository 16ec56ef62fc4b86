// Kernels that pass their input through: Identity, and Dropout (an identity at inference).
#include <cstring>
#include <random>
#include <type_traits>

#include "exec/cpu/elementwise.h"
#include "ir/status_macros.h"

namespace ovfix::exec::elementwise {
namespace {

absl::Status Identity(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  ctx.outputs[0] = ctx.input(0);  // shares the bytes; outputs never write into inputs
  return absl::OkStatus();
}

inline constexpr TypeList<float, double, Half, BFloat16> kDropoutTypes;

template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return HalfBitsToFloat(v.bits);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return Bfloat16BitsToFloat(v.bits);
  } else {
    return v;
  }
}

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{FloatToHalfBits(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16{FloatToBfloat16Bits(static_cast<float>(v))};
  } else {
    return static_cast<T>(v);
  }
}

// The mask output: bool from Dropout-10 on, the input's type (ones) before.
absl::Status AllKeptMask(KernelContext& ctx, const Tensor& x) {
  if (ctx.opset >= 10) {
    Tensor& mask = ctx.Output(1, DataType::kBool, x.dims());
    std::memset(mask.raw(), 1, mask.nbytes());
    return absl::OkStatus();
  }
  return Dispatch(ctx, x.type(), kDropoutTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& mask = ctx.Output(1, x.type(), x.dims());
    T* out = mask.data<T>();
    for (int64_t i = 0; i < mask.numel(); ++i) out[i] = FromDouble<T>(1.0);
    return absl::OkStatus();
  });
}

// Dropout-12 on takes ratio and training_mode as inputs; before, only inference existed here
// (the is_test attribute of Dropout-1/6 changed nothing for an inference executor).
absl::Status Dropout(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& x = ctx.input(0);
  const bool wants_mask = ctx.outputs.size() > 1 && ctx.node.output(1) != nullptr;
  bool training = false;
  double ratio = 0.5;
  if (ctx.opset >= 12) {
    if (ctx.has_input(2)) {
      const Tensor& mode = ctx.input(2);
      if (mode.type() != DataType::kBool || mode.numel() != 1) {
        return ctx.Error("training_mode must be a bool scalar");
      }
      training = mode.data<bool>()[0];
    }
    if (ctx.has_input(1)) {
      if (ctx.input(1).numel() != 1 || !IsFloatingPoint(ctx.input(1).type())) {
        return ctx.Error("ratio must be a float scalar");
      }
      ratio = ctx.input(1).GetAsDouble(0);
    }
  }
  if (!training || ratio == 0.0) {
    ctx.outputs[0] = x;
    return wants_mask ? AllKeptMask(ctx, x) : absl::OkStatus();
  }
  if (!(ratio > 0.0 && ratio < 1.0)) return ctx.Error("ratio ", ratio, " is not in [0, 1)");

  // Training mode: drop each element with probability `ratio`, scale the kept ones.
  std::mt19937_64 engine = RandomEngine(
      ctx, ctx.node.HasAttribute("seed")
               ? std::optional<uint64_t>(static_cast<uint64_t>(ctx.node.GetInt("seed", 0)))
               : std::nullopt);
  std::bernoulli_distribution keep(1.0 - ratio);
  const double scale = 1.0 / (1.0 - ratio);
  return Dispatch(ctx, x.type(), kDropoutTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.Output(0, x.type(), x.dims());
    Tensor mask(DataType::kBool, x.dims());
    const T* in = x.data<T>();
    T* out = y.data<T>();
    bool* kept = mask.data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      kept[i] = keep(engine);
      out[i] = FromDouble<T>(kept[i] ? ToDouble(in[i]) * scale : 0.0);
    }
    if (wants_mask) ctx.outputs[1] = std::move(mask);
    return absl::OkStatus();
  });
}

}  // namespace

void AddDataMovementKernels(std::vector<KernelDef>& table) {
  // Identity-14/16 extend the input to sequences and optionals, which tensors do not carry.
  static constexpr KernelDef kKernels[] = {
      {"", "Identity", 1, kLatestOpset, Identity, Float16Mode::kNative},
      {"", "Dropout", 1, kLatestOpset, Dropout, Float16Mode::kNative},
  };
  table.insert(table.end(), std::begin(kKernels), std::end(kKernels));
}

}  // namespace ovfix::exec::elementwise
