// Writing output files so an interrupted run never leaves a half-written file: the bytes go
// to a temporary file in the same folder, which is renamed over the target when complete.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace ovfix {

// Calls `write` with a stream on a temporary file next to `path`, then renames it to `path`.
// On any failure the temporary file is removed and `path` is left as it was.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<absl::Status(std::ostream&)>& write);
// Same, for writers that want a file descriptor (protobuf's FileOutputStream).
absl::Status WriteFileAtomicallyFd(const std::string& path,
                                   const std::function<absl::Status(int fd)>& write);
// True when both paths name the same existing file (also through links).
bool SameFile(const std::string& a, const std::string& b);

}  // namespace ovfix
