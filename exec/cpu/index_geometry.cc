#include "exec/cpu/index_geometry.h"

#include "absl/strings/str_join.h"
#include "exec/cpu/data_movement.h"

namespace ovfix::exec {

using data_movement::Product;
using data_movement::Strides;

bool WrapIndex(int64_t& i, int64_t limit) {
  if (i < -limit || i >= limit) return false;
  if (i < 0) i += limit;
  return true;
}

absl::StatusOr<int64_t> NormalizeAxis(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return ctx.Error("axis ", axis, " out of range");
  return axis < 0 ? axis + rank : axis;
}

absl::Status CheckElementsShapes(const KernelContext& ctx, const std::vector<int64_t>& data,
                                 const std::vector<int64_t>& indices, int64_t axis) {
  if (indices.size() != data.size()) return ctx.Error("indices and data differ in rank");
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d]) {
      return ctx.Error("indices [", absl::StrJoin(indices, ","), "] exceed data [",
                       absl::StrJoin(data, ","), "] on axis ", d);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ElementOffsets(const KernelContext& ctx,
                                                    const std::vector<int64_t>& data,
                                                    const std::vector<int64_t>& indices,
                                                    std::vector<int64_t> idx, int64_t axis) {
  const std::vector<int64_t> strides = Strides(data);
  const int64_t axis_dim = data[axis];
  const int64_t rank = static_cast<int64_t>(indices.size());
  std::vector<int64_t> coords(rank, 0);  // of the current element of the indices
  for (int64_t& i : idx) {
    if (!WrapIndex(i, axis_dim)) {
      return ctx.Error("index ", i, " out of range for a dim of ", axis_dim);
    }
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += (d == axis ? i : coords[d]) * strides[d];
    i = offset;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coords[d] < indices[d]) break;
      coords[d] = 0;
    }
  }
  return idx;
}

absl::StatusOr<std::vector<int64_t>> TupleOffsets(const KernelContext& ctx,
                                                  const std::vector<int64_t>& data,
                                                  const std::vector<int64_t>& indices,
                                                  const std::vector<int64_t>& idx,
                                                  int64_t batch_dims) {
  const int64_t k = indices.back();
  const std::vector<int64_t> strides = Strides(data);
  const int64_t tuples =
      k == 0 ? Product(indices, 0, indices.size() - 1) : static_cast<int64_t>(idx.size()) / k;
  const int64_t per_batch = Product(indices, batch_dims, indices.size() - 1);
  const int64_t batch_stride = batch_dims == 0 ? 0 : strides[batch_dims - 1];
  std::vector<int64_t> offsets(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = per_batch == 0 ? 0 : (t / per_batch) * batch_stride;
    for (int64_t c = 0; c < k; ++c) {
      int64_t i = idx[t * k + c];
      const int64_t limit = data[batch_dims + c];
      if (!WrapIndex(i, limit)) {
        return ctx.Error("index ", i, " out of range for a dim of ", limit);
      }
      offset += i * strides[batch_dims + c];
    }
    offsets[t] = offset;
  }
  return offsets;
}

}  // namespace ovfix::exec
