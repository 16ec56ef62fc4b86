// Indexed reads and writes: Gather, GatherElements, GatherND, ScatterND, ScatterElements and the
// deprecated Scatter. Indices may be negative (counted from the end); an index outside the axis
// is an error that names the node, checked before anything is read or written.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/data_movement.h"
#include "exec/cpu/index_geometry.h"
#include "exec/cpu/native_kernels.h"
#include "exec/kernel.h"
#include "ir/float16.h"
#include "ir/narrow_types.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {

namespace {

using namespace data_movement;  // NOLINT: the group's shared vocabulary

absl::StatusOr<std::vector<int64_t>> ReadIndices(const KernelContext& ctx, const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.type() == DataType::kInt64) {
    std::copy_n(t.data<int64_t>(), v.size(), v.begin());
  } else if (t.type() == DataType::kInt32) {
    std::copy_n(t.data<int32_t>(), v.size(), v.begin());
  } else {
    return ctx.Error("indices must be int32 or int64, not ", std::string(DataTypeName(t.type())));
  }
  return v;
}

absl::Status OutOfRange(const KernelContext& ctx, int64_t index, int64_t limit) {
  return ctx.Error("index ", index, " out of range for a dim of ", limit);
}

// Gather's copy for packed sub-byte elements: whole bytes where every row starts on a byte,
// else element by element.
void GatherPacked(const Tensor& data, const std::vector<int64_t>& idx, int64_t outer,
                  int64_t axis_dim, int64_t inner, Tensor& y) {
  const DataType type = data.type();
  const int64_t n = static_cast<int64_t>(idx.size());
  const auto* src = static_cast<const unsigned char*>(data.raw());
  auto* dst = static_cast<unsigned char*>(y.raw());
  const bool whole_bytes = inner * BitsPerElement(type) % 8 == 0;
  const size_t row_bytes = StorageBytes(type, inner);
  for (int64_t row = 0; row < outer * n; ++row) {
    const int64_t o = row / n, k = row % n;
    const int64_t from = (o * axis_dim + idx[k]) * inner;
    if (whole_bytes) {
      std::memcpy(dst + row * row_bytes, src + StorageBytes(type, from), row_bytes);
      continue;
    }
    for (int64_t j = 0; j < inner; ++j) {
      SetPackedElement(type, dst, row * inner + j, GetPackedElement(type, src, from + j));
    }
  }
}

absl::Status Gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const bool packed = IsPacked(data.type());  // int4, uint4, float4e2m1, int2, uint2
  if (!packed) OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, data.type()));
  OVFIX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.node.GetInt("axis", 0), data.rank()));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(ctx, indices));
  const int64_t axis_dim = data.dim(axis);
  for (int64_t& i : idx) {
    if (!WrapIndex(i, axis_dim)) return OutOfRange(ctx, i, axis_dim);
  }
  std::vector<int64_t> out_dims(data.dims().begin(), data.dims().begin() + axis);
  out_dims.insert(out_dims.end(), indices.dims().begin(), indices.dims().end());
  out_dims.insert(out_dims.end(), data.dims().begin() + axis + 1, data.dims().end());
  if (!data_movement::IsAllocatable(out_dims, data.type())) return ctx.Error("output too large");
  Tensor& y = ctx.Output(0, data.type(), out_dims);
  if (y.numel() == 0) return absl::OkStatus();
  const int64_t outer = Product(data.dims(), 0, axis);
  const int64_t inner = Product(data.dims(), axis + 1, data.rank());
  const int64_t n = static_cast<int64_t>(idx.size());
  if (packed) {
    GatherPacked(data, idx, outer, axis_dim, inner, y);
    return absl::OkStatus();
  }
  VisitStorage(data.type(), [&]<typename T>() {
    const T* src = Elements<T>(data);
    T* dst = MutableElements<T>(y);
    ParallelFor(ctx.pool, outer * n, std::max<int64_t>(1, 4096 / inner), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        const int64_t o = row / n, k = row % n;
        const T* from = src + (o * axis_dim + idx[k]) * inner;
        std::copy(from, from + inner, dst + row * inner);
      }
    });
  });
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ElementOffsets(const KernelContext& ctx, const Tensor& data,
                                                    const Tensor& indices, int64_t axis) {
  OVFIX_RETURN_IF_ERROR(CheckElementsShapes(ctx, data.dims(), indices.dims(), axis));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(ctx, indices));
  return exec::ElementOffsets(ctx, data.dims(), indices.dims(), std::move(idx), axis);
}

absl::Status GatherElements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const bool packed = IsPacked(data.type());  // int4, uint4, float4e2m1, int2, uint2
  if (!packed) OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, data.type()));
  OVFIX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.node.GetInt("axis", 0), data.rank()));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, ElementOffsets(ctx, data, indices, axis));
  Tensor& y = ctx.Output(0, data.type(), indices.dims());
  VisitStorage(data.type(), [&]<typename T>() {
    const T* src = Elements<T>(data);
    T* dst = MutableElements<T>(y);
    for (size_t i = 0; i < offsets.size(); ++i) dst[i] = src[offsets[i]];
  });
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> TupleOffsets(const KernelContext& ctx, const Tensor& data,
                                                  const Tensor& indices, int64_t batch_dims) {
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(ctx, indices));
  return exec::TupleOffsets(ctx, data.dims(), indices.dims(), idx, batch_dims);
}

absl::Status GatherND(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (!StorageSupported(data.type())) return ctx.Error("unsupported element type");
  const int64_t r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(indices.rank());
  const int64_t b = ctx.node.GetInt("batch_dims", 0);
  if (q < 1 || r < 1) return ctx.Error("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r)) return ctx.Error("batch_dims ", b, " out of range");
  const int64_t k = indices.dims().back();
  if (k < 1 || k > r - b) return ctx.Error("index tuples of length ", k, " for rank ", r);
  for (int64_t d = 0; d < b; ++d) {
    if (data.dim(d) != indices.dim(d)) return ctx.Error("batch dims of data and indices differ");
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, TupleOffsets(ctx, data, indices, b));
  std::vector<int64_t> out_dims(indices.dims().begin(), indices.dims().end() - 1);
  out_dims.insert(out_dims.end(), data.dims().begin() + b + k, data.dims().end());
  if (!data_movement::IsAllocatable(out_dims, data.type())) return ctx.Error("output too large");
  Tensor& y = ctx.Output(0, data.type(), out_dims);
  const int64_t slice = Product(data.dims(), b + k, r);
  VisitStorage(data.type(), [&]<typename T>() {
    const T* src = Elements<T>(data);
    T* dst = MutableElements<T>(y);
    for (size_t t = 0; t < offsets.size(); ++t) {
      std::copy(src + offsets[t], src + offsets[t] + slice, dst + t * slice);
    }
  });
  return absl::OkStatus();
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

absl::StatusOr<Reduction> ReductionOf(const KernelContext& ctx) {
  if (ctx.opset < 16) return Reduction::kNone;
  const std::string r = ctx.node.GetString("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return ctx.Error("unknown reduction '", r, "'");
}

// How a reduction reads and writes one element type: Storage as held in the tensor, Compute
// what the arithmetic runs in.
template <typename T>
struct Arith {
  using Storage = T;
  using Compute = T;
  static Compute Load(Storage v) { return v; }
  static Storage Store(Compute v) { return v; }
};
template <>
struct Arith<bool> {
  using Storage = uint8_t;
  using Compute = bool;
  static Compute Load(Storage v) { return v != 0; }
  static Storage Store(Compute v) { return v ? 1 : 0; }
};
// A 16-bit float held as its bits and computed in float.
template <float (*kToFloat)(uint16_t), uint16_t (*kFromFloat)(float)>
struct Arith16 {
  using Storage = uint16_t;
  using Compute = float;
  static Compute Load(Storage v) { return kToFloat(v); }
  static Storage Store(Compute v) { return kFromFloat(v); }
};
template <>
struct Arith<Half> : Arith16<HalfBitsToFloat, FloatToHalfBits> {};
template <>
struct Arith<BFloat16> : Arith16<Bfloat16BitsToFloat, FloatToBfloat16Bits> {};

template <typename C>
C Combine(C a, C b, Reduction r) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    // Wrap around instead of overflowing (signed overflow is undefined).
    using U = std::make_unsigned_t<C>;
    if (r == Reduction::kAdd) return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    if (r == Reduction::kMul) return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else if constexpr (std::is_same_v<C, bool>) {
    if (r == Reduction::kAdd) return a || b;
    if (r == Reduction::kMul) return a && b;
  } else {
    if (r == Reduction::kAdd) return a + b;
    if (r == Reduction::kMul) return a * b;
  }
  return r == Reduction::kMax ? std::max(a, b) : std::min(a, b);
}

template <typename A>
void ReduceInto(Tensor& out, const Tensor& updates, const std::vector<int64_t>& targets,
                int64_t block, Reduction r) {
  using S = typename A::Storage;
  S* dst = out.data<S>();
  const S* src = updates.data<S>();
  for (size_t t = 0; t < targets.size(); ++t) {
    for (int64_t j = 0; j < block; ++j) {
      S& d = dst[targets[t] + j];
      d = A::Store(Combine(A::Load(d), A::Load(src[t * block + j]), r));
    }
  }
}

// out[targets[t] + j] (op)= updates[t * block + j], in order, so later duplicates win.
absl::Status ApplyUpdates(const KernelContext& ctx, Tensor& out, const Tensor& updates,
                          const std::vector<int64_t>& targets, int64_t block, Reduction r) {
  if (r == Reduction::kNone) {
    VisitStorage(out.type(), [&]<typename T>() {
      const T* src = Elements<T>(updates);
      T* dst = MutableElements<T>(out);
      for (size_t t = 0; t < targets.size(); ++t) {
        std::copy(src + t * block, src + (t + 1) * block, dst + targets[t]);
      }
    });
    return absl::OkStatus();
  }
  const bool defined = VisitType(out.type(), kStoredTypes, [&](auto tag) {
    ReduceInto<Arith<typename decltype(tag)::type>>(out, updates, targets, block, r);
  });
  if (!defined) {
    return ctx.Error("reduction is not defined for ", std::string(DataTypeName(out.type())));
  }
  return absl::OkStatus();
}

// The element types both scatters accept: data's one the kernels store, updates' the same.
absl::Status CheckScatterTypes(const KernelContext& ctx, const Tensor& data,
                               const Tensor& updates) {
  if (!StorageSupported(data.type())) return ctx.Error("unsupported element type");
  if (updates.type() != data.type()) return ctx.Error("updates and data differ in type");
  return absl::OkStatus();
}

absl::Status ScatterND(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  OVFIX_RETURN_IF_ERROR(CheckScatterTypes(ctx, data, updates));
  OVFIX_ASSIGN_OR_RETURN(Reduction reduction, ReductionOf(ctx));
  const int64_t r = static_cast<int64_t>(data.rank());
  if (indices.rank() < 1) return ctx.Error("indices must have rank >= 1");
  const int64_t k = indices.dims().back();
  if (k > r) return ctx.Error("index tuples of length ", k, " for rank ", r);
  std::vector<int64_t> expected(indices.dims().begin(), indices.dims().end() - 1);
  expected.insert(expected.end(), data.dims().begin() + k, data.dims().end());
  if (updates.dims() != expected) {
    return ctx.Error("updates ", DescribeTensor(updates), " do not fit data ", DescribeTensor(data),
                     " and indices ", DescribeTensor(indices));
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> targets, TupleOffsets(ctx, data, indices, 0));
  ctx.outputs[0] = data.Clone();
  return ApplyUpdates(ctx, ctx.outputs[0], updates, targets, Product(data.dims(), k, r), reduction);
}

absl::Status ScatterElements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  OVFIX_RETURN_IF_ERROR(CheckScatterTypes(ctx, data, updates));
  if (updates.dims() != indices.dims()) return ctx.Error("updates and indices differ in shape");
  OVFIX_ASSIGN_OR_RETURN(Reduction reduction, ReductionOf(ctx));
  OVFIX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, ctx.node.GetInt("axis", 0), data.rank()));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int64_t> targets, ElementOffsets(ctx, data, indices, axis));
  ctx.outputs[0] = data.Clone();
  return ApplyUpdates(ctx, ctx.outputs[0], updates, targets, 1, reduction);
}

}  // namespace

void AddGatherScatterKernels(std::vector<KernelDef>& table) {
  AddNativeKernels(table, {{"Gather", 1, Gather},
                           {"GatherElements", 11, GatherElements},
                           {"GatherND", 11, GatherND},
                           {"ScatterND", 11, ScatterND},
                           {"ScatterElements", 11, ScatterElements}});
  constexpr Float16Mode kNative = Float16Mode::kNative;
  table.push_back({"", "Scatter", 9, 10, ScatterElements, kNative});
}

}  // namespace ovfix::exec
