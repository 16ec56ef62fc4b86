#include "ir/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTemporaryMarker = ".tmp-";
constexpr size_t kRandomChars = 6;  // mkstemp's XXXXXX

std::string TemporaryPrefix(const fs::path& target) {
  return absl::StrCat(".", target.filename().string(), std::string(kTemporaryMarker));
}

// A writer holds an exclusive lock on its temporary file until the file is renamed, and the
// lock goes with the process: an unlocked temporary file was left by a run that was killed.
void RemoveAbandonedTemporaries(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != prefix.size() + kRandomChars || !absl::StartsWith(name, prefix)) continue;
    const std::string path = it->path().string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat held, named;
    if (::fstat(fd, &held) == 0 && S_ISREG(held.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::lstat(path.c_str(), &named) == 0 && named.st_ino == held.st_ino &&
        named.st_dev == held.st_dev) {
      ::unlink(path.c_str());
    }
    ::close(fd);
  }
}

// A locked temporary file next to `target`, its name in `name`; -1 with errno on failure.
int CreateTemporary(const fs::path& target, std::string& name) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = TemporaryPrefix(target);
  RemoveAbandonedTemporaries(dir, prefix);
  // Another run's cleanup may take the file between mkstemp and flock: it is unlinked by the
  // time the lock is ours, and another one is made.
  for (int attempt = 0; attempt < 16; ++attempt) {
    name = (dir / absl::StrCat(prefix, std::string(kRandomChars, 'X'))).string();
    const int fd = ::mkstemp(name.data());
    if (fd < 0) return -1;
    // Without locks (some network file systems) nobody's cleanup can take the file either.
    if (::flock(fd, LOCK_EX) != 0) return fd;
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_nlink > 0) return fd;
    ::close(fd);
  }
  errno = EAGAIN;
  return -1;
}

// Renames `tmp` over `target`. An existing target is swapped with `tmp` in one step, and
// the old file then removed: ext4 (without noauto_da_alloc) treats a rename over a file as a
// replace and pushes all of the new file's dirty pages to the disk in the rename itself,
// seconds for a model of gigabytes, a durability that writing without fsync does not
// promise anyway. Where the file system cannot swap, a plain rename.
bool MoveIntoPlace(const std::string& tmp, const std::string& target) {
  struct stat st;
  // Only a file is swapped: a folder in its place gets rename's refusal.
  if (::lstat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    ::unlink(tmp.c_str());
    return true;
  }
  return std::rename(tmp.c_str(), target.c_str()) == 0;
}

}  // namespace

std::string WriteTarget(const std::string& path) {
  // Link by link: a link to a file not there yet leads to where that file is to be.
  fs::path p(path);
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) break;
    p = next.is_absolute() ? next : (p.parent_path() / next).lexically_normal();
  }
  return p.string();
}

KeptFile::KeptFile(const std::string& path) : target_(WriteTarget(path)) {
  std::error_code ec;
  if (!fs::is_regular_file(target_, ec)) return;
  const fs::path target(target_);
  for (int attempt = 0; attempt < 100 && kept_.empty(); ++attempt) {
    const fs::path name = target.parent_path() / absl::StrCat(".", target.filename().string(),
                                                              ".kept-", ::getpid(), "-", attempt);
    if (::link(target_.c_str(), name.c_str()) == 0) {
      kept_ = name.string();
    } else if (errno != EEXIST) {
      break;  // no hard links here: the file cannot be kept
    }
  }
}

KeptFile::~KeptFile() {
  if (!kept_.empty()) ::unlink(kept_.c_str());
}

void KeptFile::Restore() {
  if (kept_.empty()) {
    ::unlink(target_.c_str());
  } else if (std::rename(kept_.c_str(), target_.c_str()) == 0) {
    kept_.clear();
  }
}

bool IsTemporaryFileName(std::string_view filename) {
  const size_t marker = filename.rfind(kTemporaryMarker);
  return filename.size() > 1 && filename[0] == '.' && marker != std::string_view::npos &&
         marker > 1 && filename.size() == marker + kTemporaryMarker.size() + kRandomChars;
}

absl::Status WriteFileAtomicallyFd(const std::string& path,
                                   const std::function<absl::Status(int fd)>& write) {
  // Renaming onto a link would replace the link by a file; the file it leads to is the one
  // the caller means.
  const std::string target = WriteTarget(path);
  std::string tmp;
  const int fd = CreateTemporary(fs::path(target), tmp);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
  }
  ::fchmod(fd, 0644);
  // The lock belongs to the open file: a second descriptor keeps it until the name is gone,
  // while `fd` is closed before the rename so that a failed close stops it.
  const int lock = ::dup(fd);
  // No fsync: the rename protects against interrupted runs, which is the promise; syncing
  // gigabytes of weights on every save would cost more than the whole conversion.
  absl::Status status = write(fd);
  if (::close(fd) != 0 && status.ok()) {
    status = absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (status.ok() && !MoveIntoPlace(tmp, target)) {
    status = absl::InternalError(
        absl::StrCat(path, ": cannot rename into place: ", std::strerror(errno)));
  }
  if (!status.ok()) ::unlink(tmp.c_str());
  if (lock >= 0) ::close(lock);
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
  if (fs::equivalent(a, b, ec) && !ec) return true;
  // Files not there yet: the same place once links and dots are resolved.
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return !ec && ca == cb;
}

}  // namespace ovfix
