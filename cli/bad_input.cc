#include "cli/bad_input.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/message_text.h"

namespace ovfix::cli {

std::string BadInputLine(absl::string_view command, absl::string_view message,
                         const std::vector<std::string>& files) {
  // A usage error starts with the option it is about.
  bool names_a_file = files.empty() || files.front().empty() || absl::StartsWith(message, "--");
  for (const std::string& file : files) {
    names_a_file = names_a_file || (!file.empty() && absl::StrContains(message, file));
  }
  const std::string text =
      names_a_file ? std::string(message) : absl::StrCat(files.front(), ": ", message);
  if (command.empty()) return EscapeControlCharacters(text);
  return absl::StrCat("ovfix ", command, ": ", EscapeControlCharacters(text));
}

}  // namespace ovfix::cli
