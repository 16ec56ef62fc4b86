// The element-wise kernel group and the helpers its files share.
#include <cstring>

#include "exec/cpu/elementwise.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

void AddElementwiseKernels(std::vector<KernelDef>& table) {
  elementwise::AddUnaryMathKernels(table);
  elementwise::AddActivationKernels(table);
  elementwise::AddBinaryKernels(table);
  elementwise::AddVariadicKernels(table);
  elementwise::AddCastKernels(table);
  elementwise::AddDataMovementKernels(table);
}

namespace elementwise {

Tensor ToFloat(const Tensor& t) {
  if (!IsLowPrecisionFloat(t.type())) return t;
  Tensor result(DataType::kFloat, t.dims());
  const uint16_t* in = t.data<uint16_t>();
  float* out = result.data<float>();
  const int64_t n = t.numel();
  if (t.type() == DataType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) out[i] = HalfBitsToFloat(in[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = Bfloat16BitsToFloat(in[i]);
  }
  return result;
}

Tensor FromFloat(const Tensor& t, DataType type) {
  if (t.type() != DataType::kFloat || !IsLowPrecisionFloat(type)) return t;
  Tensor result(type, t.dims());
  const float* in = t.data<float>();
  uint16_t* out = result.data<uint16_t>();
  const int64_t n = t.numel();
  if (type == DataType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) out[i] = FloatToHalfBits(in[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = FloatToBfloat16Bits(in[i]);
  }
  return result;
}

bool HasLowPrecisionFloatInput(const KernelContext& ctx) {
  for (const Tensor* t : ctx.inputs) {
    if (t != nullptr && IsLowPrecisionFloat(t->type())) return true;
  }
  return false;
}

absl::Status RunInFloat(KernelContext& ctx, KernelFn fn) {
  // Float outputs take input 0's type: in every op that runs this way the output type follows
  // input 0 (Pow's base, Clip's and PRelu's input), while other inputs may differ.
  const DataType low = ctx.has_input(0) ? ctx.input(0).type() : DataType::kUndefined;
  std::vector<Tensor> converted(ctx.inputs.size());
  std::vector<const Tensor*> inputs(ctx.inputs.size(), nullptr);
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor* t = ctx.inputs[i];
    if (t == nullptr) continue;
    if (IsLowPrecisionFloat(t->type())) {
      converted[i] = ToFloat(*t);
      inputs[i] = &converted[i];
    } else {
      inputs[i] = t;
    }
  }
  KernelContext float_ctx = KernelContext::For(ctx.node, ctx.opset);
  float_ctx.inputs = std::move(inputs);
  float_ctx.outputs.resize(ctx.outputs.size());
  float_ctx.pool = ctx.pool;
  float_ctx.state = ctx.state;
  float_ctx.run_subgraph = ctx.run_subgraph;
  OVFIX_RETURN_IF_ERROR(fn(float_ctx));
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    ctx.outputs[i] = FromFloat(float_ctx.outputs[i], low);
  }
  return absl::OkStatus();
}

absl::Status RequireInputs(const KernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
  }
  if (ctx.outputs.empty()) return ctx.Error("the node has no outputs");
  return absl::OkStatus();
}

absl::StatusOr<BroadcastPlan> BinaryPlan(const KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const std::vector<int64_t>& a = ctx.input(0).dims();
  if (ctx.opset >= 7) {
    auto plan = BroadcastPlan::Make(a, ctx.input(1).dims());
    if (!plan.ok()) return ctx.Error(plan.status().message());
    return plan;
  }
  std::vector<int64_t> b = ctx.input(1).dims();
  if (ctx.node.GetInt("broadcast", 0) != 0 && ctx.node.HasAttribute("axis")) {
    const int64_t rank = static_cast<int64_t>(a.size());
    int64_t axis = ctx.node.GetInt("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis + static_cast<int64_t>(b.size()) > rank) {
      return ctx.Error("broadcast axis ", ctx.node.GetInt("axis", 0), " does not fit shape ",
                       ShapeToString(b), " into ", ShapeToString(a));
    }
    b.resize(rank - axis, 1);  // align B at `axis` by padding trailing 1s
  }
  auto plan = BroadcastPlan::Make(a, b);
  if (!plan.ok()) return ctx.Error(plan.status().message());
  return plan;
}

}  // namespace elementwise
}  // namespace ovfix::exec
