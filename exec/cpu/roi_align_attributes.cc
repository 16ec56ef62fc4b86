#include "exec/cpu/roi_align_attributes.h"

namespace ovfix::exec {

absl::StatusOr<RoiAlignAttributes> ReadRoiAlignAttributes(const KernelContext& ctx) {
  RoiAlignAttributes a;
  a.mode = ctx.node.GetString("mode", "avg");
  if (a.mode != "avg" && a.mode != "max") return ctx.Error("unsupported mode '", a.mode, "'");
  // Opset 10 had no attribute and behaved as output_half_pixel.
  const std::string transform = ctx.node.GetString(
      "coordinate_transformation_mode", ctx.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel") {
    return ctx.Error("unsupported coordinate_transformation_mode '", transform, "'");
  }
  a.half_pixel = transform == "half_pixel";
  a.output_height = ctx.node.GetInt("output_height", 1);
  a.output_width = ctx.node.GetInt("output_width", 1);
  a.sampling_ratio = ctx.node.GetInt("sampling_ratio", 0);
  a.spatial_scale = ctx.node.GetFloat("spatial_scale", 1.0f);
  if (a.output_height < 1 || a.output_width < 1 || a.sampling_ratio < 0) {
    return ctx.Error("output sizes must be positive and sampling_ratio not negative");
  }
  return a;
}

bool RoiAlignShapesFit(const std::vector<int64_t>& x, const std::vector<int64_t>& rois,
                       const std::vector<int64_t>& batch_indices) {
  return x.size() == 4 && rois.size() == 2 && rois[1] == 4 && batch_indices.size() == 1 &&
         batch_indices[0] == rois[0];
}

}  // namespace ovfix::exec
