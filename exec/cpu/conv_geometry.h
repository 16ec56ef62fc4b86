// The spatial arithmetic shared by Conv, ConvTranspose and the pooling ops: reading kernel,
// strides, dilations, pads and auto_pad, and working out output sizes and the pads that
// auto_pad implies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/kernel.h"

namespace ovfix::exec {

struct SpatialGeometry {
  std::vector<int64_t> input;  // spatial dims of the input (after N and C)
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads_begin, pads_end;
  std::vector<int64_t> output;  // spatial dims of the output
  std::string auto_pad;         // NOTSET, SAME_UPPER, SAME_LOWER, VALID

  size_t rank() const { return input.size(); }
  // (kernel - 1) * dilation + 1: the extent the kernel covers along axis i.
  int64_t extent(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
  int64_t output_size() const;
  int64_t kernel_size() const;
};

// Reads strides, dilations, pads and auto_pad for `input.size()` spatial axes and checks
// them against each other. Output sizes and auto pads are left for the callers below.
absl::StatusOr<SpatialGeometry> ReadSpatialAttributes(const KernelContext& ctx,
                                                      std::vector<int64_t> input,
                                                      std::vector<int64_t> kernel);

// Conv and pooling: fills output (and pads from auto_pad). ceil_mode rounds the output size
// up, dropping a last window that would start in the end padding.
absl::Status ComputeConvOutput(const KernelContext& ctx, SpatialGeometry& g,
                               bool ceil_mode = false);

// The kernel's spatial shape from the kernel_shape attribute, checked against `weight_dims`
// (the trailing dims of W) when given.
absl::StatusOr<std::vector<int64_t>> KernelShape(const KernelContext& ctx,
                                                 const std::vector<int64_t>& weight_dims);

// A convolution's geometry from X [N, C, spatial...] and W [M, C/group, kernel...]: the
// kernel shape (checked against W's), the attributes, and the output (ComputeConvOutput).
absl::StatusOr<SpatialGeometry> ConvGeometry(const KernelContext& ctx, const Tensor& x,
                                             const Tensor& w);

// Refuses output shapes of more than kMaxOutputElements elements (attributes such as huge pads
// would otherwise ask for an allocation that cannot succeed).
constexpr int64_t kMaxOutputElements = int64_t{1} << 32;
// Inputs X and W of Conv or ConvTranspose on float data: both given, float or double, the same.
absl::Status CheckFloatConvOperands(const KernelContext& ctx);

absl::Status CheckOutputSize(const KernelContext& ctx, const std::vector<int64_t>& dims);

}  // namespace ovfix::exec
