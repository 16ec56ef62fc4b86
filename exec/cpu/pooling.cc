// Pooling: MaxPool (with the Indices output, storage_order, dilations, ceil_mode),
// AveragePool (count_include_pad, ceil_mode), LpPool, the global variants (1-D, 2-D and 3-D),
// and MaxUnpool. Windows are clipped to the input once per output position and axis, so the
// inner loops never test bounds.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/math_kernels.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

// The part of the window of output position o (along one axis) that lies in the input:
// taps j in [lo, hi) read input position first + j * dilation. `padded` counts the taps that
// lie in the input or its pads (AveragePool's count_include_pad divisor).
struct AxisWindow {
  int64_t first, lo, hi, padded;
};

std::vector<AxisWindow> AxisWindows(const SpatialGeometry& g, size_t axis) {
  std::vector<AxisWindow> windows(g.output[axis]);
  const int64_t in = g.input[axis], d = g.dilations[axis], k = g.kernel[axis];
  for (int64_t o = 0; o < g.output[axis]; ++o) {
    AxisWindow& w = windows[o];
    w.first = o * g.strides[axis] - g.pads_begin[axis];
    auto taps_below = [&](int64_t limit) {  // taps j < k with first + j * d < limit
      return limit <= w.first ? 0 : std::min(k, (limit - w.first + d - 1) / d);
    };
    w.lo = w.first >= 0 ? 0 : std::min(k, (-w.first + d - 1) / d);
    w.hi = std::max(w.lo, taps_below(in));
    w.padded = taps_below(in + g.pads_end[axis]);
  }
  return windows;
}

struct PoolOptions {
  PoolKind kind = PoolKind::kMax;
  bool count_include_pad = false;
  bool column_major_indices = false;
  double p = 2.0;
};

// Pools every plane of x ([planes, in...], up to 3 spatial axes as depth/height/width with
// leading 1s) into y; indices (may be null) get the flat input index of each maximum.
template <typename T>
void PoolPlanes(const T* x, T* y, int64_t* indices, int64_t planes, const SpatialGeometry& g,
                const PoolOptions& options, ThreadPool* pool) {
  SpatialGeometry g3 = g;
  while (g3.rank() < 3) {
    for (auto* v : {&g3.input, &g3.output, &g3.kernel, &g3.strides, &g3.dilations}) {
      v->insert(v->begin(), 1);
    }
    g3.pads_begin.insert(g3.pads_begin.begin(), 0);
    g3.pads_end.insert(g3.pads_end.begin(), 0);
  }
  const std::vector<AxisWindow> wd = AxisWindows(g3, 0), wh = AxisWindows(g3, 1),
                                ww = AxisWindows(g3, 2);
  const int64_t in_d = g3.input[0], in_h = g3.input[1], in_w = g3.input[2];
  const int64_t dd = g3.dilations[0], dh = g3.dilations[1], dw = g3.dilations[2];
  const int64_t in_size = in_d * in_h * in_w, out_size = g3.output_size();
  const int64_t work = planes * out_size * g3.kernel_size();
  ParallelFor(
      work >= (int64_t{1} << 16) ? pool : nullptr, planes, 1, [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const T* src = x + plane * in_size;
          T* dst = y + plane * out_size;
          int64_t* idx = indices != nullptr ? indices + plane * out_size : nullptr;
          int64_t o = 0;
          for (const AxisWindow& a : wd) {
            for (const AxisWindow& b : wh) {
              for (const AxisWindow& c : ww) {
                if (options.kind == PoolKind::kMax) {
                  T best = std::numeric_limits<T>::lowest();
                  int64_t best_at = -1;
                  for (int64_t i = a.lo; i < a.hi; ++i) {
                    const int64_t pd = a.first + i * dd;
                    for (int64_t j = b.lo; j < b.hi; ++j) {
                      const int64_t ph = b.first + j * dh;
                      const T* row = src + (pd * in_h + ph) * in_w + c.first;
                      for (int64_t l = c.lo; l < c.hi; ++l) {
                        const T v = row[l * dw];
                        if (v > best || best_at < 0) {
                          best = v;
                          best_at = options.column_major_indices
                                        ? pd + ph * in_d + (c.first + l * dw) * in_d * in_h
                                        : (pd * in_h + ph) * in_w + c.first + l * dw;
                        }
                      }
                    }
                  }
                  dst[o] = best;
                  if (idx != nullptr) idx[o] = best_at < 0 ? -1 : plane * in_size + best_at;
                } else {
                  double sum = 0;
                  for (int64_t i = a.lo; i < a.hi; ++i) {
                    for (int64_t j = b.lo; j < b.hi; ++j) {
                      const T* row =
                          src + ((a.first + i * dd) * in_h + b.first + j * dh) * in_w + c.first;
                      if (options.kind == PoolKind::kAverage) {
                        for (int64_t l = c.lo; l < c.hi; ++l) sum += row[l * dw];
                      } else if (options.p == 2.0) {
                        for (int64_t l = c.lo; l < c.hi; ++l)
                          sum += double(row[l * dw]) * row[l * dw];
                      } else {
                        for (int64_t l = c.lo; l < c.hi; ++l) {
                          sum += std::pow(std::fabs(double(row[l * dw])), options.p);
                        }
                      }
                    }
                  }
                  if (options.kind == PoolKind::kAverage) {
                    const int64_t count = options.count_include_pad
                                              ? a.padded * b.padded * c.padded
                                              : (a.hi - a.lo) * (b.hi - b.lo) * (c.hi - c.lo);
                    dst[o] = static_cast<T>(count > 0 ? sum / count : 0.0);
                  } else {
                    dst[o] = static_cast<T>(options.p == 2.0 ? std::sqrt(sum)
                                                             : std::pow(sum, 1.0 / options.p));
                  }
                }
                ++o;
              }
            }
          }
        }
      });
}

// Max pooling of 1-D and 2-D planes without indices, done separably: each output row first
// takes the maximum over its window's input rows (whole rows at a time, which vectorizes),
// then over the window's columns of that row maximum.
template <typename T>
inline void MaxPoolPlaneRows(const T* src, T* dst, const SpatialGeometry& g, T* row) {
  const bool two_d = g.rank() == 2;
  const int64_t in_h = two_d ? g.input[0] : 1, in_w = g.input.back();
  const int64_t out_h = two_d ? g.output[0] : 1, out_w = g.output.back();
  const int64_t kh = two_d ? g.kernel[0] : 1, sh = two_d ? g.strides[0] : 1;
  const int64_t dh = two_d ? g.dilations[0] : 1, pt = two_d ? g.pads_begin[0] : 0;
  const int64_t kw = g.kernel.back(), sw = g.strides.back(), dw = g.dilations.back();
  const int64_t pl = g.pads_begin.back();
  // row[] holds the row maximum at padded column positions; the padding stays lowest().
  const int64_t padded_w = std::max(in_w + pl, (out_w - 1) * sw + (kw - 1) * dw + 1);
  const T lowest = std::numeric_limits<T>::lowest();
  std::fill(row, row + padded_w, lowest);
  T* inner = row + pl;
  for (int64_t oh = 0; oh < out_h; ++oh) {
    bool any = false;
    for (int64_t i = 0; i < kh; ++i) {
      const int64_t ih = oh * sh - pt + i * dh;
      if (ih < 0 || ih >= in_h) continue;
      const T* in = src + ih * in_w;
      if (!any) {
        std::copy(in, in + in_w, inner);
        any = true;
      } else {
        for (int64_t x = 0; x < in_w; ++x) inner[x] = in[x] > inner[x] ? in[x] : inner[x];
      }
    }
    if (!any) std::fill(inner, inner + in_w, lowest);
    T* out = dst + oh * out_w;
    if (sw == 2) {  // a constant stride lets the compiler vectorize the column gathers
      for (int64_t ow = 0; ow < out_w; ++ow) out[ow] = row[2 * ow];
      for (int64_t j = 1; j < kw; ++j) {
        const T* r = row + j * dw;
        for (int64_t ow = 0; ow < out_w; ++ow) out[ow] = r[2 * ow] > out[ow] ? r[2 * ow] : out[ow];
      }
    } else {
      for (int64_t ow = 0; ow < out_w; ++ow) out[ow] = row[ow * sw];
      for (int64_t j = 1; j < kw; ++j) {
        const T* r = row + j * dw;
        for (int64_t ow = 0; ow < out_w; ++ow) {
          out[ow] = r[ow * sw] > out[ow] ? r[ow * sw] : out[ow];
        }
      }
    }
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
MaxPoolPlaneRowsFloat(const float* src, float* dst, const SpatialGeometry& g, float* row) {
  MaxPoolPlaneRows(src, dst, g, row);
}

template <typename T>
void MaxPoolRows(const T* x, T* y, int64_t planes, const SpatialGeometry& g, ThreadPool* pool) {
  const int64_t in_size = Tensor::NumElements(g.input), out_size = g.output_size();
  const int64_t row_size =
      g.input.back() + g.pads_begin.back() +
      (g.output.back() + g.kernel.back()) * g.strides.back() * g.dilations.back();
  const int64_t work = planes * out_size * g.kernel_size();
  ParallelFor(work >= (int64_t{1} << 16) ? pool : nullptr, planes, 1,
              [&](int64_t begin, int64_t end) {
                std::vector<T> row(row_size);
                for (int64_t plane = begin; plane < end; ++plane) {
                  if constexpr (std::is_same_v<T, float>) {
                    MaxPoolPlaneRowsFloat(x + plane * in_size, y + plane * out_size, g, row.data());
                  } else {
                    MaxPoolPlaneRows(x + plane * in_size, y + plane * out_size, g, row.data());
                  }
                }
              });
}

// Average pooling of 1-D and 2-D float planes, separable as the max above: each output row
// first sums its window's input rows into doubles (whole rows, which vectorizes), then each
// output sums its window's columns of that and divides by its count. A window's floats add
// exactly in double in any order (unless they lie over 2^29 apart in magnitude), so this gives
// what PoolPlanes' window loop gives, at a fraction of the time (DenseNet's transitions).
struct AveragePlan {
  std::vector<AxisWindow> rows;      // along the height (one window for 1-D planes)
  std::vector<double> column_count;  // per output column: its taps (count_include_pad: padded)
  int64_t in_w = 0, out_w = 0, kw = 0, sw = 0, dw = 0, dh = 0, pad_left = 0, padded_w = 0;
  bool count_include_pad = false;
};

AveragePlan PlanAverageRows(const SpatialGeometry& g, bool count_include_pad) {
  SpatialGeometry g2 = g;
  if (g2.rank() == 1) {
    for (auto* v : {&g2.input, &g2.output, &g2.kernel, &g2.strides, &g2.dilations}) {
      v->insert(v->begin(), 1);
    }
    g2.pads_begin.insert(g2.pads_begin.begin(), 0);
    g2.pads_end.insert(g2.pads_end.begin(), 0);
  }
  AveragePlan plan;
  plan.rows = AxisWindows(g2, 0);
  for (const AxisWindow& c : AxisWindows(g2, 1)) {
    plan.column_count.push_back(static_cast<double>(count_include_pad ? c.padded : c.hi - c.lo));
  }
  plan.in_w = g2.input[1];
  plan.out_w = g2.output[1];
  plan.kw = g2.kernel[1];
  plan.sw = g2.strides[1];
  plan.dw = g2.dilations[1];
  plan.dh = g2.dilations[0];
  plan.pad_left = g2.pads_begin[1];
  plan.padded_w = std::max(plan.in_w + plan.pad_left, (plan.out_w - 1) * plan.sw + g2.extent(1));
  plan.count_include_pad = count_include_pad;
  return plan;
}

// `row` holds padded_w doubles, `sums` out_w.
__attribute__((target_clones("avx512f", "avx2", "default"),
               optimize("vect-cost-model=dynamic"))) void
AveragePoolPlaneRowsFloat(const float* src, float* dst, const AveragePlan& plan, double* row,
                          double* sums) {
  const int64_t in_w = plan.in_w, out_w = plan.out_w, sw = plan.sw, dw = plan.dw;
  // Column sums at padded positions: the padding stays 0 and adds nothing.
  std::fill(row, row + plan.padded_w, 0.0);
  double* inner = row + plan.pad_left;
  for (const AxisWindow& b : plan.rows) {
    std::fill(inner, inner + in_w, 0.0);
    for (int64_t j = b.lo; j < b.hi; ++j) {
      const float* in = src + (b.first + j * plan.dh) * in_w;
      for (int64_t x = 0; x < in_w; ++x) inner[x] += in[x];
    }
    std::fill(sums, sums + out_w, 0.0);
    for (int64_t l = 0; l < plan.kw; ++l) {
      const double* r = row + l * dw;
      if (sw == 2) {  // a constant stride lets the compiler vectorize the column gathers
        for (int64_t ow = 0; ow < out_w; ++ow) sums[ow] += r[2 * ow];
      } else {
        for (int64_t ow = 0; ow < out_w; ++ow) sums[ow] += r[ow * sw];
      }
    }
    const double row_count = static_cast<double>(plan.count_include_pad ? b.padded : b.hi - b.lo);
    const double* column_count = plan.column_count.data();
    for (int64_t ow = 0; ow < out_w; ++ow) {
      // A window without taps sums to 0: divided by 1 it gives the 0 it must (no branch, so
      // the loop vectorizes).
      const double count = std::max(1.0, row_count * column_count[ow]);
      dst[ow] = static_cast<float>(sums[ow] / count);
    }
    dst += out_w;
  }
}

void AveragePoolRows(const float* x, float* y, int64_t planes, const SpatialGeometry& g,
                     bool count_include_pad, ThreadPool* pool) {
  const AveragePlan plan = PlanAverageRows(g, count_include_pad);
  const int64_t in_size = Tensor::NumElements(g.input), out_size = g.output_size();
  const int64_t work = planes * out_size * g.kernel_size();
  ParallelFor(work >= (int64_t{1} << 16) ? pool : nullptr, planes, 1,
              [&](int64_t begin, int64_t end) {
                std::vector<double> row(plan.padded_w), sums(plan.out_w);
                for (int64_t plane = begin; plane < end; ++plane) {
                  AveragePoolPlaneRowsFloat(x + plane * in_size, y + plane * out_size, plan,
                                            row.data(), sums.data());
                }
              });
}

template <typename T>
void PoolDispatch(const T* x, T* y, int64_t* indices, int64_t planes, const SpatialGeometry& g,
                  const PoolOptions& options, ThreadPool* pool) {
  if (options.kind == PoolKind::kMax && indices == nullptr && g.rank() <= 2) {
    MaxPoolRows(x, y, planes, g, pool);
  } else if (std::is_same_v<T, float> && options.kind == PoolKind::kAverage && g.rank() <= 2) {
    AveragePoolRows(reinterpret_cast<const float*>(x), reinterpret_cast<float*>(y), planes, g,
                    options.count_include_pad, pool);
  } else {
    PoolPlanes(x, y, indices, planes, g, options, pool);
  }
}

absl::Status Pool(KernelContext& ctx, PoolKind kind) {
  if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return ctx.Error("needs input X");
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3 || x.rank() > 5) {
    return ctx.Error("X must have 1 to 3 spatial dims, is ", DescribeTensor(x));
  }
  const DataType type = x.type();
  const bool integer = type == DataType::kInt8 || type == DataType::kUint8;
  if (type != DataType::kFloat && type != DataType::kDouble &&
      !(integer && kind == PoolKind::kMax)) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(type)));
  }
  if (!ctx.node.HasAttribute("kernel_shape")) return ctx.Error("kernel_shape is required");
  const std::vector<int64_t> kernel = ctx.node.GetInts("kernel_shape");
  if (kernel.size() != x.rank() - 2) {
    return ctx.Error("kernel_shape has ", kernel.size(), " dims for ", x.rank() - 2,
                     " spatial dims");
  }
  OVFIX_ASSIGN_OR_RETURN(
      auto geometry, ReadSpatialAttributes(
                         ctx, std::vector<int64_t>(x.dims().begin() + 2, x.dims().end()), kernel));
  const bool ceil_mode = ctx.node.GetInt("ceil_mode", 0) != 0;
  OVFIX_RETURN_IF_ERROR(ComputeConvOutput(ctx, geometry, ceil_mode));
  PoolOptions options;
  options.kind = kind;
  options.count_include_pad = ctx.node.GetInt("count_include_pad", 0) != 0;
  options.column_major_indices = ctx.node.GetInt("storage_order", 0) != 0;
  if (kind == PoolKind::kLp) {
    options.p = ctx.opset < 2 ? ctx.node.GetFloat("p", 2.0f) : ctx.node.GetInt("p", 2);
    if (options.p <= 0) return ctx.Error("p must be positive");
  }
  std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
  dims.insert(dims.end(), geometry.output.begin(), geometry.output.end());
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  Tensor& y = ctx.OutputToOverwrite(0, type, dims);
  int64_t* indices = nullptr;
  if (kind == PoolKind::kMax && ctx.outputs.size() > 1 && ctx.node.output(1) != nullptr) {
    indices = ctx.Output(1, DataType::kInt64, dims).data<int64_t>();
  }
  if (y.numel() == 0) return absl::OkStatus();
  const int64_t planes = x.dim(0) * x.dim(1);
  switch (type) {
    case DataType::kFloat:
      PoolDispatch(x.data<float>(), y.data<float>(), indices, planes, geometry, options, ctx.pool);
      break;
    case DataType::kDouble:
      PoolDispatch(x.data<double>(), y.data<double>(), indices, planes, geometry, options,
                   ctx.pool);
      break;
    case DataType::kInt8:
      PoolDispatch(x.data<int8_t>(), y.data<int8_t>(), indices, planes, geometry, options,
                   ctx.pool);
      break;
    default:
      PoolDispatch(x.data<uint8_t>(), y.data<uint8_t>(), indices, planes, geometry, options,
                   ctx.pool);
      break;
  }
  return absl::OkStatus();
}

absl::Status MaxPool(KernelContext& ctx) { return Pool(ctx, PoolKind::kMax); }
absl::Status AveragePool(KernelContext& ctx) { return Pool(ctx, PoolKind::kAverage); }
absl::Status LpPool(KernelContext& ctx) { return Pool(ctx, PoolKind::kLp); }

// Sum of a plane in 16 independent lanes (which the compiler vectorizes).
template <typename T>
double PlaneSum(const T* x, int64_t n) {
  T lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) lanes[j] += x[i + j];
  }
  double sum = 0;
  for (int j = 0; j < 16; ++j) sum += lanes[j];
  for (; i < n; ++i) sum += x[i];
  return sum;
}

template <typename T>
void GlobalPoolPlanes(const T* x, T* y, int64_t planes, int64_t size, const PoolOptions& o,
                      ThreadPool* pool) {
  ParallelFor(planes * size >= (int64_t{1} << 16) ? pool : nullptr, planes, 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t plane = begin; plane < end; ++plane) {
                  const T* src = x + plane * size;
                  if (o.kind == PoolKind::kAverage) {
                    y[plane] = static_cast<T>(PlaneSum(src, size) / size);
                  } else if (o.kind == PoolKind::kMax) {
                    T best = src[0];
                    for (int64_t i = 1; i < size; ++i) best = src[i] > best ? src[i] : best;
                    y[plane] = best;
                  } else {
                    double sum = 0;
                    for (int64_t i = 0; i < size; ++i) {
                      sum += std::pow(std::fabs(double(src[i])), o.p);
                    }
                    y[plane] = static_cast<T>(std::pow(sum, 1.0 / o.p));
                  }
                }
              });
}

absl::Status GlobalPool(KernelContext& ctx, PoolKind kind) {
  if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return ctx.Error("needs input X");
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) return ctx.Error("X must be [N, C, ...], is ", DescribeTensor(x));
  if (x.type() != DataType::kFloat && x.type() != DataType::kDouble) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(x.type())));
  }
  PoolOptions options;
  options.kind = kind;
  if (kind == PoolKind::kLp) {
    options.p = ctx.opset < 2 ? ctx.node.GetFloat("p", 2.0f) : ctx.node.GetInt("p", 2);
    if (options.p <= 0) return ctx.Error("p must be positive");
  }
  std::vector<int64_t> dims(x.rank(), 1);
  dims[0] = x.dim(0);
  dims[1] = x.dim(1);
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), dims);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  if (planes == 0) return absl::OkStatus();
  if (size == 0) return ctx.Error("cannot pool over empty spatial dims");
  if (x.type() == DataType::kFloat) {
    GlobalPoolPlanes(x.data<float>(), y.data<float>(), planes, size, options, ctx.pool);
  } else {
    GlobalPoolPlanes(x.data<double>(), y.data<double>(), planes, size, options, ctx.pool);
  }
  return absl::OkStatus();
}

absl::Status GlobalAveragePool(KernelContext& ctx) { return GlobalPool(ctx, PoolKind::kAverage); }
absl::Status GlobalMaxPool(KernelContext& ctx) { return GlobalPool(ctx, PoolKind::kMax); }
absl::Status GlobalLpPool(KernelContext& ctx) { return GlobalPool(ctx, PoolKind::kLp); }

// MaxUnpool: Y (zeros) gets each X element at the flat index I holds for it (as MaxPool's
// Indices output gives them), in the shape that undoes the pooling; a larger output_shape pads
// that with zeros at the end of each axis.
template <typename T>
absl::Status Unpool(KernelContext& ctx, const std::vector<int64_t>& inferred, Tensor& y) {
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t size = Tensor::NumElements(inferred);
  std::vector<T> unpooled(size, T(0));
  const T* src = x.data<T>();
  const int64_t* at = indices.data<int64_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (at[i] < 0 || at[i] >= size) {
      return ctx.Error("index ", at[i], " is outside the unpooled ", size, " elements");
    }
    unpooled[at[i]] = src[i];
  }
  // Copy into Y's (possibly larger) shape, element by element with an odometer.
  const std::vector<int64_t>& dims = y.dims();
  std::vector<int64_t> index(dims.size(), 0);
  T* dst = y.data<T>();
  for (int64_t i = 0; i < size; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < dims.size(); ++d) offset = offset * dims[d] + index[d];
    dst[offset] = unpooled[i];
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < inferred[d]) break;
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status MaxUnpool(KernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs X and I");
  }
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (x.type() != DataType::kFloat && x.type() != DataType::kDouble) {
    return ctx.Error("unsupported element type ", std::string(DataTypeName(x.type())));
  }
  if (indices.type() != DataType::kInt64 || indices.dims() != x.dims()) {
    return ctx.Error("I must be int64 with X's shape ", DescribeTensor(x), ", is ",
                     DescribeTensor(indices));
  }
  if (x.rank() < 3) return ctx.Error("X must have spatial dims, is ", DescribeTensor(x));
  if (!ctx.node.HasAttribute("kernel_shape")) return ctx.Error("kernel_shape is required");
  OVFIX_ASSIGN_OR_RETURN(
      auto geometry,
      ReadSpatialAttributes(ctx, std::vector<int64_t>(x.dims().begin() + 2, x.dims().end()),
                            ctx.node.GetInts("kernel_shape")));
  std::vector<int64_t> inferred = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < geometry.rank(); ++i) {
    inferred.push_back((geometry.input[i] - 1) * geometry.strides[i] + geometry.kernel[i] -
                       geometry.pads_begin[i] - geometry.pads_end[i]);
  }
  std::vector<int64_t> dims = inferred;
  if (ctx.has_input(2)) {
    const Tensor& shape = ctx.input(2);
    if (shape.numel() != static_cast<int64_t>(x.rank())) {
      return ctx.Error("output_shape must have ", x.rank(), " values, is ", DescribeTensor(shape));
    }
    for (size_t i = 0; i < x.rank(); ++i) dims[i] = shape.GetAsInt64(i);
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (inferred[i] < 0 || dims[i] < inferred[i] || (i < 2 && dims[i] != inferred[i])) {
      return ctx.Error("output_shape must hold the unpooled shape, differs on axis ", i);
    }
  }
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  Tensor& y = ctx.Output(0, x.type(), dims);
  return x.type() == DataType::kFloat ? Unpool<float>(ctx, inferred, y)
                                      : Unpool<double>(ctx, inferred, y);
}

}  // namespace

void AddPoolingKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "MaxPool", 1, kLatestOpset, &MaxPool, Float16Mode::kAsFloat});
  table.push_back({"", "AveragePool", 1, kLatestOpset, &AveragePool, Float16Mode::kAsFloat});
  table.push_back({"", "LpPool", 1, kLatestOpset, &LpPool, Float16Mode::kAsFloat});
  table.push_back(
      {"", "GlobalAveragePool", 1, kLatestOpset, &GlobalAveragePool, Float16Mode::kAsFloat});
  table.push_back({"", "GlobalMaxPool", 1, kLatestOpset, &GlobalMaxPool, Float16Mode::kAsFloat});
  table.push_back({"", "GlobalLpPool", 1, kLatestOpset, &GlobalLpPool, Float16Mode::kAsFloat});
  table.push_back({"", "MaxUnpool", 9, kLatestOpset, &MaxUnpool, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
