#include "cli/save_progress.h"

#include <unistd.h>

namespace ovfix::cli {

SaveProgress::SaveProgress(std::FILE* out, std::string label)
    : out_(out), terminal_(out != nullptr && isatty(fileno(out)) != 0), label_(std::move(label)) {}

SaveProgress::~SaveProgress() {
  if (!drawn_) return;
  std::fprintf(out_, "\r%*s\r", 79, "");
  std::fflush(out_);
}

void SaveProgress::Update(uint64_t done, uint64_t total) {
  if (!terminal_ || total == 0) return;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  // Redrawn at most ten times a second: a line per tensor would cost more than it tells.
  if (seconds < 1.0 || (drawn_ && now - last_draw_ < std::chrono::milliseconds(100))) return;
  constexpr double kGB = 1e9;
  std::fprintf(out_, "\r%-30.30s %6.2f / %.2f GB  %5.2f GB/s ", label_.c_str(), done / kGB,
               total / kGB, done / kGB / seconds);
  std::fflush(out_);
  drawn_ = true;
  last_draw_ = now;
}

}  // namespace ovfix::cli
