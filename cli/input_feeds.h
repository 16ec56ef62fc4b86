// The tensors `run` and `compare` feed a model: a test-data folder's input_K.pb files and
// --input NAME=FILE.pb, read and checked the same way for both commands.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/executor.h"
#include "ir/graph.h"

namespace ovfix::cli {

// input_K.pb of `folder` for the K-th graph input that is not an initializer (a missing
// file leaves that input out), then each --input NAME=FILE.pb of `specs`, which replaces what
// the folder gave. A spec without NAME=, an input the graph lacks and a file that does not
// read are errors naming them. `sources` (when given) gets "NAME=FILE" per tensor read.
absl::StatusOr<exec::TensorMap> ReadFeeds(const Graph& graph, const std::string& folder,
                                          const std::vector<std::string>& specs,
                                          std::vector<std::string>* sources = nullptr);

}  // namespace ovfix::cli
