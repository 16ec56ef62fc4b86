// RoiAlign's attributes, read and checked the same way by the CPU kernel and the OpenCL one.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace ovfix::exec
