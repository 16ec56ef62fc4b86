// Rule sets: the rule files built into the binary (rules/builtin/*.rules) and those users
// pass with --rules, and the Pass that applies a list of rules to a fixed point.
//
// The driver: rules are tried in order of benefit (higher first; equal benefits keep the
// order of their files and of the rules within a file), node by node in graph order, each
// node against the rules whose root op is its op. Every applied match is one Rewriter
// transaction ended by FinishRewrite (validated; rolled back when it fails, and that match is
// not tried again). Sweeps repeat, with shape inference in between so that values made by
// rewrites get types, until a sweep changes nothing or the iteration cap is reached. A sweep
// covers every graph of the model: the main graph, then the If/Loop/Scan bodies, recursively;
// a pattern matches within one graph (values of enclosing graphs are only captures).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rules/pass.h"
#include "rules/rule_file.h"

namespace ovfix::rules {

// The built-in rule files, parsed (once per call).
absl::StatusOr<std::vector<RuleFile>> LoadBuiltinRuleSets();

// Every rule a conversion can use: built-in files first (sorted by name), then user files in
// the order given. Rule names are unique across all of them.
class RuleLibrary {
 public:
  static absl::StatusOr<RuleLibrary> Load(const std::vector<std::string>& user_files = {});

  const std::vector<RuleFile>& files() const { return files_; }
  // The rules `name` selects, in file order: a rule set (a file's stem, e.g.
  // "explicit_broadcast"), a rule family (the name after `rule`), or one rule.
  std::vector<std::shared_ptr<const Rule>> Select(std::string_view name) const;
  // The rules of the user files (--rules), in order.
  std::vector<std::shared_ptr<const Rule>> UserRules() const;
  std::vector<std::shared_ptr<const Rule>> AllRules() const;
  // The stems of the rule files.

 private:
  std::vector<RuleFile> files_;
  size_t builtin_count_ = 0;
};

// Whether --disable NAME turns `rule` off: NAME is the rule, its family, or its set.
bool IsDisabled(const Rule& rule, const std::vector<std::string>& disabled);

struct RuleSetOptions {
  int max_iterations = 8;    // sweeps over the graph
  bool infer_shapes = true;  // between sweeps that changed something
};

// A Pass named `name` (what --disable and the report call it) applying `rules`.
std::unique_ptr<Pass> MakeRuleSetPass(std::string name,
                                      std::vector<std::shared_ptr<const Rule>> rules,
                                      RuleSetOptions options = {});

}  // namespace ovfix::rules
