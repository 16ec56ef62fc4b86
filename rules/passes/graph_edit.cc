#include "rules/passes/graph_edit.h"

#include <string>

namespace ovfix::rules {

void RedirectGraphOutput(Rewriter& rewriter, Value* from, Value* to) {
  const std::vector<Use> readers = from->uses();
  rewriter.ReplaceAllUsesWith(from, to);
  for (const Use& u : readers) rewriter.SetInput(u.node, u.input_index, from);
}

}  // namespace ovfix::rules
