#include "exec/cpu/topk_count.h"

namespace ovfix::exec {

absl::StatusOr<int64_t> ReadTopKCount(const KernelContext& ctx, const Tensor* k_input) {
  if (ctx.opset < 10) {
    if (!ctx.node.HasAttribute("k")) return ctx.Error("attribute k is required");
    return ctx.node.GetInt("k", 0);
  }
  if (k_input == nullptr) return ctx.Error("missing input K");
  if (k_input->numel() != 1 ||
      (k_input->type() != DataType::kInt64 && k_input->type() != DataType::kInt32)) {
    return ctx.Error("K must hold one int64, got ", DescribeTensor(*k_input));
  }
  return k_input->GetAsInt64(0);
}

}  // namespace ovfix::exec
