// The opencl backend's Session. Values stay on the device between ops; an op without an
// OpenCL kernel for its configuration runs on its CPU kernel (inputs read back, outputs
// written again), and the session sums such nodes up in one line of notes() and, for callers
// that must refuse them (--strict-device), in DevicePlacementOf().
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"

namespace ovfix::exec::opencl {

absl::StatusOr<std::unique_ptr<Session>> CreateOpenclSession(const Model& model,
                                                             const SessionOptions& options);

// A node an opencl session ran on its CPU kernel, and why.
struct CpuFallback {
  std::string node;     // Node::Describe()
  std::string op_type;  // "Transpose"
  std::string reason;   // "no OpenCL kernel", or why the op's kernel declined the node
};

// Where an opencl session ran the nodes of its runs so far (subgraph nodes included).
// Integer shape arithmetic whose inputs only live on the host (Shape -> Gather -> Concat) is
// computed there and counted in `host`, not as a fallback.
struct DevicePlacement {
  int nodes = 0;  // in the main graph and every subgraph
  int host = 0;   // of those, nodes run on the host as shape arithmetic (Constant nodes aside)
  std::vector<CpuFallback> cpu;  // each node once, in the order it first ran on the CPU

  // "3 of 120 nodes runs on the CPU: Transpose x2 (no OpenCL kernel), Resize (antialias)";
  // empty when nothing fell back.
  std::string Summary() const;
};

// `session`'s placement when it is an opencl session, else nullopt.
std::optional<DevicePlacement> DevicePlacementOf(const Session& session);

}  // namespace ovfix::exec::opencl
