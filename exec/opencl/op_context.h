// What an OpenCL op launcher sees: its node, its inputs as ClValues (asked for on the device
// or on the host as the op needs), outputs to fill, and the runtime to get kernels from.
// A launcher that cannot handle a configuration (an element type, an attribute) returns
// Unsupported(...): the session then runs that node on the CPU kernel and says so.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "exec/opencl/opencl_runtime.h"
#include "ir/node.h"
#include "ir/tensor.h"

namespace ovfix::exec::opencl {

// A value of the opencl session: logical element type and dims, with a host copy, a device
// buffer, or both. Float data is stored on the device as half when `half` is set.
struct ClValue {
  DataType type = DataType::kUndefined;
  std::vector<int64_t> dims;
  bool half = false;
  std::optional<Tensor> host;
  std::shared_ptr<cl::Buffer> device;

  int64_t numel() const { return Tensor::NumElements(dims); }
  size_t device_element_size() const { return half ? 2 : ElementSize(type); }
  size_t device_bytes() const { return static_cast<size_t>(numel()) * device_element_size(); }
};

// Whether a value of this logical type is stored as half on the device in a session with
// these options.
inline bool StoresHalf(const SessionOptions& options, DataType type) {
  return type == DataType::kFloat16 || (type == DataType::kFloat && options.RoundsFloat32());
}

absl::Status EnsureDevice(Runtime& rt, ClValue& v);
absl::Status EnsureHost(Runtime& rt, ClValue& v);

class OpContext {
 public:
  OpContext(const Node& node, int opset, Runtime& rt, const SessionOptions& options)
      : node(node), opset(opset), rt(rt), options(options) {}

  const Node& node;
  const int opset;
  Runtime& rt;
  const SessionOptions& options;  // the session's: precision, float32_as_typed
  std::vector<ClValue*> inputs;   // nullptr for an omitted optional input
  std::vector<ClValue> outputs;   // one per node output

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  ClValue& input(size_t i) { return *inputs[i]; }
  // The input's device buffer (uploaded if needed).
  absl::StatusOr<cl::Buffer*> Device(size_t i);
  // Input i's device buffer, or `absent` when the node omits it (a kernel argument the
  // kernel is told not to read still needs a valid buffer).
  absl::StatusOr<cl::Buffer*> DeviceOr(size_t i, cl::Buffer* absent);
  // The input's host tensor (downloaded if needed): for small shape/axes inputs.
  absl::StatusOr<const Tensor*> Host(size_t i);

  // Whether a tensor of this logical type is stored as half on the device.
  bool StoresHalf(DataType type) const { return opencl::StoresHalf(options, type); }
  // Whether a kernel computing a value of this type runs in half arithmetic.
  bool HalfArithmetic(DataType type) const {
    return options.precision == Precision::kFp16 &&
           (!options.float32_as_typed || type == DataType::kFloat16);
  }
  // A new device output.
  absl::StatusOr<ClValue*> NewOutput(size_t i, DataType type, std::vector<int64_t> dims);
  // Output i shares input j's storage with new dims (Reshape and friends).
  void ViewOutput(size_t i, size_t j, std::vector<int64_t> dims);

  // Build options: "-DA_HALF" for each named float argument stored as half, the arithmetic
  // type (by the type of "Y", else of the first argument), and any extra defines.
  std::string Options(std::initializer_list<std::pair<const char*, const ClValue*>> args,
                      const std::string& extra = "") const;
  absl::StatusOr<cl::Kernel> Kernel(std::string_view file, std::string_view name,
                                    const std::string& options) {
    return rt.GetKernel(file, name, options);
  }
  absl::Status Run(cl::Kernel& kernel, const cl::NDRange& global) {
    return rt.Enqueue(kernel, global, node.Describe());
  }

  template <typename... Args>
  absl::Status Unsupported(const Args&... args) const {
    return absl::UnimplementedError(absl::StrCat(args...));
  }
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", args...));
  }
};

// Sets kernel arguments in order; a failure names the argument.
template <typename... Args>
absl::Status SetArgs(OpContext& ctx, cl::Kernel& kernel, const Args&... args) {
  cl_uint index = 0;
  cl_int err = CL_SUCCESS;
  ((err == CL_SUCCESS ? (err = kernel.setArg(index++, args)) : err), ...);
  if (err != CL_SUCCESS) {
    return ctx.rt.Error(err, absl::StrCat(ctx.node.Describe(), ": kernel argument ", index - 1));
  }
  return absl::OkStatus();
}

// "-DT=uchar/ushort/uint/ulong": a value's elements as the unsigned type of their device size,
// for the kernels of kernels/data.cl that move elements as bits (Unsupported for strings).
absl::StatusOr<std::string> ElementBitsOption(const OpContext& ctx, const ClValue& v);
// Cast of input 0 to `to` where either side is an integer or bool type (ops_data.cc; Cast
// between float storages is an element-wise op, but this converts those too).
absl::Status CastElements(OpContext& ctx, DataType to);

// Numpy broadcasting for kernels that take dims and strides as int8 (rank <= 8, padded with
// leading 1s; see BroadcastOffset in common.h.cl).
constexpr int kMaxBroadcastRank = 8;
// The broadcast of `shapes`, or an error naming the node (Unsupported above rank 8).
absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    const OpContext& ctx, std::initializer_list<const std::vector<int64_t>*> shapes);
cl_int8 PaddedDims(const std::vector<int64_t>& dims);
// Strides of a `dims`-shaped operand over the broadcast dims `out` (0 where it is broadcast).
cl_int8 BroadcastStrides(const std::vector<int64_t>& dims, const std::vector<int64_t>& out);

using OpFn = absl::Status (*)(OpContext&);

struct OpDef {
  std::string_view op_type;
  int since_version;
  int until_version;
  OpFn fn;
};

// The opencl op table (exec/opencl/op_table.cc).
const OpDef* FindOp(std::string_view op_type, int opset);
const std::vector<OpDef>& AllOps();

// Op groups, one per file in exec/opencl/ops_*.cc.
void AddElementwiseOps(std::vector<OpDef>& table);
void AddShapeOps(std::vector<OpDef>& table);
void AddConvOps(std::vector<OpDef>& table);
void AddReduceOps(std::vector<OpDef>& table);
void AddDataOps(std::vector<OpDef>& table);
void AddQuantOps(std::vector<OpDef>& table);
void AddRecurrentOps(std::vector<OpDef>& table);
void AddResizeOps(std::vector<OpDef>& table);
void AddConvTransposeOps(std::vector<OpDef>& table);
void AddDetectionOps(std::vector<OpDef>& table);
void AddModernOps(std::vector<OpDef>& table);

}  // namespace ovfix::exec::opencl
