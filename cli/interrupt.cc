#include "cli/interrupt.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <csignal>
#include <cstring>

#include "ir/atomic_file.h"

namespace ovfix::cli {
namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

// What the handler reads lives in fixed static storage: it may neither allocate nor lock.
struct WatchedFile {
  char path[PATH_MAX];
  bool existed;
  struct stat before;
};
constexpr int kMaxWatched = 4;
WatchedFile watched[kMaxWatched];
std::atomic<int> watched_count{0};
char command_name[64];
bool terminal = false;
std::atomic<bool> handling{false};

// One line built in a fixed buffer; what does not fit is cut.
class Line {
 public:
  void Add(const char* s) {
    while (*s != '\0' && size_ < sizeof(text_) - 1) text_[size_++] = *s++;
  }
  void AddBlank(size_t width) {
    while (width-- > 0 && size_ < sizeof(text_) - 1) text_[size_++] = ' ';
  }
  void Write() {
    text_[size_++] = '\n';
    for (size_t done = 0; done < size_;) {
      const ssize_t n = ::write(STDERR_FILENO, text_ + done, size_ - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }

 private:
  char text_[kMaxWatched * PATH_MAX + 256];
  size_t size_ = 0;
};
Line line;

// Whether the file is not the one there when it was watched: created, or replaced (an atomic
// write renames a new file into place) or rewritten.
bool Written(const WatchedFile& w) {
  struct stat now;
  if (::stat(w.path, &now) != 0) return false;
  return !w.existed || now.st_dev != w.before.st_dev || now.st_ino != w.before.st_ino ||
         now.st_size != w.before.st_size || now.st_mtim.tv_sec != w.before.st_mtim.tv_sec ||
         now.st_mtim.tv_nsec != w.before.st_mtim.tv_nsec;
}

void AddList(bool written, int count) {
  bool first = true;
  for (int i = 0; i < count; ++i) {
    if (Written(watched[i]) != written) continue;
    line.Add(first ? (written ? "; written: " : "; not written: ") : ", ");
    line.Add(watched[i].path);
    first = false;
  }
}

void OnInterrupt(int signal) {
  // Another thread's signal while this one is handled: the process is ending already.
  if (handling.exchange(true)) {
    for (;;) ::pause();
  }
  RemoveTemporaryFilesInProgress();
  // Over a progress line (converter/report.cc's is the widest) and the terminal's "^C".
  if (terminal) {
    line.Add("\r");
    line.AddBlank(90);
    line.Add("\r");
  }
  line.Add("ovfix ");
  line.Add(command_name);
  line.Add(": interrupted");
  const int count = watched_count.load();
  bool any = false;
  for (int i = 0; i < count; ++i) any = any || Written(watched[i]);
  if (count > 0 && !any) line.Add("; nothing written");
  if (any) {
    AddList(true, count);
    AddList(false, count);
  }
  line.Write();
  ::_exit(128 + signal);
}

}  // namespace

void HandleInterrupts(const std::string& command) {
  std::strncpy(command_name, command.c_str(), sizeof(command_name) - 1);
  terminal = ::isatty(STDERR_FILENO) != 0;
  struct sigaction action = {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  for (int s : kSignals) sigaddset(&action.sa_mask, s);
  for (int s : kSignals) {
    struct sigaction previous;
    if (sigaction(s, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
    sigaction(s, &action, nullptr);
  }
}

void WatchOutputs(const std::vector<std::string>& paths) {
  watched_count.store(0);
  int count = 0;
  for (const std::string& path : paths) {
    if (path.empty() || path.size() >= PATH_MAX || count == kMaxWatched) continue;
    WatchedFile& w = watched[count++];
    std::memcpy(w.path, path.c_str(), path.size() + 1);
    w.existed = ::stat(w.path, &w.before) == 0;
  }
  watched_count.store(count);
}

}  // namespace ovfix::cli
