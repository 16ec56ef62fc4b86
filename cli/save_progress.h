// Progress of writing a large model's weights: bytes written of the total and the rate, on
// one line of a terminal that is redrawn in place. Nothing is drawn when the stream is not a
// terminal (build logs) or before the save has run for a second (small models).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ovfix::cli {

class SaveProgress {
 public:
  SaveProgress(std::FILE* out, std::string label);
  ~SaveProgress();
  SaveProgress(const SaveProgress&) = delete;
  SaveProgress& operator=(const SaveProgress&) = delete;

  // SaveOptions::progress.
  void Update(uint64_t done, uint64_t total);

 private:
  std::FILE* out_;
  bool terminal_;
  bool drawn_ = false;
  std::string label_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace ovfix::cli
