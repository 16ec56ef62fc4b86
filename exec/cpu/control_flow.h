// Values that are not plain tensors (sequences of tensors, empty optionals) and the ops that
// need them or run subgraphs: If, Loop, Scan, SequenceMap and the Sequence*/Optional* ops.
// The cpu session runs these through ValueContext so sequences can flow through them; the
// KernelFn entries in the kernel table are adapters for tensor-only use (other backends).
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/node.h"
#include "ir/tensor.h"

namespace ovfix {
class Graph;
}

namespace ovfix::exec {

// What one value slot holds while a graph runs. An optional that holds something is just
// that thing (a tensor or a sequence); an empty optional is kNone.
struct RuntimeValue {
  enum class Kind : uint8_t { kUnset, kTensor, kSequence, kNone };
  using Sequence = std::vector<Tensor>;

  Kind kind = Kind::kUnset;
  Tensor tensor;
  std::shared_ptr<const Sequence> sequence;  // shared: inserting copies the vector only

  RuntimeValue() = default;
  explicit RuntimeValue(Tensor t) : kind(Kind::kTensor), tensor(std::move(t)) {}
  static RuntimeValue FromSequence(Sequence s) {
    RuntimeValue v;
    v.kind = Kind::kSequence;
    v.sequence = std::make_shared<const Sequence>(std::move(s));
    return v;
  }
  static RuntimeValue None() {
    RuntimeValue v;
    v.kind = Kind::kNone;
    return v;
  }
  bool is_tensor() const { return kind == Kind::kTensor; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_set() const { return kind != Kind::kUnset; }
};

// "float[2,3]", "sequence(3)", "none".
std::string DescribeRuntimeValue(const RuntimeValue& v);

using SubgraphRunner = std::function<absl::StatusOr<std::vector<RuntimeValue>>(
    const Graph&, std::vector<RuntimeValue>)>;

struct ValueContext {
  const Node& node;
  int opset = 0;
  std::vector<const RuntimeValue*> inputs;  // nullptr for an omitted optional input
  std::vector<RuntimeValue> outputs;        // one per node output
  SubgraphRunner run_subgraph;

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const RuntimeValue& input(size_t i) const { return *inputs[i]; }
  // Input i as a tensor, or an error naming the node when it is missing or not a tensor.
  absl::StatusOr<const Tensor*> TensorInput(size_t i) const;
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", args...));
  }
};

using ValueKernelFn = absl::Status (*)(ValueContext&);

// The value kernel for an op, or nullptr when the op is an ordinary tensor kernel.
ValueKernelFn FindValueKernel(std::string_view domain, std::string_view op_type);

// Registration of the sequence/optional value kernels (exec/cpu/sequence.cc).
struct ValueKernelEntry {
  std::string_view op_type;
  int since_version;
  ValueKernelFn fn;
};
const std::vector<ValueKernelEntry>& SequenceValueKernels();

// Runs a value kernel from an ordinary KernelContext (tensors only): the adapter the kernel
// table holds for If/Loop/Scan.
struct KernelContext;
absl::Status RunValueKernelOnTensors(ValueKernelFn fn, KernelContext& ctx);

// Tensor helpers shared by Loop/Scan/sequence ops (any element type, strings included).
// Element `index` along `axis`, with that axis removed.
absl::StatusOr<Tensor> TakeAlongAxis(const Tensor& t, int64_t axis, int64_t index);
// Stacks equal-shaped tensors on a new axis `axis` (0..rank).
absl::StatusOr<Tensor> StackOnNewAxis(const std::vector<Tensor>& parts, int64_t axis);
// Concatenates along an existing axis.
absl::StatusOr<Tensor> ConcatOnAxis(const std::vector<Tensor>& parts, int64_t axis);
// Slice [begin, end) along axis.
Tensor SliceAxis(const Tensor& t, int64_t axis, int64_t begin, int64_t end);

}  // namespace ovfix::exec
