#include "rules/passes/graph_edit.h"

#include <string>

namespace ovfix::rules {

void RedirectGraphOutput(Rewriter& rewriter, Value* from, Value* to) {
  const std::vector<Use> readers = from->uses();
  rewriter.ReplaceAllUsesWith(from, to);
  for (const Use& u : readers) rewriter.SetInput(u.node, u.input_index, from);
}

Node* CloneWithInputs(Rewriter& rewriter, const Node* old, const std::vector<Value*>& inputs,
                      Node* before, const std::string& suffix) {
  Node* n = rewriter.CreateNode(*old->owner(), old->op_type(), inputs,
                                {rewriter.UniqueName(old->output(0)->name() + suffix)}, before,
                                old->name().empty() ? "" : old->name() + suffix);
  for (const onnx::AttributeProto& a : old->attributes()) rewriter.SetAttribute(n, a);
  rewriter.SetType(n->output(0), old->output(0)->type());
  return n;
}

}  // namespace ovfix::rules
