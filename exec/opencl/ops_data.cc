// Data movement on the device. Transpose, Slice, Pad, Expand, Tile, Split, DepthToSpace and
// SpaceToDepth are one strided copy driven by a table of source offsets per output dim (as
// the CPU executor's CopyByOffsets); GatherND and GatherElements gather blocks at offsets
// worked out on the host (where the indices are checked); ScatterND and ScatterElements
// group their updates by target so each target takes them in index order, as the CPU does.
// Trilu and Not complete the set. Elements move as their bits (see kernels/data.cl), so
// every element type and both float storages are exact; shape and index inputs are read on
// the host. Bad inputs get the errors the CPU kernels give. Cast to and from integer and bool
// types (for ops_elementwise.cc's Cast) and CastLike convert as the CPU executor does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "exec/cpu/data_movement.h"
#include "exec/cpu/index_geometry.h"
#include "exec/cpu/slice_pad_geometry.h"
#include "exec/cpu/split_sizes.h"
#include "exec/opencl/op_context.h"
#include "ir/float16.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

using data_movement::Product;
using data_movement::Strides;

// A table entry or base offset that stands for the fill value.
constexpr int64_t kFill = -1;

std::vector<int64_t> HostInts(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsInt64(i);
  return v;
}

absl::StatusOr<std::vector<int64_t>> InputInts(OpContext& ctx, size_t i) {
  OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.Host(i));
  return HostInts(*t);
}

// A device copy of `values` (offset tables, indices), made when the buffer is created: a
// blocking write on the in-order queue would wait for every kernel queued before it.
absl::StatusOr<std::shared_ptr<cl::Buffer>> UploadLongs(OpContext& ctx,
                                                        std::vector<int64_t> values) {
  if (values.empty()) values.push_back(0);  // no empty buffers
  cl_int err = CL_SUCCESS;
  auto b = std::make_shared<cl::Buffer>(ctx.rt.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                        values.size() * sizeof(int64_t), values.data(), &err);
  if (err != CL_SUCCESS) return ctx.rt.Error(err, ctx.node.Describe() + ": uploading indices");
  return b;
}

// The bits of the fill value `value` (a scalar of v's logical type; none: zero) as v is
// stored on the device.
uint64_t FillBits(const ClValue& v, const Tensor* value) {
  if (value == nullptr || !value->defined() || value->numel() == 0) return 0;
  if (v.type == DataType::kFloat && v.half) {
    return FloatToHalfBits(value->data<float>()[0]);
  }
  uint64_t bits = 0;
  std::memcpy(&bits, value->raw(), std::min<size_t>(sizeof(bits), ElementSize(value->type())));
  return bits;
}

// y = input `input` copied through per-dim offset tables (kFill entries take `fill`); the
// tables' sizes multiply to y's element count.
absl::Status CopyByTables(OpContext& ctx, size_t input, ClValue& y,
                          std::vector<std::vector<int64_t>> tables, uint64_t fill = 0) {
  if (y.numel() == 0) return absl::OkStatus();
  // Single-entry tables fold into a base offset; short trailing tables merge into the one
  // before (as the CPU copy does), so the kernel splits indices over fewer dims.
  int64_t base = 0;
  std::vector<std::vector<int64_t>> kept;
  for (std::vector<int64_t>& t : tables) {
    if (t.size() != 1) {
      kept.push_back(std::move(t));
    } else if (t[0] == kFill || base == kFill) {
      base = kFill;
    } else {
      base += t[0];
    }
  }
  data_movement::MergeShortTrailingTables(kept, kFill);
  if (kept.empty()) kept.push_back({0});
  const int rank = static_cast<int>(kept.size());
  std::vector<int64_t> meta(2 * rank);
  for (int d = 0; d < rank; ++d) {
    meta[d] = static_cast<int64_t>(kept[d].size());
    meta[rank + d] = static_cast<int64_t>(meta.size());
    meta.insert(meta.end(), kept[d].begin(), kept[d].end());
  }
  OVFIX_ASSIGN_OR_RETURN(std::string option, ElementBitsOption(ctx, y));
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * x, ctx.Device(input));
  OVFIX_ASSIGN_OR_RETURN(auto dmeta, UploadLongs(ctx, meta));
  OVFIX_ASSIGN_OR_RETURN(cl::Kernel k, ctx.Kernel("data.cl", "copy_tables", option));
  OVFIX_RETURN_IF_ERROR(
      SetArgs(ctx, k, *x, *y.device, *dmeta, cl_int{rank}, cl_long{base}, cl_ulong{fill}));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y.numel())));
}

std::vector<int64_t> Arithmetic(int64_t n, int64_t stride) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i * stride;
  return v;
}

absl::Status RequireBits(OpContext& ctx, const ClValue& v) {
  return ElementBitsOption(ctx, v).status();
}

// ---- strided copies ----

absl::Status Transpose(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, x));
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> perm = ctx.node.GetInts("perm");
  if (!ctx.node.HasAttribute("perm")) {
    perm.resize(rank);
    for (int64_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return ctx.Error("perm has ", perm.size(), " entries for a rank ", rank, " input");
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return ctx.Error("perm is not a permutation of 0..", rank - 1);
    seen[p] = true;
  }
  std::vector<int64_t> out_dims(rank);
  for (int64_t i = 0; i < rank; ++i) out_dims[i] = x.dims[perm[i]];
  // Only unit dims move: the elements keep their order.
  int64_t last = -1;
  bool in_order = true;
  for (int64_t p : perm) {
    if (x.dims[p] == 1) continue;
    in_order = in_order && p > last;
    last = p;
  }
  if (in_order) {
    ctx.ViewOutput(0, 0, out_dims);
    return absl::OkStatus();
  }
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, out_dims));
  const std::vector<int64_t> strides = Strides(x.dims);
  std::vector<std::vector<int64_t>> tables(rank);
  for (int64_t d = 0; d < rank; ++d) tables[d] = Arithmetic(out_dims[d], strides[perm[d]]);
  return CopyByTables(ctx, 0, *y, std::move(tables));
}

absl::Status Slice(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, x));
  OVFIX_ASSIGN_OR_RETURN(const SliceGeometry g,
                         PlanSliceOfNode(ctx, x.dims, [&](size_t i) { return InputInts(ctx, i); }));
  if (g.IsWhole(x.dims)) {
    ctx.ViewOutput(0, 0, g.dims);
    return absl::OkStatus();
  }
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, g.dims));
  return CopyByTables(ctx, 0, *y, g.Offsets(x.dims));
}

absl::Status Pad(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, x));
  OVFIX_ASSIGN_OR_RETURN(const PadArguments args,
                         PlanPadOfNode(
                             ctx, x.type, x.dims, [&](size_t i) { return InputInts(ctx, i); },
                             [&](size_t i) { return ctx.Host(i); }));
  const PadGeometry& g = args.geometry;
  const Tensor& value = args.value;
  if (!data_movement::IsAllocatable(g.dims, x.type)) return ctx.Error("output too large");
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, g.dims));
  return CopyByTables(ctx, 0, *y, g.Offsets(x.dims, args.mode, kFill), FillBits(x, &value));
}

absl::Status Expand(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, x));
  if (!ctx.has_input(1)) return ctx.Error("shape is required");
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, InputInts(ctx, 1));
  OVFIX_ASSIGN_OR_RETURN(const ExpandGeometry g,
                         PlanExpand(KernelContext::For(ctx.node, ctx.opset), x.dims, shape));
  const std::vector<int64_t>& in_dims = g.input_dims;
  const std::vector<int64_t>& out_dims = g.dims;
  const size_t rank = out_dims.size();
  if (!data_movement::IsAllocatable(out_dims, x.type)) return ctx.Error("output too large");
  if (out_dims == in_dims) {
    ctx.ViewOutput(0, 0, out_dims);
    return absl::OkStatus();
  }
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, out_dims));
  const std::vector<int64_t> strides = Strides(in_dims);
  std::vector<std::vector<int64_t>> tables(rank);
  for (size_t d = 0; d < rank; ++d) {
    tables[d] = Arithmetic(out_dims[d], in_dims[d] == 1 ? 0 : strides[d]);
  }
  return CopyByTables(ctx, 0, *y, std::move(tables));
}

absl::Status Tile(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, x));
  if (!ctx.has_input(1)) return ctx.Error("repeats is required");
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, InputInts(ctx, 1));
  const size_t rank = x.dims.size();
  if (repeats.size() != rank) {
    return ctx.Error("repeats has ", repeats.size(), " entries for a rank ", rank, " input");
  }
  std::vector<int64_t> out_dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) return ctx.Error("negative repeat ", repeats[d]);
    if (x.dims[d] > 0 && repeats[d] > std::numeric_limits<int64_t>::max() / x.dims[d]) {
      return ctx.Error("output too large");
    }
    out_dims[d] = x.dims[d] * repeats[d];
  }
  if (!data_movement::IsAllocatable(out_dims, x.type)) return ctx.Error("output too large");
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, out_dims));
  const std::vector<int64_t> strides = Strides(x.dims);
  std::vector<std::vector<int64_t>> tables(rank);
  for (size_t d = 0; d < rank; ++d) {
    tables[d].resize(out_dims[d]);
    for (int64_t i = 0; i < out_dims[d]; ++i) tables[d][i] = (i % x.dims[d]) * strides[d];
  }
  return CopyByTables(ctx, 0, *y, std::move(tables));
}

absl::Status Split(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, x));
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  int64_t axis = ctx.node.GetInt("axis", 0);
  if (axis < -rank || axis >= rank) return ctx.Error("axis ", axis, " out of range");
  if (axis < 0) axis += rank;
  const int64_t n_out = static_cast<int64_t>(ctx.outputs.size());
  if (n_out == 0) return ctx.Error("no outputs");
  const int64_t dim = x.dims[axis];
  std::optional<std::vector<int64_t>> given;
  if (ctx.has_input(1)) {
    OVFIX_ASSIGN_OR_RETURN(given, InputInts(ctx, 1));
  } else if (ctx.node.HasAttribute("split")) {
    given = ctx.node.GetInts("split");
  }
  OVFIX_ASSIGN_OR_RETURN(
      const std::vector<int64_t> sizes,
      SplitSizes(KernelContext::For(ctx.node, ctx.opset), dim, n_out, std::move(given)));
  // Each output is a slice along the axis: outer rows of `dim * inner` elements in the input.
  const int64_t outer = Product(x.dims, 0, axis);
  const int64_t inner = Product(x.dims, axis + 1, rank);
  int64_t offset = 0;
  for (int64_t k = 0; k < n_out; ++k) {
    std::vector<int64_t> dims = x.dims;
    dims[axis] = sizes[k];
    OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(k, x.type, dims));
    std::vector<int64_t> part = Arithmetic(sizes[k] * inner, 1);
    for (int64_t& e : part) e += offset * inner;
    OVFIX_RETURN_IF_ERROR(
        CopyByTables(ctx, 0, *y, {Arithmetic(outer, dim * inner), std::move(part)}));
    offset += sizes[k];
  }
  return absl::OkStatus();
}

// What DepthToSpace and SpaceToDepth read: X (4-D, of a type the copy moves), its dims and
// the blocksize (checked by each op against the dims it divides).
struct BlockShuffle {
  const ClValue& x;
  int64_t n, c, h, w, b;
};

absl::StatusOr<BlockShuffle> ReadBlockShuffle(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, x));
  const int64_t b = ctx.node.GetInt("blocksize", 0);
  if (x.dims.size() != 4) return ctx.Error("input must be 4-D");
  return BlockShuffle{x, x.dims[0], x.dims[1], x.dims[2], x.dims[3], b};
}

absl::Status DepthToSpace(OpContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const BlockShuffle in, ReadBlockShuffle(ctx));
  const ClValue& x = in.x;
  const int64_t n = in.n, c = in.c, h = in.h, w = in.w, b = in.b;
  if (b <= 0 || c % (b * b) != 0) return ctx.Error("channels ", c, " not divisible by blocksize^2");
  const std::string mode = ctx.node.GetString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return ctx.Error("unknown mode '", mode, "'");
  const int64_t oc = c / (b * b), plane = h * w;
  const bool dcr = mode == "DCR";
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, {n, oc, h * b, w * b}));
  // Output viewed as [n, oc, h, b1, w, b2]. DCR reads input channel (b1 * b + b2) * oc + oc_i,
  // CRD reads oc_i * b * b + b1 * b + b2.
  return CopyByTables(ctx, 0, *y,
                      {Arithmetic(n, c * plane), Arithmetic(oc, (dcr ? 1 : b * b) * plane),
                       Arithmetic(h, w), Arithmetic(b, (dcr ? b * oc : b) * plane),
                       Arithmetic(w, 1), Arithmetic(b, (dcr ? oc : 1) * plane)});
}

absl::Status SpaceToDepth(OpContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const BlockShuffle in, ReadBlockShuffle(ctx));
  const ClValue& x = in.x;
  const int64_t n = in.n, c = in.c, h = in.h, w = in.w, b = in.b;
  if (b <= 0 || h % b != 0 || w % b != 0) {
    return ctx.Error("spatial dims ", h, "x", w, " not divisible by blocksize ", b);
  }
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, {n, c * b * b, h / b, w / b}));
  // Output viewed as [n, b1, b2, c, h / b, w / b]; reads input [n, c, h' * b + b1, w' * b + b2].
  return CopyByTables(ctx, 0, *y,
                      {Arithmetic(n, c * h * w), Arithmetic(b, w), Arithmetic(b, 1),
                       Arithmetic(c, h * w), Arithmetic(h / b, b * w), Arithmetic(w / b, b)});
}

// ---- indexed reads and writes ----

absl::StatusOr<std::vector<int64_t>> ReadIndices(OpContext& ctx, size_t i) {
  OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.Host(i));
  if (t->type() != DataType::kInt64 && t->type() != DataType::kInt32) {
    return ctx.Error("indices must be int32 or int64, not ", std::string(DataTypeName(t->type())));
  }
  return HostInts(*t);
}

absl::StatusOr<int64_t> NormalizeAxis(const OpContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return ctx.Error("axis ", axis, " out of range");
  return axis < 0 ? axis + rank : axis;
}

absl::Status GatherBlocks(OpContext& ctx, ClValue& y, const std::vector<int64_t>& offsets,
                          int64_t block) {
  if (y.numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(std::string option, ElementBitsOption(ctx, y));
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * x, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto doffsets, UploadLongs(ctx, offsets));
  OVFIX_ASSIGN_OR_RETURN(cl::Kernel k, ctx.Kernel("data.cl", "gather_blocks", option));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *x, *y.device, *doffsets, cl_long{block}));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y.numel())));
}

absl::Status GatherND(OpContext& ctx) {
  const ClValue& data = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, data));
  const std::vector<int64_t>& idims = ctx.input(1).dims;
  const int64_t r = static_cast<int64_t>(data.dims.size()), q = static_cast<int64_t>(idims.size());
  const int64_t b = ctx.node.GetInt("batch_dims", 0);
  if (q < 1 || r < 1) return ctx.Error("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r)) return ctx.Error("batch_dims ", b, " out of range");
  const int64_t k = idims.back();
  if (k < 1 || k > r - b) return ctx.Error("index tuples of length ", k, " for rank ", r);
  for (int64_t d = 0; d < b; ++d) {
    if (data.dims[d] != idims[d]) return ctx.Error("batch dims of data and indices differ");
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(ctx, 1));
  OVFIX_ASSIGN_OR_RETURN(
      std::vector<int64_t> offsets,
      TupleOffsets(KernelContext::For(ctx.node, ctx.opset), data.dims, idims, idx, b));
  std::vector<int64_t> out_dims(idims.begin(), idims.end() - 1);
  out_dims.insert(out_dims.end(), data.dims.begin() + b + k, data.dims.end());
  if (!data_movement::IsAllocatable(out_dims, data.type)) return ctx.Error("output too large");
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, data.type, out_dims));
  return GatherBlocks(ctx, *y, offsets, Product(data.dims, b + k, r));
}

// The data offset each index of input 1 addresses along the node's axis (GatherElements and
// ScatterElements).
absl::StatusOr<std::vector<int64_t>> ElementTargets(OpContext& ctx, const ClValue& data) {
  const std::vector<int64_t>& idims = ctx.input(1).dims;
  OVFIX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.node.GetInt("axis", 0),
                                                     static_cast<int64_t>(data.dims.size())));
  const KernelContext kc = KernelContext::For(ctx.node, ctx.opset);
  OVFIX_RETURN_IF_ERROR(CheckElementsShapes(kc, data.dims, idims, axis));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(ctx, 1));
  return ElementOffsets(kc, data.dims, idims, std::move(idx), axis);
}

absl::Status GatherElements(OpContext& ctx) {
  const ClValue& data = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, data));
  const std::vector<int64_t> idims = ctx.input(1).dims;
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, ElementTargets(ctx, data));
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, data.type, idims));
  return GatherBlocks(ctx, *y, offsets, 1);
}

// 0 none, 1 add, 2 mul, 3 max, 4 min (REDUCE in data.cl).
absl::StatusOr<int> ReductionOf(const OpContext& ctx) {
  if (ctx.opset < 16) return 0;
  const std::string r = ctx.node.GetString("reduction", "none");
  constexpr std::string_view kNames[] = {"none", "add", "mul", "max", "min"};
  for (int i = 0; i < 5; ++i) {
    if (r == kNames[i]) return i;
  }
  return ctx.Error("unknown reduction '", r, "'");
}

// y = data with block t of the updates applied at targets[t] (blocks of `block` elements),
// in index order: without a reduction the last update of a target wins, with one they combine
// into it one after another.
absl::Status ApplyUpdates(OpContext& ctx, const std::vector<int64_t>& targets, int64_t block,
                          int reduction) {
  const ClValue& data = ctx.input(0);
  const ClValue& updates = ctx.input(2);
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, data.type, data.dims));
  if (y->numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * dx, ctx.Device(0));
  OVFIX_RETURN_IF_ERROR(ctx.rt.Copy(*dx, 0, *y->device, 0, y->device_bytes()));
  if (targets.empty() || block == 0) return absl::OkStatus();
  // Updates grouped by target, in index order within a group.
  std::vector<int64_t> order(targets.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return targets[a] < targets[b]; });
  std::vector<int64_t> unique, begin;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || targets[order[i]] != targets[order[i - 1]]) {
      unique.push_back(targets[order[i]]);
      begin.push_back(static_cast<int64_t>(i));
    }
  }
  begin.push_back(static_cast<int64_t>(order.size()));
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * du, ctx.Device(2));
  OVFIX_ASSIGN_OR_RETURN(auto dtargets, UploadLongs(ctx, unique));
  const cl::NDRange range(static_cast<size_t>(unique.size() * block));
  if (reduction == 0) {
    std::vector<int64_t> last(unique.size());
    for (size_t u = 0; u < unique.size(); ++u) last[u] = order[begin[u + 1] - 1];
    OVFIX_ASSIGN_OR_RETURN(std::string option, ElementBitsOption(ctx, *y));
    OVFIX_ASSIGN_OR_RETURN(auto dsources, UploadLongs(ctx, last));
    OVFIX_ASSIGN_OR_RETURN(cl::Kernel k, ctx.Kernel("data.cl", "scatter_copy", option));
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *du, *y->device, *dtargets, *dsources, cl_long{block}));
    return ctx.Run(k, range);
  }
  std::string option;
  switch (data.type) {
    case DataType::kFloat:
    case DataType::kFloat16:
      option = ctx.Options({{"A", &updates}, {"Y", y}},
                           data.type == DataType::kFloat16 ? "-DROUND_STEPS" : "");
      break;
    case DataType::kInt32:
      option = "-DINT_T=int -DUINT_T=uint";
      break;
    case DataType::kInt64:
      option = "-DINT_T=long -DUINT_T=ulong";
      break;
    default:
      return ctx.Unsupported("scatter reduction on ", std::string(DataTypeName(data.type)));
  }
  absl::StrAppend(&option, " -DREDUCE=", reduction);
  OVFIX_ASSIGN_OR_RETURN(auto dbegin, UploadLongs(ctx, begin));
  OVFIX_ASSIGN_OR_RETURN(auto dsources, UploadLongs(ctx, order));
  OVFIX_ASSIGN_OR_RETURN(cl::Kernel k, ctx.Kernel("data.cl", "scatter_reduce", option));
  OVFIX_RETURN_IF_ERROR(
      SetArgs(ctx, k, *du, *y->device, *dtargets, *dbegin, *dsources, cl_long{block}));
  return ctx.Run(k, range);
}

absl::Status ScatterND(OpContext& ctx) {
  const ClValue& data = ctx.input(0);
  const ClValue& updates = ctx.input(2);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, data));
  if (updates.type != data.type) return ctx.Error("updates and data differ in type");
  OVFIX_ASSIGN_OR_RETURN(int reduction, ReductionOf(ctx));
  const std::vector<int64_t> idims = ctx.input(1).dims;
  const int64_t r = static_cast<int64_t>(data.dims.size());
  if (idims.empty()) return ctx.Error("indices must have rank >= 1");
  const int64_t k = idims.back();
  if (k > r) return ctx.Error("index tuples of length ", k, " for rank ", r);
  std::vector<int64_t> expected(idims.begin(), idims.end() - 1);
  expected.insert(expected.end(), data.dims.begin() + k, data.dims.end());
  if (updates.dims != expected) return ctx.Error("updates do not fit data and indices");
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(ctx, 1));
  OVFIX_ASSIGN_OR_RETURN(
      std::vector<int64_t> targets,
      TupleOffsets(KernelContext::For(ctx.node, ctx.opset), data.dims, idims, idx, 0));
  return ApplyUpdates(ctx, targets, Product(data.dims, k, r), reduction);
}

absl::Status ScatterElements(OpContext& ctx) {
  const ClValue& data = ctx.input(0);
  const ClValue& updates = ctx.input(2);
  OVFIX_RETURN_IF_ERROR(RequireBits(ctx, data));
  if (updates.type != data.type) return ctx.Error("updates and data differ in type");
  const std::vector<int64_t> idims = ctx.input(1).dims;
  if (updates.dims != idims) return ctx.Error("updates and indices differ in shape");
  OVFIX_ASSIGN_OR_RETURN(int reduction, ReductionOf(ctx));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> targets, ElementTargets(ctx, data));
  return ApplyUpdates(ctx, targets, 1, reduction);
}

// ---- element-wise selections ----

absl::Status Trilu(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  OVFIX_ASSIGN_OR_RETURN(std::string option, ElementBitsOption(ctx, x));
  const size_t rank = x.dims.size();
  if (rank < 2) return ctx.Error("input must have rank >= 2");
  int64_t k = 0;
  if (ctx.has_input(1)) {
    OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.Host(1));
    if (t->numel() != 1) return ctx.Error("k must be a scalar");
    k = t->GetAsInt64(0);
  }
  const int64_t upper = ctx.node.GetInt("upper", 1) != 0;
  const int64_t rows = x.dims[rank - 2], cols = x.dims[rank - 1];
  k = std::clamp<int64_t>(k, -rows - 1, cols + 1);  // beyond these nothing changes
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, x.dims));
  if (y->numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(cl::Kernel kernel, ctx.Kernel("data.cl", "trilu", option));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, kernel, *dx, *y->device, cl_long{rows}, cl_long{cols},
                                cl_long{k}, cl_int{static_cast<cl_int>(upper)}));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(y->numel())));
}

absl::Status Not(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (x.type != DataType::kBool)
    return ctx.Error("Not takes bool, not ", std::string(DataTypeName(x.type)));
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, x.type, x.dims));
  if (y->numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(cl::Kernel kernel, ctx.Kernel("data.cl", "logical_not", "-DT=uchar"));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, kernel, *dx, *y->device));
  return ctx.Run(kernel, cl::NDRange(static_cast<size_t>(y->numel())));
}

absl::Status Logic(OpContext& ctx) {
  const ClValue& a = ctx.input(0);
  const ClValue& b = ctx.input(1);
  if (a.type != DataType::kBool || b.type != DataType::kBool) {
    return ctx.Error("inputs must be bool");
  }
  OVFIX_ASSIGN_OR_RETURN(auto dims, BroadcastDims(ctx, {&a.dims, &b.dims}));
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, DataType::kBool, dims));
  if (y->numel() == 0) return absl::OkStatus();
  const std::string& op = ctx.node.op_type();
  const cl_int code = op == "And" ? 0 : op == "Or" ? 1 : 2;
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * da, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * db, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(cl::Kernel k, ctx.Kernel("data.cl", "logic", "-DT=uchar"));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *da, *db, *y->device, code, PaddedDims(dims),
                                BroadcastStrides(a.dims, dims), BroadcastStrides(b.dims, dims)));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y->numel())));
}

// Range of floats (integer ranges are shape arithmetic on the host). The element count is
// worked out as the CPU executor does, in double.
absl::Status Range(OpContext& ctx) {
  float v[3];
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i)) return ctx.Error("start, limit and delta must be scalars");
    OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.Host(i));
    if (t->numel() != 1) return ctx.Error("start, limit and delta must be scalars");
    if (t->type() != ctx.input(0).type) return ctx.Error("inputs differ in type");
    if (t->type() != DataType::kFloat) {
      return ctx.Unsupported("Range of ", std::string(DataTypeName(t->type())));
    }
    v[i] = t->data<float>()[0];
  }
  const float start = v[0], limit = v[1], delta = v[2];
  if (delta == 0) return ctx.Error("delta is 0");
  constexpr int64_t kMaxCount = int64_t{1} << 36;
  const double count = std::ceil((static_cast<double>(limit) - start) / delta);
  if (count > kMaxCount) return ctx.Error("too many elements");
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;  // NaN gives 0
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, DataType::kFloat, {n}));
  if (n == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(cl::Kernel k,
                         ctx.Kernel("data.cl", "range", y->half ? "-DRANGE -DY_HALF" : "-DRANGE"));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *y->device, start, delta));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(n)));
}

// OpenCL C names of the integer types a cast takes (bool as its byte); empty for the rest.
std::string_view IntegerTypeName(DataType t) {
  static constexpr std::pair<DataType, std::string_view> kNames[] = {
      {DataType::kInt8, "char"},   {DataType::kUint8, "uchar"},   {DataType::kBool, "uchar"},
      {DataType::kInt16, "short"}, {DataType::kUint16, "ushort"}, {DataType::kInt32, "int"},
      {DataType::kUint32, "uint"}, {DataType::kInt64, "long"},    {DataType::kUint64, "ulong"}};
  for (const auto& [type, name] : kNames) {
    if (type == t) return name;
  }
  return "";
}

}  // namespace

absl::Status CastElements(OpContext& ctx, DataType to) {
  const ClValue& a = ctx.input(0);
  const bool from_float = a.type == DataType::kFloat || a.type == DataType::kFloat16;
  const bool to_float = to == DataType::kFloat || to == DataType::kFloat16;
  const std::string_view from_name = IntegerTypeName(a.type), to_name = IntegerTypeName(to);
  if ((!from_float && from_name.empty()) || (!to_float && to_name.empty())) {
    return ctx.Unsupported("Cast from ", std::string(DataTypeName(a.type)), " to ",
                           std::string(DataTypeName(to)));
  }
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, to, a.dims));
  std::string options = "-DCAST";
  if (from_float) {
    absl::StrAppend(&options, " -DFROM_KIND=0", a.half ? " -DA_HALF" : "");
  } else {
    absl::StrAppend(&options, " -DFROM_KIND=1 -DFROM_T=", std::string(from_name));
  }
  if (to_float) {
    absl::StrAppend(&options, " -DTO_KIND=0", y->half ? " -DY_HALF" : "");
  } else {
    const int kind = to == DataType::kBool ? 2 : to == DataType::kUint64 ? 3 : 1;
    std::string unsigned_name(to_name);
    if (unsigned_name[0] != 'u') unsigned_name = "u" + unsigned_name;
    absl::StrAppend(&options, " -DTO_KIND=", kind, " -DTO_T=", std::string(to_name),
                    " -DUTO_T=", unsigned_name);
  }
  if (y->numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * da, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(cl::Kernel k, ctx.Kernel("data.cl", "cast", options));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *da, *y->device));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y->numel())));
}

namespace {

// CastLike: a Cast to the second input's type (float to float storage included: data.cl's
// cast converts any pair).
absl::Status CastLike(OpContext& ctx) { return CastElements(ctx, ctx.input(1).type); }

}  // namespace

void AddDataOps(std::vector<OpDef>& table) {
  table.push_back({"Transpose", 1, kOpenVersion, Transpose});
  table.push_back({"Slice", 1, kOpenVersion, Slice});
  table.push_back({"Pad", 1, kOpenVersion, Pad});
  table.push_back({"Expand", 8, kOpenVersion, Expand});
  table.push_back({"Tile", 6, kOpenVersion, Tile});
  table.push_back({"Split", 1, kOpenVersion, Split});
  table.push_back({"DepthToSpace", 1, kOpenVersion, DepthToSpace});
  table.push_back({"SpaceToDepth", 1, kOpenVersion, SpaceToDepth});
  table.push_back({"GatherND", 11, kOpenVersion, GatherND});
  table.push_back({"GatherElements", 11, kOpenVersion, GatherElements});
  table.push_back({"ScatterND", 11, kOpenVersion, ScatterND});
  table.push_back({"ScatterElements", 11, kOpenVersion, ScatterElements});
  table.push_back({"Scatter", 9, 10, ScatterElements});
  table.push_back({"Trilu", 14, kOpenVersion, Trilu});
  table.push_back({"Not", 1, kOpenVersion, Not});
  table.push_back({"CastLike", 15, kOpenVersion, CastLike});
  table.push_back({"Range", 11, kOpenVersion, Range});
  // Numpy broadcasting from version 7, as the group says.
  for (const OpGroupMember& m : FindOpGroup("logical")->members) {
    table.push_back({m.op_type, m.since_version, m.until_version, Logic});
  }
}

}  // namespace ovfix::exec::opencl
