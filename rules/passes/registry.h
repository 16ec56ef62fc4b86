// The native passes, in one explicit list (registry.cc), each with what it declares about
// itself: the options it reads (as an MLIR pass declares its Option<>s), whether an option
// switches it on, and where a conversion puts it when the options ask for it and the target
// does not list it. The conversion plan (converter/conversion_plan.h), `rules list`, the option
// table's readers and the "has no effect" warnings all read these declarations. Pass names are
// the names used in target files and by --disable.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rules/pass.h"

namespace ovfix::rules {

// An option a pass reads: the option table's name (rules/conversion_options.h). `switches`:
// the option decides whether the pass runs at all (`enabled`), which a plan says when it
// does not.
struct PassOption {
  std::string_view option;
  bool switches = false;
};

// Where a pass the options ask for goes when the target does not list it: first, right
// before or after a step, or right before the last step of a name. A step that is not in the
// plan puts it at the end.
struct PassPlacement {
  enum class Where { kFirst, kBefore, kAfter, kBeforeLast };
  Where where = Where::kFirst;
  std::string_view step = {};
};

struct NativePassInfo {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Pass>()> make;
  std::vector<PassOption> options = {};
  // A pass that only does what an option asks: where it is listed it runs only when this
  // holds (null: always).
  bool (*enabled)(const ConvertOptions& options) = nullptr;
  // The options ask for it: the plan adds it (at `placement`) where the target does not list
  // it (null: only where listed). Passes are added in the order of the list, so a placement
  // names a step listed before it.
  bool (*added)(const ConvertOptions& options) = nullptr;
  PassPlacement placement = {};
  // A rule set added right after it, with it (fp16_islands: cast_cleanup).
  std::string_view followed_by = {};
};

// Every native pass, in the order of the list.
const std::vector<NativePassInfo>& NativePasses();
// The named pass's entry, or nullptr.
const NativePassInfo* FindNativePass(std::string_view name);
// A new instance of the named pass, or nullptr when there is none.
std::unique_ptr<Pass> MakeNativePass(std::string_view name);

// The passes that declare option `name`, in list order.
std::vector<std::string> PassesReading(std::string_view name);
// What reads option `name`: the passes that declare it, then the table's other readers
// (phases, rule conditions), as one line: "fix_input_shapes; reference inputs".
std::string OptionReaders(std::string_view name);
// "batch (--batch N)": a declared option as `rules list` shows it.
std::string DescribePassOption(const PassOption& option);

}  // namespace ovfix::rules
