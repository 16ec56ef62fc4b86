// Split's part sizes along its axis: given (the `split` input or attribute), as equal as
// possible (opset 18's num_outputs), or equal. The CPU kernel and the OpenCL one share it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/kernel.h"

namespace ovfix::exec {

// The sizes of `parts` outputs of an axis of length `dim`, checked to be non-negative and to
// sum to `dim`.
absl::StatusOr<std::vector<int64_t>> SplitSizes(const KernelContext& ctx, int64_t dim,
                                                int64_t parts,
                                                std::optional<std::vector<int64_t>> given);

}  // namespace ovfix::exec
