// Ops that only change how a buffer is seen (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
// Dropout in inference) share the input's device buffer; Shape and Size read dims only. None of
// them moves data.
#include <algorithm>

#include "exec/opencl/op_context.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

absl::StatusOr<std::vector<int64_t>> AxesOf(OpContext& ctx, size_t input, int64_t rank) {
  std::vector<int64_t> axes;
  if (ctx.has_input(input)) {
    OVFIX_ASSIGN_OR_RETURN(auto t, ctx.Host(input));
    for (int64_t i = 0; i < t->numel(); ++i) axes.push_back(t->GetAsInt64(i));
  } else {
    axes = ctx.node.GetInts("axes");
  }
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return ctx.Error("axis out of range");
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

absl::Status Reshape(OpContext& ctx) {
  const ClValue& in = ctx.input(0);
  OVFIX_ASSIGN_OR_RETURN(auto shape, ctx.Host(1));
  const bool allow_zero = ctx.node.GetInt("allowzero", 0) != 0;
  std::vector<int64_t> dims;
  int infer = -1;
  int64_t known = 1;
  for (int64_t i = 0; i < shape->numel(); ++i) {
    int64_t d = shape->GetAsInt64(i);
    if (d == 0 && !allow_zero) {
      if (i >= static_cast<int64_t>(in.dims.size()))
        return ctx.Error("0 in shape past the input rank");
      d = in.dims[i];
    }
    if (d == -1) {
      if (infer >= 0) return ctx.Error("more than one -1 in shape");
      infer = static_cast<int>(i);
      d = 1;
    } else if (d < 0) {
      return ctx.Error("negative dim in shape");
    }
    known *= d;
    dims.push_back(d);
  }
  if (infer >= 0) {
    if (known == 0 || in.numel() % known != 0) return ctx.Error("cannot infer the -1 dim");
    dims[infer] = in.numel() / known;
  }
  if (Tensor::NumElements(dims) != in.numel())
    return ctx.Error("shape does not match the element count");
  ctx.ViewOutput(0, 0, dims);
  return absl::OkStatus();
}

absl::Status Flatten(OpContext& ctx) {
  const ClValue& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.dims.size());
  int64_t axis = ctx.node.GetInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return ctx.Error("axis out of range");
  // Products of each side, not numel / outer: that loses the inner size when outer is 0.
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in.dims[i];
  ctx.ViewOutput(0, 0, {outer, inner});
  return absl::OkStatus();
}

absl::Status Squeeze(OpContext& ctx) {
  const ClValue& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.dims.size());
  OVFIX_ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, 1, rank));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i) {
    const bool listed = std::binary_search(axes.begin(), axes.end(), i);
    if (listed && in.dims[i] != 1) return ctx.Error("cannot squeeze a dim of size ", in.dims[i]);
    if (!(listed || (axes.empty() && in.dims[i] == 1))) dims.push_back(in.dims[i]);
  }
  ctx.ViewOutput(0, 0, dims);
  return absl::OkStatus();
}

absl::Status Unsqueeze(OpContext& ctx) {
  const ClValue& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.dims.size());
  std::vector<int64_t> raw;
  if (ctx.has_input(1)) {
    OVFIX_ASSIGN_OR_RETURN(auto t, ctx.Host(1));
    for (int64_t i = 0; i < t->numel(); ++i) raw.push_back(t->GetAsInt64(i));
  } else {
    raw = ctx.node.GetInts("axes");
  }
  const int64_t out_rank = rank + static_cast<int64_t>(raw.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : raw) {
    if (a < 0) a += out_rank;
    if (a < 0 || a >= out_rank || inserted[a]) return ctx.Error("bad axes");
    inserted[a] = true;
  }
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) dims.push_back(inserted[i] ? 1 : in.dims[next++]);
  ctx.ViewOutput(0, 0, dims);
  return absl::OkStatus();
}

absl::Status Identity(OpContext& ctx) {
  if (ctx.outputs.size() > 1 && ctx.node.output(1) != nullptr) {
    return ctx.Unsupported("Dropout mask output");
  }
  ctx.ViewOutput(0, 0, ctx.input(0).dims);
  return absl::OkStatus();
}

absl::Status Shape(OpContext& ctx) {
  const ClValue& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.dims.size());
  int64_t start = ctx.node.GetInt("start", 0), end = ctx.node.GetInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  Tensor t(DataType::kInt64, {end - start});
  for (int64_t i = start; i < end; ++i) t.data<int64_t>()[i - start] = in.dims[i];
  ClValue& out = ctx.outputs[0];
  out = ClValue{};
  out.type = DataType::kInt64;
  out.dims = t.dims();
  out.host = std::move(t);
  return absl::OkStatus();
}

absl::Status Size(OpContext& ctx) {
  Tensor t(DataType::kInt64, {});
  t.data<int64_t>()[0] = ctx.input(0).numel();
  ClValue& out = ctx.outputs[0];
  out = ClValue{};
  out.type = DataType::kInt64;
  out.host = std::move(t);
  return absl::OkStatus();
}

}  // namespace

void AddShapeOps(std::vector<OpDef>& table) {
  table.push_back({"Reshape", 5, kOpenVersion, Reshape});
  table.push_back({"Flatten", 1, kOpenVersion, Flatten});
  table.push_back({"Squeeze", 1, kOpenVersion, Squeeze});
  table.push_back({"Unsqueeze", 1, kOpenVersion, Unsqueeze});
  table.push_back({"Identity", 1, kOpenVersion, Identity});
  table.push_back({"Dropout", 1, kOpenVersion, Identity});
  table.push_back({"Shape", 1, kOpenVersion, Shape});
  table.push_back({"Size", 1, kOpenVersion, Size});
}

}  // namespace ovfix::exec::opencl
