// Text put into the HTML pages ovfix writes (convert --report r.html, compare --html):
// the characters that would end a tag, an attribute or an entity, escaped.
#pragma once

#include <string>
#include <string_view>

namespace ovfix::converter {

inline std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace ovfix::converter
