// Shared pieces of the benchmarks: timing table with ratios, peak memory of one operation
// measured in a fresh child process.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ovfix::bench {

// Runs `fn` `repeats` times and returns the median wall time in milliseconds.
double MedianMs(int repeats, const std::function<void()>& fn);

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
