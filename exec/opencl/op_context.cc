#include "exec/opencl/op_context.h"

#include <cstring>

#include "ir/float16.h"

namespace ovfix::exec::opencl {

absl::Status EnsureDevice(Runtime& rt, ClValue& v) {
  if (v.device) return absl::OkStatus();
  if (!v.host) return absl::InternalError("value has neither host nor device data");
  if (v.type == DataType::kString) return absl::UnimplementedError("string tensors");
  auto buffer = rt.Allocate(v.device_bytes());
  if (!buffer.ok()) return buffer.status();
  v.device = std::make_shared<cl::Buffer>(*std::move(buffer));
  if (v.half && v.type == DataType::kFloat) {
    const Tensor half = ConvertTensor(*v.host, DataType::kFloat16);
    return rt.Write(*v.device, half.raw(), v.device_bytes());
  }
  return rt.Write(*v.device, v.host->raw(), v.device_bytes());
}

absl::Status EnsureHost(Runtime& rt, ClValue& v) {
  if (v.host) return absl::OkStatus();
  if (!v.device) return absl::InternalError("value has neither host nor device data");
  Tensor t(v.type, v.dims);
  if (v.half && v.type == DataType::kFloat) {
    Tensor half(DataType::kFloat16, v.dims);
    if (auto s = rt.Read(*v.device, half.raw(), v.device_bytes()); !s.ok()) return s;
    t = ConvertTensor(half, DataType::kFloat);
  } else if (auto s = rt.Read(*v.device, t.raw(), v.device_bytes()); !s.ok()) {
    return s;
  }
  v.host = std::move(t);
  return absl::OkStatus();
}

absl::StatusOr<cl::Buffer*> OpContext::Device(size_t i) {
  if (auto s = EnsureDevice(rt, *inputs[i]); !s.ok()) return s;
  return inputs[i]->device.get();
}

absl::StatusOr<const Tensor*> OpContext::Host(size_t i) {
  if (auto s = EnsureHost(rt, *inputs[i]); !s.ok()) return s;
  return &*inputs[i]->host;
}

absl::StatusOr<ClValue*> OpContext::NewOutput(size_t i, DataType type, std::vector<int64_t> dims) {
  ClValue& out = outputs[i];
  out = ClValue{};
  out.type = type;
  out.dims = std::move(dims);
  out.half = StoresHalf(type);
  auto buffer = rt.Allocate(out.device_bytes());
  if (!buffer.ok()) return buffer.status();
  out.device = std::make_shared<cl::Buffer>(*std::move(buffer));
  return &out;
}

void OpContext::ViewOutput(size_t i, size_t j, std::vector<int64_t> dims) {
  ClValue& out = outputs[i];
  const ClValue& in = *inputs[j];
  out = ClValue{};
  out.type = in.type;
  out.half = in.half;
  out.device = in.device;
  if (in.host) out.host = in.host->Reshaped(dims);
  out.dims = std::move(dims);
}

std::string OpContext::Options(
    std::initializer_list<std::pair<const char*, const ClValue*>> args,
    const std::string& extra) const {
  std::string options = half_arithmetic() ? "-DUSE_HALF_ARITHMETIC" : "";
  for (const auto& [name, value] : args) {
    if (value != nullptr && value->half) absl::StrAppend(&options, " -D", name, "_HALF");
  }
  if (!extra.empty()) absl::StrAppend(&options, " ", extra);
  return options;
}

}  // namespace ovfix::exec::opencl
