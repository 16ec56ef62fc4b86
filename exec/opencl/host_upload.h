// Small host-made tables (per-axis taps, offsets, prefix counts) uploaded to the device for
// one launch. Never empty: a zero-size buffer is an error in OpenCL.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/opencl/op_context.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {

template <typename T>
absl::StatusOr<std::shared_ptr<cl::Buffer>> UploadVector(OpContext& ctx,
                                                         const std::vector<T>& values) {
  const size_t bytes = std::max<size_t>(values.size(), 1) * sizeof(T);
  OVFIX_ASSIGN_OR_RETURN(auto buffer, ctx.rt.AllocateShared(bytes));
  OVFIX_RETURN_IF_ERROR(ctx.rt.Write(*buffer, values.data(), values.size() * sizeof(T)));
  return buffer;
}

// The build option that names the storage word of a value (`WORD=uint` for 4-byte elements):
// kernels that only move elements copy them as words, exact for every type.
inline std::string WordOption(const ClValue& v) {
  switch (v.device_element_size()) {
    case 1:
      return "-DWORD=uchar";
    case 2:
      return "-DWORD=ushort";
    case 4:
      return "-DWORD=uint";
    default:
      return "-DWORD=ulong";
  }
}

}  // namespace ovfix::exec::opencl
