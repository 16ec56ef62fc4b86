// The arithmetic of Resize and Upsample that does not touch element data: the attributes,
// the output sizes and scales from the scales/sizes inputs, and per axis which input positions
// each output position reads with which weights. The CPU kernel (resize.cc) and the OpenCL one
// (exec/opencl/ops_resize.cc) both take it from here, so the backends agree on every mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/cpu/resize_bilinear.h"
#include "exec/kernel.h"
#include "ir/tensor.h"

namespace ovfix::exec {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class ResizeCoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNearest,
  kTfCropAndResize,
};
// kSimple is what Upsample and Resize-10 did: truncate when upsampling, round up when
// downsampling (onnxruntime's behaviour for those opsets).
enum class ResizeNearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeAttributes {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinateMode coordinate_mode = ResizeCoordinateMode::kHalfPixel;
  ResizeNearestMode nearest_mode = ResizeNearestMode::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;
  // Resize-18: linear and cubic downscaling widen their kernel by 1 / scale (a low-pass
  // filter), with weights normalized to sum 1, as onnxruntime does it.
  bool antialias = false;
};

// One axis: for output position j, taps input indices index[j*taps + t] with weights.
struct AxisPlan {
  int64_t in_size = 0;
  int64_t out_size = 0;
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<char> outside;  // tf_crop_and_resize: position maps outside the input
  bool any_outside = false;
  bool identity = false;
};

// Output sizes and per-axis scales from the scales/sizes inputs (or Upsample's attribute).
struct ResizeGeometry {
  std::vector<int64_t> out_dims;
  std::vector<double> scales;
  std::vector<double> out_widths;  // scale * in_size as a real number
  std::vector<double> roi;         // [starts..., ends...], rank * 2
};

// Where the node takes its scales from.
enum class ResizeForm {
  kScalesAttribute,  // Upsample-7/8
  kScalesInput,      // Upsample-9, Resize-10: (X, scales)
  kResize,           // Resize-11+: (X, roi, scales, sizes)
};

// The form of a Resize or Upsample node at `opset`.
inline ResizeForm ResizeFormOf(std::string_view op_type, int opset) {
  if (op_type == "Upsample") {
    return opset < 9 ? ResizeForm::kScalesAttribute : ResizeForm::kScalesInput;
  }
  return opset < 11 ? ResizeForm::kScalesInput : ResizeForm::kResize;
}

// The tensors the geometry reads (null when omitted): roi, scales and sizes of Resize-11+, or
// scales alone for Upsample-9 and Resize-10.
struct ResizeInputs {
  const Tensor* roi = nullptr;
  const Tensor* scales = nullptr;
  const Tensor* sizes = nullptr;
};

// `legacy`: Upsample and Resize-10, which have no coordinate attributes.
absl::StatusOr<ResizeAttributes> ParseResizeAttributes(const KernelContext& ctx, bool legacy);

absl::StatusOr<ResizeGeometry> ComputeResizeGeometry(const KernelContext& ctx, ResizeForm form,
                                                     const std::vector<int64_t>& in_dims,
                                                     const ResizeInputs& inputs);

// The taps of one axis: `out_width` is scale * in_size as a real number, roi_start/roi_end
// the axis's roi (tf_crop_and_resize).
AxisPlan MakeAxisPlan(const ResizeAttributes& a, int64_t in_size, int64_t out_size, double scale,
                      double out_width, double roi_start, double roi_end);

// Float linear resizes of the last two axes of a rank 2 or 4 tensor (the outer ones kept) take
// onnxruntime's float arithmetic (resize_bilinear.h says why): that path's shape and
// coordinates, or nullopt when the node is not of that kind. The caller checks the type.
struct BilinearPlan {
  BilinearShape shape;
  BilinearCoordinates coordinates;
};
std::optional<BilinearPlan> BilinearFloatPlan(const ResizeAttributes& a, const ResizeGeometry& g,
                                              const std::vector<int64_t>& in_dims);

}  // namespace ovfix::exec
