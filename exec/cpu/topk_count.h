// TopK's k, read and checked the same way by the CPU kernel and the OpenCL one.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "exec/kernel.h"
#include "ir/tensor.h"

namespace ovfix::exec {

// The attribute k before opset 10; from then on input K, `k_input` (null when absent), one
// int64 or int32. Not checked against the axis.
absl::StatusOr<int64_t> ReadTopKCount(const KernelContext& ctx, const Tensor* k_input);

}  // namespace ovfix::exec
