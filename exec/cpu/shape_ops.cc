// Kernels that change only a tensor's dims (Reshape, Squeeze, Unsqueeze, Flatten: zero-copy
// views of the input) or report them (Shape, Size). Also AddShapeKernels, which gathers the
// whole shape / data-movement group.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "exec/cpu/native_kernels.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

// The other files of the group list their own kernels.
void AddTransposeConcatKernels(std::vector<KernelDef>& table);  // transpose_concat.cc
void AddSlicePadKernels(std::vector<KernelDef>& table);         // slice_pad.cc
void AddGatherScatterKernels(std::vector<KernelDef>& table);    // gather_scatter.cc
void AddGeneratorKernels(std::vector<KernelDef>& table);        // generators.cc

namespace {

std::vector<int64_t> ToInt64s(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsInt64(i);
  return v;
}

// Maps axes in [-rank, rank) to [0, rank), sorted; fails on an axis out of range or repeated.
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const KernelContext& ctx,
                                                   std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return ctx.Error("axis ", a, " out of range for rank ", rank);
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    return ctx.Error("repeated axis");
  }
  return axes;
}

// Axes come from an attribute before opset 13 and from the optional input 1 after.
std::optional<std::vector<int64_t>> AxesOf(const KernelContext& ctx) {
  if (ctx.opset >= 13) {
    if (!ctx.has_input(1)) return std::nullopt;
    return ToInt64s(ctx.input(1));
  }
  if (!ctx.node.HasAttribute("axes")) return std::nullopt;
  return ctx.node.GetInts("axes");
}

absl::Status Reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> shape;
  if (ctx.opset < 5) {
    shape = ctx.node.GetInts("shape");
  } else {
    if (!ctx.has_input(1)) return ctx.Error("shape is required");
    shape = ToInt64s(ctx.input(1));
  }
  const bool allow_zero = ctx.opset >= 14 && ctx.node.GetInt("allowzero", 0) != 0;
  int64_t inferred = -1;  // position of the -1, if any
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      // 0 copies the input dim at the same position.
      if (i >= x.rank()) return ctx.Error("shape has a 0 at ", i, " beyond the input's rank");
      shape[i] = x.dim(i);
    }
    if (shape[i] == -1) {
      if (inferred >= 0) return ctx.Error("shape has more than one -1");
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      return ctx.Error("negative dim ", shape[i], " in shape");
    } else {
      if (shape[i] > 0 && known > std::numeric_limits<int64_t>::max() / shape[i]) {
        return ctx.Error("shape has more elements than ", DescribeTensor(x));
      }
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || x.numel() % known != 0) {
      return ctx.Error("cannot infer the -1 dim reshaping ", DescribeTensor(x));
    }
    shape[inferred] = x.numel() / known;
  } else if (known != x.numel()) {
    return ctx.Error("shape has ", known, " elements, input ", DescribeTensor(x), " has ",
                     x.numel());
  }
  ctx.outputs[0] = x.Reshaped(std::move(shape));
  return absl::OkStatus();
}

absl::Status Squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> dims;
  if (std::optional<std::vector<int64_t>> axes = AxesOf(ctx)) {
    OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                           NormalizeAxes(ctx, *std::move(axes), rank));
    for (int64_t a : normalized) {
      if (x.dim(a) != 1) return ctx.Error("cannot squeeze axis ", a, " of ", DescribeTensor(x));
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (!std::binary_search(normalized.begin(), normalized.end(), d)) {
        dims.push_back(x.dim(d));
      }
    }
  } else {
    for (int64_t d : x.dims()) {
      if (d != 1) dims.push_back(d);
    }
  }
  ctx.outputs[0] = x.Reshaped(std::move(dims));
  return absl::OkStatus();
}

absl::Status Unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::optional<std::vector<int64_t>> axes = AxesOf(ctx);
  if (!axes) return ctx.Error("axes is required");
  // Axes index the output, whose rank counts the inserted dims.
  const int64_t out_rank = static_cast<int64_t>(x.rank() + axes->size());
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                         NormalizeAxes(ctx, *std::move(axes), out_rank));
  std::vector<int64_t> dims;
  auto next_in = x.dims().begin();
  for (int64_t d = 0; d < out_rank; ++d) {
    if (std::binary_search(normalized.begin(), normalized.end(), d)) {
      dims.push_back(1);
    } else {
      dims.push_back(*next_in++);
    }
  }
  ctx.outputs[0] = x.Reshaped(std::move(dims));
  return absl::OkStatus();
}

absl::Status Flatten(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.node.GetInt("axis", 1);
  if (axis < -rank || axis > rank) return ctx.Error("axis ", axis, " out of range");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= x.dim(d);
  ctx.outputs[0] = x.Reshaped({outer, inner});
  return absl::OkStatus();
}

absl::Status Shape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  // start/end (opset 15) clamp to [0, rank] after adding rank to negatives.
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(ctx.node.GetInt("start", 0));
  const int64_t end = clamp(ctx.node.GetInt("end", rank));
  const int64_t n = std::max<int64_t>(end - start, 0);
  Tensor& y = ctx.Output(0, DataType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = x.dim(start + i);
  return absl::OkStatus();
}

absl::Status Size(KernelContext& ctx) {
  ctx.Output(0, DataType::kInt64, {}).data<int64_t>()[0] = ctx.input(0).numel();
  return absl::OkStatus();
}

}  // namespace

void AddShapeKernels(std::vector<KernelDef>& table) {
  AddNativeKernels(table, {{"Reshape", 1, Reshape},
                           {"Squeeze", 1, Squeeze},
                           {"Unsqueeze", 1, Unsqueeze},
                           {"Flatten", 1, Flatten},
                           {"Shape", 1, Shape},
                           {"Size", 1, Size}});
  AddTransposeConcatKernels(table);
  AddSlicePadKernels(table);
  AddGatherScatterKernels(table);
  AddGeneratorKernels(table);
}

}  // namespace ovfix::exec
