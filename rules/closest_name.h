// "Did you mean": the known name closest to a misspelt one, for messages about unknown
// subcommands, options, ops and domains.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ovfix::rules {

// The candidate nearest to `name` by edit distance (case-insensitive; a swap of two
// neighbouring letters is one edit), or "" when none is near enough to be a likely typo:
// at most 1 edit for names up to 4 letters, 2 up to 8, 3 beyond.
std::string ClosestName(std::string_view name, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for the closest candidate, or "" when there is none.
std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace ovfix::rules
