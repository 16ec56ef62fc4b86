// Shared pieces of the benchmarks: timing table with ratios, peak memory of one operation
// measured in a fresh child process.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ovfix::bench {

// The number after the last `flag` among the arguments (--threads 4), or `fallback`.
int IntFlag(int argc, char** argv, std::string_view flag, int fallback);

// Ends the benchmark with "bench: WHAT failed" (exit 1) unless `ok`.
void Check(bool ok, const std::string& what);

// Runs `fn` `repeats` times and returns the median wall time in milliseconds.
double MedianMs(int repeats, const std::function<void()>& fn);
// Runs each of `fns` once per round, `repeats` rounds, and returns each one's median wall
// time in milliseconds. Interleaving puts what is compared under the same machine load
// (a busy spell slows every measure of a round, not all repeats of one measure).
std::vector<double> InterleavedMedianMs(int repeats, const std::vector<std::function<void()>>& fns);

// Peak resident memory (bytes) of running this same binary with `args` in a child process
// (the child does one operation and exits). -1 on failure.
long long ChildPeakRss(const std::vector<std::string>& args);
// In the child: the peak RSS so far, in bytes.
long long SelfPeakRss();

struct Row {
  std::string name;
  double ours;
  double peer;
  std::string unit;
  double target;  // ours/peer must stay at or below this
};
// Prints the rows as a table with the ratio and whether the target is met.
void PrintRatios(const std::string& title, const std::vector<Row>& rows);

}  // namespace ovfix::bench
