// What a long command is doing, on one line of a terminal redrawn in place: "reference run
// (4.2 s)", "fp16_islands 5/9 (2.3 s)". Drawn only on a terminal and only once the command has run
// for about two seconds, so short commands and logs (pipelines, files) get nothing extra. A
// thread redraws the line while a step blocks (a model run), so the time keeps moving.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace ovfix::converter {

class StatusLine {
 public:
  // `out` null or not a terminal: silent.
  explicit StatusLine(std::FILE* out);
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  // The step now running; its clock starts when the label changes. `total` > 0 adds
  // "done/total".
  void Set(const std::string& label, int done = 0, int total = 0);
  // Erases the line (before printing results); nothing is drawn until the next Set.
  void Clear();

 private:
  void Loop();
  void DrawLocked();

  std::FILE* out_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string label_;
  int done_ = 0, total_ = 0;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point since_ = start_;
  bool drawn_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ovfix::converter
