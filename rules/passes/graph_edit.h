// Small graph helpers the native passes share.
#pragma once

#include <string>
#include <vector>

#include "ir/model.h"
#include "rules/rewriter.h"

namespace ovfix::rules {

// Makes graph output `from` read `to` under its own name, while the other readers of
// `from` keep reading it (Rewriter::ReplaceAllUsesWith moves every reader).
void RedirectGraphOutput(Rewriter& rewriter, Value* from, Value* to);

// A copy of `old` placed before `before` that reads `inputs`: the same op, attributes and
// output type, with a new output; the node's and the output's names are old's with `suffix`
// appended (the output's made unique).
Node* CloneWithInputs(Rewriter& rewriter, const Node* old, const std::vector<Value*>& inputs,
                      Node* before, const std::string& suffix);

}  // namespace ovfix::rules
