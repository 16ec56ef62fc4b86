#include "converter/take_back_on_interrupt.h"

#include <atomic>

namespace ovfix::converter {
namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<const std::vector<std::unique_ptr<KeptFile>>*> guarded{nullptr};
// The actions the guard replaced: after taking the files back, the signal goes on to the
// command's own handler (cli/interrupt.h: the line that says so, temporary files removed).
struct sigaction replaced[3];

void TakeBack(int signal) {
  if (const auto* files = guarded.exchange(nullptr); files != nullptr) {
    for (const auto& k : *files) k->Restore();
  }
  for (int i = 0; i < 3; ++i) {
    const struct sigaction& next = replaced[i];
    if (kSignals[i] == signal && (next.sa_flags & SA_SIGINFO) == 0 && next.sa_handler != SIG_DFL &&
        next.sa_handler != SIG_IGN) {
      next.sa_handler(signal);  // ends the process; one that returns gets the default below
    }
  }
  RemoveTemporaryFilesInProgress();  // what the command's handler would have removed
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

TakeBackOnInterrupt::TakeBackOnInterrupt(const std::vector<std::unique_ptr<KeptFile>>* files) {
  guarded = files;
  struct sigaction action = {};
  action.sa_handler = TakeBack;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) sigaddset(&action.sa_mask, kSignals[i]);
  for (int i = 0; i < 3; ++i) {
    sigaction(kSignals[i], nullptr, &previous_[i]);
    replaced[i] = previous_[i];
    // A signal the process ignores (SIGHUP under nohup) stays ignored.
    if (previous_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &action, nullptr);
  }
}

TakeBackOnInterrupt::~TakeBackOnInterrupt() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  guarded = nullptr;
}

}  // namespace ovfix::converter
