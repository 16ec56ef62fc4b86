// Targets: the steps of a conversion for one kind of backend, as a text file in
// rules/targets/NAME.target (built into the binary) or any file given to --target.
//
//   # gpu-fp16: GPU runtimes computing in fp16 storage (TensorRT fp16, ncnn Vulkan, ...)
//   description  fp16 weights and tensors with fp32 islands where fp16 overflows
//   pass   fix_input_shapes        # a native pass (rules/passes/registry.cc)
//   rules  conv_normalization      # a rule set: a rule file's stem, a rule family or a rule
//   option fp16_magnitude_threshold 8192
//   fp32_runtime  compile with INFERENCE_PRECISION_HINT f32   # only where islands_honoured
//                 # is false: how the backend is set to fp32, which --precision fp32 asks for
//
// One step per line, run in the order written; `#` starts a comment. Options set defaults
// that the command line overrides: the entries of the option table that target files may
// set (rules/conversion_options.h: precision, keep_io_types, broadcast, batch...). The pass
// manager (converter/pass_manager.h) adds the steps the options ask for that the list lacks.
// Each built-in target file says what it is for.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "rules/pass.h"

namespace ovfix::converter {

struct TargetStep {
  enum class Kind { kPass, kRules };
  Kind kind = Kind::kPass;
  std::string name;
  int line = 0;
};

struct Target {
  std::string name;  // the file's stem
  std::string path;  // as given, or "targets/NAME.target" for built-in ones
  std::string description;
  // For a backend that picks its own float type (islands_honoured false): how its user sets
  // it to compute in fp32, which `--precision fp32` asks of them ("fp32_runtime" line).
  std::string fp32_runtime;
  std::vector<TargetStep> steps;
  std::vector<std::pair<std::string, std::string>> options;  // in file order
};

// Parses target text. Errors are "PATH:LINE:COL: message" (unknown keyword, unknown pass or
// option, bad option value), all of them, one per line.
// `more_passes`: passes beyond the registry's that the file may name (the session graph's).
absl::StatusOr<Target> ParseTarget(std::string_view path, std::string_view text,
                                   const std::vector<std::string>& more_passes = {});
// A built-in target by name ("gpu-fp16"), or a target file when `name` names a file (has a
// '/' or ends in ".target").
absl::StatusOr<Target> LoadTarget(std::string_view name);
// The built-in targets, sorted by name.
std::vector<Target> BuiltinTargets();

// Sets the target's options in `options`, except those named in `set_by_user` (the command
// line wins). Option names are those of the file format. `--precision fp32` given on a
// target whose backend picks its own float type means the user sets that backend to fp32
// (Fp32ByRequest): the model then runs as written there, and islands_honoured becomes true.
absl::Status ApplyTargetOptions(const Target& target, const std::set<std::string>& set_by_user,
                                rules::ConvertOptions& options);
// Whether the user asked for fp32 on a target whose backend otherwise picks fp16 itself.
bool Fp32ByRequest(const Target& target, const std::set<std::string>& set_by_user,
                   const rules::ConvertOptions& options);

}  // namespace ovfix::converter
