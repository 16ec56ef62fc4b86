// Deterministic random inputs, the one source of them for validation, `ovfix compare` and the
// tests: a fixed, platform-independent generator (splitmix64; std distributions differ
// between standard libraries) and tensors filled from it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/model.h"

namespace ovfix::exec {

// The seed of validation's random inputs, and of the random ops without a seed attribute in
// every run validation makes (so that a rewritten node draws what the reference run drew).
constexpr uint64_t kValidationSeed = 0x0f1c5eedull;

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

// What the values look like: floats uniform in [float_low, float_high), integers uniform in
// [int_low, int_high], bools 0 or 1.
struct RandomRanges {
  double float_low = -1, float_high = 1;
  int64_t int_low = 0, int_high = 3;
};

// The most bytes one random tensor may take: far beyond any input a model is validated on,
// and what a machine that converts models has to spare.
constexpr uint64_t kMaxRandomInputBytes = uint64_t{2} << 30;

// A tensor of `type` (float, double, float16, bfloat16, bool, any integer type) filled from
// `random`; other types, and dims whose tensor would take more than kMaxRandomInputBytes,
// are an error naming `name`.
absl::StatusOr<Tensor> RandomTensor(DataType type, const std::vector<int64_t>& dims,
                                    SeededRandom& random, const std::string& name,
                                    const RandomRanges& ranges = {});

struct RandomInputOptions {
  uint64_t seed = kValidationSeed;
  RandomRanges ranges;
  // Dims of inputs by name; other inputs use their declared shape with each symbolic or
  // unknown dim set to `symbolic_dim` (`batch` for the first one when > 0).
  std::map<std::string, std::vector<int64_t>> shapes;
  int64_t symbolic_dim = 1;
  int64_t batch = -1;
};

// The dims a random input for `v` gets under `options`; an error names the input when its
// shape is not declared or contradicts `options.shapes`.
absl::StatusOr<std::vector<int64_t>> RandomInputDims(const Value& v,
                                                     const RandomInputOptions& options);

// A tensor for every graph input of `graph` that is not an initializer, in graph-input order
// from one generator seeded with `options.seed`.
absl::StatusOr<TensorMap> RandomInputs(const Graph& graph, const RandomInputOptions& options = {});

}  // namespace ovfix::exec
