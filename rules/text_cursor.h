// Reading rule text one character at a time while keeping the line and column of the current
// position, for messages. The rule-file parser and the expression parser (whose text starts
// somewhere inside a rule file) both read through one.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>

namespace ovfix::rules {

inline bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

class TextCursor {
 public:
  explicit TextCursor(std::string_view text, int line = 1, int column = 1)
      : text_(text), line_(line), column_(column) {}

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  // Whether the text at the current position starts with `token`.
  bool LookingAt(std::string_view token) const { return text_.substr(pos_, token.size()) == token; }
  size_t pos() const { return pos_; }
  int line() const { return line_; }
  int column() const { return column_; }
  std::string_view text() const { return text_; }

  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }
  // Spaces, tabs and carriage returns: blanks within a line.
  void SkipBlanks() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\r')) Advance();
  }
  // Up to the end of the line (not past the newline), returning what was passed over.
  std::string RestOfLineRaw() {
    std::string rest;
    while (!AtEnd() && Peek() != '\n') {
      rest += Peek();
      Advance();
    }
    return rest;
  }
  // Past the next newline.
  void SkipLine() {
    RestOfLineRaw();
    if (!AtEnd()) Advance();
  }
  // Whitespace, newlines and `#` comments.
  void SkipSpaceAndComments() {
    while (!AtEnd()) {
      if (Peek() == '#') {
        RestOfLineRaw();
      } else if (std::isspace(static_cast<unsigned char>(Peek()))) {
        Advance();
      } else {
        break;
      }
    }
  }
  // Letters, digits and underscores from here.
  std::string Word() {
    std::string w;
    while (!AtEnd() && IsIdentifierChar(Peek())) {
      w += Peek();
      Advance();
    }
    return w;
  }

  // A position to come back to (looking ahead).
  struct Mark {
    size_t pos;
    int line, column;
  };
  Mark Save() const { return {pos_, line_, column_}; }
  void Restore(const Mark& mark) {
    pos_ = mark.pos;
    line_ = mark.line;
    column_ = mark.column;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_, column_;
};

}  // namespace ovfix::rules
