// Writing output files so an interrupted run never leaves a half-written file: the bytes go
// to a temporary file in the same folder, which is renamed over the target when complete.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace ovfix {

// Calls `write` with a stream on a temporary file next to `path`, then renames it to `path`.
// On any failure the temporary file is removed and `path` is left as it was. A `path` that
// is a symbolic link is written through: the file it leads to gets the bytes, the link
// stays. Temporary files of `path` that a killed run left behind are removed.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<absl::Status(std::ostream&)>& write);
// Same, for writers that want a file descriptor (protobuf's FileOutputStream).
absl::Status WriteFileAtomicallyFd(const std::string& path,
                                   const std::function<absl::Status(int fd)>& write);
// Keeps the file a write to `path` is about to replace (a hard link beside it, no copy), so
// that a written file found wrong afterwards can be taken back: Restore() puts the kept file
// back (or removes the written one when there was none); otherwise the destructor lets the
// kept file go.
class KeptFile {
 public:
  explicit KeptFile(const std::string& path);
  ~KeptFile();
  KeptFile(const KeptFile&) = delete;
  KeptFile& operator=(const KeptFile&) = delete;
  void Restore();

 private:
  std::string target_, kept_;
};
// The file a write to `path` replaces: `path`, or where it leads when it is a symbolic link.
std::string WriteTarget(const std::string& path);
// Removes the temporary files of this process's writes in progress, which the process ending
// now would leave beside their outputs. Async-signal-safe (unlink only, no allocation nor
// lock): for a SIGINT or SIGTERM handler that then ends the process (cli/interrupt.h).
void RemoveTemporaryFilesInProgress();
// Whether `filename` (without folder) is the name of an atomic write's temporary file.
bool IsTemporaryFileName(std::string_view filename);
// True when both paths name the same file: the same existing file (also through links and
// hard links), or the same place once links and dots are resolved.
bool SameFile(const std::string& a, const std::string& b);

}  // namespace ovfix
