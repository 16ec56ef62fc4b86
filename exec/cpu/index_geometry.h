// The index arithmetic of Gather*, Scatter* and their *Elements / *ND forms: which data offset
// each index (or index tuple) addresses. The CPU kernels and the OpenCL ones share it, so both
// backends wrap negative indices and refuse out-of-range ones alike.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "exec/kernel.h"

namespace ovfix::exec {

// Maps index i in [-limit, limit) to [0, limit); false when outside.
bool WrapIndex(int64_t& i, int64_t limit);

// `axis` in [-rank, rank) as a non-negative axis.
absl::StatusOr<int64_t> NormalizeAxis(const KernelContext& ctx, int64_t axis, int64_t rank);

// For the *Elements ops: indices of the same rank as data, no dim larger than data's except
// along `axis` (where the values are indices instead).
absl::Status CheckElementsShapes(const KernelContext& ctx, const std::vector<int64_t>& data,
                                 const std::vector<int64_t>& indices, int64_t axis);

// The data offset each element of the indices (values `idx`, dims `indices`) addresses along
// `axis` (GatherElements and ScatterElements).
absl::StatusOr<std::vector<int64_t>> ElementOffsets(const KernelContext& ctx,
                                                    const std::vector<int64_t>& data,
                                                    const std::vector<int64_t>& indices,
                                                    std::vector<int64_t> idx, int64_t axis);

// For GatherND/ScatterND: the data offset of the slice each index tuple (the last dim of the
// indices) addresses, after `batch_dims` leading dims shared by data and indices.
absl::StatusOr<std::vector<int64_t>> TupleOffsets(const KernelContext& ctx,
                                                  const std::vector<int64_t>& data,
                                                  const std::vector<int64_t>& indices,
                                                  const std::vector<int64_t>& idx,
                                                  int64_t batch_dims);

}  // namespace ovfix::exec
