// Registration of the kernels of the default domain that move or make data without float
// arithmetic: they run float16 as stored (Float16Mode::kNative), each from its first opset to
// kLatestOpset. One row per kernel: op type, first opset, function.
#pragma once

#include <initializer_list>
#include <string_view>
#include <vector>

#include "exec/kernel.h"

namespace ovfix::exec {

struct NativeKernel {
  std::string_view op_type;
  int since_version;
  KernelFn fn;
};

inline void AddNativeKernels(std::vector<KernelDef>& table,
                             std::initializer_list<NativeKernel> kernels) {
  for (const NativeKernel& k : kernels) {
    table.push_back({"", k.op_type, k.since_version, kLatestOpset, k.fn, Float16Mode::kNative});
  }
}

}  // namespace ovfix::exec
