#include "rules/rule_file.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ir/op_schemas.h"
#include "onnx/defs/schema.h"
#include "rules/closest_name.h"
#include "rules/text_cursor.h"

namespace ovfix::rules {
namespace {

const std::set<std::string_view> kClauses = {"for",   "variadic", "any_input", "ops",    "benefit",
                                             "match", "where",    "let",       "replace"};

// A block of text from the file and where it starts.
struct Span {
  std::string text;
  int line = 0, column = 0;
};

// An op or op group in a `for` or `ops` list, with its version range when one is written.
struct RawOp {
  std::string name;
  int line = 0, column = 0;
  bool ranged = false;
  int since = 1, until = kOpenVersion;
  int range_line = 0, range_column = 0;
};

// One rule as written, before checking.
struct RawRule {
  std::string name, algebra;
  int line = 0, column = 0;
  std::optional<Span> match, replace;
  std::string placeholder;      // `for Op in ...`
  std::vector<RawOp> ops;       // `for`
  std::vector<RawOp> versions;  // `ops`
  std::set<std::string> variadic, any_input;
  int benefit = 1;
  struct RawClause {
    Clause::Kind kind;
    std::string name;
    Span expr;
  };
  std::vector<RawClause> clauses;
};

class RuleFileParser {
 public:
  RuleFileParser(std::string_view path, std::string_view text) : path_(path), cursor_(text) {}

  absl::StatusOr<RuleFile> Parse();

 private:
  // Position helpers.
  bool AtEnd() const { return cursor_.AtEnd(); }
  char Peek() const { return cursor_.Peek(); }
  void Advance() { cursor_.Advance(); }
  void SkipBlanks() { cursor_.SkipBlanks(); }
  void SkipLine() { cursor_.SkipLine(); }
  std::string Word() { return cursor_.Word(); }
  int line() const { return cursor_.line(); }
  int column() const { return cursor_.column(); }
  // The rest of the line without a trailing comment, and whether anything but blanks was left.
  std::string RestOfLine() {
    std::string rest;
    bool in_string = false;
    while (!AtEnd() && Peek() != '\n') {
      if (Peek() == '"') in_string = !in_string;
      if (Peek() == '#' && !in_string) break;
      rest += Peek();
      Advance();
    }
    SkipLine();
    return std::string(absl::StripAsciiWhitespace(rest));
  }
  // The rest of a clause's line without a trailing comment; a list continues on the next line
  // after a trailing comma. Newlines stay in the text, so positions can be found again.
  Span ReadList();
  // Where offset `at` of `span.text` is in the file.
  static std::pair<int, int> PositionIn(const Span& span, size_t at);
  // Parses "NAME [RANGE], NAME [RANGE], ..." from offset `from` of `span`.
  bool ParseOpList(const Span& span, size_t from, std::vector<RawOp>& out);
  // The ranges of a `for` list (op groups expanded) or `ops` list; false after an error.
  bool CheckOps(const std::vector<RawOp>& raw, bool groups, std::vector<OpVersionRange>& out);
  void Error(int line, int column, std::string message) {
    errors_.push_back(absl::StrCat(path_, ":", line, ":", column, ": ", message));
  }
  // At the start of a line: whether `#` lines and then a `rule` line follow.
  bool AtRuleHeader();
  // Skips to the next rule (after an error).
  void Recover();
  bool ParseRule(RawRule& rule);
  bool ParseClause(RawRule& rule, const std::string& keyword, int line, int column);
  bool ReadGraph(Span& span, int keyword_line, int keyword_column);
  bool ReadExpression(Span& span);
  void Build(const RawRule& raw, RuleFile& out);
  // Reports every op of `graph` that onnx does not know (in onnx's domains) and every domain
  // that looks like a misspelling of one of onnx's; false when there was one.
  bool CheckOpNames(const Span& span, const onnx::GraphProto& graph, const char* where,
                    const std::string& placeholder);
  bool BuildOne(const RawRule& raw, const OpVersionRange* op, const std::string& placeholder,
                const std::vector<OpVersionRange>& versions, const onnx::GraphProto& match,
                const onnx::GraphProto& replace, RuleFile& out);
  // Where `token` first appears in `span` as a whole identifier; the span start otherwise.
  // Where `token` first stands in `span` as a whole name; in the node list only when `in_body`.
  std::pair<int, int> Locate(const Span& span, const std::string& token,
                             bool in_body = false) const;

  std::string path_;
  TextCursor cursor_;
  std::vector<std::string> errors_;
  std::set<std::string> names_;
};

bool RuleFileParser::AtRuleHeader() {
  const TextCursor::Mark start = cursor_.Save();
  SkipBlanks();
  while (!AtEnd() && Peek() == '#') {
    SkipLine();
    SkipBlanks();
  }
  const bool header = Word() == "rule";
  cursor_.Restore(start);
  return header;
}

void RuleFileParser::Recover() {
  while (!AtEnd() && !AtRuleHeader()) SkipLine();
}

bool RuleFileParser::ReadGraph(Span& span, int keyword_line, int keyword_column) {
  SkipBlanks();
  span.line = line();
  span.column = column();
  int depth = 0, parens = 0;
  bool in_string = false, opened = false;
  while (!AtEnd()) {
    const char c = Peek();
    if (c == '\n' && !opened && parens == 0 && !in_string) {
      Error(line(), column(), "expected '{': a graph is (inputs) => (outputs) { nodes }");
      return false;
    }
    if (in_string) {
      if (c == '\\') {
        span.text += c;
        Advance();
        if (AtEnd()) break;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '#') {
      // Comments stay in the text (the ONNX parser skips them) so positions stay right.
      span.text += cursor_.RestOfLineRaw();
      continue;
    } else if (c == '(') {
      ++parens;
    } else if (c == ')') {
      --parens;
    } else if (c == '{') {
      ++depth;
      opened = true;
    } else if (c == '}') {
      --depth;
    }
    span.text += c;
    Advance();
    if (opened && depth == 0) {
      const std::string rest = RestOfLine();
      if (!rest.empty()) {
        Error(line() - 1, 1, absl::StrCat("unexpected text after the graph: '", rest, "'"));
        return false;
      }
      return true;
    }
  }
  Error(keyword_line, keyword_column, "unterminated graph: missing '}'");
  return false;
}

bool RuleFileParser::ReadExpression(Span& span) {
  SkipBlanks();
  span.line = line();
  span.column = column();
  int depth = 0;
  bool in_string = false;
  while (!AtEnd()) {
    const char c = Peek();
    if (c == '\n' && depth <= 0 && !in_string) {
      // An expression continues on the next line after a trailing && or ||.
      const absl::string_view so_far = absl::StripTrailingAsciiWhitespace(span.text);
      if (!absl::EndsWith(so_far, "&&") && !absl::EndsWith(so_far, "||")) break;
    }
    if (c == '#' && !in_string) {
      cursor_.RestOfLineRaw();
      continue;
    }
    if (c == '"') in_string = !in_string;
    if (!in_string && (c == '(' || c == '[')) ++depth;
    if (!in_string && (c == ')' || c == ']')) --depth;
    span.text += c;
    Advance();
  }
  if (!AtEnd()) Advance();
  if (absl::StripAsciiWhitespace(span.text).empty()) {
    Error(span.line, span.column, "expected an expression");
    return false;
  }
  return true;
}

bool RuleFileParser::ParseClause(RawRule& rule, const std::string& keyword, int line, int column) {
  SkipBlanks();
  if (keyword == "match" || keyword == "replace") {
    std::optional<Span>& slot = keyword == "match" ? rule.match : rule.replace;
    if (slot) {
      Error(line, column, absl::StrCat("a rule has one '", keyword, "'"));
      return false;
    }
    Span span;
    if (!ReadGraph(span, line, column)) return false;
    slot = span;
    return true;
  }
  if (keyword == "where") {
    RawRule::RawClause clause{Clause::Kind::kWhere, "", {}};
    if (!ReadExpression(clause.expr)) return false;
    rule.clauses.push_back(std::move(clause));
    return true;
  }
  if (keyword == "let") {
    const int name_line = cursor_.line(), name_column = cursor_.column();
    RawRule::RawClause clause{Clause::Kind::kLet, Word(), {}};
    SkipBlanks();
    if (clause.name.empty() || Peek() != '=') {
      Error(name_line, name_column, "expected 'let NAME = EXPRESSION'");
      return false;
    }
    Advance();
    if (!ReadExpression(clause.expr)) return false;
    rule.clauses.push_back(std::move(clause));
    return true;
  }
  const Span list = ReadList();
  const std::string rest(absl::StripAsciiWhitespace(list.text));
  if (keyword == "benefit") {
    int value = 0;
    if (!absl::SimpleAtoi(rest, &value) || value < 0) {
      Error(list.line, list.column, "benefit must be a non-negative integer");
      return false;
    }
    rule.benefit = value;
    return true;
  }
  if (keyword == "variadic" || keyword == "any_input") {
    for (absl::string_view name : absl::StrSplit(rest, ',')) {
      std::string n(absl::StripAsciiWhitespace(name));
      if (n.empty()) {
        Error(list.line, list.column, absl::StrCat("expected '", keyword, " NAME[, NAME...]'"));
        return false;
      }
      (keyword == "variadic" ? rule.variadic : rule.any_input).insert(n);
    }
    return true;
  }
  if (keyword == "ops") return ParseOpList(list, 0, rule.versions);
  // for Op in Add, Sub 7.., group, ...
  size_t at = 0;
  auto word = [&] {
    while (at < list.text.size() && std::isspace(static_cast<unsigned char>(list.text[at]))) ++at;
    const size_t start = at;
    while (at < list.text.size() && IsIdentifierChar(list.text[at])) ++at;
    return list.text.substr(start, at - start);
  };
  rule.placeholder = word();
  if (rule.placeholder.empty() || word() != "in") {
    Error(list.line, list.column, "expected 'for PLACEHOLDER in OP, OP, ...'");
    return false;
  }
  return ParseOpList(list, at, rule.ops);
}

Span RuleFileParser::ReadList() {
  SkipBlanks();
  Span span{"", line(), column()};
  while (true) {
    bool in_string = false;
    while (!AtEnd() && Peek() != '\n') {
      if (Peek() == '"') in_string = !in_string;
      if (Peek() == '#' && !in_string) {
        while (!AtEnd() && Peek() != '\n') Advance();
        break;
      }
      span.text += Peek();
      Advance();
    }
    const bool more = absl::EndsWith(absl::StripTrailingAsciiWhitespace(span.text), ",");
    if (AtEnd()) break;
    Advance();
    if (!more) break;
    span.text += '\n';
  }
  return span;
}

std::pair<int, int> RuleFileParser::PositionIn(const Span& span, size_t at) {
  int line = span.line, column = span.column;
  for (size_t i = 0; i < at && i < span.text.size(); ++i) {
    if (span.text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

bool RuleFileParser::ParseOpList(const Span& span, size_t from, std::vector<RawOp>& out) {
  const std::string& text = span.text;
  for (size_t begin = from; begin <= text.size();) {
    const size_t end = std::min(text.find(',', begin), text.size());
    // The entry's words and where each starts.
    std::vector<std::pair<std::string, size_t>> words;
    for (size_t i = begin; i < end;) {
      if (std::isspace(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      const size_t start = i;
      while (i < end && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      words.emplace_back(text.substr(start, i - start), start);
    }
    if (words.empty() || words.size() > 2) {
      auto [line, column] = PositionIn(span, words.size() > 2 ? words[2].second : begin);
      Error(line, column,
            "expected 'OP [VERSIONS]' or an op group, e.g. 'Add 7..' or 'Squeeze ..12'");
      return false;
    }
    RawOp op;
    op.name = words[0].first;
    std::tie(op.line, op.column) = PositionIn(span, words[0].second);
    if (words.size() == 2) {
      const std::string& range = words[1].first;
      std::tie(op.range_line, op.range_column) = PositionIn(span, words[1].second);
      const size_t dots = range.find("..");
      const std::string low = dots == std::string::npos ? "" : range.substr(0, dots);
      const std::string high = dots == std::string::npos ? "" : range.substr(dots + 2);
      op.ranged = true;
      if (dots == std::string::npos || (low.empty() && high.empty()) ||
          (!low.empty() && !absl::SimpleAtoi(low, &op.since)) ||
          (!high.empty() && !absl::SimpleAtoi(high, &op.until))) {
        Error(op.range_line, op.range_column,
              absl::StrCat("expected a version range N..M, N.. or ..M, not '", range, "'"));
        return false;
      }
      if (op.since < 1 || op.until < 1) {
        Error(op.range_line, op.range_column, "op versions start at 1");
        return false;
      }
    }
    out.push_back(std::move(op));
    begin = end + 1;
  }
  return true;
}

bool RuleFileParser::ParseRule(RawRule& rule) {
  SkipBlanks();
  rule.line = line();
  rule.column = column();
  Word();  // "rule"
  SkipBlanks();
  const int name_line = line(), name_column = column();
  rule.name = Word();
  const std::string rest = RestOfLine();
  if (rule.name.empty() || !rest.empty()) {
    Error(name_line, name_column, "expected 'rule NAME' (letters, digits, '_')");
    return false;
  }
  if (rule.algebra.empty()) {
    Error(rule.line, rule.column,
          absl::StrCat("rule '", rule.name,
                       "' needs an algebra comment: a '#' line right above 'rule'"));
  }
  while (!AtEnd()) {
    // A comment block right above the next `rule` is that rule's algebra comment; other
    // comments inside a rule are notes.
    if (AtRuleHeader()) return true;
    SkipBlanks();
    if (Peek() == '\n' || Peek() == '#') {
      SkipLine();
      continue;
    }
    const int line = cursor_.line(), column = cursor_.column();
    const std::string keyword = Word();
    if (!kClauses.count(keyword)) {
      Error(line, column,
            absl::StrCat("unknown clause '", keyword.empty() ? std::string(1, Peek()) : keyword,
                         "' (expected match, where, let, replace, benefit, for, ops, variadic or "
                         "any_input)"));
      return false;
    }
    if (!ParseClause(rule, keyword, line, column)) return false;
  }
  return true;
}

std::pair<int, int> RuleFileParser::Locate(const Span& span, const std::string& token,
                                           bool in_body) const {
  if (!token.empty()) {
    const size_t body = in_body ? span.text.find('{') : 0;
    for (size_t at = span.text.find(token, body == std::string::npos ? 0 : body);
         at != std::string::npos; at = span.text.find(token, at + 1)) {
      const bool left = at == 0 || !IsIdentifierChar(span.text[at - 1]);
      const size_t end = at + token.size();
      const bool right = end >= span.text.size() || !IsIdentifierChar(span.text[end]);
      if (!left || !right) continue;
      return PositionIn(span, at);
    }
  }
  return {span.line, span.column};
}

absl::StatusOr<RuleFile> RuleFileParser::Parse() {
  RuleFile out;
  out.path = path_;
  out.set = std::filesystem::path(path_).stem().string();
  std::vector<std::string> comments;
  while (!AtEnd()) {
    SkipBlanks();
    if (AtEnd()) break;
    if (Peek() == '\n') {
      comments.clear();
      Advance();
      continue;
    }
    if (Peek() == '#') {
      const std::string comment = cursor_.RestOfLineRaw();
      if (!AtEnd()) Advance();
      comments.push_back(std::string(
          absl::StripAsciiWhitespace(absl::StripPrefix(absl::StripAsciiWhitespace(comment), "#"))));
      continue;
    }
    const TextCursor::Mark start = cursor_.Save();
    const std::string word = Word();
    cursor_.Restore(start);
    if (word != "rule") {
      Error(line(), column(),
            absl::StrCat("expected 'rule', found '", word.empty() ? std::string(1, Peek()) : word,
                         "'"));
      SkipLine();
      Recover();
      comments.clear();
      continue;
    }
    RawRule raw;
    raw.algebra = absl::StrJoin(comments, " ");
    comments.clear();
    const size_t errors_before = errors_.size();
    if (!ParseRule(raw)) {
      Recover();
      continue;
    }
    if (errors_.size() == errors_before) Build(raw, out);
  }
  if (!errors_.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors_, "\n"));
  return out;
}

std::pair<int, int> FilePosition(const Span& span, const TextError& e) {
  if (e.line <= 1) return {span.line, span.column + e.column - 1};
  return {span.line + e.line - 1, e.column};
}

bool IsGroupName(std::string_view name) {
  return !name.empty() && std::islower(static_cast<unsigned char>(name[0])) &&
         name.find('.') == std::string_view::npos;
}

std::string GroupNames() {
  std::vector<std::string> names;
  for (const OpGroup& g : AllOpGroups()) names.emplace_back(g.name);
  return absl::StrJoin(names, ", ");
}

// onnx's domains ("" is ai.onnx) and the op types of each, from onnx's schema registry.
const std::map<std::string, std::vector<std::string>>& OnnxOpsByDomain() {
  static const auto* kOps = [] {
    auto* ops = new std::map<std::string, std::vector<std::string>>();
    for (const auto& [domain, range] :
         onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map()) {
      (*ops)[domain];
    }
    for (const onnx::OpSchema* schema : LatestSchemas()) {
      (*ops)[schema->domain()].push_back(schema->Name());
    }
    return ops;
  }();
  return *kOps;
}

bool RuleFileParser::CheckOpNames(const Span& span, const onnx::GraphProto& graph,
                                  const char* where, const std::string& placeholder) {
  const auto& known = OnnxOpsByDomain();
  bool good = true;
  for (const onnx::NodeProto& n : graph.node()) {
    const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    if (domain.empty() && (IsGroupName(n.op_type()) || n.op_type() == placeholder)) continue;
    auto ops = known.find(domain);
    if (ops == known.end()) {
      std::vector<std::string> domains;
      for (const auto& [d, list] : known) domains.push_back(d.empty() ? "ai.onnx" : d);
      const std::string closest = ClosestName(domain, domains);
      if (closest.empty() && !absl::StartsWith(domain, "ai.onnx")) continue;  // a custom domain
      auto [line, column] = Locate(span, domain);
      Error(line, column,
            absl::StrCat("unknown domain '", domain, "' of ", n.op_type(), " in ", where,
                         closest.empty() ? "" : absl::StrCat(" (did you mean '", closest, "'?)"),
                         "; onnx's domains are ", absl::StrJoin(domains, ", ")));
      good = false;
      continue;
    }
    if (std::find(ops->second.begin(), ops->second.end(), n.op_type()) != ops->second.end()) {
      continue;
    }
    auto [line, column] = Locate(span, n.op_type());
    Error(line, column,
          absl::StrCat("unknown op '", n.op_type(), "' in ", where,
                       domain.empty() ? "" : absl::StrCat(" (domain ", domain, ")"),
                       DidYouMean(n.op_type(), ops->second)));
    good = false;
  }
  return good;
}

bool RuleFileParser::CheckOps(const std::vector<RawOp>& raw, bool groups,
                              std::vector<OpVersionRange>& out) {
  for (const RawOp& o : raw) {
    if (IsGroupName(o.name)) {
      const OpGroup* group = FindOpGroup(o.name);
      if (group == nullptr) {
        Error(o.line, o.column,
              absl::StrCat("unknown op group '", o.name, "' (groups: ", GroupNames(), ")"));
        return false;
      }
      if (!groups) {
        Error(o.line, o.column,
              absl::StrCat("'ops' gives versions of ops, and '", o.name,
                           "' is an op group: name its ops"));
        return false;
      }
      if (o.ranged) {
        Error(o.range_line, o.range_column,
              absl::StrCat("op group '", o.name,
                           "' carries the versions of its ops: name the ops to give others"));
        return false;
      }
      for (const OpGroupMember& m : group->members) {
        out.push_back({"", std::string(m.op_type), m.since_version, m.until_version});
      }
      continue;
    }
    OpVersionRange range{"", o.name, o.since, o.until};
    // `ops com.microsoft.Foo 1..` names an op of another domain.
    if (const size_t dot = o.name.rfind('.'); dot != std::string::npos && !groups) {
      range.domain = o.name.substr(0, dot);
      range.op_type = o.name.substr(dot + 1);
    }
    if (std::string problem = CheckOpVersionRange(range); !problem.empty()) {
      const bool at_range = o.ranged && KnownOpVersions(range.op_type).size() > 0;
      Error(at_range ? o.range_line : o.line, at_range ? o.range_column : o.column, problem);
      return false;
    }
    out.push_back(std::move(range));
  }
  return true;
}

void RuleFileParser::Build(const RawRule& raw, RuleFile& out) {
  if (!raw.match || !raw.replace) {
    Error(raw.line, raw.column,
          absl::StrCat("rule '", raw.name, "' needs a ", raw.match ? "replace" : "match"));
    return;
  }
  onnx::GraphProto match, replace;
  TextError e;
  if (!ParseGraphText(raw.match->text, match, e)) {
    auto [line, column] = FilePosition(*raw.match, e);
    Error(line, column, e.message);
    return;
  }
  if (!ParseGraphText(raw.replace->text, replace, e)) {
    auto [line, column] = FilePosition(*raw.replace, e);
    Error(line, column, e.message);
    return;
  }
  std::vector<OpVersionRange> ops, versions;
  // Every misspelt op of both graphs is reported before the rule is given up.
  const bool match_ops = CheckOpNames(*raw.match, match, "the match", raw.placeholder);
  const bool replace_ops = CheckOpNames(*raw.replace, replace, "the replacement", raw.placeholder);
  if (!match_ops || !replace_ops) return;
  if (!CheckOps(raw.ops, true, ops) || !CheckOps(raw.versions, false, versions)) return;
  std::string placeholder = raw.placeholder;
  if (!placeholder.empty()) {
    bool found = false;
    for (const auto& n : match.node()) found |= n.op_type() == placeholder;
    if (!found) {
      auto [line, column] = Locate(*raw.match, "");
      Error(line, column,
            absl::StrCat("'for' placeholder '", placeholder, "' is not an op type of the match"));
      return;
    }
  }
  // A lower-case op of the default domain other than the placeholder: a group or a builder.
  auto lower_case_op = [&](const onnx::NodeProto& n) {
    return (n.domain().empty() || n.domain() == "ai.onnx") && IsGroupName(n.op_type()) &&
           n.op_type() != placeholder;
  };
  // An op group written as a pattern's op is a `for` over its ops.
  for (const auto& n : match.node()) {
    if (!lower_case_op(n)) continue;
    auto [line, column] = Locate(*raw.match, n.op_type());
    const OpGroup* group = FindOpGroup(n.op_type());
    if (group == nullptr) {
      Error(line, column,
            absl::StrCat("unknown op group '", n.op_type(), "' (groups: ", GroupNames(), ")"));
      return;
    }
    if (!placeholder.empty()) {
      Error(line, column,
            absl::StrCat("a rule uses one op group or 'for' placeholder as an op: '", placeholder,
                         "' and '", n.op_type(), "'"));
      return;
    }
    placeholder = n.op_type();
    for (const OpGroupMember& m : group->members) {
      ops.push_back({"", std::string(m.op_type), m.since_version, m.until_version});
    }
  }
  // Lower-case ops of the replacement are builders (or the group of the pattern).
  for (const auto& n : replace.node()) {
    if (!lower_case_op(n)) continue;
    auto [line, column] = Locate(*raw.replace, n.op_type());
    const Builder* builder = FindBuilder(n.op_type());
    if (builder == nullptr) {
      std::vector<std::string> names;
      for (const Builder& b : AllBuilders()) names.emplace_back(b.name);
      Error(line, column,
            absl::StrCat("'", n.op_type(),
                         "' is neither a builder nor the op group of the match (builders: ",
                         absl::StrJoin(names, ", "), ")"));
      return;
    }
    if (n.input_size() != 2 || n.input(1).empty()) {
      Error(line, column,
            absl::StrCat("builder '", std::string(builder->name),
                         "' takes 2 inputs: ", std::string(builder->name), "(data, ",
                         std::string(builder->argument), ")"));
      return;
    }
  }
  if (ops.empty()) {
    BuildOne(raw, nullptr, placeholder, versions, match, replace, out);
    return;
  }
  for (const auto& op : ops) {
    if (!BuildOne(raw, &op, placeholder, versions, match, replace, out)) return;
  }
}

bool RuleFileParser::BuildOne(const RawRule& raw, const OpVersionRange* op,
                              const std::string& placeholder,
                              const std::vector<OpVersionRange>& versions,
                              const onnx::GraphProto& match, const onnx::GraphProto& replace,
                              RuleFile& out) {
  auto rule = std::make_shared<Rule>();
  rule->name = op == nullptr ? raw.name : absl::StrCat(raw.name, ".", op->op_type);
  rule->family = raw.name;
  rule->set = out.set;
  rule->file = path_;
  rule->line = raw.line;
  rule->algebra = raw.algebra;
  rule->benefit = raw.benefit;
  rule->versions = versions;
  if (op != nullptr && (op->since > 1 || op->until != kOpenVersion)) {
    rule->versions.push_back(*op);
  }
  if (!names_.insert(rule->name).second) {
    Error(raw.line, raw.column, absl::StrCat("rule '", rule->name, "' is defined twice"));
    return false;
  }
  TemplateError te;
  const auto substituted = [&](const onnx::GraphProto& g) {
    return op == nullptr ? g : SubstituteOpType(g, placeholder, op->op_type);
  };
  if (!BuildPattern(substituted(match), raw.variadic, raw.any_input, rule->pattern, te)) {
    auto [line, column] = Locate(*raw.match, te.token);
    Error(line, column, te.message);
    return false;
  }
  std::set<std::string> lets;
  auto bound = [&](const std::string& name) {
    return rule->pattern.Binds(name) || raw.variadic.count(name) > 0 || lets.count(name) > 0;
  };
  const size_t errors_before = errors_.size();
  for (const auto& rc : raw.clauses) {
    Clause clause{rc.kind, rc.name, {}, std::string(absl::StripAsciiWhitespace(rc.expr.text))};
    TextError pe;
    if (!ParseExpression(rc.expr.text, rc.expr.line, rc.expr.column, clause.expr, pe)) {
      Error(pe.line, pe.column, pe.message);
      return false;
    }
    VisitExpr(clause.expr, [&](const Expr& x) {
      if (x.kind == Expr::Kind::kName && x.text != "true" && x.text != "false" && !bound(x.text)) {
        Error(x.line, x.column,
              absl::StrCat("'", x.text, "' is not bound by the match or an earlier let"));
      }
      if (x.kind != Expr::Kind::kCall) return;
      const Helper* helper = FindHelper(x.text);
      const int count = static_cast<int>(x.args.size());
      if (helper == nullptr) {
        Error(x.line, x.column, absl::StrCat("unknown helper '", x.text, "'"));
      } else if (count < helper->min_args || count > helper->max_args) {
        Error(x.line, x.column,
              absl::StrCat("'", x.text, "' takes ",
                           helper->min_args == helper->max_args
                               ? absl::StrCat(helper->min_args)
                               : absl::StrCat(helper->min_args, " to ", helper->max_args),
                           " arguments, not ", count, ": ", helper->signature));
      } else {
        for (size_t i = 0; i < x.args.size(); ++i) {
          if (x.args[i].kind != Expr::Kind::kString) continue;
          if (absl::Status s = CheckLiteralArgument(x.text, i, x.args[i].text); !s.ok()) {
            Error(x.args[i].line, x.args[i].column, absl::StrCat(x.text, ": ", s.message()));
          }
        }
      }
    });
    if (rc.kind == Clause::Kind::kLet) {
      if (bound(rc.name)) {
        Error(rc.expr.line, rc.expr.column, absl::StrCat("'", rc.name, "' is already bound"));
      }
      lets.insert(rc.name);
    }
    rule->clauses.push_back(std::move(clause));
  }
  if (errors_.size() != errors_before) return false;
  if (!BuildReplacement(substituted(replace), raw.variadic, bound, rule->pattern.outputs,
                        rule->replacement, te)) {
    auto [line, column] = Locate(*raw.replace, te.token, te.in_body);
    Error(line, column, te.message);
    return false;
  }
  if (rule->replacement.outputs.size() != rule->pattern.outputs.size()) {
    Error(raw.replace->line, raw.replace->column,
          absl::StrCat("replace has ", rule->replacement.outputs.size(), " outputs, match has ",
                       rule->pattern.outputs.size(), ": they replace one another in order"));
    return false;
  }
  out.rules.push_back(std::move(rule));
  return true;
}

}  // namespace

absl::StatusOr<RuleFile> ParseRuleFile(std::string_view path, std::string_view text) {
  return RuleFileParser(path, text).Parse();
}

absl::StatusOr<RuleFile> ReadRuleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read the rule file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseRuleFile(path, buffer.str());
}

}  // namespace ovfix::rules
