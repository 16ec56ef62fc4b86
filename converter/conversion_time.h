// Where a conversion's wall time went: model runs (how many, and how long), session builds,
// the rewrites, the repair's and the certificate's bookkeeping, graph copies, load and save.
// Measured, not estimated: each part is the wall time spent inside it and not inside a part
// nested in it (a model run inside the repair is the run's, not the repair's), so the parts add
// up to the total; what no part claims is "other".
//
// A conversion makes its clock current on its thread (ConversionClock::Active); the places
// that run a model or copy a graph open a ScopedTimePart on whatever clock is current, so the
// repair's and the certificate's runs are timed without the search code knowing of the clock.
// Without a current clock (a run outside a conversion) the scopes cost a thread-local read.
#pragma once

#include <array>
#include <chrono>
#include <string>
#include <vector>

namespace ovfix::cli {
class JsonWriter;
}

namespace ovfix::converter {

// In the order the time line prints them.
enum class TimePart {
  kModelRuns,      // executing full runs of a model (reference, validation, repair, certificate)
  kSessionBuilds,  // building those runs' sessions (the run graph optimized, kernels chosen)
  kLoad,           // the caller's: reading the model, checking the files it will write
  kSetup,          // target, rule files, shape inference, opset conversion
  kCalibration,    // calibration inputs read, shapes observed (the reference run is a run)
  kRewrites,       // the target's passes and rules, each rewrite validated on activations
  kCheck,          // final shape inference, onnx's checker, the end-to-end estimate
  kRepair,         // the repair's search and bookkeeping
  kCertificate,    // the island certificate's bookkeeping
  kReconversions,  // the precision phase converted again for the repair and the certificate
  kCopies,         // whole-graph copies (SerializedCopy)
  kFinish,         // constant Ifs inlined, precision cost, layer hints
  kSave,           // the file serialized, written and read back, the report written
  kOther,
};
inline constexpr int kTimeParts = static_cast<int>(TimePart::kOther) + 1;

// The short name of a part, for the time line and the JSON report ("model runs", "save").
const char* TimePartName(TimePart part);
// The JSON key of a part ("model_runs_s").
std::string TimePartKey(TimePart part);

struct TimeBreakdown {
  double total = 0;  // wall seconds, load included
  int model_runs = 0;
  std::array<double, kTimeParts> seconds{};  // exclusive, by TimePart; they sum to total
  double operator[](TimePart part) const { return seconds[static_cast<int>(part)]; }
  // Model runs with their session builds: what the runs cost, the bench's denominator.
  double RunSeconds() const {
    return (*this)[TimePart::kModelRuns] + (*this)[TimePart::kSessionBuilds];
  }
  bool measured() const { return total > 0; }
};

// "time: 9.2 s = model runs 0.7 s (20 runs) + session builds 0.1 s + rewrites 1.1 s + ...
// + other 0.1 s": the parts of at least 0.5% of the total (at least 5 ms) in TimePart order,
// the smaller ones counted in "other", so that the printed parts add up to the total.
std::string TimeLine(const TimeBreakdown& time);
// "time": {"total_s", "model_runs", "parts_s": {"model_runs": ..., ...}} (every part).
void WriteTimeJson(cli::JsonWriter& w, const TimeBreakdown& time);

class ConversionClock {
 public:
  using Clock = std::chrono::steady_clock;
  ConversionClock();

  // Makes `clock` the calling thread's current clock until it goes (the previous one after).
  class Active {
   public:
    explicit Active(ConversionClock& clock);
    ~Active();
    Active(const Active&) = delete;
    Active& operator=(const Active&) = delete;

   private:
    ConversionClock* previous_;
  };
  static ConversionClock* Current();

  // Time spent before the clock started (the caller's load), counted in `part` and the total.
  void AddBefore(TimePart part, double seconds);
  void Enter(TimePart part);
  void Leave();
  // Counts a model run unless one is already open (a run nested in another is the same run).
  void CountRun();
  int runs() const { return runs_; }
  bool InRun() const;
  // The breakdown so far: open parts charged up to now, "other" what no part claimed.
  TimeBreakdown Read();

 private:
  void Charge();

  Clock::time_point start_, last_;
  double before_ = 0;
  std::array<double, kTimeParts> seconds_{};
  std::vector<TimePart> open_;  // innermost last; empty: "other"
  int runs_ = 0;
};

// The wall time of its scope charged to `part` on the current clock, if there is one.
class ScopedTimePart {
 public:
  explicit ScopedTimePart(TimePart part);
  ~ScopedTimePart();
  ScopedTimePart(const ScopedTimePart&) = delete;
  ScopedTimePart& operator=(const ScopedTimePart&) = delete;

 private:
  ConversionClock* clock_;
};

// One full run of a model: counted, and its scope charged to model runs.
class ScopedModelRun {
 public:
  ScopedModelRun();

 private:
  ScopedTimePart part_;
};

}  // namespace ovfix::converter
