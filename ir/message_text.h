// Text that goes into a one-line error message: ovfix promises one line on stderr per error,
// while what it quotes may span lines (onnx's checker appends "\n\n==> Context: ...") or hold
// any byte (value and node names come from the model file).
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace ovfix {

// Each line break, with the blanks around it, becomes one space: for messages of other tools
// (onnx's checker and shape inference) quoted whole.
std::string Condensed(absl::string_view text);

// Control characters written as escapes (\n, \t, \r, \xHH): a name quoted from a model then
// neither breaks the line nor drives the terminal. Other bytes (UTF-8 included) stay.
std::string EscapeControlCharacters(absl::string_view text);

}  // namespace ovfix
