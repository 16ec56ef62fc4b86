// The shapes of a MatMul in numpy semantics, shared by the float and the integer MatMul: a
// 1-D A is a row [1, K] and a 1-D B a column [K, 1], their unit dims dropped from the output;
// the dims before the last two broadcast.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/opencl/op_context.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {

struct MatMulShape {
  int64_t m = 0, k = 0;                   // of A
  int64_t b_k = 0, n = 0;                 // of B (b_k != k: the caller reports it)
  std::vector<int64_t> a_batch, b_batch;  // the dims before the last two
  std::vector<int64_t> batch, out_dims;   // set by BroadcastBatch

  // From the operands' dims, both of rank >= 1.
  MatMulShape(std::vector<int64_t> a_dims, std::vector<int64_t> b_dims)
      : a_rank_(a_dims.size()), b_rank_(b_dims.size()) {
    if (a_dims.size() == 1) a_dims.insert(a_dims.begin(), 1);
    if (b_dims.size() == 1) b_dims.push_back(1);
    m = a_dims[a_dims.size() - 2], k = a_dims.back();
    b_k = b_dims[b_dims.size() - 2], n = b_dims.back();
    a_batch.assign(a_dims.begin(), a_dims.end() - 2);
    b_batch.assign(b_dims.begin(), b_dims.end() - 2);
  }

  // The broadcast batch and the output dims, or BroadcastDims' error.
  absl::Status BroadcastBatch(const OpContext& ctx) {
    OVFIX_ASSIGN_OR_RETURN(batch, BroadcastDims(ctx, {&a_batch, &b_batch}));
    out_dims = batch;
    if (a_rank_ > 1) out_dims.push_back(m);
    if (b_rank_ > 1) out_dims.push_back(n);
    return absl::OkStatus();
  }

 private:
  size_t a_rank_, b_rank_;
};

}  // namespace ovfix::exec::opencl
