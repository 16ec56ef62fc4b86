// The OpenCL side of the opencl backend: device discovery, one context and in-order queue per
// session, programs built from the embedded .cl sources once per (file, build options) and
// cached, and OpenCL error codes turned into messages that name the device.
#pragma once

#define CL_HPP_TARGET_OPENCL_VERSION 120
#define CL_HPP_MINIMUM_OPENCL_VERSION 120
#include <CL/opencl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ovfix::exec::opencl {

struct DeviceInfo {
  int index = -1;  // position in ListDevices()
  std::string name;
  std::string platform;
  std::string version;
  bool gpu = false;
  bool fp16 = false;  // advertises cl_khr_fp16 (see Runtime::HalfArithmetic for the rest)
  uint64_t global_memory = 0;
  int compute_units = 0;
};

// Every device of every platform, in platform order.
absl::StatusOr<std::vector<DeviceInfo>> ListDevices();
// "CL_OUT_OF_RESOURCES (-5)".
std::string ErrorName(cl_int error);

// The results of kernels/half_probe.cl (which Runtime::HalfArithmetic runs) checked against
// what half arithmetic gives: OK, or what gave it away (e.g. `half` computed in float).
constexpr size_t kHalfProbeOutputs = 13;
absl::Status CheckHalfProbe(std::span<const float> out);

class Runtime {
 public:
  // device_index < 0: $OVFIX_OPENCL_DEVICE if set, else the first GPU, else device 0.
  static absl::StatusOr<std::unique_ptr<Runtime>> Create(int device_index);
  // Waits for every queued command. Work still in flight when a process exits is compiled
  // and run by PoCL's driver threads while exit() tears down LLVM's pass registry, which
  // aborts the process ("Failed to create kernel compiler pass inline-kernels"); a kernel
  // whose result is never read (one feeding an empty output) would be such work.
  ~Runtime();

  const DeviceInfo& device() const { return info_; }
  cl::Context& context() { return context_; }
  cl::CommandQueue& queue() { return queue_; }

  // A kernel from an embedded .cl file built with `options` (e.g. "-DA_HALF"). Programs are
  // cached by (file, options) and kernel objects by (program, name): every call for the same
  // kernel returns the same object, so a launcher sets all its arguments right before it
  // enqueues (an enqueue captures them).
  absl::StatusOr<cl::Kernel> GetKernel(std::string_view file, std::string_view kernel,
                                       const std::string& options);
  absl::StatusOr<cl::Buffer> Allocate(size_t bytes);
  // A buffer of `bytes` that goes back to the runtime's free list when the last reference
  // is dropped, for the next request of the same size (in this run or the next): values of
  // a run are mostly the same sizes as the last run's, and a fresh buffer per op output cost
  // more than small kernels. Reuse is safe on the in-order queue: a kernel that writes the
  // reused buffer is queued after every command that read it before.
  absl::StatusOr<std::shared_ptr<cl::Buffer>> AllocateShared(size_t bytes);
  absl::Status Write(const cl::Buffer& buffer, const void* data, size_t bytes);
  absl::Status Read(const cl::Buffer& buffer, void* data, size_t bytes);
  // Copies bytes between buffers on the device (queued in order, no host transfer).
  absl::Status Copy(const cl::Buffer& from, size_t from_offset, const cl::Buffer& to,
                    size_t to_offset, size_t bytes);
  // Enqueues a 1-D/2-D/3-D range; `what` names the op/node for error messages.
  absl::Status Enqueue(cl::Kernel& kernel, const cl::NDRange& global, const std::string& what);
  absl::Status Finish();

  // OK when the fp16 precision (half arithmetic) can run here: the device advertises
  // cl_khr_fp16, or, a GPU that does not (NVIDIA's driver has half arithmetic without the
  // extension string), builds a probe kernel with the math functions the fp16 kernels use and
  // computes what half arithmetic gives. Probed once per runtime; the error says why not.
  absl::Status HalfArithmetic();
  // How half arithmetic was established: "advertised (cl_khr_fp16)" or "probed (...)".
  const std::string& half_arithmetic_source() const { return half_source_; }

  // "OpenCL device 'NAME': " + message.
  absl::Status Error(cl_int code, const std::string& what) const;

 private:
  DeviceInfo info_;
  cl::Device device_;
  cl::Context context_;
  cl::CommandQueue queue_;
  std::map<std::string, cl::Program> programs_;
  std::map<std::string, cl::Kernel> kernels_;
  // Shared with the deleters of AllocateShared's buffers, which may outlive the runtime.
  struct FreeBuffers {
    std::mutex mutex;
    std::map<size_t, std::vector<cl::Buffer>> by_size;
    size_t bytes = 0;
  };
  std::shared_ptr<FreeBuffers> free_buffers_ = std::make_shared<FreeBuffers>();
  std::optional<absl::Status> half_status_;
  std::string half_source_;
};

}  // namespace ovfix::exec::opencl
