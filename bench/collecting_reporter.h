// Google Benchmark's console report, with the real time of every run kept by benchmark name
// for the ratio tables the benchmarks print after it (bench_util.h's PrintRatios).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace ovfix::bench {

class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) times_[r.benchmark_name()] = r.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }

  // The time of the first run (by name) whose name starts with `prefix`; -1 when none does.
  double TimeOf(const std::string& prefix) const {
    for (const auto& [name, t] : times_) {
      if (name.rfind(prefix, 0) == 0) return t;
    }
    return -1;
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace ovfix::bench
