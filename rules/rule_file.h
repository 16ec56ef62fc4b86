// Rule files: the text format of rewrite rules (docs/rules.md is the reference).
//
//   # Add(a, b), rank(a) < rank(b)  ->  Add(Unsqueeze(a, leading axes), b)
//   rule explicit_broadcast_add
//     benefit 2
//     match   (a, b) => (y) { y = Add(a, b) }
//     where   rank(a) < rank(b)
//     let     axes = leading_axes(a, rank(b))
//     replace (a, b, axes) => (y) { a2 = Unsqueeze(a, axes)  y = Add(a2, b) }
//
// The `#` lines right above `rule` are its algebra comment (required). Errors are reported as
// FILE:LINE:COL: message, positions inside the embedded ONNX text included.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rules/expression.h"
#include "rules/op_versions.h"
#include "rules/pattern.h"

namespace ovfix::rules {

struct Clause {
  enum class Kind { kWhere, kLet };
  Kind kind = Kind::kWhere;
  std::string name;  // the name a `let` binds
  Expr expr;
  std::string text;  // as written, for messages
};

struct Rule {
  // Unique among loaded rules: the name after `rule`, or "<name>.<Op>" for each op of a
  // `for` clause.
  std::string name;
  std::string family;  // the name after `rule`
  std::string set;     // the rule file's stem ("explicit_broadcast")
  std::string file;
  int line = 0;
  std::string algebra;  // the comment above the rule
  int benefit = 1;      // higher first; ties keep file order
  // The op versions the rule is for (`ops`, a `for` op's range, an op group's members): it
  // applies where the model's opset selects a version of each op inside its range.
  std::vector<OpVersionRange> versions;
  Pattern pattern;
  std::vector<Clause> clauses;  // `where` and `let`, in the order written
  Replacement replacement;
};

struct RuleFile {
  std::string path;
  std::string set;  // the file's stem
  std::vector<std::shared_ptr<const Rule>> rules;
};

// Parses rule file text; `path` names the file in messages. All errors found are returned,
// one per line, as "PATH:LINE:COL: message".
absl::StatusOr<RuleFile> ParseRuleFile(std::string_view path, std::string_view text);
// Reads and parses a rule file from disk.
absl::StatusOr<RuleFile> ReadRuleFile(const std::string& path);

}  // namespace ovfix::rules
