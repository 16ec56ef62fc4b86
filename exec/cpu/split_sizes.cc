#include "exec/cpu/split_sizes.h"

#include <algorithm>

namespace ovfix::exec {

absl::StatusOr<std::vector<int64_t>> SplitSizes(const KernelContext& ctx, int64_t dim,
                                                int64_t parts,
                                                std::optional<std::vector<int64_t>> given) {
  std::vector<int64_t> sizes;
  if (given) {
    sizes = *std::move(given);
  } else if (ctx.node.HasAttribute("num_outputs")) {
    // Opset 18: as equal as possible, the last part smaller.
    if (ctx.node.GetInt("num_outputs", 0) != parts) {
      return ctx.Error("num_outputs does not match the number of outputs");
    }
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t k = 0, left = dim; k < parts; ++k, left -= chunk) {
      sizes.push_back(std::clamp<int64_t>(left, 0, chunk));
    }
  } else {
    if (dim % parts != 0) {
      return ctx.Error("axis dim ", dim, " does not split into ", parts, " equal parts");
    }
    sizes.assign(parts, dim / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts) {
    return ctx.Error("split has ", sizes.size(), " entries for ", parts, " outputs");
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) return ctx.Error("negative split size ", s);
    total += s;
  }
  if (total != dim) return ctx.Error("split sizes sum to ", total, ", axis dim is ", dim);
  return sizes;
}

}  // namespace ovfix::exec
