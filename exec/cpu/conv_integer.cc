// ConvInteger (opset 10): Conv over 8-bit integers with zero points, accumulated in int32.
// The product is conv_integer_core.h's (exact, threaded, on the int16 GEMM).
#include <cstdint>
#include <string>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/conv_integer_core.h"
#include "exec/cpu/math_kernels.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

bool IsByte(DataType type) { return type == DataType::kInt8 || type == DataType::kUint8; }

// Input `index`'s zero point for element `i` of a per-tensor (1 value) or per-`count` zero
// point of the operand's type; 0 when the input is omitted.
absl::StatusOr<int32_t> ZeroPoint(const KernelContext& ctx, const Tensor& operand, size_t index,
                                  int64_t count, const char* name, int64_t i = 0) {
  if (!ctx.has_input(index)) return 0;
  const Tensor& zero = ctx.input(index);
  if (zero.type() != operand.type() || (zero.numel() != 1 && zero.numel() != count)) {
    return ctx.Error(name, " zero point must be one value or ", count, " of the same type, is ",
                     DescribeTensor(zero));
  }
  return static_cast<int32_t>(zero.GetAsInt64(zero.numel() == 1 ? 0 : i));
}

absl::Status ConvInteger(KernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs x and w");
  }
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (!IsByte(x.type()) || !IsByte(w.type())) {
    return ctx.Error("x and w must be int8 or uint8, are ", DescribeTensor(x), " and ",
                     DescribeTensor(w));
  }
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) {
    return ctx.Error("x and w must have the same rank with 1 to 3 spatial dims, are ",
                     DescribeTensor(x), " and ", DescribeTensor(w));
  }
  const int64_t group = ctx.node.GetInt("group", 1);
  const int64_t batch = x.dim(0), channels = x.dim(1), maps = w.dim(0);
  if (group <= 0 || channels % group != 0 || maps % group != 0 || w.dim(1) != channels / group) {
    return ctx.Error("group ", group, " does not fit ", channels, " input channels and W ",
                     DescribeTensor(w));
  }
  OVFIX_ASSIGN_OR_RETURN(SpatialGeometry geometry, ConvGeometry(ctx, x, w));
  OVFIX_ASSIGN_OR_RETURN(int32_t x_zero, ZeroPoint(ctx, x, 2, 1, "x"));
  std::vector<int32_t> w_zeros(maps);
  for (int64_t m = 0; m < maps; ++m) {
    OVFIX_ASSIGN_OR_RETURN(int32_t z, ZeroPoint(ctx, w, 3, maps, "w", m));
    w_zeros[m] = z;
  }
  std::vector<int64_t> dims = {batch, maps};
  dims.insert(dims.end(), geometry.output.begin(), geometry.output.end());
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  Tensor& y = ctx.Output(0, DataType::kInt32, dims);
  if (y.numel() == 0) return absl::OkStatus();
  IntegerConv(x, x_zero, w, w_zeros, geometry, group, y.data<int32_t>(), ctx.pool);
  return absl::OkStatus();
}

}  // namespace

void AddConvIntegerKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "ConvInteger", 10, kLatestOpset, &ConvInteger, Float16Mode::kNative});
}

}  // namespace ovfix::exec
