// The one entry point of the opset 18-26 kernels (modern_*.cc) into the kernel table.
#include "exec/cpu/modern_ops.h"

namespace ovfix::exec {

void AddModernOpKernels(std::vector<KernelDef>& table) {
  AddModernActivationKernels(table);
  AddModernNormalizationKernels(table);
  AddModernRotaryKernels(table);
  AddModernAttentionKernels(table);
  AddModernDataKernels(table);
  AddModernDeformConvKernels(table);
  AddModernSpatialKernels(table);
  AddModernStringKernels(table);
}

}  // namespace ovfix::exec
