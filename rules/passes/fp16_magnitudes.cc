#include "rules/passes/fp16_magnitudes.h"

#include <cmath>

namespace ovfix::rules {
namespace {

double Largest(const MagnitudeRange& m) { return m.nan ? INFINITY : m.largest; }

}  // namespace

std::optional<double> LargestMagnitude(PassContext& ctx, const Value* v) {
  if (ctx.validator != nullptr) {
    if (std::optional<MagnitudeRange> m = ctx.validator->CapturedMagnitudes(v)) return Largest(*m);
    absl::StatusOr<Tensor> t = ctx.validator->Activation(v);
    if (!t.ok() || !IsFloatingPoint(t->type())) return std::nullopt;
    double largest = 0;
    for (int64_t i = 0; i < t->numel(); ++i) {
      const double a = std::abs(t->GetAsDouble(i));
      if (!(a <= largest)) largest = a;
    }
    return largest;
  }
  if (ctx.magnitudes != nullptr) {
    auto it = ctx.magnitudes->find(v->name());
    if (it != ctx.magnitudes->end()) return Largest(it->second);
  }
  return std::nullopt;
}

}  // namespace ovfix::rules
