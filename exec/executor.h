// The executor interface, one for every backend (cpu now, opencl next). A Session is made
// from a Graph once (kernels looked up, unsupported ops refused with the node named) and
// run many times on named input tensors.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/model.h"
#include "ir/tensor.h"

namespace ovfix::exec {

enum class Precision {
  kFp32,         // run as typed: float16 tensors are fp16, float tensors fp32
  kFp16Storage,  // every float tensor is also rounded to fp16 when produced; compute in fp32
  kFp16,         // half arithmetic (OpenCL devices with cl_khr_fp16); cpu treats as fp16-storage
};

absl::StatusOr<Precision> ParsePrecision(std::string_view text);
std::string_view PrecisionName(Precision p);

struct SessionOptions {
  std::string backend = "cpu";
  Precision precision = Precision::kFp32;
  int threads = 0;       // 0: one per core
  bool capture = false;  // keep every intermediate value, readable by name after Run
  // cpu: hold float16 values as float tensors of half-representable values while running
  // (kernels compute float16 in float anyway; this saves converting each kernel's inputs
  // and outputs). Inputs, outputs and captured values keep their float16 type; the numbers
  // are the same either way.
  bool widen_float16 = true;
  // cpu: called with each value a node computes, right after the node ran (while the tensor
  // is still in cache); in a body, once per iteration or branch taken. Widened float16
  // values come in their float form.
  std::function<void(const Value& value, const Tensor& tensor)> on_value;
  // cpu: called after each node ran with its wall time in milliseconds (a node the plan
  // fused into its producer is timed with it; a body's nodes once per iteration).
  std::function<void(const Node& node, double ms)> on_node_time;
  int device = -1;  // opencl: device index (-1: $OVFIX_OPENCL_DEVICE, else first GPU)
  // cpu: random ops without a seed attribute draw from this seed (mixed with the node's
  // output name) instead of fresh entropy, so that two sessions agree (validation); 0: off.
  uint64_t random_seed = 0;
  // cpu: kernels keep what they derive from constant weights (packed MatMul/Conv weights) across
  // runs only while the model's weights total at most this many bytes; a larger model has
  // them derived on each run, so its weights are never held a second time in memory.
  size_t kernel_state_budget = size_t{256} << 20;
  // cpu: the caller runs the session once (a validation run): each step of the main graph lets
  // go of what its kernel derived from constant weights once it has run, so that one layer's
  // packed weights are held at a time, not the model's. The same paths and floats as a session
  // that keeps them.
  bool runs_once = false;
  // cpu: the most bytes of released buffers the session keeps for the next tensors of the
  // same size (exec/buffer_recycler.h). A run of a net whose layers all differ in size keeps
  // nearly every buffer it let go of; a caller that holds memory of its own for the run
  // (validation) keeps less.
  size_t recycled_bytes = size_t{1} << 31;
  // cpu: run QDQ convolutions and MatMuls (DequantizeLinear -> Conv/MatMul [-> Relu] ->
  // QuantizeLinear) as one integer QLinearConv/QLinearMatMul each, as onnxruntime does
  // (exec/qdq_fusion.h); in fp32 without capture or on_value only. False runs the graph as
  // written.
  bool fuse_qdq = true;
  // cpu: the producers of a Concat's inputs write straight into their ranges of its output
  // where the Concat lays them out back to back (exec/concat_in_place.h), from the second run
  // on; the same bytes either way. In fp32 without capture or on_value only (as the fusions).
  bool concat_in_place = true;
  // Set by the session, not by callers: in the fp16 precisions, a model that declares float16
  // data itself (a converted one; ir DeclaresFloat16) keeps its float32 values float32, as a
  // backend running it as typed does, and only its float16 values are half (computed in half
  // arithmetic in fp16). Its fp32 islands are what the conversion kept out of fp16 on
  // purpose; forcing them into half would report overflows the backend never sees.
  bool float32_as_typed = false;
  // In the fp16 precisions, round float32 values to half even in a model that declares
  // float16: what a backend that ignores fp32 islands (OpenVINO GPU, ncnn on Vulkan with fp16
  // storage) does with the model's Casts to float.
  bool islands_ignored = false;

  // Whether float32 values are rounded to (stored as) half: the fp16 precisions, unless the
  // model is typed float16 itself.
  bool RoundsFloat32() const { return precision != Precision::kFp32 && !float32_as_typed; }
};

// `options` with float32_as_typed set for `model` (sessions call it when they are created).
SessionOptions ResolvePrecision(const Model& model, SessionOptions options);

using TensorMap = std::map<std::string, Tensor>;

class Session {
 public:
  virtual ~Session() = default;
  // Runs the graph. `inputs` holds every graph input that is not an initializer (inputs
  // that are also initializers may be overridden). Returns the graph outputs in order.
  virtual absl::StatusOr<std::vector<Tensor>> Run(const TensorMap& inputs) = 0;
  // After a Run with capture on: every value computed (and every input and initializer),
  // by name.
  virtual const TensorMap& captured() const = 0;
  const SessionOptions& options() const { return options_; }
  // Remarks a user should see (e.g. nodes an opencl session ran on the CPU, and why).
  virtual std::vector<std::string> notes() const { return PrecisionNotes(); }

 protected:
  // What the precision means for this model, when it is not the plain one.
  std::vector<std::string> PrecisionNotes() const;

  SessionOptions options_;
};

// Makes a session for `model`'s main graph. The model must outlive the session.
absl::StatusOr<std::unique_ptr<Session>> CreateSession(const Model& model,
                                                       const SessionOptions& options);

}  // namespace ovfix::exec
