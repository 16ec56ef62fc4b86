// What the data-movement kernels (transpose_concat.cc, slice_pad.cc, gather_scatter.cc,
// generators.cc) share: moving elements by their bytes whatever the type, and the strided
// copy that Transpose, Expand, Tile, Slice, Pad and the space/depth shuffles are built on.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "exec/kernel.h"
#include "exec/thread_pool.h"
#include "ir/tensor.h"

namespace ovfix::exec::data_movement {

// An offset that stands for "the fill value" in CopyByOffsets tables.
constexpr int64_t kFill = std::numeric_limits<int64_t>::min();

// One element moved as its bytes. Alignment 1 because tensors decoded from protobuf strings
// are not guaranteed to be aligned to their element size.
template <size_t N>
struct Bytes {
  unsigned char b[N];
};

// Calls fn.template operator()<T>() with T the storage of one element of `type`.
template <typename Fn>
void VisitStorage(DataType type, Fn&& fn) {
  if (type == DataType::kString) return fn.template operator()<std::string>();
  switch (ElementSize(type)) {
    case 1:
      return fn.template operator()<Bytes<1>>();
    case 2:
      return fn.template operator()<Bytes<2>>();
    case 4:
      return fn.template operator()<Bytes<4>>();
    case 8:
      return fn.template operator()<Bytes<8>>();
    case 16:
      return fn.template operator()<Bytes<16>>();
    default:
      return;  // callers check StorageSupported first
  }
}

inline bool StorageSupported(DataType type) {
  return type == DataType::kString || ElementSize(type) > 0;
}

// StorageSupported, or an error that names the type: the packed sub-byte types (int4, uint4,
// float4e2m1, int2, uint2) have no whole-byte elements to move.
inline absl::Status CheckStorage(const KernelContext& ctx, DataType type) {
  if (StorageSupported(type)) return absl::OkStatus();
  return ctx.Error("element type ", std::string(DataTypeName(type)), " is not supported",
                   IsPacked(type) ? " (packed sub-byte elements)" : "");
}

template <typename T>
const T* Elements(const Tensor& t) {
  if constexpr (std::is_same_v<T, std::string>) {
    return t.strings().data();
  } else {
    return reinterpret_cast<const T*>(t.raw());
  }
}

template <typename T>
T* MutableElements(Tensor& t) {
  if constexpr (std::is_same_v<T, std::string>) {
    return t.strings().data();
  } else {
    return reinterpret_cast<T*>(t.raw());
  }
}

inline std::vector<int64_t> ToInt64s(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsInt64(i);
  return v;
}

// Row-major strides of `dims`, in elements.
inline std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

// The product of dims[begin, end).
inline int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= dims[d];
  return p;
}

// out[i_0, ..., i_r-1] = source[sum_d offsets[d][i_d]], or *fill where any offset is kFill
// (zero / empty string when fill is null). `out` is allocated with dims = the table sizes;
// the caller guarantees every non-fill sum is inside `source`.
void CopyByOffsets(const Tensor& source, std::vector<std::vector<int64_t>> offsets,
                   const Tensor* fill, Tensor& out, ThreadPool* pool);
// Merges short trailing offset tables into the table before them (each entry the sum of
// two, `fill` where either is `fill`), while the last has fewer than 64 entries and the merged
// one at most 4096: the copies then run over fewer, longer rows.
void MergeShortTrailingTables(std::vector<std::vector<int64_t>>& tables, int64_t fill = kFill);
// Whether a tensor of these dims and type can be allocated (no negative dim, under 1 TiB).
bool IsAllocatable(const std::vector<int64_t>& dims, DataType type);
// A scalar of `type` holding `value` (rounded/converted as the type needs).
Tensor ScalarOfType(DataType type, double value);

}  // namespace ovfix::exec::data_movement
