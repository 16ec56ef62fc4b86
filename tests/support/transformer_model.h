// A transformer-like model of any size, written with its weights as external data without
// ever holding them in memory: each block is a decomposed LayerNorm, MatMul, Softmax, MatMul
// and a residual Add, and every weight is a lazy tensor whose values are a hash of its
// position. Tests and benchmarks of large-model conversion generate their models with it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace ovfix::testing {

struct TransformerSpec {
  int blocks = 4;
  int64_t width = 256;  // each block holds two width x width float weights
  int64_t tokens = 4;   // the input is float[1, tokens, width]
};

// Bytes of the float weights of such a model.
int64_t TransformerWeightBytes(const TransformerSpec& spec);

// Writes the model to `path` with its weights in `path`.data.
absl::Status WriteTransformerModel(const std::string& path, const TransformerSpec& spec);

}  // namespace ovfix::testing
