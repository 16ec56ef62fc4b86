// For targets whose backend ignores fp32 islands: the values of a converted model that still
// exceed fp16's range, which such a backend turns into inf, and why no rewrite kept them in it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/model.h"

namespace ovfix::converter {

struct Fp16Overflow {
  std::string value;   // the value's name
  std::string op;      // its producer's op type ("input" for a graph input)
  double largest = 0;  // calibrated max |x| (fp32 run of the converted model)
  std::string why;     // why no fp16-safe rewrite fits
};

// Runs `model` in fp32 on `inputs` and lists its float values whose largest |x| exceeds 65504,
// in graph order.
absl::StatusOr<std::vector<Fp16Overflow>> ListFp16Overflows(const Model& model,
                                                            const exec::TensorMap& inputs);

}  // namespace ovfix::converter
