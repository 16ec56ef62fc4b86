#include "exec/cpu/broadcast_parameter.h"

#include <algorithm>

namespace ovfix::exec {

// `t` broadcast to `dims` (numpy-style, aligned at the right; leading dims of t beyond
// dims' rank must be 1), flattened, as doubles.
absl::StatusOr<std::vector<double>> BroadcastParameter(const KernelContext& ctx, const Tensor& t,
                                                       const std::vector<int64_t>& dims,
                                                       const char* what) {
  const size_t rank = dims.size();
  bool ok = true;
  for (size_t d = 0; d < t.rank(); ++d) {
    const int64_t size = t.dim(t.rank() - 1 - d);
    ok = ok && (size == 1 || (d < rank && size == dims[rank - 1 - d]));
  }
  if (!ok) return ctx.Error(what, " ", DescribeTensor(t), " does not broadcast to the shape");
  // Strides of t over `dims`: 0 where t has no dim or a dim of 1.
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t d = 0; d < std::min(t.rank(), rank); ++d) {
    const size_t own = t.rank() - 1 - d;
    if (t.dim(own) != 1) strides[rank - 1 - d] = stride;
    stride *= t.dim(own);
  }
  std::vector<double> out(Tensor::NumElements(dims));
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = t.GetAsDouble(offset);
    for (size_t d = rank; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace ovfix::exec
