// Matching a pattern DAG against the IR, from the pattern's root node back towards its
// captures. A capture binds a value (a repeated capture must bind the same value), a produced
// pattern value binds the value at the same output of the matched node, attributes written
// in the pattern must equal the node's (onnx's schema defaults fill in absent ones), and the
// inputs of commutative ops are tried in every order. Each failure says why, like MLIR's
// notifyMatchFailure.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "rules/pattern.h"

namespace ovfix::rules {

struct Match {
  std::map<std::string, Value*> values;                    // captures and produced pattern values
  std::map<std::string, std::vector<Value*>> lists;        // variadic captures
  std::map<std::string, onnx::AttributeProto> attributes;  // `@ref` captures present on nodes
  std::vector<Node*> nodes;                                // the node matched by each pattern node
  // For each pattern node: the matched node's input index of each pattern input, the
  // variadic capture expanded in place. Not the identity when commutative inputs swapped.
  std::vector<std::vector<int>> input_order;
  Node* root = nullptr;
};

// Decides whether a structural match is acceptable (a rule's `where` clauses); fills `why`
// when it is not.
using AcceptFn = std::function<bool(const Match&, std::string& why)>;

// Matches `pattern` with its root at `node`. Every alternative (commutative orders) is tried
// until `accept` takes one; returns it, or nullopt with the reason in `why`. Without
// `explain`, `why` stays empty and no reason is put into words (a conversion's matching).
std::optional<Match> MatchPattern(const Pattern& pattern, Node* node, const AcceptFn& accept,
                                  std::string& why, int64_t opset = -1, bool explain = true);

}  // namespace ovfix::rules
