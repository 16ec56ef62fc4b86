// Element-wise ops on the device: unary math and activations, binary arithmetic and
// comparisons with numpy broadcasting, Where, Concat, Cast between float storages. Where and
// Concat of other element types move bits (kernels/data.cl).
#include <algorithm>
#include <limits>
#include <span>

#include "exec/opencl/op_context.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

bool IsFloat(const ClValue* v) {
  return v != nullptr && (v->type == DataType::kFloat || v->type == DataType::kFloat16);
}

// "-DA_DIRECT" etc. for each operand shaped like the output (read without broadcasting).
std::string DirectOptions(std::initializer_list<std::pair<const char*, const ClValue*>> operands,
                          const std::vector<int64_t>& out) {
  std::string options;
  for (const auto& [name, v] : operands) {
    if (v->dims == out) absl::StrAppend(&options, " -D", name, "_DIRECT");
  }
  return options;
}

// The OP code of each op in elementwise.cl. Which ops are registered, and for which versions,
// comes from the op groups (ir/op_groups.h); these tables only say what the kernels compute.
struct OpCode {
  std::string_view op;
  int code;
};
constexpr OpCode kUnary[] = {
    {"Relu", 0},      {"LeakyRelu", 1}, {"HardSigmoid", 2}, {"HardSwish", 3},   {"Sigmoid", 4},
    {"Tanh", 5},      {"Sqrt", 6},      {"Exp", 7},         {"Erf", 8},         {"Abs", 9},
    {"Neg", 10},      {"Clip", 11},     {"Log", 12},        {"Reciprocal", 13}, {"Elu", 15},
    {"Softplus", 16}, {"Floor", 17},    {"Ceil", 18},       {"Cast", 14},
};

constexpr OpCode kBinary[] = {{"Add", 0}, {"Sub", 1}, {"Mul", 2}, {"Div", 3},
                              {"Pow", 4}, {"Max", 5}, {"Min", 6}, {"PRelu", 7}};
constexpr OpCode kCompare[] = {
    {"Greater", 0}, {"Less", 1}, {"Equal", 2}, {"GreaterOrEqual", 3}, {"LessOrEqual", 4}};

int CodeOf(std::span<const OpCode> codes, std::string_view op) {
  for (const OpCode& c : codes) {
    if (c.op == op) return c.code;
  }
  return -1;
}

absl::Status Unary(OpContext& ctx) {
  const ClValue* a = ctx.inputs[0];
  const auto& op = ctx.node.op_type();
  DataType out_type = a->type;
  if (op == "Cast") {
    out_type = static_cast<DataType>(ctx.node.GetInt("to", 0));
    if (!IsFloat(a) || (out_type != DataType::kFloat && out_type != DataType::kFloat16)) {
      return CastElements(ctx, out_type);
    }
  } else if (!IsFloat(a)) {
    return ctx.Unsupported("non-float input");
  }
  const int code = CodeOf(kUnary, op);
  float alpha = 0, beta = 0;
  if (op == "LeakyRelu") alpha = ctx.node.GetFloat("alpha", 0.01f);
  if (op == "Elu") alpha = ctx.node.GetFloat("alpha", 1.0f);
  if (op == "HardSigmoid") {
    alpha = ctx.node.GetFloat("alpha", 0.2f);
    beta = ctx.node.GetFloat("beta", 0.5f);
  }
  if (op == "Clip") {
    alpha = -std::numeric_limits<float>::infinity();
    beta = std::numeric_limits<float>::infinity();
    if (ctx.opset < 11) {
      alpha = ctx.node.GetFloat("min", alpha);
      beta = ctx.node.GetFloat("max", beta);
    } else {
      for (int k = 1; k <= 2; ++k) {
        if (!ctx.has_input(k)) continue;
        OVFIX_ASSIGN_OR_RETURN(auto bound, ctx.Host(k));
        if (bound->numel() != 1) return ctx.Error("Clip bounds must be scalars");
        (k == 1 ? alpha : beta) = static_cast<float>(bound->GetAsDouble(0));
      }
    }
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, out_type, a->dims));
  OVFIX_ASSIGN_OR_RETURN(auto in, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(
      auto kernel, ctx.Kernel("elementwise.cl", "unary",
                              ctx.Options({{"A", a}, {"Y", y}}, absl::StrCat("-DOP=", code))));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, kernel, *in, *y->device, alpha, beta));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(a->numel())));
}

absl::Status Binary(OpContext& ctx) {
  if (ctx.inputs.size() != 2 || !IsFloat(ctx.inputs[0]) || !IsFloat(ctx.inputs[1])) {
    return ctx.Unsupported("non-float or variadic inputs");
  }
  const ClValue* a = ctx.inputs[0];
  const ClValue* b = ctx.inputs[1];
  OVFIX_ASSIGN_OR_RETURN(auto dims, BroadcastDims(ctx, {&a->dims, &b->dims}));
  const int compare_code = CodeOf(kCompare, ctx.node.op_type());
  const bool compare = compare_code >= 0;
  const int code = compare ? compare_code : CodeOf(kBinary, ctx.node.op_type());
  // Mixed float/float16 operands do not occur in valid models; the output follows `a`.
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, compare ? DataType::kBool : a->type, dims));
  OVFIX_ASSIGN_OR_RETURN(auto da, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto db, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(
      auto kernel,
      ctx.Kernel(
          "elementwise.cl", compare ? "compare" : "binary",
          ctx.Options({{"A", a}, {"B", b}, {"Y", compare ? nullptr : y}},
                      absl::StrCat("-DOP=", code, DirectOptions({{"A", a}, {"B", b}}, dims)))));
  if (auto s = SetArgs(ctx, kernel, *da, *db, *y->device, PaddedDims(dims),
                       BroadcastStrides(a->dims, dims), BroadcastStrides(b->dims, dims));
      !s.ok()) {
    return s;
  }
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(y->numel())));
}

absl::Status Where(OpContext& ctx) {
  const ClValue* c = ctx.inputs[0];
  const ClValue* a = ctx.inputs[1];
  const ClValue* b = ctx.inputs[2];
  if (c->type != DataType::kBool) return ctx.Error("condition must be bool");
  const bool bits = !IsFloat(a) || !IsFloat(b);
  if (bits && a->type != b->type) return ctx.Error("branches differ in type");
  OVFIX_ASSIGN_OR_RETURN(auto dims, BroadcastDims(ctx, {&c->dims, &a->dims, &b->dims}));
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, a->type, dims));
  OVFIX_ASSIGN_OR_RETURN(auto dc, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto da, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(auto db, ctx.Device(2));
  absl::StatusOr<cl::Kernel> found;
  if (bits) {
    OVFIX_ASSIGN_OR_RETURN(std::string option, ElementBitsOption(ctx, *y));
    found = ctx.Kernel("data.cl", "where_bits", option);
  } else {
    found = ctx.Kernel(
        "elementwise.cl", "where",
        ctx.Options({{"A", a}, {"B", b}, {"Y", y}},
                    absl::StrCat("-DOP=0", DirectOptions({{"A", a}, {"B", b}, {"C", c}}, dims))));
  }
  OVFIX_ASSIGN_OR_RETURN(auto kernel, std::move(found));
  if (auto s = SetArgs(ctx, kernel, *dc, *da, *db, *y->device, PaddedDims(dims),
                       BroadcastStrides(c->dims, dims), BroadcastStrides(a->dims, dims),
                       BroadcastStrides(b->dims, dims));
      !s.ok()) {
    return s;
  }
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(y->numel())));
}

absl::Status Concat(OpContext& ctx) {
  const ClValue* first = ctx.inputs[0];
  if (first == nullptr) return ctx.Error("input 0 is missing");
  const int64_t rank = static_cast<int64_t>(first->dims.size());
  int64_t axis = ctx.node.GetInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  std::vector<int64_t> dims = first->dims;
  dims[axis] = 0;
  for (const ClValue* v : ctx.inputs) {
    if (v == nullptr || v->dims.size() != first->dims.size() || v->type != first->type) {
      return ctx.Error("inputs differ in rank or type");
    }
    for (int64_t k = 0; k < rank; ++k) {
      if (k != axis && v->dims[k] != first->dims[k]) return ctx.Error("inputs differ in shape");
    }
    dims[axis] += v->dims[axis];
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, first->type, dims));
  int64_t after = 1;
  for (int64_t k = axis + 1; k < rank; ++k) after *= dims[k];
  const cl_long out_inner = dims[axis] * after;
  cl_long offset = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const ClValue* v = ctx.inputs[i];
    const cl_long inner = v->dims[axis] * after;
    OVFIX_ASSIGN_OR_RETURN(auto dv, ctx.Device(i));
    absl::StatusOr<cl::Kernel> found;
    if (IsFloat(first)) {
      found =
          ctx.Kernel("elementwise.cl", "concat_part", ctx.Options({{"A", v}, {"Y", y}}, "-DOP=0"));
    } else {
      OVFIX_ASSIGN_OR_RETURN(std::string option, ElementBitsOption(ctx, *y));
      found = ctx.Kernel("data.cl", "copy_part", option);
    }
    OVFIX_ASSIGN_OR_RETURN(auto kernel, std::move(found));
    if (inner > 0) {
      OVFIX_RETURN_IF_ERROR(SetArgs(ctx, kernel, *dv, *y->device, inner, out_inner, offset));
      OVFIX_RETURN_IF_ERROR(ctx.Run(kernel, cl::NDRange(static_cast<size_t>(v->numel()))));
    }
    offset += inner;
  }
  return absl::OkStatus();
}

}  // namespace

void AddElementwiseOps(std::vector<OpDef>& table) {
  // Every member of these groups that a kernel has a code for, with the group's versions.
  auto add = [&](std::string_view group, std::span<const OpCode> codes, OpFn fn) {
    for (const OpGroupMember& m : FindOpGroup(group)->members) {
      if (CodeOf(codes, m.op_type) >= 0) {
        table.push_back({m.op_type, m.since_version, m.until_version, fn});
      }
    }
  };
  add("unary_math", kUnary, Unary);
  add("activation", kUnary, Unary);
  // Version 6 made `to` a type code (it was a string).
  table.push_back({"Cast", 6, kOpenVersion, Unary});
  add("arithmetic", kBinary, Binary);
  add("variadic", kBinary, Binary);
  add("comparison", kCompare, Binary);
  const OpGroupMember* prelu = FindOpGroupMember("broadcasting", "PRelu");
  table.push_back({prelu->op_type, prelu->since_version, prelu->until_version, Binary});
  const OpGroupMember* where = FindOpGroupMember("broadcasting", "Where");
  table.push_back({where->op_type, where->since_version, where->until_version, Where});
  // Version 4 made `axis` required.
  table.push_back({"Concat", 4, kOpenVersion, Concat});
}

}  // namespace ovfix::exec::opencl
