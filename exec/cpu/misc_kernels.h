// The parts of AddMiscKernels (exec/kernel.h), one per file in exec/cpu/: each lists its
// kernels with their opset ranges; misc_ops.cc gathers them.
#pragma once

#include <vector>

#include "exec/kernel.h"

namespace ovfix::exec {

void AddResizeKernels(std::vector<KernelDef>& table);       // resize.cc: Resize, Upsample
void AddEinsumKernels(std::vector<KernelDef>& table);       // einsum.cc
void AddQuantizeKernels(std::vector<KernelDef>& table);     // quantize_ops.cc
void AddQLinearConvKernels(std::vector<KernelDef>& table);  // qlinear_conv.cc
void AddGridSampleKernels(std::vector<KernelDef>& table);   // grid_sample.cc: GridSample, RoiAlign

}  // namespace ovfix::exec
