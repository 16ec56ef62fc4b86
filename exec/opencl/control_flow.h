// If, Loop and Scan in the opencl session. Decisions (which branch, whether to iterate again)
// are made on the host from one-element values read back; the bodies run as subgraphs of the
// session, so their ops run on the device, and values go from one iteration to the next, and
// into stacked scan outputs, as device buffers without a round trip through the host.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "exec/opencl/op_context.h"
#include "ir/node.h"

namespace ovfix::exec::opencl {

struct ControlContext {
  const Node& node;
  int opset;
  Runtime& rt;
  std::vector<ClValue*> inputs;  // nullptr for an omitted optional input
  std::vector<ClValue> outputs;  // one per node output
  // Runs the subgraph held by the GRAPH attribute `attribute` on `args` (its inputs in order).
  std::function<absl::StatusOr<std::vector<ClValue>>(std::string_view attribute,
                                                     std::vector<ClValue> args)>
      run_body;
  // A host value of the session's storage (float rounded to half in fp16 precisions).
  std::function<ClValue(Tensor)> host_value;

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", args...));
  }
};

// If, Loop and Scan (opset 9 and later) run here; other configurations (Scan opset 8) return
// Unimplemented, and the session runs the node's CPU kernel instead.
bool IsControlFlowOp(std::string_view op_type);
absl::Status RunControlFlow(ControlContext& ctx);

}  // namespace ovfix::exec::opencl
