// lower_conv3d_unit_kernel (--lower-conv3d-unit-kernel): a 3-D Conv whose kernel has a dim
// of size 1 (with no padding and stride 1 along it) is a 2-D Conv applied to every slice
// along that dim:
//   Conv3D(x[N,C,D1,D2,D3], w[M,C/g,k1,k2,1])
//     -> Transpose(Reshape(Conv2D(Reshape(Transpose(x) -> [N,D3,C,D1,D2] -> [N*D3,C,D1,D2]),
//                                 w[M,C/g,k1,k2]) -> [N,D3,M,O1,O2]) -> [N,M,O1,O2,D3])
// for backends whose Conv3D lowering breaks on such kernels (IREE on ROCm with [9,9,1]).
// Needs a static input shape, a constant weight and explicit pads (no auto_pad).
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

// The pass (registry.cc) and its name; returns how many rewrites it committed.
inline constexpr char kLowerConv3dUnitKernel[] = "lower_conv3d_unit_kernel";
absl::StatusOr<int> LowerConv3dUnitKernel(PassContext& ctx);

}  // namespace ovfix::rules
