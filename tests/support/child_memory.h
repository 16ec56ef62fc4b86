// Runs a command as a child process and watches its anonymous memory (RssAnon in
// /proc/PID/status): the memory a process holds itself, as opposed to file pages it maps
// (weights mmapped from the model, page cache of the files it writes), which the kernel can
// drop and re-read. VmHWM and setrlimit count both, so they cannot tell streaming from holding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ovfix::testing {

struct ChildRun {
  int exit_code = -1;                // -1: did not start, or ended by a signal
  int64_t peak_anonymous_bytes = 0;  // the largest RssAnon seen, sampled every millisecond
  int64_t peak_resident_bytes = 0;   // VmHWM at the last sample
  double seconds = 0;
  std::string output;  // stdout and stderr
};

// Runs argv[0] (a path) with the arguments; stdin is /dev/null.
ChildRun RunWatchingMemory(const std::vector<std::string>& argv);

}  // namespace ovfix::testing
