// Repair to tolerance: when the fp16 conversion's end-to-end error exceeds the tolerance,
// find the nodes responsible, keep them in fp32, convert again and measure again, until the
// model is within tolerance.
//
// Which nodes: one run of the converted model with every activation captured, beside the
// fp32 activations of the same graph, gives each value's error (relative to its range).
// A node's own contribution is how much error it adds: its output's error minus the worst
// error of its inputs. The nodes that add the most, enough of them to cover the share of the
// total that must go, are kept in fp32; the next round measures again (the errors of what is
// left move once those are exact). Each round costs one run per input set; after
// `kMaxRounds` rounds every float node is kept (the fp32 model, which reproduces itself).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/validation.h"
#include "ir/model.h"

namespace ovfix::converter {

struct RepairedNode {
  std::string node;  // Describe() in the converted model
  std::string op_type;
  std::string output;       // the name of its first output (what the repair keys it by)
  double error_before = 0;  // its output's error in the round that chose it
  double error_after = 0;   // in the final model
  int round = 0;
};

struct RepairResult {
  std::unique_ptr<Model> model;  // within tolerance, or the last attempt
  EndToEndResult end_to_end;     // of its serialized bytes
  std::vector<RepairedNode> kept;
  int rounds = 0;
  int model_runs = 0;
  bool within_tolerance = false;
};

// Converts a copy of the fp32 graph with the given nodes kept in fp32 (by first output
// name, with the reason): the pipeline's steps from the fp16 conversion on.
using Reconvert = std::function<absl::StatusOr<std::unique_ptr<Model>>(
    const std::map<std::string, std::string>& keep)>;

// `fp32` is the graph as it was right before the fp16 conversion; `first` the conversion
// that failed, `first_error` its measured end-to-end error; `reference` holds the input sets
// and the original model's outputs.
absl::StatusOr<RepairResult> RepairToTolerance(const Model& fp32, std::unique_ptr<Model> first,
                                               double first_error, ReferenceValidator& reference,
                                               double tolerance, const Reconvert& reconvert,
                                               const std::function<void(const std::string&)>& log);

}  // namespace ovfix::converter
