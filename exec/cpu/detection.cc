// NonMaxSuppression (opsets 10 to 18). For every batch and class, the boxes are taken greedily
// in descending order of score (equal scores: lower box index first); a box is selected unless
// its IoU with a box already selected for that class is strictly greater than iou_threshold,
// until max_output_boxes_per_class boxes are selected. With a score_threshold only boxes whose
// score is strictly greater than it are candidates, as the ONNX reference implementation and
// onnxruntime filter (the operator text says boxes scoring less than it are removed; the two
// differ only for a score exactly equal to the threshold).
//
// selected_indices lists (batch, class, box) rows by batch, then class, then selection order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// A box by its corners, with y1 <= y2 and x1 <= x2.
struct Corners {
  double y1 = 0, x1 = 0, y2 = 0, x2 = 0;
  double area() const { return (y2 - y1) * (x2 - x1); }
};

// Box i of one batch (4 values at `box`): [y1, x1, y2, x2] with the corners of either diagonal
// in any order, or with center_point_box [x_center, y_center, width, height].
template <typename T>
Corners ReadCorners(const T* box, bool center_point_box) {
  const double a = box[0], b = box[1], c = box[2], d = box[3];
  if (center_point_box) return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

// IoU of two boxes; 0 when they do not overlap (or either has no area).
double IntersectionOverUnion(const Corners& p, const Corners& q) {
  const double height = std::min(p.y2, q.y2) - std::max(p.y1, q.y1);
  const double width = std::min(p.x2, q.x2) - std::max(p.x1, q.x1);
  if (height <= 0 || width <= 0) return 0;
  const double intersection = height * width;
  const double union_area = p.area() + q.area() - intersection;
  return union_area > 0 ? intersection / union_area : 0;
}

// An optional scalar input: nullopt when omitted or empty (both mean the default).
absl::StatusOr<std::optional<double>> OptionalScalar(const KernelContext& ctx, size_t i,
                                                     const char* name) {
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return std::nullopt;
  if (ctx.input(i).numel() != 1) {
    return ctx.Error(name, " must be a scalar, got ", DescribeTensor(ctx.input(i)));
  }
  return ctx.input(i).GetAsDouble(0);
}

struct NmsParams {
  int64_t max_per_class = 0;
  double iou_threshold = 0;
  std::optional<double> score_threshold;
  bool center_point_box = false;
};

absl::StatusOr<NmsParams> ReadNmsParams(const KernelContext& ctx) {
  NmsParams p;
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    if (ctx.input(2).numel() != 1) {
      return ctx.Error("max_output_boxes_per_class must be a scalar, got ",
                       DescribeTensor(ctx.input(2)));
    }
    p.max_per_class = std::max<int64_t>(ctx.input(2).GetAsInt64(0), 0);  // negative: none
  }
  OVFIX_ASSIGN_OR_RETURN(std::optional<double> iou, OptionalScalar(ctx, 3, "iou_threshold"));
  p.iou_threshold = iou.value_or(0.0);
  if (!(p.iou_threshold >= 0 && p.iou_threshold <= 1)) {
    return ctx.Error("iou_threshold ", p.iou_threshold, " is outside [0, 1]");
  }
  OVFIX_ASSIGN_OR_RETURN(std::optional<double> score, OptionalScalar(ctx, 4, "score_threshold"));
  p.score_threshold = score;
  const int64_t center_point_box = ctx.node.GetInt("center_point_box", 0);
  if (center_point_box != 0 && center_point_box != 1) {
    return ctx.Error("center_point_box must be 0 or 1, got ", center_point_box);
  }
  p.center_point_box = center_point_box == 1;
  return p;
}

template <typename T>
std::vector<int64_t> SelectBoxes(const Tensor& boxes, const Tensor& scores, const NmsParams& p) {
  const int64_t batches = scores.dim(0), classes = scores.dim(1), count = scores.dim(2);
  std::vector<int64_t> selected;  // (batch, class, box) triples
  std::vector<Corners> corners(count);
  std::vector<int64_t> order;
  std::vector<int64_t> kept;  // boxes selected for the current class
  for (int64_t b = 0; b < batches; ++b) {
    const T* batch_boxes = boxes.data<T>() + b * count * 4;
    for (int64_t i = 0; i < count; ++i) {
      corners[i] = ReadCorners(batch_boxes + i * 4, p.center_point_box);
    }
    for (int64_t c = 0; c < classes; ++c) {
      const T* score = scores.data<T>() + (b * classes + c) * count;
      order.clear();
      for (int64_t i = 0; i < count; ++i) {
        // A NaN score never makes a box a candidate (it has no place in the order).
        if (std::isnan(static_cast<double>(score[i]))) continue;
        if (p.score_threshold && !(score[i] > *p.score_threshold)) continue;
        order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return score[i] > score[j]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= p.max_per_class) break;
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t k) {
          return IntersectionOverUnion(corners[i], corners[k]) > p.iou_threshold;
        });
        if (suppressed) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  return selected;
}

absl::Status NonMaxSuppression(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects boxes and scores");
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.type() != DataType::kFloat && boxes.type() != DataType::kDouble) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(boxes.type())));
  }
  if (scores.type() != boxes.type()) {
    return ctx.Error("scores ", DescribeTensor(scores), " differ in type from boxes ",
                     DescribeTensor(boxes));
  }
  if (boxes.rank() != 3 || boxes.dim(2) != 4) {
    return ctx.Error("boxes must be [num_batches, spatial_dimension, 4], got ",
                     DescribeTensor(boxes));
  }
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1)) {
    return ctx.Error("scores must be [", boxes.dim(0), ", num_classes, ", boxes.dim(1),
                     "] for boxes ", DescribeTensor(boxes), ", got ", DescribeTensor(scores));
  }
  OVFIX_ASSIGN_OR_RETURN(NmsParams params, ReadNmsParams(ctx));
  const std::vector<int64_t> selected = boxes.type() == DataType::kFloat
                                            ? SelectBoxes<float>(boxes, scores, params)
                                            : SelectBoxes<double>(boxes, scores, params);
  const int64_t rows = static_cast<int64_t>(selected.size()) / 3;
  std::copy(selected.begin(), selected.end(),
            ctx.Output(0, DataType::kInt64, {rows, 3}).data<int64_t>());
  return absl::OkStatus();
}

}  // namespace

void AddDetectionKernels(std::vector<KernelDef>& table) {
  // Opset 11 only relaxed the corner order opset 10 expected; one entry reads both.
  table.push_back({"", "NonMaxSuppression", 10, kLatestOpset, &NonMaxSuppression});
}

}  // namespace ovfix::exec
