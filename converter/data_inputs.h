// The graph inputs that data feeds, as ONNX test-data folders number them.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace ovfix::converter {

// Those that are not initializers, in graph order: the K-th is what input_K.pb holds.
inline std::vector<const Value*> DataInputs(const Graph& g) {
  std::vector<const Value*> inputs;
  for (const Value* v : g.inputs()) {
    if (!v->is_initializer()) inputs.push_back(v);
  }
  return inputs;
}

}  // namespace ovfix::converter
