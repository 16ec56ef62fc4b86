// The parts of AddMathKernels (exec/kernel.h), one per file in exec/cpu/: each lists its
// kernels with their opset ranges; matmul.cc gathers them.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/kernel.h"

namespace ovfix::exec {

void AddMatMulKernels(std::vector<KernelDef>& table);         // matmul.cc: MatMul, Gemm
void AddConvKernels(std::vector<KernelDef>& table);           // conv.cc
void AddNhwcKernels(std::vector<KernelDef>& table);           // conv_nhwc.cc
void AddConvTransposeKernels(std::vector<KernelDef>& table);  // conv_transpose.cc
void AddConvIntegerKernels(std::vector<KernelDef>& table);    // conv_integer.cc
void AddPoolingKernels(std::vector<KernelDef>& table);        // pooling.cc
void AddBatchNormKernels(std::vector<KernelDef>& table);      // batch_norm.cc

// y = min(max(x * a + b, lo), hi) over n floats (NaN stays NaN), in one pass, as
// BatchNormalization and its fused clamp compute it (batch_norm.cc); y may be x.
void ScaleShiftClampRange(const float* x, float* y, int64_t n, float a, float b, float lo,
                          float hi);

}  // namespace ovfix::exec
