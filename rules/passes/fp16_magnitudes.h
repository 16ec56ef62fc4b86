// Calibrated magnitudes for the fp16-safe rewrites: the largest |x| a reference run saw of a
// value, from the validator (captured as it ran, or the activation scanned) or, without one,
// from an earlier run's magnitudes by name.
#pragma once

#include <optional>

#include "rules/pass.h"

namespace ovfix::rules {

// nullopt when nothing was calibrated for `v`; infinity when the run saw a NaN.
std::optional<double> LargestMagnitude(PassContext& ctx, const Value* v);

}  // namespace ovfix::rules
