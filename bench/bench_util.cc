#include "bench/bench_util.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace ovfix::bench {

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "bench: %s failed\n", what.c_str());
    std::exit(1);
  }
}

double MedianMs(int repeats, const std::function<void()>& fn) {
  return InterleavedMedianMs(repeats, {fn})[0];
}

std::vector<double> InterleavedMedianMs(int repeats,
                                        const std::vector<std::function<void()>>& fns) {
  std::vector<std::vector<double>> times(fns.size());
  for (int i = 0; i < repeats; ++i) {
    for (size_t k = 0; k < fns.size(); ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      fns[k]();
      times[k].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

long long SelfPeakRss() {
  // VmHWM belongs to this process image (unlike ru_maxrss, which survives exec).
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return -1;
}

long long ChildPeakRss(const std::vector<std::string>& args) {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return -1;
  self[n] = 0;
  std::string command = self;
  for (const auto& a : args) command += " '" + a + "'";
  FILE* child = ::popen(command.c_str(), "r");
  if (child == nullptr) return -1;
  long long peak = -1;
  char line[256];
  while (std::fgets(line, sizeof(line), child) != nullptr) {
    if (std::strncmp(line, "peak_rss_bytes ", 15) == 0) peak = std::atoll(line + 15);
  }
  return ::pclose(child) == 0 ? peak : -1;
}

void PrintRatios(const std::string& title, const std::vector<Row>& rows) {
  std::printf("\n%s\n", title.c_str());
  std::printf("%-44s %12s %12s %8s %8s\n", "measure", "ovfix", "peer", "ratio", "target");
  for (const auto& r : rows) {
    const double ratio = r.ours / r.peer;
    std::printf("%-44s %10.1f%-2s %10.1f%-2s %7.2fx %7.2fx %s\n", r.name.c_str(), r.ours,
                r.unit.c_str(), r.peer, r.unit.c_str(), ratio, r.target,
                ratio <= r.target ? "ok" : "MISSED");
  }
}

int IntFlag(int argc, char** argv, std::string_view flag, int fallback) {
  int value = fallback;
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == flag) value = std::atoi(argv[i + 1]);
  }
  return value;
}

}  // namespace ovfix::bench
