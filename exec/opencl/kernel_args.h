// Small helpers the host code of several ops shares when it checks values and prepares kernel
// arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/opencl/op_context.h"

namespace ovfix::exec::opencl {

// Float data on the device: fp32, or fp16 (stored, or computed in half).
inline bool IsFloat(const ClValue& v) {
  return v.type == DataType::kFloat || v.type == DataType::kFloat16;
}

// Spatial values padded to three (d, h, w) with `fill` in front.
inline cl_int4 Spatial3(const std::vector<int64_t>& v, int fill) {
  cl_int4 out;
  const size_t shift = 3 - v.size();
  for (int i = 0; i < 3; ++i) {
    out.s[i] = i < static_cast<int>(shift) ? fill : static_cast<cl_int>(v[i - shift]);
  }
  out.s[3] = 0;
  return out;
}

}  // namespace ovfix::exec::opencl
