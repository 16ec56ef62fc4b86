#include "converter/conversion_time.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "converter/json_writer.h"

namespace ovfix::converter {
namespace {

thread_local ConversionClock* current_clock = nullptr;

// Parts below this share of the total (or 5 ms) go to "other" on the time line: a line of
// thirteen parts, most of them 0.00 s, hides the few that matter.
constexpr double kListedShare = 0.005;
constexpr double kListedSeconds = 0.005;

}  // namespace

const char* TimePartName(TimePart part) {
  switch (part) {
    case TimePart::kModelRuns:
      return "model runs";
    case TimePart::kSessionBuilds:
      return "session builds";
    case TimePart::kLoad:
      return "load";
    case TimePart::kSetup:
      return "setup";
    case TimePart::kCalibration:
      return "calibration";
    case TimePart::kRewrites:
      return "rewrites";
    case TimePart::kCheck:
      return "check";
    case TimePart::kRepair:
      return "repair bookkeeping";
    case TimePart::kCertificate:
      return "certificate bookkeeping";
    case TimePart::kReconversions:
      return "reconversions";
    case TimePart::kCopies:
      return "graph copies";
    case TimePart::kFinish:
      return "finish";
    case TimePart::kSave:
      return "save";
    case TimePart::kOther:
      return "other";
  }
  return "other";
}

std::string TimePartKey(TimePart part) {
  return absl::StrReplaceAll(TimePartName(part), {{" ", "_"}});
}

std::string TimeLine(const TimeBreakdown& time) {
  std::string line = absl::StrFormat("time: %.2f s", time.total);
  const double listed_below = std::max(kListedSeconds, kListedShare * time.total);
  double other = time[TimePart::kOther];
  std::string parts;
  for (int i = 0; i + 1 < kTimeParts; ++i) {
    const TimePart part = static_cast<TimePart>(i);
    const double s = time.seconds[i];
    if (part == TimePart::kModelRuns) {
      // Always said, with the count, even when no run was made.
      absl::StrAppend(&parts, absl::StrFormat(" + %s %.2f s (%d run%s)", TimePartName(part), s,
                                              time.model_runs, time.model_runs == 1 ? "" : "s"));
    } else if (s >= listed_below) {
      absl::StrAppend(&parts, absl::StrFormat(" + %s %.2f s", TimePartName(part), s));
    } else {
      other += s;
    }
  }
  absl::StrAppend(&parts, absl::StrFormat(" + other %.2f s", other));
  // " + " before the first part becomes " = ".
  return absl::StrCat(line, " =", parts.substr(2));
}

void WriteTimeJson(cli::JsonWriter& w, const TimeBreakdown& time) {
  w.Key("time").BeginObject();
  w.Fields({cli::Field("total_s", time.total), cli::Field("model_runs", time.model_runs),
            cli::Field("model_runs_with_sessions_s", time.RunSeconds())});
  w.Key("parts_s").BeginObject();
  for (int i = 0; i < kTimeParts; ++i) {
    w.Fields({cli::Field(TimePartKey(static_cast<TimePart>(i)), time.seconds[i])});
  }
  w.EndObject();
  w.EndObject();
}

ConversionClock::ConversionClock() : start_(Clock::now()), last_(start_) {}

ConversionClock::Active::Active(ConversionClock& clock) : previous_(current_clock) {
  current_clock = &clock;
}

ConversionClock::Active::~Active() { current_clock = previous_; }

ConversionClock* ConversionClock::Current() { return current_clock; }

void ConversionClock::AddBefore(TimePart part, double seconds) {
  if (!(seconds > 0)) return;
  before_ += seconds;
  seconds_[static_cast<int>(part)] += seconds;
}

void ConversionClock::Charge() {
  const Clock::time_point now = Clock::now();
  const TimePart part = open_.empty() ? TimePart::kOther : open_.back();
  seconds_[static_cast<int>(part)] += std::chrono::duration<double>(now - last_).count();
  last_ = now;
}

void ConversionClock::Enter(TimePart part) {
  Charge();
  open_.push_back(part);
}

void ConversionClock::Leave() {
  Charge();
  if (!open_.empty()) open_.pop_back();
}

bool ConversionClock::InRun() const {
  return std::find(open_.begin(), open_.end(), TimePart::kModelRuns) != open_.end();
}

void ConversionClock::CountRun() {
  if (!InRun()) ++runs_;
}

TimeBreakdown ConversionClock::Read() {
  Charge();
  TimeBreakdown time;
  time.total = before_ + std::chrono::duration<double>(last_ - start_).count();
  time.model_runs = runs_;
  time.seconds = seconds_;
  // "other" is what the named parts leave of the total: the same as what was charged to it,
  // up to the rounding of the sums.
  double named = 0;
  for (int i = 0; i + 1 < kTimeParts; ++i) named += seconds_[i];
  time.seconds[static_cast<int>(TimePart::kOther)] = std::max(0.0, time.total - named);
  return time;
}

ScopedTimePart::ScopedTimePart(TimePart part) : clock_(ConversionClock::Current()) {
  if (clock_ != nullptr) clock_->Enter(part);
}

ScopedTimePart::~ScopedTimePart() {
  if (clock_ != nullptr) clock_->Leave();
}

namespace {
// Counts the run on the current clock before its scope opens (after, it would be nested).
TimePart CountedRun() {
  if (ConversionClock* clock = ConversionClock::Current()) clock->CountRun();
  return TimePart::kModelRuns;
}
}  // namespace

ScopedModelRun::ScopedModelRun() : part_(CountedRun()) {}

}  // namespace ovfix::converter
