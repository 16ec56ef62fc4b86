// Validation over a range of input shapes (--shape-range NAME=MIN:OPT:MAX, TensorRT's
// optimization profile). fp16 that holds on the calibration input can fail at another shape:
// a sum over H x W has four times the terms at twice the resolution, an attention row sum
// grows with the sequence. The conversion therefore calibrates and validates at each of the
// three shapes, on the calibration data brought to that shape: images resized, sequences and
// other dims repeated or cut, the batch replicated; a calibration set already at a shape is
// taken as it is for that shape.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "rules/pass.h"

namespace ovfix::converter {

// `t` brought to `dims` (same rank): the last two dims of a rank-4 float32 tensor (an image,
// NCHW) resized bilinearly (half-pixel centres, as Resize's default); any other dim that
// differs repeated cyclically or cut (the batch replicated, a sequence repeated).
absl::StatusOr<Tensor> BringToShape(const Tensor& t, const std::vector<int64_t>& dims);

struct RangedSets {
  std::vector<exec::TensorMap> sets;
  // Per set: which shape it is at, "opt x=1x3x640x640" (empty without ranges).
  std::vector<std::string> labels;
};

// The calibration sets over the ranges of `convert.shape_ranges`, the OPT shape's first (the
// first set validates each rewrite), then MIN's and MAX's; each point's sets are the
// calibration sets already at its shape where there are any, else every set brought to it.
// A dim the model declares, or that --batch or --input-shape fixes, is taken as fixed: the
// range must hold it (InvalidArgument naming the input and the dim otherwise). Without ranges
// the sets are returned as they are.
absl::StatusOr<RangedSets> ExpandOverShapeRanges(const Graph& g, std::vector<exec::TensorMap> sets,
                                                 const rules::ConvertOptions& convert);

// The dims each set gives the graph's dynamic inputs, "x=1x3x64x64, y=1x8", for the report;
// empty when every input is static.
std::string DynamicInputShapes(const Graph& g, const exec::TensorMap& set);

// trtexec's --minShapes/--optShapes/--maxShapes for the ranges, or "" without any.
std::string TrtexecShapes(const rules::ConvertOptions& convert);

}  // namespace ovfix::converter
