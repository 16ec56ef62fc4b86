// The generators HannWindow, HammingWindow and BlackmanWindow (opsets 17 and 18). Each
// is the cosine sum w[n] = a0 - a1 * cos(2 pi n / N) + a2 * cos(4 pi n / N) for n in
// [0, size), with N = size for a periodic window (the default) and N = size - 1 for a
// symmetric one, computed in double and cast to output_datatype.
//
// MelWeightMatrix (opset 17): triangular filters, one per mel band, over the
// dft_length / 2 + 1 bins of a onesided spectrum. num_mel_bins + 2 points evenly spaced in
// mel(f) = 2595 log10(1 + f / 700) between the lower and upper edge (the step is the span over
// num_mel_bins + 2, as the operator's definition computes it) are mapped back to hertz and to
// bins floor((dft_length + 1) f / sample_rate); band i rises from 0 at point i to 1 at point
// i + 1 and falls back to 0 at point i + 2.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "exec/cpu/data_movement.h"
#include "exec/kernel.h"
#include "ir/float16.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

struct CosineSum {
  double a0, a1, a2;
};

// The coefficients of the operators' function bodies.
constexpr CosineSum kHann = {0.5, 0.5, 0.0};
constexpr CosineSum kHamming = {25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr CosineSum kBlackman = {0.42, 0.5, 0.08};

// Writes `values` into `out` (of a floating-point or integer type) as its element type: float
// types round, integer types truncate toward zero as Cast does.
void StoreAsType(const std::vector<double>& values, Tensor& out) {
  for (size_t i = 0; i < values.size(); ++i) out.SetFromDouble(static_cast<int64_t>(i), values[i]);
}

// An int32 or int64 scalar input.
absl::StatusOr<int64_t> IntScalar(const KernelContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) return ctx.Error("expects the input ", name);
  const Tensor& t = ctx.input(i);
  if ((t.type() != DataType::kInt32 && t.type() != DataType::kInt64) || t.numel() != 1) {
    return ctx.Error(name, " must be an int32 or int64 scalar, got ", DescribeTensor(t));
  }
  return t.GetAsInt64(0);
}

// The output_datatype attribute (default float): a floating-point or integer type.
absl::StatusOr<DataType> OutputDatatype(const KernelContext& ctx) {
  const int64_t type_code = ctx.node.GetInt("output_datatype", 1);
  if (!IsKnownDataType(static_cast<int32_t>(type_code))) {
    return ctx.Error("unknown output_datatype ", type_code);
  }
  const DataType type = static_cast<DataType>(type_code);
  if (!IsFloatingPoint(type) && !IsInteger(type)) {
    return ctx.Error("unsupported output_datatype ", std::string(DataTypeName(type)));
  }
  return type;
}

absl::Status Window(KernelContext& ctx, const CosineSum& c) {
  OVFIX_ASSIGN_OR_RETURN(int64_t size_or, IntScalar(ctx, 0, "size"));
  const int64_t size = size_or;
  OVFIX_ASSIGN_OR_RETURN(DataType type, OutputDatatype(ctx));
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
  StoreAsType(values, ctx.Output(0, type, {size}));
  return absl::OkStatus();
}

absl::Status MelWeightMatrix(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(int64_t bands, IntScalar(ctx, 0, "num_mel_bins"));
  OVFIX_ASSIGN_OR_RETURN(int64_t dft_length, IntScalar(ctx, 1, "dft_length"));
  OVFIX_ASSIGN_OR_RETURN(int64_t sample_rate, IntScalar(ctx, 2, "sample_rate"));
  if (!ctx.has_input(3) || !ctx.has_input(4) || ctx.input(3).numel() != 1 ||
      ctx.input(4).numel() != 1) {
    return ctx.Error("expects scalar lower_edge_hertz and upper_edge_hertz");
  }
  const int64_t bins = dft_length / 2 + 1;
  if (bands < 1 || dft_length < 1 || sample_rate < 1 ||
      !data_movement::IsAllocatable({bins, bands}, DataType::kDouble)) {
    return ctx.Error("num_mel_bins, dft_length and sample_rate must be positive and not huge");
  }
  OVFIX_ASSIGN_OR_RETURN(DataType type, OutputDatatype(ctx));
  auto mel = [](double hertz) { return 2595.0 * std::log10(1.0 + hertz / 700.0); };
  const double low = mel(ctx.input(3).GetAsDouble(0));
  const double high = mel(ctx.input(4).GetAsDouble(0));
  const double step = (high - low) / static_cast<double>(bands + 2);
  std::vector<int64_t> points(static_cast<size_t>(bands + 2));
  for (int64_t p = 0; p < bands + 2; ++p) {
    const double hertz = 700.0 * (std::pow(10.0, (low + step * p) / 2595.0) - 1.0);
    points[p] =
        static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hertz / sample_rate));
    if (points[p] < 0 || points[p] >= bins) {
      return ctx.Error("the band edges fall outside the spectrum's ", bins, " bins");
    }
  }
  std::vector<double> values(static_cast<size_t>(bins * bands), 0.0);
  for (int64_t band = 0; band < bands; ++band) {
    const int64_t left = points[band], center = points[band + 1], right = points[band + 2];
    if (center == left) {
      values[center * bands + band] = 1.0;
    } else {
      for (int64_t j = left; j <= center; ++j) {
        values[j * bands + band] = static_cast<double>(j - left) / (center - left);
      }
    }
    for (int64_t j = center; j < right; ++j) {
      values[j * bands + band] = static_cast<double>(right - j) / (right - center);
    }
  }
  StoreAsType(values, ctx.Output(0, type, {bins, bands}));
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
  table.push_back({"", "MelWeightMatrix", 17, kLatestOpset, &MelWeightMatrix});
}

}  // namespace ovfix::exec
