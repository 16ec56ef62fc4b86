// The members of ovfix::ConversionOptions bound to the option table's entries by the name
// each entry gives (OptionSpec::api_field): SetOption sets a member from text, and the
// conversion reads the members back as the texts the command line would have given.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ovfix/ovfix.h"
#include "rules/conversion_options.h"

namespace ovfix::api {

// The member names bound, in the order of ConversionOptions (tests check them against the
// table: every entry with an api_field has its member, every member an entry).
std::vector<std::string_view> BoundMembers();

// Whether the member `spec` names holds a value of the entry's type (tests).
bool MemberHasTableType(const rules::OptionSpec& spec);

// The value `options` holds for `spec` as command-line texts: one per value of a list or
// map, none when unset (or, for a plain bool, at the table's default). Entries the pipeline
// reads itself (spec.set null) are read typed by the conversion, not through here.
std::vector<std::string> MemberTexts(const rules::OptionSpec& spec,
                                     const ConversionOptions& options);

}  // namespace ovfix::api
