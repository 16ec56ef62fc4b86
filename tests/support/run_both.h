// One model (or a model and its rewrite) run by two sessions on the same inputs, for tests that
// compare the outputs: a run that fails or a different number of outputs fails the test.
#pragma once

#include <vector>

#include "exec/executor.h"
#include "gtest/gtest.h"

namespace ovfix::test_support {

struct BothRuns {
  std::vector<Tensor> expected;  // the reference session's outputs
  std::vector<Tensor> actual;    // the tested session's, as many
  bool ok = false;
};

inline BothRuns RunBoth(exec::Session& reference, exec::Session& tested,
                        const exec::TensorMap& inputs) {
  BothRuns both;
  absl::StatusOr<std::vector<Tensor>> expected = reference.Run(inputs);
  absl::StatusOr<std::vector<Tensor>> actual = tested.Run(inputs);
  if (!expected.ok() || !actual.ok()) {
    ADD_FAILURE() << "reference: " << expected.status() << "; tested: " << actual.status();
    return both;
  }
  if (actual->size() != expected->size()) {
    ADD_FAILURE() << actual->size() << " outputs, the reference has " << expected->size();
    return both;
  }
  both.expected = *std::move(expected);
  both.actual = *std::move(actual);
  both.ok = true;
  return both;
}

}  // namespace ovfix::test_support
