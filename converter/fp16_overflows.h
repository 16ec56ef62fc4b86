// For targets whose backend ignores fp32 islands: the values of a converted model that still
// exceed fp16's range, which such a backend turns into inf, and why no rewrite kept them in it.
#pragma once

#include <optional>
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

// Where a run with every float tensor in fp16 first makes a NaN or infinity from finite
// inputs: the node whose output is non-finite while none of its inputs is.
struct NonFiniteOrigin {
  std::string node;   // Node::Describe()
  std::string op;     // its op type
  std::string value;  // its non-finite output
  int64_t non_finite = 0;
  bool nan = false;          // NaN among them (else only infinities)
  double largest_input = 0;  // the largest |x| of its inputs in that run
  double largest_fp32 = -1;  // its output's largest |x| in an fp32 run (-1: not measured)
  std::string Why() const;   // what went wrong there, in words
};
// The first such node in execution order, or nullopt when the fp16 run stays finite.
absl::StatusOr<std::optional<NonFiniteOrigin>> FirstNonFiniteInFp16(const Model& model,
                                                                    const exec::TensorMap& inputs);

}  // namespace ovfix::converter
