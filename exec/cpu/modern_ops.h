// Kernels of the ops that opsets 18-26 added (written from the ONNX spec; Debian's onnx 1.12
// stops at opset 17). Each modern_*.cc file lists its kernels through one of these; the
// registry (modern_ops_registry.cc) gathers them for the kernel table.
#pragma once

#include <vector>

#include "exec/kernel.h"

namespace ovfix::exec {

// Every kernel below, for exec/kernel_table.cc.
void AddModernOpKernels(std::vector<KernelDef>& table);

void AddModernActivationKernels(std::vector<KernelDef>& table);     // Gelu-20, Swish-24
void AddModernNormalizationKernels(std::vector<KernelDef>& table);  // RMSNorm-23, GroupNorm-21
void AddModernRotaryKernels(std::vector<KernelDef>& table);         // RotaryEmbedding-23
void AddModernAttentionKernels(std::vector<KernelDef>& table);      // Attention-23/24
// TensorScatter-24, AffineGrid-20, CumProd-26, BitCast-26.
void AddModernDataKernels(std::vector<KernelDef>& table);
void AddModernDeformConvKernels(std::vector<KernelDef>& table);  // DeformConv-19/22
void AddModernSpatialKernels(std::vector<KernelDef>& table);     // Col2Im-18, CenterCropPad-18
// RegexFullMatch-20, StringConcat-20, StringSplit-20.
void AddModernStringKernels(std::vector<KernelDef>& table);

}  // namespace ovfix::exec
