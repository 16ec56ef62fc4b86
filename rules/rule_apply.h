// Matching one rule at one node (pattern, then its `where`/`let` clauses in order) and
// applying it: the replacement graph is instantiated through the Rewriter as one transaction.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "rules/helpers.h"
#include "rules/matcher.h"
#include "rules/pass.h"
#include "rules/rule_file.h"

namespace ovfix::rules {

struct RuleMatch {
  Match match;
  std::map<std::string, HelperValue> lets;
};

// The match of `rule` rooted at `node` whose conditions hold, or nullopt with the reason
// (put into words only with `explain`).
std::optional<RuleMatch> MatchRule(const Rule& rule, Node* node, const HelperContext& context,
                                   std::string& why, bool explain = true);

// Applies a match: begins a transaction on `ctx.rewriter`, builds the replacement, and ends
// it with FinishRewrite (validated, rolled back when it fails). Returns whether it was
// committed. An error means the rule could not be instantiated (the transaction is rolled
// back first).
absl::StatusOr<bool> ApplyRule(const Rule& rule, const RuleMatch& match, PassContext& ctx);

}  // namespace ovfix::rules
