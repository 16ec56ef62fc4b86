// Session-time fusion of QDQ convolutions, as static quantization writes them and as
// onnxruntime runs them: DequantizeLinear of a uint8/int8 activation and of int8/uint8
// weights (per tensor or per output channel) into Conv, an optional int32 bias behind
// DequantizeLinear with scale x_scale * w_scale, optionally Relu, then QuantizeLinear. The
// group becomes one QLinearConv (exact integer accumulation, the bias added in int32, one
// requantization in float), which is what onnxruntime's QDQ transformer makes of it; the
// float graph as written rounds differently only where a value sits within a float rounding
// of a quantization boundary (one step at most). Likewise DequantizeLinear of a and of b (per
// tensor, or per column of a constant 2-D b) into MatMul, then QuantizeLinear, becomes one
// QLinearMatMul.
//
// A Relu is folded only where it changes nothing after the quantization: the output's zero
// point is its type's lowest value (what the quantizer writes for Relu outputs). Groups whose
// scales, zero points or weights are not constants (or are graph inputs that a run may
// override), whose intermediate values are graph outputs or read elsewhere, or whose bias
// scale differs from x_scale * w_scale are left as written.
//
// Between the groups, a QuantizeLinear after MaxPool or Concat whose inputs were dequantized
// with its own scalar scale and zero point moves before the op: MaxPool runs on the integers,
// Concat joins them (a float input of the Concat gets its own QuantizeLinear), bit for bit what
// the float graph computes (Q(DQ(a)) is a; max commutes with a non-decreasing DQ), as
// onnxruntime's QDQ transformer also keeps such ops on 8-bit data.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/model.h"

namespace ovfix::exec {

// Rewrites the groups of `graph` (not its subgraphs) and moves the QuantizeLinear nodes that
// can move; returns how many rewrites. Nodes left without uses are removed.
int FuseQdqConvs(Graph& graph);

// A copy of `model` with its groups fused (weights shared with `model`, not copied), or null
// when it has none.
absl::StatusOr<std::unique_ptr<Model>> FuseQdqConvsInCopy(const Model& model);

}  // namespace ovfix::exec
