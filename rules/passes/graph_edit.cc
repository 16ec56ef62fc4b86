#include "rules/passes/graph_edit.h"

#include <string>

#include "absl/container/flat_hash_set.h"

namespace ovfix::rules {

void RedirectGraphOutput(Rewriter& rewriter, Value* from, Value* to) {
  const std::vector<Use> readers = from->uses();
  rewriter.ReplaceAllUsesWith(from, to);
  for (const Use& u : readers) rewriter.SetInput(u.node, u.input_index, from);
}

bool IsBroadcastingElementwise(const Node& node) {
  static const absl::flat_hash_set<std::string> kOps = {
      "Add",   "Sub",   "Mul",     "Div",         "Pow",     "Mod",
      "Where", "Equal", "Less",    "LessOrEqual", "Greater", "GreaterOrEqual",
      "And",   "Or",    "Xor",     "Max",         "Min",     "Sum",
      "Mean",  "PRelu", "BitShift"};
  return node.domain().empty() && kOps.contains(node.op_type());
}

}  // namespace ovfix::rules
