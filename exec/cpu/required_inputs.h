// The check of kernels whose inputs are all required (QLinearConv, QLinearMatMul).
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "exec/kernel.h"

namespace ovfix::exec {

// OK when the node has inputs 0 to count - 1; else an error naming the first it lacks.
inline absl::Status RequireInputs(const KernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.has_input(i)) return ctx.Error("missing input ", i);
  }
  return absl::OkStatus();
}

}  // namespace ovfix::exec
