#include "exec/cpu/broadcast.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

std::string ShapeToString(std::span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

absl::StatusOr<std::vector<int64_t>> BroadcastShape(std::span<const std::vector<int64_t>> shapes) {
  size_t rank = 0;
  for (const auto& shape : shapes) rank = std::max(rank, shape.size());
  std::vector<int64_t> result(rank, 1);
  // Which shape set each output dim, to name both sides of a conflict.
  std::vector<size_t> source(rank, 0);
  for (size_t s = 0; s < shapes.size(); ++s) {
    const auto& shape = shapes[s];
    const size_t offset = rank - shape.size();
    for (size_t i = 0; i < shape.size(); ++i) {
      const int64_t dim = shape[i];
      int64_t& out = result[offset + i];
      if (dim < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("negative dim in shape ", ShapeToString(shape)));
      }
      if (dim == out || dim == 1) continue;
      if (out == 1) {
        out = dim;
        source[offset + i] = s;
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat("cannot broadcast shapes ",
                                                     ShapeToString(shapes[source[offset + i]]),
                                                     " and ", ShapeToString(shape)));
    }
  }
  return result;
}

absl::StatusOr<std::vector<int64_t>> BroadcastShape(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b) {
  const std::vector<int64_t> shapes[] = {a, b};
  return BroadcastShape(shapes);
}

absl::StatusOr<BroadcastPlan> BroadcastPlan::Make(
    std::span<const std::vector<int64_t>> operand_dims) {
  OVFIX_ASSIGN_OR_RETURN(auto output, BroadcastShape(operand_dims));

  BroadcastPlan plan;
  plan.output_dims_ = std::move(output);
  plan.num_operands_ = static_cast<int>(operand_dims.size());
  plan.output_size_ = 1;
  for (int64_t d : plan.output_dims_) plan.output_size_ *= d;

  const int n = plan.num_operands_;
  const size_t rank = plan.output_dims_.size();
  // Element strides of each operand in its own dense layout, aligned to the output's rank;
  // 0 along dims it broadcasts.
  std::vector<int64_t> strides(rank * n, 0);
  for (int k = 0; k < n; ++k) {
    const auto& dims = operand_dims[k];
    const size_t offset = rank - dims.size();
    int64_t stride = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      strides[(offset + i) * n + k] = dims[i] == 1 ? 0 : stride;
      stride *= dims[i];
    }
  }

  // Drop output dims of size 1; merge a dim into the previous kept one when every operand
  // either broadcasts both or walks both contiguously.
  for (size_t d = 0; d < rank; ++d) {
    const int64_t dim = plan.output_dims_[d];
    if (dim == 1) continue;
    const int64_t* s = &strides[d * n];
    bool merge = !plan.loop_dims_.empty();
    for (int k = 0; merge && k < n; ++k) {
      const int64_t previous = plan.strides_[plan.strides_.size() - n + k];
      merge = (previous == 0) == (s[k] == 0);
    }
    if (merge) {
      plan.loop_dims_.back() *= dim;
      for (int k = 0; k < n; ++k) plan.strides_[plan.strides_.size() - n + k] = s[k];
    } else {
      plan.loop_dims_.push_back(dim);
      plan.strides_.insert(plan.strides_.end(), s, s + n);
    }
  }
  if (plan.loop_dims_.empty()) {
    // A single output element: every operand holds exactly one.
    plan.loop_dims_.push_back(1);
    plan.strides_.assign(n, 1);
  }
  return plan;
}

absl::StatusOr<BroadcastPlan> BroadcastPlan::Make(const std::vector<int64_t>& a,
                                                  const std::vector<int64_t>& b) {
  // Equal shapes (most binary ops of a graph) are one run over the output at stride 1, what
  // the general plan below makes of them, without its copies and scratch vectors: a graph of
  // small element-wise ops pays them on every node.
  if (a == b) {
    int64_t size = 1;
    bool negative = false;
    for (int64_t d : a) {
      size *= d;
      negative = negative || d < 0;
    }
    if (!negative && size > 0) {
      BroadcastPlan plan;
      plan.output_dims_ = a;
      plan.output_size_ = size;
      plan.num_operands_ = 2;
      plan.loop_dims_.assign(1, size);
      plan.strides_.assign(2, 1);
      return plan;
    }
  }
  const std::vector<int64_t> dims[] = {a, b};
  return Make(dims);
}

bool BroadcastPlan::all_same_shape() const {
  if (loop_dims_.size() != 1) return false;
  for (int k = 0; k < num_operands_; ++k) {
    if (strides_[k] != 1 && output_size_ > 1) return false;
  }
  return true;
}

std::vector<int64_t> BroadcastPlan::OperandOffsets(int k) const {
  std::vector<int64_t> result(static_cast<size_t>(output_size_));
  ForEachRun(0, output_size_, [&](int64_t out, const int64_t* offsets, int64_t count) {
    const int64_t stride = run_stride(k);
    for (int64_t i = 0; i < count; ++i) result[out + i] = offsets[k] + i * stride;
  });
  return result;
}

}  // namespace ovfix::exec
