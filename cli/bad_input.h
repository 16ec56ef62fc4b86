// The one line every command prints for bad input or usage (exit code 2). Messages come from
// every layer and quote names from the model, which may hold line breaks or escape sequences;
// this is where the promise of one line that names the file is kept.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ovfix::cli {

// "ovfix COMMAND: MESSAGE" with control characters escaped. A MESSAGE that names none of
// `files` (the files the command was given, the one it is about first) is said of the first,
// unless it starts with the option it is about ("--input-shape x=...: ..."). An empty
// COMMAND leaves the line as the message: rule file errors keep their FILE:LINE:COL form.
std::string BadInputLine(absl::string_view command, absl::string_view message,
                         const std::vector<std::string>& files);

}  // namespace ovfix::cli
