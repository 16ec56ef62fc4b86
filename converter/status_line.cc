#include "converter/status_line.h"

#include <unistd.h>

#include "absl/strings/str_format.h"

namespace ovfix::converter {
namespace {

constexpr auto kDelay = std::chrono::seconds(2);
constexpr auto kRedraw = std::chrono::milliseconds(250);
constexpr int kWidth = 79;

}  // namespace

StatusLine::StatusLine(std::FILE* out)
    : out_(out != nullptr && isatty(fileno(out)) != 0 ? out : nullptr) {
  if (out_ != nullptr) thread_ = std::thread([this] { Loop(); });
}

StatusLine::~StatusLine() {
  if (out_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  Clear();
}

void StatusLine::Set(const std::string& label, int done, int total) {
  if (out_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (label != label_) since_ = std::chrono::steady_clock::now();
  label_ = label;
  done_ = done;
  total_ = total;
}

void StatusLine::Clear() {
  if (out_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  label_.clear();  // nothing to draw until the next Set
  if (!drawn_) return;
  std::fprintf(out_, "\r%*s\r", kWidth, "");
  std::fflush(out_);
  drawn_ = false;
}

void StatusLine::DrawLocked() {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
  std::string line = label_;
  if (total_ > 0) line += absl::StrFormat(" %d/%d", done_, total_);
  line += absl::StrFormat(" (%.0f s)", seconds);
  if (line.size() > static_cast<size_t>(kWidth)) line = line.substr(line.size() - kWidth);
  std::fprintf(out_, "\r%-*s", kWidth, line.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void StatusLine::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kRedraw);
    if (stop_) break;
    if (!label_.empty() && std::chrono::steady_clock::now() - start_ >= kDelay) DrawLocked();
  }
}

}  // namespace ovfix::converter
