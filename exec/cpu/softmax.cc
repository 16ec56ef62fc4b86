// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is seen as 2-D, split at `axis`
// (default 1), and each row of the flattened tail is one distribution; from opset 13 each
// line along the single `axis` (default -1) is one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "exec/cpu/opset_split_kernels.h"
#include "exec/cpu/vector_math.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

enum class Mode { kSoftmax, kLogSoftmax, kHardmax };

// The input as [outer, n, inner]: n elements of a distribution lie `inner` apart.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};

absl::StatusOr<Lines> SplitAtAxis(const KernelContext& ctx, const Tensor& input) {
  const int64_t rank = static_cast<int64_t>(input.rank());
  const bool coerce_2d = ctx.opset < 13;
  int64_t axis = ctx.node.GetInt("axis", coerce_2d ? 1 : -1);
  if (axis < -rank || axis >= rank) {
    return ctx.Error("axis ", axis, " is out of range for rank ", rank);
  }
  if (axis < 0) axis += rank;
  Lines lines;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = input.dim(d);
    if (d < axis) {
      lines.outer *= size;
    } else if (d == axis || coerce_2d) {
      lines.n *= size;
    } else {
      lines.inner *= size;
    }
  }
  return lines;
}

constexpr int64_t kColumnBlock = 256;

// One block of `width` neighbouring lines of one outer index: x and y point at element 0 of
// the first line; line j's element k is at k * inner + j.
template <Mode kMode, typename T>
void NormalizeBlock(const T* x, T* y, int64_t n, int64_t inner, int64_t width, std::vector<T>& max,
                    std::vector<double>& sum, std::vector<int64_t>& argmax) {
  max.assign(x, x + width);
  argmax.assign(width, 0);
  for (int64_t k = 1; k < n; ++k) {
    const T* row = x + k * inner;
    for (int64_t j = 0; j < width; ++j) {
      // NaN wins and stays, so a line holding one comes out NaN (Hardmax: picks it).
      if (row[j] > max[j] || (row[j] != row[j] && max[j] == max[j])) {
        max[j] = row[j];
        argmax[j] = k;
      }
    }
  }
  if constexpr (kMode == Mode::kHardmax) {
    for (int64_t k = 0; k < n; ++k) {
      T* out = y + k * inner;
      for (int64_t j = 0; j < width; ++j) out[j] = argmax[j] == k ? T{1} : T{0};
    }
    return;
  }
  sum.assign(width, 0.0);
  for (int64_t k = 0; k < n; ++k) {
    const T* row = x + k * inner;
    T* out = y + k * inner;
    for (int64_t j = 0; j < width; ++j) {
      const T e = std::exp(row[j] - max[j]);
      if constexpr (kMode == Mode::kSoftmax) out[j] = e;
      sum[j] += static_cast<double>(e);
    }
  }
  for (int64_t k = 0; k < n; ++k) {
    const T* row = x + k * inner;
    T* out = y + k * inner;
    for (int64_t j = 0; j < width; ++j) {
      if constexpr (kMode == Mode::kSoftmax) {
        out[j] = static_cast<T>(out[j] / sum[j]);
      } else {
        out[j] = static_cast<T>(static_cast<double>(row[j] - max[j]) - std::log(sum[j]));
      }
    }
  }
}

// One contiguous line of n elements (inner == 1, the common case): the same arithmetic as
// NormalizeBlock without the per-column bookkeeping.
template <Mode kMode, typename T>
void NormalizeLine(const T* x, T* y, int64_t n) {
  T max = x[0];
  double sum = 0;
  bool summed = false;
  if constexpr (std::is_same_v<T, float> && kMode != Mode::kHardmax) {
    // Vectorized max and exp (vector_math.h); a line with a NaN takes the loops below.
    max = MaxFloats(x, n);
    if (max == max) {
      sum = ExpShiftedSum(x, max, y, n);
      summed = true;
    }
  }
  if (!summed) {
    max = x[0];
    int64_t argmax = 0;
    for (int64_t k = 1; k < n; ++k) {
      if (x[k] > max || (x[k] != x[k] && max == max)) {
        max = x[k];
        argmax = k;
      }
    }
    if constexpr (kMode == Mode::kHardmax) {
      for (int64_t k = 0; k < n; ++k) y[k] = k == argmax ? T{1} : T{0};
      return;
    }
    for (int64_t k = 0; k < n; ++k) {
      const T e = std::exp(x[k] - max);
      if constexpr (kMode == Mode::kSoftmax) y[k] = e;
      sum += static_cast<double>(e);
    }
  }
  if constexpr (kMode == Mode::kSoftmax) {
    const double inverse = 1.0 / sum;
    if constexpr (std::is_same_v<T, float>) {
      ScaleInDouble(y, n, inverse);
    } else {
      for (int64_t k = 0; k < n; ++k) y[k] = static_cast<T>(y[k] * inverse);
    }
  } else {
    const double log_sum = std::log(sum);
    for (int64_t k = 0; k < n; ++k)
      y[k] = static_cast<T>(static_cast<double>(x[k] - max) - log_sum);
  }
}

template <Mode kMode, typename T>
void RunTyped(const Lines& lines, const T* x, T* y, ThreadPool* pool) {
  if (lines.inner == 1) {
    ParallelFor(pool, lines.outer, std::max<int64_t>(1, 16384 / lines.n),
                [&](int64_t begin, int64_t end) {
                  for (int64_t o = begin; o < end; ++o) {
                    NormalizeLine<kMode>(x + o * lines.n, y + o * lines.n, lines.n);
                  }
                });
    return;
  }
  const int64_t blocks = (lines.inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t work = std::max<int64_t>(1, lines.n * std::min(lines.inner, kColumnBlock));
  ParallelFor(pool, lines.outer * blocks, std::max<int64_t>(1, 16384 / work),
              [&](int64_t begin, int64_t end) {
                std::vector<T> max;
                std::vector<double> sum;
                std::vector<int64_t> argmax;
                for (int64_t task = begin; task < end; ++task) {
                  const int64_t o = task / blocks;
                  const int64_t column = (task % blocks) * kColumnBlock;
                  const int64_t offset = o * lines.n * lines.inner + column;
                  NormalizeBlock<kMode>(x + offset, y + offset, lines.n, lines.inner,
                                        std::min(kColumnBlock, lines.inner - column), max, sum,
                                        argmax);
                }
              });
}

template <Mode kMode>
absl::Status SoftmaxKernel(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input");
  const Tensor& input = ctx.input(0);
  OVFIX_ASSIGN_OR_RETURN(Lines lines, SplitAtAxis(ctx, input));
  Tensor& output = ctx.OutputToOverwrite(0, input.type(), input.dims());
  if (input.numel() == 0) return absl::OkStatus();
  switch (input.type()) {
    case DataType::kFloat:
      RunTyped<kMode>(lines, input.data<float>(), output.data<float>(), ctx.pool);
      return absl::OkStatus();
    case DataType::kDouble:
      RunTyped<kMode>(lines, input.data<double>(), output.data<double>(), ctx.pool);
      return absl::OkStatus();
    default:
      return ctx.Error("unsupported element type ", std::string(DataTypeName(input.type())));
  }
}

}  // namespace

void AddSoftmaxKernels(std::vector<KernelDef>& table) {
  // Opset 13 changed the meaning of axis (one axis instead of a 2-D coercion); the kernel
  // reads ctx.opset, so each op has one function and two entries.
  AddOpsSplitAtOpset(table, 1, 13,
                     {{"Softmax", &SoftmaxKernel<Mode::kSoftmax>},
                      {"LogSoftmax", &SoftmaxKernel<Mode::kLogSoftmax>},
                      {"Hardmax", &SoftmaxKernel<Mode::kHardmax>}});
}

}  // namespace ovfix::exec
