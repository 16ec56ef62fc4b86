// Properties a fuzz target checks beyond "does not crash". A broken property aborts, which
// libFuzzer reports as a crash and saves the input that broke it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "absl/status/status.h"

namespace ovfix::fuzz {

[[noreturn]] inline void PropertyFailed(std::string_view property, std::string_view detail) {
  std::fprintf(stderr, "property broken: %.*s: %.*s\n", static_cast<int>(property.size()),
               property.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void ExpectOk(const absl::Status& status, std::string_view property) {
  if (!status.ok()) PropertyFailed(property, status.ToString());
}

}  // namespace ovfix::fuzz
