#include "ir/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace ovfix {

absl::Status WriteFileAtomicallyFd(const std::string& path,
                                   const std::function<absl::Status(int fd)>& write) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / absl::StrCat(".", target.filename().string(), ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
  }
  ::fchmod(fd, 0644);
  // No fsync: the rename protects against interrupted runs, which is the promise; syncing
  // gigabytes of weights on every save would cost more than the whole conversion.
  absl::Status status = write(fd);
  if (::close(fd) != 0 && status.ok()) {
    status = absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (status.ok() && std::rename(tmpl.c_str(), path.c_str()) != 0) {
    status = absl::InternalError(
        absl::StrCat(path, ": cannot rename into place: ", std::strerror(errno)));
  }
  if (!status.ok()) ::unlink(tmpl.c_str());
  return status;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<absl::Status(std::ostream&)>& write) {
  return WriteFileAtomicallyFd(path, [&](int fd) -> absl::Status {
    __gnu_cxx::stdio_filebuf<char> buf(::dup(fd), std::ios::out | std::ios::binary);
    std::ostream out(&buf);
    absl::Status status = write(out);
    out.flush();
    if (status.ok() && !out) {
      status = absl::InternalError(absl::StrCat(path, ": write failed (disk full?)"));
    }
    return status;
  });
}

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

}  // namespace ovfix
