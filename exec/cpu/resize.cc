// Resize (opset 10-18) and Upsample (opset 7-9).
//
// Every mode is separable: an output coordinate along one axis reads a few input positions
// along that axis with fixed weights. So each axis gets a plan (input index and weight per
// tap, per output position), nearest mode gathers once through all plans, and linear/cubic
// interpolate one axis at a time in double precision, as onnx's reference does.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/misc_kernels.h"
#include "exec/cpu/resize_bilinear.h"
#include "exec/cpu/resize_plan.h"
#include "exec/kernel.h"
#include "ir/data_type.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

// Nearest: every output element copies one input element (any element type, by bytes).
template <typename Word>
void GatherNearest(const std::vector<AxisPlan>& plans, const Word* in, Word* out,
                   ThreadPool* pool) {
  const size_t rank = plans.size();
  std::vector<int64_t> in_dims(rank), out_dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    in_dims[i] = plans[i].in_size;
    out_dims[i] = plans[i].out_size;
  }
  const std::vector<int64_t> in_strides = Strides(in_dims);
  const int64_t width = out_dims[rank - 1];
  const int64_t rows = Tensor::NumElements(out_dims) / width;
  const AxisPlan& last = plans[rank - 1];
  ParallelFor(pool, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t rest = row;
      int64_t offset = 0;
      for (int d = static_cast<int>(rank) - 2; d >= 0; --d) {
        const int64_t j = rest % out_dims[d];
        rest /= out_dims[d];
        offset += plans[d].index[j] * in_strides[d];
      }
      Word* dst = out + row * width;
      for (int64_t j = 0; j < width; ++j) dst[j] = in[offset + last.index[j]];
    }
  });
}

// Interpolates along one axis: [outer, in, inner] -> [outer, out, inner].
void InterpolateAxis(const AxisPlan& plan, int64_t outer, int64_t inner, const double* in,
                     double* out, ThreadPool* pool) {
  const int64_t out_size = plan.out_size;
  ParallelFor(pool, outer * out_size, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const int64_t o = r / out_size, j = r % out_size;
                  double* dst = out + r * inner;
                  std::fill(dst, dst + inner, 0.0);
                  for (int k = 0; k < plan.taps; ++k) {
                    const double w = plan.weight[j * plan.taps + k];
                    if (w == 0) continue;
                    const double* src =
                        in + (o * plan.in_size + plan.index[j * plan.taps + k]) * inner;
                    for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
                  }
                }
              });
}

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v >= 0.5;
  } else {
    if (std::isnan(v)) return T{0};
    const double r = std::nearbyint(v);
    return static_cast<T>(std::clamp<double>(r, static_cast<double>(std::numeric_limits<T>::min()),
                                             static_cast<double>(std::numeric_limits<T>::max())));
  }
}

template <typename T>
void Load(const Tensor& t, std::vector<double>& v) {
  const T* src = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(src[i]);
}

template <typename T>
void Store(const std::vector<double>& v, Tensor& t) {
  T* dst = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) dst[i] = FromDouble<T>(v[i]);
}

std::vector<double> Interpolate(const std::vector<AxisPlan>& plans, std::vector<double> current,
                                ThreadPool* pool) {
  const size_t rank = plans.size();
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) dims[i] = plans[i].in_size;
  std::vector<double> next;
  // Innermost axis first, as the reference's recursion does.
  for (int axis = static_cast<int>(rank) - 1; axis >= 0; --axis) {
    const AxisPlan& plan = plans[axis];
    if (plan.identity) continue;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= dims[d];
    for (size_t d = axis + 1; d < rank; ++d) inner *= dims[d];
    next.assign(outer * plan.out_size * inner, 0.0);
    InterpolateAxis(plan, outer, inner, current.data(), next.data(), pool);
    current.swap(next);
    dims[axis] = plan.out_size;
  }
  return current;
}

// tf_crop_and_resize: an output element any of whose coordinates falls outside the input
// takes the extrapolation value.
void Extrapolate(const std::vector<AxisPlan>& plans, double value, std::vector<double>& out) {
  const size_t rank = plans.size();
  std::vector<int64_t> counter(rank, 0);
  for (size_t i = 0; i < out.size(); ++i) {
    bool outside = false;
    for (size_t d = 0; d < rank && !outside; ++d) outside = plans[d].outside[counter[d]] != 0;
    if (outside) out[i] = value;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      if (++counter[d] < plans[d].out_size) break;
      counter[d] = 0;
    }
  }
}

// Float linear resizes that onnxruntime computes in float take its arithmetic (see
// BilinearFloatPlan); false when the node is not of that kind.
bool TryBilinearFloat(const ResizeAttributes& a, const ResizeGeometry& g, const Tensor& x,
                      Tensor& y, ThreadPool* pool) {
  if (x.type() != DataType::kFloat) return false;
  const std::optional<BilinearPlan> plan = BilinearFloatPlan(a, g, x.dims());
  if (!plan) return false;
  ResizeBilinearFloat(x.data<float>(), y.data<float>(), plan->shape, plan->coordinates, pool);
  return true;
}

absl::Status RunResize(KernelContext& ctx, ResizeForm form) {
  if (!ctx.has_input(0)) return ctx.Error("missing input X");
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) return ctx.Error("input must have rank >= 1");
  if (x.type() == DataType::kString) return ctx.Error("string tensors are not supported");
  OVFIX_ASSIGN_OR_RETURN(ResizeAttributes attributes,
                         ParseResizeAttributes(ctx, form != ResizeForm::kResize));
  ResizeInputs inputs;
  if (form == ResizeForm::kScalesInput) {
    inputs.scales = ctx.has_input(1) ? &ctx.input(1) : nullptr;
  } else if (form == ResizeForm::kResize) {
    inputs.roi = ctx.has_input(1) ? &ctx.input(1) : nullptr;
    inputs.scales = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    inputs.sizes = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  }
  OVFIX_ASSIGN_OR_RETURN(ResizeGeometry geometry,
                         ComputeResizeGeometry(ctx, form, x.dims(), inputs));
  const ResizeAttributes& a = attributes;
  const ResizeGeometry& g = geometry;
  const size_t rank = x.rank();

  double total = 1;
  for (int64_t d : g.out_dims) total *= static_cast<double>(d);
  if (total * ElementSize(x.type()) > 1e12) return ctx.Error("output too large");
  for (size_t i = 0; i < rank; ++i) {
    if (x.dim(i) == 0 && g.out_dims[i] > 0) {
      return ctx.Error("cannot resize an empty axis ", i, " to size ", g.out_dims[i]);
    }
  }
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), g.out_dims);
  if (y.numel() == 0) return absl::OkStatus();

  std::vector<AxisPlan> plans;
  plans.reserve(rank);
  bool identity = true, any_outside = false;
  for (size_t i = 0; i < rank; ++i) {
    plans.push_back(MakeAxisPlan(a, x.dim(i), g.out_dims[i], g.scales[i], g.out_widths[i], g.roi[i],
                                 g.roi[rank + i]));
    identity &= plans.back().identity;
    any_outside |= plans.back().any_outside;
  }
  if (identity) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    return absl::OkStatus();
  }
  if (a.mode == ResizeMode::kNearest && !any_outside) {
    switch (ElementSize(x.type())) {
      case 1:
        GatherNearest(plans, x.data<uint8_t>(), y.data<uint8_t>(), ctx.pool);
        break;
      case 2:
        GatherNearest(plans, x.data<uint16_t>(), y.data<uint16_t>(), ctx.pool);
        break;
      case 4:
        GatherNearest(plans, x.data<uint32_t>(), y.data<uint32_t>(), ctx.pool);
        break;
      case 8:
        GatherNearest(plans, x.data<uint64_t>(), y.data<uint64_t>(), ctx.pool);
        break;
      default:
        return ctx.Error("unsupported element type ", std::string(DataTypeName(x.type())));
    }
    return absl::OkStatus();
  }
  if (!any_outside && TryBilinearFloat(a, g, x, y, ctx.pool)) return absl::OkStatus();
  const bool supported = VisitType(x.type(), kNumericTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<double> values(x.numel());
    Load<T>(x, values);
    values = Interpolate(plans, std::move(values), ctx.pool);
    if (any_outside) Extrapolate(plans, a.extrapolation_value, values);
    Store<T>(values, y);
  });
  if (!supported) {
    return ctx.Error("interpolation of ", std::string(DataTypeName(x.type())), " is not supported");
  }
  return absl::OkStatus();
}

// Resize and Upsample, in the form their opset gives them.
absl::Status Resize(KernelContext& ctx) {
  return RunResize(ctx, ResizeFormOf(ctx.node.op_type(), ctx.opset));
}

}  // namespace

void AddResizeKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "Resize", 10, kLatestOpset, Resize, Float16Mode::kAsFloat});
  table.push_back({"", "Upsample", 7, 9, Resize, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
