// The window generators HannWindow, HammingWindow and BlackmanWindow (opsets 17 and 18). Each
// is the cosine sum w[n] = a0 - a1 * cos(2 pi n / N) + a2 * cos(4 pi n / N) for n in
// [0, size), with N = size for a periodic window (the default) and N = size - 1 for a
// symmetric one, computed in double and cast to output_datatype.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "exec/cpu/data_movement.h"
#include "exec/kernel.h"
#include "ir/float16.h"

namespace ovfix::exec {
namespace {

struct CosineSum {
  double a0, a1, a2;
};

// The coefficients of the operators' function bodies.
constexpr CosineSum kHann = {0.5, 0.5, 0.0};
constexpr CosineSum kHamming = {25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr CosineSum kBlackman = {0.42, 0.5, 0.08};

// Writes `values` into `out` as its element type: float types round, integer types truncate
// toward zero as Cast does.
template <typename T>
void StoreAs(const std::vector<double>& values, Tensor& out) {
  T* dst = out.data<T>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = static_cast<T>(values[i]);
}

// `out` is of a floating-point or integer type.
void StoreWindow(const std::vector<double>& values, Tensor& out) {
  switch (out.type()) {
    case DataType::kFloat: StoreAs<float>(values, out); break;
    case DataType::kDouble: StoreAs<double>(values, out); break;
    case DataType::kFloat16:
      for (size_t i = 0; i < values.size(); ++i) {
        out.data<uint16_t>()[i] = FloatToHalfBits(static_cast<float>(values[i]));
      }
      break;
    case DataType::kBfloat16:
      for (size_t i = 0; i < values.size(); ++i) {
        out.data<uint16_t>()[i] = FloatToBfloat16Bits(static_cast<float>(values[i]));
      }
      break;
    case DataType::kInt8: StoreAs<int8_t>(values, out); break;
    case DataType::kUint8: StoreAs<uint8_t>(values, out); break;
    case DataType::kInt16: StoreAs<int16_t>(values, out); break;
    case DataType::kUint16: StoreAs<uint16_t>(values, out); break;
    case DataType::kInt32: StoreAs<int32_t>(values, out); break;
    case DataType::kUint32: StoreAs<uint32_t>(values, out); break;
    case DataType::kInt64: StoreAs<int64_t>(values, out); break;
    case DataType::kUint64: StoreAs<uint64_t>(values, out); break;
    default: break;
  }
}

absl::Status Window(KernelContext& ctx, const CosineSum& c) {
  if (!ctx.has_input(0)) return ctx.Error("expects the input size");
  const Tensor& size_tensor = ctx.input(0);
  if ((size_tensor.type() != DataType::kInt32 && size_tensor.type() != DataType::kInt64) ||
      size_tensor.numel() != 1) {
    return ctx.Error("size must be an int32 or int64 scalar, got ", DescribeTensor(size_tensor));
  }
  const int64_t size = size_tensor.GetAsInt64(0);
  const int64_t type_code = ctx.node.GetInt("output_datatype", 1);
  if (!IsKnownDataType(static_cast<int32_t>(type_code))) {
    return ctx.Error("unknown output_datatype ", type_code);
  }
  const DataType type = static_cast<DataType>(type_code);
  if (!IsFloatingPoint(type) && !IsInteger(type)) {
    return ctx.Error("unsupported output_datatype ", std::string(DataTypeName(type)));
  }
  // Doubles are computed first: the size must be allocatable as double.
  if (size < 0 || !data_movement::IsAllocatable({size}, DataType::kDouble)) {
    return ctx.Error("size ", size, " out of range");
  }
  const bool periodic = ctx.node.GetInt("periodic", 1) != 0;
  // A symmetric window of size 1 has N = 0: its one value is taken at angle 0.
  const double n_cap = static_cast<double>(periodic ? size : size - 1);
  const double step = n_cap > 0 ? 2 * std::numbers::pi / n_cap : 0.0;
  std::vector<double> values(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    const double angle = step * static_cast<double>(n);
    values[n] = c.a0 - c.a1 * std::cos(angle) + c.a2 * std::cos(2 * angle);
  }
  StoreWindow(values, ctx.Output(0, type, {size}));
  return absl::OkStatus();
}

absl::Status HannWindow(KernelContext& ctx) { return Window(ctx, kHann); }
absl::Status HammingWindow(KernelContext& ctx) { return Window(ctx, kHamming); }
absl::Status BlackmanWindow(KernelContext& ctx) { return Window(ctx, kBlackman); }

}  // namespace

void AddSignalKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "HannWindow", 17, kLatestOpset, &HannWindow});
  table.push_back({"", "HammingWindow", 17, kLatestOpset, &HammingWindow});
  table.push_back({"", "BlackmanWindow", 17, kLatestOpset, &BlackmanWindow});
}

}  // namespace ovfix::exec
