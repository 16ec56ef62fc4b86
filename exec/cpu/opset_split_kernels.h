// Registration of ops whose one kernel reads ctx.opset to follow a change the op went through
// at opset `split`: each op gets two entries, [since, split - 1] and [split, kLatestOpset], so
// the table (and what it lists) still tells the two versions apart.
#pragma once

#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/kernel.h"

namespace ovfix::exec {

inline void AddOpsSplitAtOpset(std::vector<KernelDef>& table, int since, int split,
                               std::initializer_list<std::pair<std::string_view, KernelFn>> ops) {
  for (const auto& [op_type, fn] : ops) {
    table.push_back({"", op_type, since, split - 1, fn});
    table.push_back({"", op_type, split, kLatestOpset, fn});
  }
}

}  // namespace ovfix::exec
