// Which float precisions a node computes, by the element types of its tensor outputs: the one
// reading that the fp32 cost (precision_cost.cc) and the float node counts (report.cc) share.
#pragma once

#include "ir/graph.h"

namespace ovfix::converter {

struct OutputFloatTypes {
  bool half = false;      // some output is float16 or bfloat16 (a 16-bit float)
  bool single = false;    // some output is float32
  bool bfloat16 = false;  // some output is bfloat16
};

inline OutputFloatTypes FloatTypesOfOutputs(const Node& n) {
  OutputFloatTypes types;
  for (const Value* v : n.outputs()) {
    if (v == nullptr || !v->is_tensor()) continue;
    const DataType t = v->elem_type();
    types.half = types.half || t == DataType::kFloat16 || t == DataType::kBfloat16;
    types.single = types.single || t == DataType::kFloat;
    types.bfloat16 = types.bfloat16 || t == DataType::kBfloat16;
  }
  return types;
}

}  // namespace ovfix::converter
