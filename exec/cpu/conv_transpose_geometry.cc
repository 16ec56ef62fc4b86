#include "exec/cpu/conv_transpose_geometry.h"

#include <string>

#include "ir/status_macros.h"

namespace ovfix::exec {

absl::StatusOr<SpatialGeometry> ConvTransposeGeometry(const KernelContext& ctx,
                                                      const std::vector<int64_t>& x_dims,
                                                      const std::vector<int64_t>& w_dims) {
  const size_t rank = x_dims.size() - 2;
  OVFIX_ASSIGN_OR_RETURN(auto kernel,
                         KernelShape(ctx, std::vector<int64_t>(w_dims.begin() + 2, w_dims.end())));
  OVFIX_ASSIGN_OR_RETURN(
      auto geometry,
      ReadSpatialAttributes(ctx, std::vector<int64_t>(x_dims.begin() + 2, x_dims.end()), kernel));
  SpatialGeometry& g = geometry;
  const std::vector<int64_t> output_padding =
      ctx.node.GetInts("output_padding", std::vector<int64_t>(rank, 0));
  std::vector<int64_t> output_shape = ctx.node.GetInts("output_shape");
  if (output_shape.size() == rank + 2)
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (output_padding.size() != rank) return ctx.Error("output_padding must have ", rank, " values");
  if (!output_shape.empty() && output_shape.size() != rank) {
    return ctx.Error("output_shape must have ", rank, " values");
  }
  g.output.assign(rank, 0);
  const bool same = g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < rank; ++i) {
    if (output_padding[i] < 0) return ctx.Error("output_padding must not be negative");
    const int64_t full = g.strides[i] * (g.input[i] - 1) + output_padding[i] + g.extent(i);
    if (!output_shape.empty() || same) {
      const int64_t target = !output_shape.empty() ? output_shape[i] : g.input[i] * g.strides[i];
      const int64_t total = full - target;
      // Floor halves, so that a negative total (a larger output) splits the same way.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      const bool upper = g.auto_pad == "SAME_UPPER";
      g.pads_begin[i] = upper ? half : total - half;
      g.pads_end[i] = upper ? total - half : half;
      g.output[i] = target;
    } else {
      if (g.auto_pad == "VALID") g.pads_begin[i] = g.pads_end[i] = 0;
      g.output[i] = full - g.pads_begin[i] - g.pads_end[i];
    }
    if (g.output[i] < 0 || g.input[i] < 0) {
      return ctx.Error("output size ", g.output[i], " on spatial axis ", i, " is negative");
    }
  }
  return g;
}

}  // namespace ovfix::exec
