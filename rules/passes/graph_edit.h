// Small graph helpers the native passes share.
#pragma once

#include <vector>

#include "ir/model.h"
#include "rules/rewriter.h"

namespace ovfix::rules {

// Makes graph output `from` read `to` under its own name, while the other readers of
// `from` keep reading it (Rewriter::ReplaceAllUsesWith moves every reader).
void RedirectGraphOutput(Rewriter& rewriter, Value* from, Value* to);

}  // namespace ovfix::rules
