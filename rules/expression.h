// The expressions of `where` and `let` clauses: helper calls, names bound by the match or an
// earlier `let`, literals (42, 1.5, "text", [0, 1]), `!`, `-`, arithmetic (+ - * / %),
// comparisons (== != < <= > >=), and `&&` / `||` (short-circuit).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rules/helpers.h"
#include "rules/pattern.h"

namespace ovfix::rules {

struct Expr {
  enum class Kind { kInt, kFloat, kString, kName, kCall, kList, kUnary, kBinary };
  Kind kind = Kind::kInt;
  int64_t int_value = 0;
  double float_value = 0;
  std::string text;  // name, helper, operator, or string literal
  std::vector<Expr> args;
  int line = 0, column = 0;  // where it starts in the rule file
  // Levels from here down to the deepest leaf. The parser bounds it (kMaxExprDepth), so
  // everything that walks an expression recursively has a bounded stack.
  int height = 1;
  // Filled by ParseExpression, so evaluation does no lookups or printing per match: the
  // source form (ExprToString) and, for a call, its helper (FindHelper; null if unknown).
  std::string source;
  const Helper* helper = nullptr;
};

// How deep an expression may nest (parentheses, lists, calls, unary operators, chains of
// binary operators): far beyond any real rule, far below what overflows the stack.
inline constexpr int kMaxExprDepth = 200;

// Parses `text`, which starts at (line, column) of its file; errors carry file positions.
bool ParseExpression(std::string_view text, int line, int column, Expr& expr, TextError& error);

// Source form of an expression, for messages ("rank(a) < broadcast_rank(y)").
std::string ExprToString(const Expr& e);

// Calls `visit` for every expression node (checks: helper names, arity, bound names).
void VisitExpr(const Expr& e, const std::function<void(const Expr&)>& visit);

// Looks up the value of a name; FailedPrecondition when not bound (e.g. an absent attribute).
using NameLookup = std::function<absl::StatusOr<HelperValue>(const std::string&)>;

absl::StatusOr<HelperValue> Evaluate(const Expr& e, const NameLookup& lookup,
                                     const HelperContext& context);

// Evaluates a condition. Returns true when it holds; otherwise false and `why` says which
// part failed, with the values it saw ("rank(a) < rank(b) is false: 4 < 4").
bool EvaluateCondition(const Expr& e, const NameLookup& lookup, const HelperContext& context,
                       std::string& why);

}  // namespace ovfix::rules
