#include "converter/take_back_on_interrupt.h"

#include <atomic>

namespace ovfix::converter {
namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<const std::vector<std::unique_ptr<KeptFile>>*> guarded{nullptr};

void TakeBack(int signal) {
  if (const auto* files = guarded.exchange(nullptr); files != nullptr) {
    for (const auto& k : *files) k->Restore();
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

TakeBackOnInterrupt::TakeBackOnInterrupt(const std::vector<std::unique_ptr<KeptFile>>* files) {
  guarded = files;
  struct sigaction action = {};
  action.sa_handler = TakeBack;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &previous_[i]);
}

TakeBackOnInterrupt::~TakeBackOnInterrupt() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  guarded = nullptr;
}

}  // namespace ovfix::converter
