#include "exec/opencl/opencl_runtime.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace ovfix {
const std::vector<std::pair<std::string_view, std::string_view>>& OpenclKernelSources();
}

namespace ovfix::exec::opencl {
namespace {

struct Found {
  cl::Device device;
  DeviceInfo info;
};

absl::StatusOr<std::vector<Found>> Enumerate() {
  std::vector<cl::Platform> platforms;
  cl_int err = cl::Platform::get(&platforms);
  if (err != CL_SUCCESS || platforms.empty()) {
    return absl::UnavailableError(
        "no OpenCL platform found (install an OpenCL driver, e.g. pocl-opencl-icd)");
  }
  std::vector<Found> out;
  for (auto& platform : platforms) {
    std::vector<cl::Device> devices;
    if (platform.getDevices(CL_DEVICE_TYPE_ALL, &devices) != CL_SUCCESS) continue;
    for (auto& d : devices) {
      Found f;
      f.device = d;
      f.info.index = static_cast<int>(out.size());
      f.info.name = d.getInfo<CL_DEVICE_NAME>();
      f.info.platform = platform.getInfo<CL_PLATFORM_NAME>();
      f.info.version = d.getInfo<CL_DEVICE_VERSION>();
      f.info.gpu = (d.getInfo<CL_DEVICE_TYPE>() & CL_DEVICE_TYPE_GPU) != 0;
      f.info.fp16 = absl::StrContains(d.getInfo<CL_DEVICE_EXTENSIONS>(), "cl_khr_fp16");
      f.info.global_memory = d.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
      f.info.compute_units = static_cast<int>(d.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>());
      // Trim the NUL some drivers leave in strings.
      for (auto* s : {&f.info.name, &f.info.platform, &f.info.version}) {
        while (!s->empty() && s->back() == '\0') s->pop_back();
      }
      out.push_back(std::move(f));
    }
  }
  if (out.empty()) return absl::UnavailableError("no OpenCL device found");
  return out;
}

}  // namespace

std::string ErrorName(cl_int error) {
  const char* name = "unknown error";
  switch (error) {
    case CL_DEVICE_NOT_FOUND:
      name = "CL_DEVICE_NOT_FOUND";
      break;
    case CL_DEVICE_NOT_AVAILABLE:
      name = "CL_DEVICE_NOT_AVAILABLE";
      break;
    case CL_COMPILER_NOT_AVAILABLE:
      name = "CL_COMPILER_NOT_AVAILABLE";
      break;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      name = "CL_MEM_OBJECT_ALLOCATION_FAILURE";
      break;
    case CL_OUT_OF_RESOURCES:
      name = "CL_OUT_OF_RESOURCES";
      break;
    case CL_OUT_OF_HOST_MEMORY:
      name = "CL_OUT_OF_HOST_MEMORY";
      break;
    case CL_BUILD_PROGRAM_FAILURE:
      name = "CL_BUILD_PROGRAM_FAILURE";
      break;
    case CL_INVALID_VALUE:
      name = "CL_INVALID_VALUE";
      break;
    case CL_INVALID_BUFFER_SIZE:
      name = "CL_INVALID_BUFFER_SIZE";
      break;
    case CL_INVALID_KERNEL_NAME:
      name = "CL_INVALID_KERNEL_NAME";
      break;
    case CL_INVALID_KERNEL_ARGS:
      name = "CL_INVALID_KERNEL_ARGS";
      break;
    case CL_INVALID_ARG_INDEX:
      name = "CL_INVALID_ARG_INDEX";
      break;
    case CL_INVALID_ARG_VALUE:
      name = "CL_INVALID_ARG_VALUE";
      break;
    case CL_INVALID_ARG_SIZE:
      name = "CL_INVALID_ARG_SIZE";
      break;
    case CL_INVALID_WORK_GROUP_SIZE:
      name = "CL_INVALID_WORK_GROUP_SIZE";
      break;
    case CL_INVALID_WORK_ITEM_SIZE:
      name = "CL_INVALID_WORK_ITEM_SIZE";
      break;
    case CL_INVALID_GLOBAL_WORK_SIZE:
      name = "CL_INVALID_GLOBAL_WORK_SIZE";
      break;
    case CL_INVALID_MEM_OBJECT:
      name = "CL_INVALID_MEM_OBJECT";
      break;
    case CL_INVALID_BUILD_OPTIONS:
      name = "CL_INVALID_BUILD_OPTIONS";
      break;
    case CL_INVALID_PROGRAM_EXECUTABLE:
      name = "CL_INVALID_PROGRAM_EXECUTABLE";
      break;
    case CL_INVALID_COMMAND_QUEUE:
      name = "CL_INVALID_COMMAND_QUEUE";
      break;
    default:
      break;
  }
  return absl::StrCat(name, " (", error, ")");
}

absl::StatusOr<std::vector<DeviceInfo>> ListDevices() {
  OVFIX_ASSIGN_OR_RETURN(auto found, Enumerate());
  std::vector<DeviceInfo> out;
  for (auto& f : found) out.push_back(f.info);
  return out;
}

absl::StatusOr<std::unique_ptr<Runtime>> Runtime::Create(int device_index) {
  OVFIX_ASSIGN_OR_RETURN(auto found, Enumerate());
  if (device_index < 0) {
    if (const char* env = std::getenv("OVFIX_OPENCL_DEVICE"); env != nullptr && *env) {
      if (!absl::SimpleAtoi(env, &device_index)) {
        return absl::InvalidArgumentError(
            absl::StrCat("OVFIX_OPENCL_DEVICE='", env, "' is not a device number"));
      }
    }
  }
  if (device_index < 0) {
    device_index = 0;
    for (const auto& f : found) {
      if (f.info.gpu) {
        device_index = f.info.index;
        break;
      }
    }
  }
  if (device_index >= static_cast<int>(found.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no OpenCL device ", device_index, " (there are ", found.size(), "; see 'ovfix devices')"));
  }
  auto rt = std::unique_ptr<Runtime>(new Runtime());
  rt->device_ = found[device_index].device;
  rt->info_ = found[device_index].info;
  cl_int err;
  rt->context_ = cl::Context(rt->device_, nullptr, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) return rt->Error(err, "creating a context");
  rt->queue_ = cl::CommandQueue(rt->context_, rt->device_, 0, &err);
  if (err != CL_SUCCESS) return rt->Error(err, "creating a queue");
  return rt;
}

Runtime::~Runtime() {
  if (queue_()) queue_.finish();
}

absl::Status Runtime::Error(cl_int code, const std::string& what) const {
  return absl::InternalError(
      absl::StrCat("OpenCL device '", info_.name, "': ", what, ": ", ErrorName(code)));
}

absl::StatusOr<cl::Kernel> Runtime::GetKernel(std::string_view file, std::string_view kernel,
                                              const std::string& options) {
  // One kernel object per (program, name), reused by every launch: creating one per launch
  // cost more than the launch itself for small ops. Arguments are set right before each
  // enqueue, which captures them.
  const std::string key = absl::StrCat(std::string(file), "|", options);
  std::string kernel_key = absl::StrCat(key, "|", std::string(kernel));
  if (auto cached = kernels_.find(kernel_key); cached != kernels_.end()) return cached->second;
  auto it = programs_.find(key);
  if (it == programs_.end()) {
    std::string_view common, source;
    for (const auto& [name, text] : OpenclKernelSources()) {
      if (name == "common.h.cl") common = text;
      if (name == file) source = text;
    }
    if (source.empty()) {
      return absl::InternalError(
          absl::StrCat("no embedded OpenCL source '", std::string(file), "'"));
    }
    const std::string full = absl::StrCat(std::string(common), "\n", std::string(source));
    cl_int err;
    cl::Program program(context_, full, false, &err);
    if (err != CL_SUCCESS) return Error(err, absl::StrCat("creating program ", std::string(file)));
    err = program.build({device_}, (options + " -cl-std=CL1.2").c_str());
    if (err != CL_SUCCESS) {
      std::string log = program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device_);
      if (log.size() > 2000) log = log.substr(0, 2000) + "...";
      for (char& c : log) {
        if (c == '\n') c = ' ';
      }
      return Error(err,
                   absl::StrCat("building ", std::string(file), " with '", options, "': ", log));
    }
    it = programs_.emplace(key, std::move(program)).first;
  }
  cl_int err;
  cl::Kernel k(it->second, std::string(kernel).c_str(), &err);
  if (err != CL_SUCCESS) {
    return Error(err, absl::StrCat("kernel ", std::string(kernel), " in ", std::string(file)));
  }
  return kernels_.emplace(std::move(kernel_key), std::move(k)).first->second;
}

absl::Status CheckHalfProbe(std::span<const float> out) {
  if (out.size() != kHalfProbeOutputs) {
    return absl::InternalError(absl::StrCat("the probe gave ", out.size(), " results"));
  }
  // 1 + 2^-12 is 1 in half: anything else means `half` is computed in float.
  if (out[0] != 1.0f) {
    return absl::FailedPreconditionError(
        "`half` is computed in float (1 + 2^-12 gave more than 1)");
  }
  const double x = 0.5;
  const double expected[kHalfProbeOutputs] = {
      1.0, x / 3, std::exp(x), std::log(x), std::sqrt(x), std::tanh(x), x * x,
      x,   1.0,   1.0,         1.0,         std::erf(x),  1.0};
  const char* names[kHalfProbeOutputs] = {"add",  "divide", "exp",       "log",   "sqrt",
                                          "tanh", "pow",    "fabs",      "floor", "ceil",
                                          "max",  "erf",    "vector add"};
  for (size_t i = 1; i < kHalfProbeOutputs; ++i) {
    // Two half ulps: a half math function may be off by one, and rounds once more to half.
    if (!(std::abs(out[i] - expected[i]) <= 2.0 / 1024 * std::abs(expected[i]))) {
      return absl::FailedPreconditionError(
          absl::StrCat("the probe's half ", names[i], " gave ", out[i], " for ", expected[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status Runtime::HalfArithmetic() {
  if (half_status_.has_value()) return *half_status_;
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("OpenCL device '", info_.name,
                                                   "' has no cl_khr_fp16 (half arithmetic)", why,
                                                   "; use the fp16-storage precision instead"));
  };
  half_status_ = [&]() -> absl::Status {
    if (info_.fp16) {
      half_source_ = "advertised (cl_khr_fp16)";
      return absl::OkStatus();
    }
    // CPU drivers (PoCL) that lack the extension have no half arithmetic to find.
    if (!info_.gpu) return fail("");
    auto kernel = GetKernel("half_probe.cl", "half_probe", "-DUSE_HALF_ARITHMETIC");
    if (!kernel.ok()) {
      return fail(absl::StrCat(": the probe kernel did not build: ", kernel.status().message()));
    }
    const float in[11] = {1.0f, 1.0f / 4096, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    float out[kHalfProbeOutputs] = {};
    OVFIX_ASSIGN_OR_RETURN(cl::Buffer in_buffer, Allocate(sizeof(in)));
    OVFIX_ASSIGN_OR_RETURN(cl::Buffer out_buffer, Allocate(sizeof(out)));
    OVFIX_RETURN_IF_ERROR(Write(in_buffer, in, sizeof(in)));
    if (kernel->setArg(0, in_buffer) != CL_SUCCESS || kernel->setArg(1, out_buffer) != CL_SUCCESS) {
      return fail(": the probe kernel's arguments were refused");
    }
    OVFIX_RETURN_IF_ERROR(Enqueue(*kernel, cl::NDRange(1), "the half-arithmetic probe"));
    OVFIX_RETURN_IF_ERROR(Read(out_buffer, out, sizeof(out)));
    if (absl::Status s = CheckHalfProbe(out); !s.ok()) return fail(absl::StrCat(": ", s.message()));
    half_source_ = "probed (the device does not advertise cl_khr_fp16)";
    return absl::OkStatus();
  }();
  return *half_status_;
}

absl::StatusOr<cl::Buffer> Runtime::Allocate(size_t bytes) {
  cl_int err;
  cl::Buffer b(context_, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 4), nullptr, &err);
  if (err != CL_SUCCESS) return Error(err, absl::StrCat("allocating ", bytes, " bytes"));
  return b;
}

absl::StatusOr<std::shared_ptr<cl::Buffer>> Runtime::AllocateShared(size_t bytes) {
  // Free buffers kept at most: beyond this a released buffer is freed (a model whose sizes
  // all differ would otherwise hold every buffer it ever used).
  constexpr size_t kMaxFreeBytes = size_t{1} << 30;
  cl::Buffer buffer;
  {
    std::lock_guard<std::mutex> lock(free_buffers_->mutex);
    auto it = free_buffers_->by_size.find(bytes);
    if (it != free_buffers_->by_size.end() && !it->second.empty()) {
      buffer = std::move(it->second.back());
      it->second.pop_back();
      free_buffers_->bytes -= bytes;
    }
  }
  if (buffer() == nullptr) {
    OVFIX_ASSIGN_OR_RETURN(buffer, Allocate(bytes));
  }
  std::shared_ptr<FreeBuffers> free = free_buffers_;
  return std::shared_ptr<cl::Buffer>(new cl::Buffer(std::move(buffer)),
                                     [free, bytes](cl::Buffer* b) {
                                       {
                                         std::lock_guard<std::mutex> lock(free->mutex);
                                         if (free->bytes + bytes <= kMaxFreeBytes) {
                                           free->by_size[bytes].push_back(std::move(*b));
                                           free->bytes += bytes;
                                         }
                                       }
                                       delete b;
                                     });
}

absl::Status Runtime::Write(const cl::Buffer& buffer, const void* data, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  cl_int err = queue_.enqueueWriteBuffer(buffer, CL_TRUE, 0, bytes, data);
  return err == CL_SUCCESS ? absl::OkStatus() : Error(err, "writing a buffer");
}

absl::Status Runtime::Read(const cl::Buffer& buffer, void* data, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  cl_int err = queue_.enqueueReadBuffer(buffer, CL_TRUE, 0, bytes, data);
  return err == CL_SUCCESS ? absl::OkStatus() : Error(err, "reading a buffer");
}

absl::Status Runtime::Copy(const cl::Buffer& from, size_t from_offset, const cl::Buffer& to,
                           size_t to_offset, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  cl_int err = queue_.enqueueCopyBuffer(from, to, from_offset, to_offset, bytes);
  return err == CL_SUCCESS ? absl::OkStatus() : Error(err, "copying a buffer");
}

absl::Status Runtime::Enqueue(cl::Kernel& kernel, const cl::NDRange& global,
                              const std::string& what) {
  for (size_t i = 0; i < global.dimensions(); ++i) {
    if (global.get()[i] == 0) return absl::OkStatus();  // empty tensor: nothing to do
  }
  cl_int err = queue_.enqueueNDRangeKernel(kernel, cl::NullRange, global, cl::NullRange);
  return err == CL_SUCCESS ? absl::OkStatus() : Error(err, what);
}

absl::Status Runtime::Finish() {
  cl_int err = queue_.finish();
  return err == CL_SUCCESS ? absl::OkStatus() : Error(err, "finishing the queue");
}

}  // namespace ovfix::exec::opencl
