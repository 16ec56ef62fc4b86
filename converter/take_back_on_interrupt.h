// While a conversion measures the model it wrote and writes its report, an interrupt (Ctrl-C,
// a build system's SIGTERM or SIGHUP) takes the written files back as a failure would, and
// then passes the signal on to the handler it replaced (the command's, cli/interrupt.h, which
// says so and ends the process), else ends the process as the signal would have: a model is
// never left behind without its report, nor unmeasured. Restoring is rename/unlink only,
// which a signal handler may call. A signal the process ignores stays ignored.
#pragma once

#include <csignal>
#include <memory>
#include <vector>

#include "ir/atomic_file.h"

namespace ovfix::converter {

class TakeBackOnInterrupt {
 public:
  // `files` must outlive this guard; one guard at a time.
  explicit TakeBackOnInterrupt(const std::vector<std::unique_ptr<KeptFile>>* files);
  ~TakeBackOnInterrupt();
  TakeBackOnInterrupt(const TakeBackOnInterrupt&) = delete;
  TakeBackOnInterrupt& operator=(const TakeBackOnInterrupt&) = delete;

 private:
  struct sigaction previous_[3];
};

}  // namespace ovfix::converter
