// Shape facts from the reference runs, by branch. A value's rank or dims that a run saw
// become facts (rules/shape_facts.h) where static inference left a gap; inside an If, Loop
// or Scan body only from the runs that executed that body, since the other branch of an If
// may see other shapes (silero VAD: 512 samples at 16 kHz, 256 at 8 kHz). A body that no
// calibration set ran keeps only what static inference proves, and the report names it with
// what was left unconverted there.
#pragma once

#include <string>
#include <vector>

#include "converter/validation.h"
#include "ir/model.h"
#include "rules/shape_facts.h"

namespace ovfix::converter {

// A body, named so that it can be found again after rewrites: its holder's name (kept
// through rewrites) and attribute, and the same for the bodies around it.
struct BodyName {
  std::vector<std::string> path;  // "holder.attribute" from the outermost body inward
  std::string key;                // the holder's name (else its first output's) and the attribute
};

// A body no calibration set ran, and what in it (and in the bodies inside it) is left that
// the target exists to remove, or that a backend parser cannot read from the file:
// "Shape: NAME", "element-wise input of unknown rank: NAME (op)", "Squeeze without axes: NAME".
struct BodyNotRun {
  std::string body;  // the BodyName's path joined with " / "
  std::vector<std::string> left;
};

// Ops whose output dims depend on the data, not only on the input shapes: a run's dims for
// them (and for what is computed from them) are one run's, never facts. An If's branch is
// picked by data, so its outputs count too.
bool DataShaped(const Node& n);

// Takes what the validator's runs saw where inference left gaps, in every graph: ranks, and
// dims too when `dims_fixed` (every input's dims are fixed) for values that do not depend on
// data and sit in no Loop body. A body value counts only where a run executed its body, an
// If output's rank only where every branch gives that rank (a branch no run executed: as
// inference tells it once what the runs saw around it is a fact, so observation and inference
// alternate while that adds facts). Below an If output of open rank no rank is taken, except
// past a float value whose rank inference proves. Lists what it added in value_info;
// returns how many facts, and the outermost bodies that no run executed in `not_run`.
// With `bodies_only`, the main graph's values are left as they are (after If nodes were
// inlined, when the model is no longer the one the validator's activations belong to).
int ObserveShapes(Model& model, ReferenceValidator& validator, bool dims_fixed,
                  rules::ShapeFacts& facts, std::vector<BodyName>& not_run,
                  bool bodies_only = false);

// The bodies of `not_run` that are still in `model`, with what is left in them.
std::vector<BodyNotRun> DescribeBodiesNotRun(Model& model, const std::vector<BodyName>& not_run);

}  // namespace ovfix::converter
