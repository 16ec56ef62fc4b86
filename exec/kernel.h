// The kernel interface shared by every CPU kernel: a kernel reads its node's attributes and
// input tensors from a KernelContext and fills the outputs. Kernels are listed in the kernel
// table (exec/kernel_table.cc) by (domain, op type, opset range).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "exec/buffer_recycler.h"
#include "exec/fused_activation.h"
#include "exec/thread_pool.h"
#include "ir/node.h"
#include "ir/tensor.h"
#include "ir/value.h"

namespace ovfix {
class Graph;
}

namespace ovfix::exec {

// Whether `v` holds the same tensor on every run of a session: an initializer that no graph
// input can override, the output of a Constant node (how many exporters write the weights of
// an If or Loop body), or what a data-movement, Cast or DequantizeLinear node makes of such
// values alone (weights a QDQ model keeps quantized, float16 weights cast to float, weights
// transposed or reshaped), a few such nodes deep.
inline bool IsRunConstant(const Value* v, int depth = 0) {
  if (v == nullptr || v->is_graph_input()) return false;
  if (v->is_initializer()) return true;
  const Node* producer = v->producer();
  if (producer == nullptr || !(producer->domain().empty() || producer->domain() == "ai.onnx") ||
      !producer->subgraphs().empty()) {
    return false;
  }
  const std::string& op = producer->op_type();
  if (op == "Constant") return producer->num_inputs() == 0;
  constexpr int kDepth = 4;
  if (depth >= kDepth || producer->num_outputs() != 1 || producer->num_inputs() == 0) return false;
  if (op != "DequantizeLinear" && op != "Cast" && op != "Identity" && op != "Transpose" &&
      op != "Reshape" && op != "Squeeze" && op != "Unsqueeze") {
    return false;
  }
  for (const Value* in : producer->inputs()) {
    if (in != nullptr && !IsRunConstant(in, depth + 1)) return false;
  }
  return true;
}

struct KernelContext {
  const Node& node;
  int opset = 0;                      // opset version of the node's domain in the model
  std::vector<const Tensor*> inputs;  // nullptr for an omitted optional input
  std::vector<Tensor> outputs;        // one per node output, filled by the kernel
  ThreadPool* pool = nullptr;         // may be null (single thread)
  // Per-node state kept across runs of a session (e.g. packed constant weights). Only use
  // it for data derived from inputs that are initializers (constant across runs).
  std::shared_ptr<void>* state = nullptr;
  // Runs a subgraph of this node (If/Loop/Scan) with the given inputs (the subgraph's formal
  // inputs, in order); outer-scope values are resolved by the session.
  std::function<absl::StatusOr<std::vector<Tensor>>(const Graph&, std::vector<Tensor>)>
      run_subgraph;
  // SessionOptions::random_seed: seeds random ops that have no seed attribute (0: none).
  uint64_t random_seed = 0;
  // Where outputs get their buffers: the session's free buffers of released values (may be
  // null: fresh allocations).
  BufferRecycler* recycler = nullptr;
  // Set when the session fused the activation that alone reads this node's output into the
  // node (only for the op types listed in FusesOutputClamp): applied to output 0.
  FusedActivation fused;
  // Set when the session fused the Add of a constant float vector that alone reads this
  // node's output into the node (only MatMul, with a constant B of at least 2 dims whose last
  // dim the vector's length equals): output 0 + bias along its last dim, added after the
  // product is complete (so rounded as the Add would) and before `fused`.
  const Tensor* fused_bias = nullptr;
  // Set when the session folded a BatchNormalization (and its clamp) that alone fed input 0
  // into the node (only Conv, exec/plan_fusion.h): input 0 is that BatchNormalization's input,
  // to be read through the map of each channel.
  const ChannelAffine* input_affine = nullptr;
  // Per output, where the session placed it (exec/concat_in_place.h): a slice of a Concat's
  // output that the output is made in when the kernel asks for exactly its size. Empty, or
  // null entries: fresh buffers.
  const std::vector<std::shared_ptr<Buffer>>* destinations = nullptr;

  // A context with no inputs, outputs or session services: for the attribute and geometry
  // helpers, and for callers that fill in the rest.
  static KernelContext For(const Node& node, int opset) {
    return {node, opset, {}, {}, nullptr, nullptr, {}, 0, nullptr, {}, nullptr, nullptr, nullptr};
  }

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor& input(size_t i) const { return *inputs[i]; }
  // The input is the same tensor on every run (IsRunConstant): kernels may keep what they
  // derive from it (packed weights) in `state`.
  bool input_is_constant(size_t i) const { return IsRunConstant(node.input(i)); }
  // Allocates output i (zero-filled) and returns it.
  Tensor& Output(size_t i, DataType type, std::vector<int64_t> dims) {
    return NewOutput(i, type, std::move(dims), /*zero=*/true);
  }
  // Allocates output i with unspecified contents: for kernels that write every element.
  Tensor& OutputToOverwrite(size_t i, DataType type, std::vector<int64_t> dims) {
    return NewOutput(i, type, std::move(dims), /*zero=*/false);
  }
  // An InvalidArgument error that names the node: "Gather 'g1': indices out of range".
  // The allocation behind Output and OutputToOverwrite.
  Tensor& NewOutput(size_t i, DataType type, std::vector<int64_t> dims, bool zero) {
    if (type == DataType::kString) {
      outputs[i] = Tensor(type, std::move(dims));
    } else {
      const size_t bytes = StorageBytes(type, Tensor::NumElements(dims));
      if (destinations != nullptr && i < destinations->size() && (*destinations)[i] != nullptr &&
          (*destinations)[i]->size() == bytes) [[unlikely]] {
        outputs[i] = Tensor(type, std::move(dims), (*destinations)[i]);
        if (zero) std::memset(outputs[i].raw(), 0, bytes);
        return outputs[i];
      }
      outputs[i] =
          Tensor(type, std::move(dims),
                 recycler != nullptr ? recycler->Take(bytes, zero) : Buffer::Allocate(bytes, zero));
    }
    return outputs[i];
  }
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", args...));
  }
};

using KernelFn = absl::Status (*)(KernelContext&);

// The engine of a random op: from its seed attribute when it has one (`node_seed`), else
// from the session's random_seed and the node's first output name (the same draws for the
// same node in every session with that seed), else from std::random_device.
std::mt19937_64 RandomEngine(const KernelContext& ctx, std::optional<uint64_t> node_seed);

// How the session hands float16 tensors to a kernel.
enum class Float16Mode {
  kNative,   // the kernel handles float16 itself (type-generic kernels: shape ops, Cast)
  kAsFloat,  // the session converts float16 inputs to float and float outputs back
};

struct KernelDef {
  std::string_view domain;  // "" for the default ONNX domain
  std::string_view op_type;
  int since_version;  // first opset this kernel implements
  int until_version;  // last opset (inclusive)
  KernelFn fn;
  Float16Mode float16 = Float16Mode::kAsFloat;
  // The input whose buffer the session may offer as output 0's (KernelContext::destinations)
  // when the step reads that input last and nothing else holds its buffer; the kernel takes
  // it only where that gives the bits it writes into a buffer of its own. -1: none.
  int overwritable_input = -1;
};

constexpr int kLatestOpset = 26;

// Whether the kernel of this op honours KernelContext::fused (the session then
// fuses a following Relu or Clip into it).
bool FusesOutputClamp(std::string_view domain, std::string_view op_type);
// Whether the kernel of this op applies KernelContext::fused_bias.
bool FusesOutputBias(std::string_view domain, std::string_view op_type);

// Clamps `n` floats in place to [lo, hi] (the unfused fallback of a fused clamp).
void ClampFloats(float* data, int64_t n, float lo, float hi, ThreadPool* pool);
// x * min(max(alpha * x + beta, 0), 1) in place (the unfused fallback of a fused hard swish).
void HardSwishFloats(float* data, int64_t n, float alpha, float beta, ThreadPool* pool);
// A fused activation over `n` finished outputs in place: its clamp, then its hard swish.
void ActivateFloats(float* data, int64_t n, const FusedActivation& activation, ThreadPool* pool);

// Looks a kernel up; nullptr when none covers (domain, op, opset).
const KernelDef* FindKernel(std::string_view domain, std::string_view op_type, int opset);

// Kernel groups, one per file in exec/cpu/; kernel_table.cc lists them.
void AddElementwiseKernels(std::vector<KernelDef>& table);
void AddMathKernels(std::vector<KernelDef>& table);         // MatMul, Gemm, Conv, pooling...
void AddReduceKernels(std::vector<KernelDef>& table);       // Reduce*, Softmax, norms, ArgMax, TopK
void AddShapeKernels(std::vector<KernelDef>& table);        // Reshape, Gather, Slice, Pad...
void AddMiscKernels(std::vector<KernelDef>& table);         // Resize, Einsum, quantization...
void AddControlFlowKernels(std::vector<KernelDef>& table);  // Constant, If, Loop, Scan
void AddRecurrentKernels(std::vector<KernelDef>& table);    // RNN, GRU, LSTM
void AddLossKernels(std::vector<KernelDef>& table);         // NegativeLogLikelihoodLoss, SCE
void AddDetectionKernels(std::vector<KernelDef>& table);    // NonMaxSuppression
void AddSignalKernels(std::vector<KernelDef>& table);       // Hann/Hamming/BlackmanWindow

}  // namespace ovfix::exec
