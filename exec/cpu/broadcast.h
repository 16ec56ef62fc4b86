// Numpy-style multidirectional broadcasting, shared by the element-wise kernels and by any
// kernel whose operands broadcast (Where, Expand, MatMul batch dims, PRelu slopes).
//
// BroadcastPlan walks the output in "runs": stretches of consecutive output elements along
// which every operand either advances one element per output element (run stride 1) or
// repeats one element (run stride 0). Output dims of size 1 are dropped and neighbouring dims
// that broadcast the same way are merged, so
//   same shapes                    -> one run over the whole output,
//   [N,C,H,W] op scalar            -> one run, the scalar at stride 0,
//   [N,C,H,W] op [W]               -> N*C*H runs of W, both at stride 1,
//   [N,C,H,W] op [C,1,1]           -> N*C runs of H*W, the second operand at stride 0.
// Kernels pick a tight loop per stride pattern once and call it for every run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"

namespace ovfix::exec {

// The shape all `shapes` broadcast to. Fails with InvalidArgument ("cannot broadcast shapes
// [2,3] and [4]") when two dims differ and neither is 1.
absl::StatusOr<std::vector<int64_t>> BroadcastShape(std::span<const std::vector<int64_t>> shapes);
absl::StatusOr<std::vector<int64_t>> BroadcastShape(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b);

// "[2,3,4]"
std::string ShapeToString(std::span<const int64_t> dims);

class BroadcastPlan {
 public:
  // Plans the broadcast of operands with the given dims; the output has BroadcastShape(dims).
  static absl::StatusOr<BroadcastPlan> Make(std::span<const std::vector<int64_t>> operand_dims);
  static absl::StatusOr<BroadcastPlan> Make(const std::vector<int64_t>& a,
                                            const std::vector<int64_t>& b);

  const std::vector<int64_t>& output_dims() const { return output_dims_; }
  int64_t output_size() const { return output_size_; }
  int num_operands() const { return num_operands_; }
  // 1 when operand k advances with the output inside a run, 0 when it repeats one element.
  int64_t run_stride(int k) const { return strides_[(loop_dims_.size() - 1) * num_operands_ + k]; }
  // Length of a full run (runs are cut short only at the ends of a ForEachRun range).
  int64_t run_length() const { return loop_dims_.back(); }
  // True when every operand has the output's shape (up to leading 1s).
  bool all_same_shape() const;

  // Calls fn(out_offset, operand_offsets, count) for consecutive runs that cover output
  // elements [begin, end) in order; operand_offsets[k] is the element offset within operand k
  // that output element out_offset reads. Thread-safe: each call keeps its own counters.
  template <typename Fn>
  void ForEachRun(int64_t begin, int64_t end, Fn&& fn) const;

  // The offset within operand k of every output element, in output order (for kernels that
  // broadcast a small number of items, e.g. MatMul's batch dims).
  std::vector<int64_t> OperandOffsets(int k) const;

 private:
  BroadcastPlan() = default;

  std::vector<int64_t> output_dims_;
  int64_t output_size_ = 0;
  int num_operands_ = 0;
  // Collapsed iteration space, outermost first; the last dim is the run. Never empty. Inline
  // storage: a plan is made per node run, and most have one or two loop dims.
  absl::InlinedVector<int64_t, 4> loop_dims_;
  // strides_[d * num_operands_ + k]: elements operand k moves per step along loop dim d.
  absl::InlinedVector<int64_t, 8> strides_;
};

template <typename Fn>
void BroadcastPlan::ForEachRun(int64_t begin, int64_t end, Fn&& fn) const {
  begin = std::max<int64_t>(begin, 0);
  end = std::min(end, output_size_);
  if (begin >= end) return;
  const int n = num_operands_;
  if (loop_dims_.size() == 1) {  // one run (equal shapes, or a scalar beside a tensor)
    absl::InlinedVector<int64_t, 4> offsets(n);
    for (int k = 0; k < n; ++k) offsets[k] = begin * strides_[k];
    fn(begin, static_cast<const int64_t*>(offsets.data()), end - begin);
    return;
  }
  const int outer_rank = static_cast<int>(loop_dims_.size()) - 1;
  const int64_t inner = loop_dims_.back();
  const int64_t* inner_strides = &strides_[outer_rank * n];

  absl::InlinedVector<int64_t, 8> counter(outer_rank, 0);
  absl::InlinedVector<int64_t, 4> row_offsets(n, 0), offsets(n, 0);
  int64_t row = begin / inner;
  int64_t column = begin % inner;
  for (int d = outer_rank - 1; d >= 0; --d) {
    counter[d] = row % loop_dims_[d];
    row /= loop_dims_[d];
    for (int k = 0; k < n; ++k) row_offsets[k] += counter[d] * strides_[d * n + k];
  }

  int64_t position = begin;
  for (;;) {
    const int64_t count = std::min(inner - column, end - position);
    for (int k = 0; k < n; ++k) offsets[k] = row_offsets[k] + column * inner_strides[k];
    fn(position, static_cast<const int64_t*>(offsets.data()), count);
    position += count;
    if (position >= end) return;
    column = 0;
    // Odometer step over the outer dims, keeping the row offsets in step.
    for (int d = outer_rank - 1; d >= 0; --d) {
      const int64_t* step = &strides_[d * n];
      if (++counter[d] < loop_dims_[d]) {
        for (int k = 0; k < n; ++k) row_offsets[k] += step[k];
        break;
      }
      for (int k = 0; k < n; ++k) row_offsets[k] -= (loop_dims_[d] - 1) * step[k];
      counter[d] = 0;
    }
  }
}

}  // namespace ovfix::exec
