// The opencl backend's Session. Values stay on the device between ops; an op without an
// OpenCL kernel for its configuration runs on its CPU kernel (inputs read back, outputs
// written again), and the session lists such nodes in notes().
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "exec/executor.h"

namespace ovfix::exec::opencl {

absl::StatusOr<std::unique_ptr<Session>> CreateOpenclSession(const Model& model,
                                                             const SessionOptions& options);

}  // namespace ovfix::exec::opencl
