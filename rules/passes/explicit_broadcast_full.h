// explicit_broadcast_full (--broadcast full): every input of an element-wise op gets the
// op's output shape, for backends that cannot broadcast at all. Constants are expanded in
// place into a new initializer (up to fold_size_limit elements); other values go through
// an Expand node:  Add(a[1,3,1,64], b[1,3,64,64]) -> Add(Expand(a, [1,3,64,64]), b)
// Equal ranks (--broadcast rank) come from the explicit_broadcast rules, which run first.
#pragma once

#include "rules/pass.h"

namespace ovfix::rules {

// The pass (registry.cc) and its name; returns how many rewrites it committed.
inline constexpr char kExplicitBroadcastFull[] = "explicit_broadcast_full";
absl::StatusOr<int> ExpandBroadcastsFull(PassContext& ctx);

// `t` broadcast (numpy rules) to `dims`; `t`'s rank must not exceed dims.size().
Tensor BroadcastTensor(const Tensor& t, const std::vector<int64_t>& dims);

}  // namespace ovfix::rules
