#include "exec/opencl/op_context.h"

#include <algorithm>
#include <cstring>

#include "ir/float16.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {

absl::Status EnsureDevice(Runtime& rt, ClValue& v) {
  if (v.device) return absl::OkStatus();
  if (!v.host) return absl::InternalError("value has neither host nor device data");
  if (v.type == DataType::kString) return absl::UnimplementedError("string tensors");
  OVFIX_ASSIGN_OR_RETURN(v.device, rt.AllocateShared(v.device_bytes()));
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
    OVFIX_RETURN_IF_ERROR(rt.Read(*v.device, half.raw(), v.device_bytes()));
    t = ConvertTensor(half, DataType::kFloat);
  } else if (auto s = rt.Read(*v.device, t.raw(), v.device_bytes()); !s.ok()) {
    return s;
  }
  v.host = std::move(t);
  return absl::OkStatus();
}

absl::StatusOr<cl::Buffer*> OpContext::Device(size_t i) {
  OVFIX_RETURN_IF_ERROR(EnsureDevice(rt, *inputs[i]));
  return inputs[i]->device.get();
}

absl::StatusOr<cl::Buffer*> OpContext::DeviceOr(size_t i, cl::Buffer* absent) {
  return has_input(i) ? Device(i) : absent;
}

absl::StatusOr<const Tensor*> OpContext::Host(size_t i) {
  OVFIX_RETURN_IF_ERROR(EnsureHost(rt, *inputs[i]));
  return &*inputs[i]->host;
}

absl::StatusOr<ClValue*> OpContext::NewOutput(size_t i, DataType type, std::vector<int64_t> dims) {
  ClValue& out = outputs[i];
  out = ClValue{};
  out.type = type;
  out.dims = std::move(dims);
  out.half = StoresHalf(type);
  OVFIX_ASSIGN_OR_RETURN(out.device, rt.AllocateShared(out.device_bytes()));
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

std::string OpContext::Options(std::initializer_list<std::pair<const char*, const ClValue*>> args,
                               const std::string& extra) const {
  const ClValue* computed = nullptr;
  for (const auto& [name, value] : args) {
    if (value == nullptr) continue;
    if (computed == nullptr || std::string_view(name) == "Y") computed = value;
  }
  const bool half =
      computed != nullptr ? HalfArithmetic(computed->type) : HalfArithmetic(DataType::kFloat16);
  std::string options = half ? "-DUSE_HALF_ARITHMETIC" : "";
  for (const auto& [name, value] : args) {
    if (value != nullptr && value->half) absl::StrAppend(&options, " -D", name, "_HALF");
  }
  if (!extra.empty()) absl::StrAppend(&options, " ", extra);
  return options;
}

absl::StatusOr<std::string> ElementBitsOption(const OpContext& ctx, const ClValue& v) {
  if (v.type == DataType::kString) return ctx.Unsupported("string tensors");
  switch (v.device_element_size()) {
    case 1:
      return std::string("-DT=uchar");
    case 2:
      return std::string("-DT=ushort");
    case 4:
      return std::string("-DT=uint");
    case 8:
      return std::string("-DT=ulong");
    default:
      return ctx.Unsupported(std::string(DataTypeName(v.type)), " elements");
  }
}

absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    const OpContext& ctx, std::initializer_list<const std::vector<int64_t>*> shapes) {
  size_t rank = 0;
  for (const auto* dims : shapes) rank = std::max(rank, dims->size());
  if (rank > kMaxBroadcastRank) return ctx.Unsupported("rank above 8");
  std::vector<int64_t> out(rank, 1);
  for (const auto* dims : shapes) {
    const size_t shift = rank - dims->size();
    for (size_t i = 0; i < dims->size(); ++i) {
      const int64_t d = (*dims)[i];
      int64_t& o = out[shift + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
      } else {
        return ctx.Error("shapes cannot be broadcast (", d, " vs ", o, ")");
      }
    }
  }
  return out;
}

cl_int8 PaddedDims(const std::vector<int64_t>& dims) {
  cl_int8 out;
  const size_t shift = kMaxBroadcastRank - dims.size();
  for (int i = 0; i < kMaxBroadcastRank; ++i) {
    out.s[i] = i < static_cast<int>(shift) ? 1 : static_cast<cl_int>(dims[i - shift]);
  }
  return out;
}

cl_int8 BroadcastStrides(const std::vector<int64_t>& dims, const std::vector<int64_t>& out) {
  cl_int8 strides;
  for (int i = 0; i < kMaxBroadcastRank; ++i) strides.s[i] = 0;
  int64_t stride = 1;
  const size_t shift = kMaxBroadcastRank - dims.size();
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    const int64_t d = dims[i];
    const int64_t o = out[out.size() - dims.size() + i];
    strides.s[shift + i] = (d == 1 && o != 1) ? 0 : static_cast<cl_int>(stride);
    stride *= d;
  }
  return strides;
}

}  // namespace ovfix::exec::opencl
