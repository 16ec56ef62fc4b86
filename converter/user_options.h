// The one translation from what a user asked for to the pipeline's options. The command line
// (cli/conversion_flags.cc), the C++ API (api/convert.cc) and through it the Python module each
// turn their own form (flags, ConversionOptions members, keywords) into the option table's
// texts, and hand those to TranslateUserOptions: the table's setters, the entries the pipeline
// reads itself (rules, input, calibration_data, tolerance, accuracy, repair) and the defaults
// are applied here once, so the three cannot drift apart.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "converter/pipeline.h"

namespace ovfix::converter {

struct UserOptions {
  // The options given, by the table's names (rules/conversion_options.h), as the command line
  // writes their values: one text per occurrence of a list or map option, one text for the
  // others, "true"/"false" for a bool. An option left out is the target's, or the default.
  std::map<std::string, std::vector<std::string>, std::less<>> given;
  // How an error names the option: as the command line spells it ("--tolerance x", the flag
  // and the value) or by the table's name ("tolerance", as SetOption and Python keywords do).
  enum class Spelling { kFlag, kName };
  Spelling spelling = Spelling::kName;
};

// Sets `p` from `user`, entries in the table's order (a list's values in the order given);
// the names of the options given go to p.set_by_user, so that they win over the target's.
// Touches nothing else of `p` (paths, log, report and save settings are the caller's).
// Errors: InvalidArgument with one line naming the option (Spelling), or, for an accuracy
// value, converter/accuracy.h's "--accuracy TEXT: ..." line; Internal for a name the table
// lacks (a bug in the caller).
absl::Status TranslateUserOptions(const UserOptions& user, PipelineOptions& p);

}  // namespace ovfix::converter
