#include "rules/expression.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/status_macros.h"
#include "rules/text_cursor.h"

namespace ovfix::rules {
namespace {

// Recursive descent over the text, keeping file positions for every token.
class ExprParser {
 public:
  ExprParser(std::string_view text, int line, int column) : cursor_(text, line, column) {}

  bool ParseAll(Expr& out, TextError& error) {
    if (!ParseOr(out)) {
      error = error_;
      return false;
    }
    SkipSpace();
    if (!cursor_.AtEnd()) {
      SetError(absl::StrCat("unexpected '", std::string(1, cursor_.Peek()), "'"));
      error = error_;
      return false;
    }
    return true;
  }

 private:
  void Advance() { cursor_.Advance(); }
  void SkipSpace() { cursor_.SkipSpaceAndComments(); }
  bool Peek(std::string_view token) {
    SkipSpace();
    return cursor_.LookingAt(token);
  }
  bool Accept(std::string_view token) {
    if (!Peek(token)) return false;
    for (size_t i = 0; i < token.size(); ++i) Advance();
    return true;
  }
  bool SetError(std::string message) {
    if (error_.message.empty()) error_ = {cursor_.line(), cursor_.column(), std::move(message)};
    return false;
  }
  Expr Start(Expr::Kind kind) {
    SkipSpace();
    Expr e;
    e.kind = kind;
    e.line = cursor_.line();
    e.column = cursor_.column();
    return e;
  }
  // Opens one level of recursion in the parser (parentheses, lists, calls, unary operands):
  // false, with the error set, past kMaxExprDepth.
  bool Enter() {
    if (++nesting_ <= kMaxExprDepth) return true;
    return SetError(absl::StrCat("expression nested deeper than ", kMaxExprDepth, " levels"));
  }
  // Sets `e.height` from its operands; false, with the error set, past kMaxExprDepth (a
  // chain of binary operators deepens the tree without nesting in the text).
  bool Measure(Expr& e) {
    e.height = 1;
    for (const Expr& a : e.args) e.height = std::max(e.height, a.height + 1);
    if (e.height <= kMaxExprDepth) return true;
    if (error_.message.empty()) {
      error_ = {e.line, e.column,
                absl::StrCat("expression nested deeper than ", kMaxExprDepth,
                             " levels (split a long chain of operators)")};
    }
    return false;
  }
  bool Binary(Expr& left, std::string op, Expr right) {
    Expr e;
    e.kind = Expr::Kind::kBinary;
    e.text = std::move(op);
    e.line = left.line;
    e.column = left.column;
    e.args.push_back(std::move(left));
    e.args.push_back(std::move(right));
    left = std::move(e);
    return Measure(left);
  }

  // Binary operators by precedence, loosest first; a comparison does not chain (a < b < c is
  // an error), the others associate to the left. Longer spellings come first ("<=" before "<").
  struct Level {
    std::vector<const char*> ops;
    bool chains;
  };
  static const std::vector<Level>& Levels() {
    static const std::vector<Level> kLevels = {
        {{"||"}, true},     {{"&&"}, true},          {{"==", "!=", "<=", ">=", "<", ">"}, false},
        {{"+", "-"}, true}, {{"*", "/", "%"}, true},
    };
    return kLevels;
  }
  bool ParseOr(Expr& out) { return ParseBinary(out, 0); }
  bool ParseBinary(Expr& out, size_t level) {
    if (level == Levels().size()) return ParseUnary(out);
    if (!ParseBinary(out, level + 1)) return false;
    for (;;) {
      const char* op = nullptr;
      for (const char* candidate : Levels()[level].ops) {
        if (Accept(candidate)) {
          op = candidate;
          break;
        }
      }
      if (op == nullptr) return true;
      Expr right;
      if (!ParseBinary(right, level + 1) || !Binary(out, op, std::move(right))) return false;
      if (!Levels()[level].chains) return true;
    }
  }
  bool ParseUnary(Expr& out) {
    if (Peek("!") && !Peek("!=")) {
      out = Start(Expr::Kind::kUnary);
      Accept("!");
      out.text = "!";
    } else if (Peek("-")) {
      out = Start(Expr::Kind::kUnary);
      Accept("-");
      out.text = "-";
    } else {
      return ParsePrimary(out);
    }
    Expr operand;
    if (!Enter() || !ParseUnary(operand)) return false;
    --nesting_;
    out.args.push_back(std::move(operand));
    return Measure(out);
  }
  // The items of a list or the arguments of a call, up to `close`.
  bool ParseItems(Expr& out, std::string_view close) {
    if (!Enter()) return false;
    if (!Accept(close)) {
      do {
        Expr item;
        if (!ParseOr(item)) return false;
        out.args.push_back(std::move(item));
      } while (Accept(","));
      if (!Accept(close)) {
        return SetError(absl::StrCat("expected ',' or '", std::string(close), "'"));
      }
    }
    --nesting_;
    return Measure(out);
  }
  bool ParseList(Expr& out) {
    out = Start(Expr::Kind::kList);
    Accept("[");
    return ParseItems(out, "]");
  }
  bool ParseNumber(Expr& out) {
    out = Start(Expr::Kind::kInt);
    const std::string_view text = cursor_.text();
    const size_t begin = cursor_.pos();
    bool is_float = false;
    while (!cursor_.AtEnd()) {
      const char c = cursor_.Peek();
      const bool exponent_sign = (c == '+' || c == '-') &&
                                 (text[cursor_.pos() - 1] == 'e' || text[cursor_.pos() - 1] == 'E');
      if (c == '.' || c == 'e' || c == 'E' || exponent_sign) {
        is_float = true;
      } else if (!std::isdigit(static_cast<unsigned char>(c))) {
        break;
      }
      Advance();
    }
    const std::string number(text.substr(begin, cursor_.pos() - begin));
    char* end = nullptr;
    if (is_float) {
      out.kind = Expr::Kind::kFloat;
      out.float_value = std::strtod(number.c_str(), &end);
    } else {
      out.int_value = std::strtoll(number.c_str(), &end, 10);
    }
    if (end != number.c_str() + number.size()) {
      error_ = {out.line, out.column, absl::StrCat("bad number '", number, "'")};
      return false;
    }
    return true;
  }
  bool ParseString(Expr& out) {
    out = Start(Expr::Kind::kString);
    Advance();  // the opening quote
    while (!cursor_.AtEnd() && cursor_.Peek() != '"') {
      if (cursor_.Peek() == '\\' && cursor_.pos() + 1 < cursor_.text().size()) Advance();
      if (cursor_.Peek() == '\n') break;
      out.text += cursor_.Peek();
      Advance();
    }
    if (cursor_.Peek() != '"') {
      error_ = {out.line, out.column, "unterminated string"};
      return false;
    }
    Advance();
    return true;
  }
  bool ParsePrimary(Expr& out) {
    SkipSpace();
    if (cursor_.AtEnd()) return SetError("expected an expression");
    const char c = cursor_.Peek();
    if (c == '(') {
      Accept("(");
      if (!Enter() || !ParseOr(out)) return false;
      --nesting_;
      return Accept(")") || SetError("expected ')'");
    }
    if (c == '[') return ParseList(out);
    if (c == '"') return ParseString(out);
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return ParseNumber(out);
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') {
      return SetError(absl::StrCat("unexpected '", std::string(1, c), "'"));
    }
    out = Start(Expr::Kind::kName);
    out.text = cursor_.Word();
    if (!Accept("(")) return true;
    out.kind = Expr::Kind::kCall;
    return ParseItems(out, ")");
  }

  TextCursor cursor_;
  int nesting_ = 0;
  TextError error_;
};

bool IsNumber(const HelperValue& v) {
  return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
}
double AsDouble(const HelperValue& v) {
  return std::holds_alternative<int64_t>(v) ? static_cast<double>(std::get<int64_t>(v))
                                            : std::get<double>(v);
}

bool IsComparison(std::string_view op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

absl::Status TypeError(const Expr& e, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(e.source, ": ", what));
}

absl::StatusOr<bool> Compare(const Expr& e, const HelperValue& a, const HelperValue& b) {
  const std::string& op = e.text;
  auto order = [&](auto x, auto y) -> bool {
    if (op == "==") return x == y;
    if (op == "!=") return x != y;
    if (op == "<") return x < y;
    if (op == "<=") return x <= y;
    if (op == ">") return x > y;
    return x >= y;
  };
  if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
    return order(std::get<int64_t>(a), std::get<int64_t>(b));
  }
  if (IsNumber(a) && IsNumber(b)) return order(AsDouble(a), AsDouble(b));
  if (std::holds_alternative<std::string>(a) && std::holds_alternative<std::string>(b)) {
    return order(std::get<std::string>(a), std::get<std::string>(b));
  }
  if (op != "==" && op != "!=") return TypeError(e, "these operands have no order");
  if (a.index() != b.index()) {
    return TypeError(e, absl::StrCat("cannot compare ", DescribeHelperValue(a), " with ",
                                     DescribeHelperValue(b)));
  }
  bool equal = false;
  if (auto* x = std::get_if<bool>(&a))
    equal = *x == std::get<bool>(b);
  else if (auto* x = std::get_if<std::vector<int64_t>>(&a))
    equal = *x == std::get<std::vector<int64_t>>(b);
  else if (auto* x = std::get_if<std::vector<double>>(&a))
    equal = *x == std::get<std::vector<double>>(b);
  else if (auto* x = std::get_if<Value*>(&a))
    equal = *x == std::get<Value*>(b);
  else
    return TypeError(e, "these operands cannot be compared");
  return op == "==" ? equal : !equal;
}

// x op y for + - * / and, for %, remainder(x, y).
template <typename T, typename Remainder>
T Apply(char op, T x, T y, Remainder remainder) {
  switch (op) {
    case '+':
      return x + y;
    case '-':
      return x - y;
    case '*':
      return x * y;
    case '/':
      return x / y;
    default:
      return remainder(x, y);
  }
}

absl::StatusOr<HelperValue> Arithmetic(const Expr& e, const HelperValue& a, const HelperValue& b) {
  if (!IsNumber(a) || !IsNumber(b)) return TypeError(e, "arithmetic needs numbers");
  const char op = e.text[0];
  if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
    const int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
    if ((op == '/' || op == '%') && y == 0) return TypeError(e, "division by zero");
    return Apply(op, x, y, [](int64_t p, int64_t q) { return p % q; });
  }
  return Apply(op, AsDouble(a), AsDouble(b), [](double p, double q) { return std::fmod(p, q); });
}

absl::StatusOr<bool> AsBool(const Expr& e, const HelperValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  return TypeError(e, absl::StrCat("is ", DescribeHelperValue(v), ", not true or false"));
}

}  // namespace

namespace {

void Annotate(Expr& e) {
  for (Expr& a : e.args) Annotate(a);
  e.source = ExprToString(e);
  if (e.kind == Expr::Kind::kCall) e.helper = FindHelper(e.text);
}

}  // namespace

bool ParseExpression(std::string_view text, int line, int column, Expr& expr, TextError& error) {
  if (!ExprParser(text, line, column).ParseAll(expr, error)) return false;
  Annotate(expr);
  return true;
}

std::string ExprToString(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kInt:
      return absl::StrCat(e.int_value);
    case Expr::Kind::kFloat:
      return absl::StrCat(e.float_value);
    case Expr::Kind::kString:
      return absl::StrCat("\"", e.text, "\"");
    case Expr::Kind::kName:
      return e.text;
    case Expr::Kind::kUnary: {
      const Expr& a = e.args[0];
      if (a.kind == Expr::Kind::kBinary) return absl::StrCat(e.text, "(", ExprToString(a), ")");
      return absl::StrCat(e.text, ExprToString(a));
    }
    case Expr::Kind::kBinary: {
      auto side = [&](const Expr& a) {
        if (a.kind == Expr::Kind::kBinary && a.text != e.text) {
          return absl::StrCat("(", ExprToString(a), ")");
        }
        return ExprToString(a);
      };
      return absl::StrCat(side(e.args[0]), " ", e.text, " ", side(e.args[1]));
    }
    case Expr::Kind::kCall:
    case Expr::Kind::kList: {
      std::vector<std::string> args;
      for (const auto& a : e.args) args.push_back(ExprToString(a));
      if (e.kind == Expr::Kind::kList) return absl::StrCat("[", absl::StrJoin(args, ", "), "]");
      return absl::StrCat(e.text, "(", absl::StrJoin(args, ", "), ")");
    }
  }
  return "";
}

void VisitExpr(const Expr& e, const std::function<void(const Expr&)>& visit) {
  visit(e);
  for (const auto& a : e.args) VisitExpr(a, visit);
}

absl::StatusOr<HelperValue> Evaluate(const Expr& e, const NameLookup& lookup,
                                     const HelperContext& context) {
  switch (e.kind) {
    case Expr::Kind::kInt:
      return e.int_value;
    case Expr::Kind::kFloat:
      return e.float_value;
    case Expr::Kind::kString:
      return e.text;
    case Expr::Kind::kName:
      if (e.text == "true") return true;
      if (e.text == "false") return false;
      return lookup(e.text);
    case Expr::Kind::kList: {
      std::vector<HelperValue> items;
      bool any_float = false;
      for (const auto& a : e.args) {
        OVFIX_ASSIGN_OR_RETURN(auto v, Evaluate(a, lookup, context));
        if (!IsNumber(v)) return TypeError(e, "a list holds numbers only");
        any_float |= std::holds_alternative<double>(v);
        items.push_back(std::move(v));
      }
      if (any_float) {
        std::vector<double> out;
        for (const auto& v : items) out.push_back(AsDouble(v));
        return out;
      }
      std::vector<int64_t> out;
      for (const auto& v : items) out.push_back(std::get<int64_t>(v));
      return out;
    }
    case Expr::Kind::kCall: {
      const Helper* helper = e.helper;
      if (helper == nullptr) return TypeError(e, "unknown helper");
      std::vector<HelperValue> args;
      for (const auto& a : e.args) {
        OVFIX_ASSIGN_OR_RETURN(auto v, Evaluate(a, lookup, context));
        args.push_back(std::move(v));
      }
      if (context.memo == nullptr || args.size() != 1 || !std::holds_alternative<Value*>(args[0])) {
        return helper->fn(context, args);
      }
      const std::pair<const Helper*, const Value*> key(helper, std::get<Value*>(args[0]));
      if (auto it = context.memo->find(key); it != context.memo->end()) return it->second;
      return context.memo->emplace(key, helper->fn(context, args)).first->second;
    }
    case Expr::Kind::kUnary: {
      OVFIX_ASSIGN_OR_RETURN(auto v, Evaluate(e.args[0], lookup, context));
      if (e.text == "!") {
        OVFIX_ASSIGN_OR_RETURN(auto b, AsBool(e.args[0], v));
        return !b;
      }
      if (auto* i = std::get_if<int64_t>(&v)) return -*i;
      if (auto* d = std::get_if<double>(&v)) return -*d;
      return TypeError(e, "'-' needs a number");
    }
    case Expr::Kind::kBinary: {
      OVFIX_ASSIGN_OR_RETURN(auto left, Evaluate(e.args[0], lookup, context));
      if (e.text == "&&" || e.text == "||") {
        OVFIX_ASSIGN_OR_RETURN(auto l, AsBool(e.args[0], left));
        if (l == (e.text == "||")) return l;
        OVFIX_ASSIGN_OR_RETURN(auto right, Evaluate(e.args[1], lookup, context));
        OVFIX_ASSIGN_OR_RETURN(auto r, AsBool(e.args[1], right));
        return r;
      }
      OVFIX_ASSIGN_OR_RETURN(auto right, Evaluate(e.args[1], lookup, context));
      if (e.text.size() == 1 && std::string_view("+-*/%").find(e.text[0]) != std::string::npos) {
        return Arithmetic(e, left, right);
      }
      OVFIX_ASSIGN_OR_RETURN(auto result, Compare(e, left, right));
      return result;
    }
  }
  return TypeError(e, "cannot evaluate");
}

bool EvaluateCondition(const Expr& e, const NameLookup& lookup, const HelperContext& context,
                       std::string& why) {
  auto fail = [&](const absl::Status& s) {
    why = absl::IsFailedPrecondition(s) ? std::string(s.message())
                                        : absl::StrCat("rule error: ", s.message());
    return false;
  };
  if (e.kind == Expr::Kind::kBinary && e.text == "&&") {
    return EvaluateCondition(e.args[0], lookup, context, why) &&
           EvaluateCondition(e.args[1], lookup, context, why);
  }
  if (e.kind == Expr::Kind::kBinary && IsComparison(e.text)) {
    auto left = Evaluate(e.args[0], lookup, context);
    if (!left.ok()) return fail(left.status());
    auto right = Evaluate(e.args[1], lookup, context);
    if (!right.ok()) return fail(right.status());
    auto result = Compare(e, *left, *right);
    if (!result.ok()) return fail(result.status());
    if (!*result) {
      why = absl::StrCat(e.source, " is false: ", DescribeHelperValue(*left), " ", e.text, " ",
                         DescribeHelperValue(*right));
    }
    return *result;
  }
  auto value = Evaluate(e, lookup, context);
  if (!value.ok()) return fail(value.status());
  auto result = AsBool(e, *value);
  if (!result.ok()) return fail(result.status());
  if (!*result) why = absl::StrCat(e.source, " is false");
  return *result;
}

}  // namespace ovfix::rules
