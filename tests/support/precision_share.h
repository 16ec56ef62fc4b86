// What an fp16 conversion leaves in fp32, counted from the converted model itself (an
// independent count for tests and benchmarks; the report carries the converter's own):
// float nodes by precision, the multiply-adds of Conv, ConvTranspose, Gemm and MatMul by
// the precision of their output, and the Casts between the two.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ir/model.h"

namespace ovfix::test_models {

struct PrecisionShare {
  int fp16_nodes = 0, fp32_nodes = 0;  // float-producing nodes (Cast and Constant aside)
  double fp16_macs = 0, fp32_macs = 0;
  int casts = 0;  // Cast nodes between float types
  double NodeShare() const { return fp32_nodes / std::max(1.0, 1.0 * (fp16_nodes + fp32_nodes)); }
  double MacShare() const { return fp32_macs / std::max(1.0, fp16_macs + fp32_macs); }
};

// Counts every graph of `model` (control-flow nodes aside, their bodies counted); value
// shapes must be known (a converted model's are).
PrecisionShare CountPrecision(const Model& model);

// Multiply-adds of one node (0 for ops other than Conv, ConvTranspose, Gemm, MatMul, or
// when a shape it needs is unknown).
double MultiplyAdds(const Node& n);

}  // namespace ovfix::test_models
