// A normalization's scale or bias (LayerNormalization, RMSNormalization) broadcast to the
// normalized dims, as doubles: the kernels read it once per element of a normalized slice.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "exec/kernel.h"

namespace ovfix::exec {

// `t` broadcast to `dims` (numpy-style, aligned at the right; leading dims of t beyond
// dims' rank must be 1), flattened, as doubles.
absl::StatusOr<std::vector<double>> BroadcastParameter(const KernelContext& ctx, const Tensor& t,
                                                       const std::vector<int64_t>& dims,
                                                       const char* what);

}  // namespace ovfix::exec
