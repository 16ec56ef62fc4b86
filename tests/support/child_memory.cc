#include "tests/support/child_memory.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace ovfix::testing {
namespace {

// A "Key:   123 kB" line of /proc/PID/status, in bytes; -1 when the process is gone.
int64_t StatusField(pid_t pid, const char* key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const size_t key_length = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, key_length, key) == 0 && line.size() > key_length &&
        line[key_length] == ':') {
      return std::atoll(line.c_str() + key_length + 1) * 1024;
    }
  }
  return -1;
}

}  // namespace

ChildRun RunWatchingMemory(const std::vector<std::string>& argv) {
  ChildRun run;
  char out_template[] = "/tmp/ovfix_child_output_XXXXXX";
  const int out_fd = ::mkstemp(out_template);
  if (out_fd < 0) return run;
  ::unlink(out_template);
  // Closed on exec: its end of file tells the parent that the child runs the program. Until
  // then the forked child maps the parent's anonymous pages (the test binary's memory,
  // counted in the child's RssAnon), so sampling starts only after the exec.
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    ::close(out_fd);
    return run;
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(exec_pipe[0]);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    const char failed = 1;
    (void)!::write(exec_pipe[1], &failed, 1);
    ::_exit(127);
  }
  ::close(exec_pipe[1]);
  if (pid < 0) {
    ::close(exec_pipe[0]);
    ::close(out_fd);
    return run;
  }
  char exec_failed = 0;
  while (::read(exec_pipe[0], &exec_failed, 1) < 0 && errno == EINTR) {
  }
  ::close(exec_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    // A zombie has no RssAnon line: only a live process's samples count.
    run.peak_anonymous_bytes = std::max(run.peak_anonymous_bytes, StatusField(pid, "RssAnon"));
    run.peak_resident_bytes = std::max(run.peak_resident_bytes, StatusField(pid, "VmHWM"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  ::lseek(out_fd, 0, SEEK_SET);
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(out_fd, buffer, sizeof(buffer))) > 0) run.output.append(buffer, n);
  ::close(out_fd);
  return run;
}

}  // namespace ovfix::testing
