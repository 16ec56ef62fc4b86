// Reductions, Softmax/LogSoftmax and Gather on the device.
#include <algorithm>

#include "exec/opencl/kernel_args.h"
#include "exec/opencl/op_context.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

int ReduceMode(std::string_view op) {
  static const std::pair<std::string_view, int> kModes[] = {
      {"ReduceSum", 0},       {"ReduceMean", 1},     {"ReduceMax", 2}, {"ReduceMin", 3},
      {"ReduceSumSquare", 4}, {"ReduceL2", 5},       {"ReduceL1", 6},  {"ReduceProd", 7},
      {"ReduceLogSum", 8},    {"ReduceLogSumExp", 9}};
  for (const auto& [name, mode] : kModes) {
    if (name == op) return mode;
  }
  return -1;
}

absl::Status Reduce(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (!IsFloat(x)) return ctx.Unsupported("non-float reduction");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (rank > 8) return ctx.Unsupported("rank above 8");
  // Axes: an input for ReduceSum from opset 13 (and all reductions from 18), else attribute.
  const bool axes_input = (ctx.node.op_type() == "ReduceSum" && ctx.opset >= 13) || ctx.opset >= 18;
  std::vector<int64_t> axes;
  if (axes_input) {
    if (ctx.has_input(1)) {
      OVFIX_ASSIGN_OR_RETURN(auto t, ctx.Host(1));
      for (int64_t i = 0; i < t->numel(); ++i) axes.push_back(t->GetAsInt64(i));
    }
  } else {
    axes = ctx.node.GetInts("axes");
  }
  if (axes.empty() && ctx.node.GetInt("noop_with_empty_axes", 0) != 0) {
    ctx.ViewOutput(0, 0, x.dims);
    return absl::OkStatus();
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return ctx.Error("axis out of range");
    reduced[a] = true;
  }
  const bool keepdims = ctx.node.GetInt("keepdims", 1) != 0;
  std::vector<int64_t> out_dims;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (reduced[i]) {
      count *= x.dims[i];
      if (keepdims) out_dims.push_back(1);
    } else {
      out_dims.push_back(x.dims[i]);
    }
  }
  if (count == 0) return ctx.Unsupported("empty reduction");
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, out_dims));
  cl_int8 dims, flags;
  for (int i = 0; i < 8; ++i) {
    const int64_t k = i - (8 - rank);
    dims.s[i] = k < 0 ? 1 : static_cast<cl_int>(x.dims[k]);
    flags.s[i] = k < 0 ? 0 : static_cast<cl_int>(reduced[k]);
  }
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(
      auto k, ctx.Kernel("reduce.cl", "reduce",
                         ctx.Options({{"A", &x}, {"Y", y}},
                                     absl::StrCat("-DMODE=", ReduceMode(ctx.node.op_type())))));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *dx, *y->device, dims, flags, cl_long{count}));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y->numel())));
}

absl::Status Softmax(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (!IsFloat(x)) return ctx.Unsupported("non-float softmax");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  int64_t axis = ctx.node.GetInt("axis", ctx.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) return ctx.Error("axis out of range");
  int64_t length = 1, stride = 1;
  if (ctx.opset >= 13) {
    length = rank == 0 ? 1 : x.dims[axis];
    for (int64_t i = axis + 1; i < rank; ++i) stride *= x.dims[i];
  } else {
    for (int64_t i = axis; i < rank; ++i) length *= x.dims[i];  // coerced to 2-D at axis
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, x.dims));
  if (length == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  const bool log = ctx.node.op_type() == "LogSoftmax";
  OVFIX_ASSIGN_OR_RETURN(
      auto k, ctx.Kernel("reduce.cl", "softmax",
                         ctx.Options({{"A", &x}, {"Y", y}}, log ? "-DMODE=1" : "-DMODE=0")));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *dx, *y->device, cl_long{length}, cl_long{stride}));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(x.numel() / length)));
}

absl::Status Gather(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  // Shape arithmetic on host-side integers never gets here (the session runs it on the CPU);
  // integers and bools on the device move as bits (kernels/data.cl).
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  int64_t axis = ctx.node.GetInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  OVFIX_ASSIGN_OR_RETURN(auto indices, ctx.Host(1));
  Tensor idx(DataType::kInt64, indices->dims());
  for (int64_t i = 0; i < idx.numel(); ++i) {
    int64_t v = indices->GetAsInt64(i);
    if (v < 0) v += x.dims[axis];
    if (v < 0 || v >= x.dims[axis])
      return ctx.Error("index ", indices->GetAsInt64(i), " out of range");
    idx.data<int64_t>()[i] = v;
  }
  std::vector<int64_t> out_dims(x.dims.begin(), x.dims.begin() + axis);
  out_dims.insert(out_dims.end(), idx.dims().begin(), idx.dims().end());
  out_dims.insert(out_dims.end(), x.dims.begin() + axis + 1, x.dims.end());
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims[i];
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, out_dims));
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto di, ctx.rt.Allocate(static_cast<size_t>(idx.nbytes())));
  OVFIX_RETURN_IF_ERROR(ctx.rt.Write(di, idx.raw(), idx.nbytes()));
  absl::StatusOr<cl::Kernel> found;
  if (IsFloat(x)) {
    found = ctx.Kernel("reduce.cl", "gather", ctx.Options({{"A", &x}, {"Y", y}}, "-DMODE=0"));
  } else {
    OVFIX_ASSIGN_OR_RETURN(std::string option, ElementBitsOption(ctx, x));
    found = ctx.Kernel("data.cl", "gather_bits", option);
  }
  OVFIX_ASSIGN_OR_RETURN(auto k, std::move(found));
  if (auto s = SetArgs(ctx, k, *dx, di, *y->device, cl_long{idx.numel()}, cl_long{x.dims[axis]},
                       cl_long{inner});
      !s.ok()) {
    return s;
  }
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y->numel())));
}

}  // namespace

void AddReduceOps(std::vector<OpDef>& table) {
  // Every reduction the kernel has a mode for, with the group's versions.
  for (const OpGroupMember& m : FindOpGroup("reduction")->members) {
    if (ReduceMode(m.op_type) >= 0) {
      table.push_back({m.op_type, m.since_version, m.until_version, Reduce});
    }
  }
  table.push_back({"Softmax", 1, kOpenVersion, Softmax});
  table.push_back({"LogSoftmax", 1, kOpenVersion, Softmax});
  table.push_back({"Gather", 1, kOpenVersion, Gather});
}

}  // namespace ovfix::exec::opencl
