// What an fp16 conversion leaves in fp32, counted as a user pays for it: float nodes, the
// multiply-adds they compute, the bytes of weights still stored as float32, and the Casts
// the conversion inserted (each one a kernel launch on a GPU).
//
// Multiply-adds: a Conv computes (input channels per group x kernel size) per output element,
// a ConvTranspose (output channels per group x kernel size) per input element, a MatMul or
// Gemm its inner dim per output element; every other float node counts one per output
// element. Symbolic dims (a dynamic batch) count as 1; a node whose ranks are not known
// counts none and is counted in `nodes_without_shapes`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/model.h"

namespace ovfix::converter {

// One float node of the main graph, in graph order.
struct NodePrecision {
  std::string node;  // Describe()
  std::string op_type;
  bool fp32 = false;
  bool bf16 = false;  // computes in bfloat16 (a bf16 island of an fp16 model, or a bf16 model)
  double multiply_adds = 0;
};

struct PrecisionCost {
  int float_nodes = 0, fp32_nodes = 0;  // every graph, bodies included
  double multiply_adds = 0, fp32_multiply_adds = 0;
  // Of the 16-bit nodes, those computing in bfloat16 (and float16 the rest): an fp16 model whose
  // islands compute in bfloat16 has both.
  int bf16_nodes = 0, fp16_nodes = 0;
  double bf16_multiply_adds = 0;
  int nodes_without_shapes = 0;
  int64_t weight_bytes = 0, fp32_weight_bytes = 0;  // float initializers and Constants
  int casts = 0, casts_inserted = 0;                // in the model; beyond the original's
  std::vector<NodePrecision> nodes;                 // main graph only
  // The 16-bit float type the converted model computes in: "bf16" where nodes produce
  // bfloat16 and none float16, else "fp16".
  std::string half_name = "fp16";

  double NodeShare() const { return fp32_nodes / (float_nodes > 0 ? 1.0 * float_nodes : 1.0); }
  double MultiplyAddShare() const {
    return multiply_adds > 0 ? fp32_multiply_adds / multiply_adds : 0;
  }
};

// The Casts of `model`, in every graph.
int CountCasts(const Model& model);

// `casts_before`: the Casts of the model before conversion (CountCasts of the input).
PrecisionCost MeasurePrecisionCost(const Model& converted, int casts_before);

// One line for the console, e.g. "fp32 cost: 12 of 240 float nodes (5.0%), 3.1% of 4.1G
// multiply-adds, 1.2 MB of 46 MB of weights, 24 Casts inserted"; an fp16 model with bf16
// islands adds their share: "; bf16: 9 node(s), 2.0% of multiply-adds; fp16: 95.1%".
std::string PrecisionCostLine(const PrecisionCost& cost);

}  // namespace ovfix::converter
