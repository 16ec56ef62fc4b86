// RoiAlign's attributes, read and checked the same way by the CPU kernel and the OpenCL one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/kernel.h"

namespace ovfix::exec {

struct RoiAlignAttributes {
  std::string mode;         // "avg" or "max"
  bool half_pixel = false;  // coordinate_transformation_mode; else output_half_pixel
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;  // 0: adaptive, ceil(bin size) samples
  double spatial_scale = 1;
};

absl::StatusOr<RoiAlignAttributes> ReadRoiAlignAttributes(const KernelContext& ctx);

// Whether the inputs' dims are X [N,C,H,W], rois [R,4] and batch_indices [R]; when not, both
// kernels answer with kRoiAlignShapes.
bool RoiAlignShapesFit(const std::vector<int64_t>& x, const std::vector<int64_t>& rois,
                       const std::vector<int64_t>& batch_indices);
inline constexpr char kRoiAlignShapes[] = "expected X [N,C,H,W], rois [R,4] and batch_indices [R]";

}  // namespace ovfix::exec
