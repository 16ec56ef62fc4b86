#include "ir/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
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
constexpr size_t kRandomChars = 6;  // as mkstemp's XXXXXX

// The temporary files of writes in progress, in fixed slots that a signal handler reads without
// allocating or locking. A slot is taken for a name before the file of that name is created,
// so that no file exists that the handler does not know of:
//   free -> claimed (its path being filled) -> creating (the file being created) -> held
//   (the file exists) -> free once renamed or removed; or taken by the handler, for good.
enum SlotState : int { kFree, kClaimed, kCreating, kHeld, kTaken };
struct TemporarySlot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
static_assert(std::atomic<int>::is_always_lock_free);
constexpr int kTemporarySlots = 32;  // writes in progress at once (a model and its data: 2)
TemporarySlot temporary_slots[kTemporarySlots];
// Set by the handler before it looks at the slots: from then on no temporary file is created.
std::atomic<bool> ending{false};

// Creates `path` (O_EXCL) for writing, in a slot that keeps its name for the handler: the file
// descriptor, and the slot in `slot` (-1 when all are taken: the file is then left to the
// next write's cleanup, as a killed run's is); -1 with errno on failure.
int CreateHeldFile(const std::string& path, int& slot) {
  slot = -1;
  for (int i = 0; i < kTemporarySlots && slot < 0 && path.size() < PATH_MAX; ++i) {
    int expected = kFree;
    if (temporary_slots[i].state.compare_exchange_strong(expected, kClaimed)) slot = i;
  }
  if (slot >= 0) {
    std::memcpy(temporary_slots[slot].path, path.c_str(), path.size() + 1);
    temporary_slots[slot].state.store(kCreating);
  }
  // An interrupt being handled on another thread: that thread ends the process.
  if (ending.load()) {
    if (slot >= 0) temporary_slots[slot].state.store(kFree);
    slot = -1;
    errno = EINTR;
    return -1;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (slot >= 0) {
    int expected = kCreating;
    temporary_slots[slot].state.compare_exchange_strong(expected, fd >= 0 ? kHeld : kFree);
    if (fd < 0) slot = -1;
  }
  return fd;
}

// Once the file is renamed or removed. A slot the handler has taken stays its own.
void ReleaseTemporary(int slot) {
  if (slot < 0) return;
  int expected = kHeld;
  temporary_slots[slot].state.compare_exchange_strong(expected, kFree);
}

// kRandomChars letters and digits, different on every call.
std::string RandomChars() {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static std::atomic<uint64_t> counter{0};
  uint64_t bits = 0;
  if (::getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(bits))) {
    bits = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
           (static_cast<uint64_t>(::getpid()) << 32);
  }
  bits ^= counter.fetch_add(0x9E3779B97F4A7C15ULL);
  std::string out(kRandomChars, 'X');
  for (char& c : out) {
    c = kChars[bits % (sizeof(kChars) - 1)];
    bits /= sizeof(kChars) - 1;
  }
  return out;
}

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

// A locked temporary file next to `target`, its name in `name` and its slot in `slot`
// (CreateHeldFile); -1 with errno on failure.
int CreateTemporary(const fs::path& target, std::string& name, int& slot) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = TemporaryPrefix(target);
  RemoveAbandonedTemporaries(dir, prefix);
  // Another run's cleanup may take the file between its creation and flock: it is unlinked by
  // the time the lock is ours, and another one is made.
  for (int attempt = 0; attempt < 16; ++attempt) {
    name = (dir / absl::StrCat(prefix, RandomChars())).string();
    const int fd = CreateHeldFile(name, slot);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return -1;
    // Without locks (some network file systems) nobody's cleanup can take the file either.
    if (::flock(fd, LOCK_EX) != 0) return fd;
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_nlink > 0) return fd;
    ::close(fd);
    ReleaseTemporary(slot);
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

void RemoveTemporaryFilesInProgress() {
  ending.store(true);
  for (TemporarySlot& slot : temporary_slots) {
    // A file being created on another thread is removed once it exists; on this thread (the
    // handler interrupted its creation) it never will, and the wait ends after 100 ms.
    for (int waited = 0; slot.state.load() == kCreating && waited < 100; ++waited) {
      const struct timespec millisecond = {0, 1000000};
      ::nanosleep(&millisecond, nullptr);
    }
    int state = slot.state.load();
    // Taken for good: the process ends after this, and the path cannot change meanwhile.
    if ((state == kHeld || state == kCreating) &&
        slot.state.compare_exchange_strong(state, kTaken)) {
      ::unlink(slot.path);
    }
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
  int slot = -1;
  const int fd = CreateTemporary(fs::path(target), tmp, slot);
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
  ReleaseTemporary(slot);
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
