// DeformConv-19 (and 22, which only added bfloat16): a convolution whose kernel taps sample
// the input at learned fractional offsets, N-D. Output position o, kernel tap k and input
// channel c (of offset group g = c / (C / offset_group)) sample X[n, c] at
//   p[d] = o[d] * stride[d] - pad_begin[d] + k[d] * dilation[d] + offset[n, (g, k, d), o]
// by multilinear interpolation, corners outside the input counting as zero (the padding is
// zeros), times mask[n, (g, k), o] when a mask is given. The samples form the columns of an
// im2col matrix that each conv group's weights multiply, accumulated in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/cpu/dispatch.h"
#include "exec/cpu/modern_ops.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

struct DeformGeometry {
  int64_t batch = 0, channels = 0, out_channels = 0, group = 1, offset_group = 1;
  std::vector<int64_t> in, kernel, out, strides, dilations, pads;  // pads: begins then ends
  int64_t kernel_size = 1, out_size = 1, in_size = 1;
};

absl::StatusOr<DeformGeometry> ReadGeometry(const KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  DeformGeometry g;
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return ctx.Error("X ", DescribeTensor(x), " and W ", DescribeTensor(w),
                     " must have one rank of 3 or more");
  }
  const size_t r = x.rank() - 2;
  g.batch = x.dim(0), g.channels = x.dim(1), g.out_channels = w.dim(0);
  g.group = ctx.node.GetInt("group", 1);
  g.offset_group = ctx.node.GetInt("offset_group", 1);
  g.in.assign(x.dims().begin() + 2, x.dims().end());
  g.kernel.assign(w.dims().begin() + 2, w.dims().end());
  if (ctx.node.HasAttribute("kernel_shape") && ctx.node.GetInts("kernel_shape") != g.kernel) {
    return ctx.Error("kernel_shape does not match W ", DescribeTensor(w));
  }
  g.strides = ctx.node.GetInts("strides", std::vector<int64_t>(r, 1));
  g.dilations = ctx.node.GetInts("dilations", std::vector<int64_t>(r, 1));
  g.pads = ctx.node.GetInts("pads", std::vector<int64_t>(2 * r, 0));
  if (g.strides.size() != r || g.dilations.size() != r || g.pads.size() != 2 * r) {
    return ctx.Error("strides, dilations and pads must have one value per spatial axis");
  }
  if (g.group <= 0 || g.offset_group <= 0 || g.channels % g.group != 0 ||
      g.out_channels % g.group != 0 || g.channels % g.offset_group != 0 ||
      w.dim(1) != g.channels / g.group) {
    return ctx.Error("group (", g.group, ") and offset_group (", g.offset_group,
                     ") must divide the channels of X ", DescribeTensor(x), " and W ",
                     DescribeTensor(w));
  }
  for (size_t d = 0; d < r; ++d) {
    if (g.strides[d] <= 0 || g.dilations[d] <= 0 || g.pads[d] < 0 || g.pads[r + d] < 0) {
      return ctx.Error("strides and dilations must be positive, pads not negative");
    }
    const int64_t span = g.dilations[d] * (g.kernel[d] - 1) + 1;
    const int64_t extent = g.in[d] + g.pads[d] + g.pads[r + d] - span;
    if (extent < 0) return ctx.Error("the kernel is larger than the padded input");
    g.out.push_back(extent / g.strides[d] + 1);
    g.kernel_size *= g.kernel[d];
    g.out_size *= g.out.back();
    g.in_size *= g.in[d];
  }
  // offset [N, offset_group * K * r, out...]; mask [N, offset_group * K, out...].
  std::vector<int64_t> offset_dims = {g.batch, g.offset_group * g.kernel_size * int64_t(r)};
  offset_dims.insert(offset_dims.end(), g.out.begin(), g.out.end());
  if (ctx.input(2).dims() != offset_dims) {
    return ctx.Error("offset ", DescribeTensor(ctx.input(2)), " must have shape [", offset_dims[0],
                     ", ", offset_dims[1], ", output dims]");
  }
  if (ctx.has_input(4)) {
    offset_dims[1] = g.offset_group * g.kernel_size;
    if (ctx.input(4).dims() != offset_dims) {
      return ctx.Error("mask ", DescribeTensor(ctx.input(4)), " must have shape [", offset_dims[0],
                       ", ", offset_dims[1], ", output dims]");
    }
  }
  if (ctx.has_input(3) && ctx.input(3).numel() != g.out_channels) {
    return ctx.Error("B ", DescribeTensor(ctx.input(3)), " must hold ", g.out_channels, " values");
  }
  return g;
}

// `index` (row-major over `dims`) as one coordinate per axis.
void Unflatten(int64_t index, const std::vector<int64_t>& dims, int64_t* coords) {
  for (size_t d = dims.size(); d-- > 0;) {
    coords[d] = index % dims[d];
    index /= dims[d];
  }
}

// Multilinear interpolation of `x` (one channel, `dims`) at `position`; zero outside.
template <typename T>
double Sample(const T* x, const std::vector<int64_t>& dims, const double* position) {
  const size_t r = dims.size();
  int64_t base[8];
  double frac[8];
  for (size_t d = 0; d < r; ++d) {
    if (!(position[d] > -1.0 && position[d] < static_cast<double>(dims[d]))) return 0.0;
    const double f = std::floor(position[d]);
    base[d] = static_cast<int64_t>(f);
    frac[d] = position[d] - f;
  }
  double sum = 0;
  for (int corner = 0; corner < (1 << r); ++corner) {
    double weight = 1;
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d < r && inside; ++d) {
      const int bit = (corner >> d) & 1;
      const int64_t i = base[d] + bit;
      inside = i >= 0 && i < dims[d];
      weight *= bit ? frac[d] : 1.0 - frac[d];
      offset = offset * dims[d] + i;
    }
    if (inside && weight != 0) sum += weight * static_cast<double>(x[offset]);
  }
  return sum;
}

absl::Status DeformConvKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) {
    return ctx.Error("expects inputs X, W and offset");
  }
  OVFIX_ASSIGN_OR_RETURN(const DeformGeometry g, ReadGeometry(ctx));
  const int64_t r = static_cast<int64_t>(g.in.size());
  if (r > 8) return ctx.Error("more than 8 spatial axes");
  std::vector<int64_t> y_dims = {g.batch, g.out_channels};
  y_dims.insert(y_dims.end(), g.out.begin(), g.out.end());
  return Dispatch(ctx, ctx.input(0).type(), kFloatTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 1; i < 5; ++i) {
      if (ctx.has_input(i) && ctx.input(i).type() != ctx.input(0).type()) {
        return ctx.Error("input ", i, " ", DescribeTensor(ctx.input(i)), " is not of X's type");
      }
    }
    const T* x = ctx.input(0).data<T>();
    const T* w = ctx.input(1).data<T>();
    const T* offset = ctx.input(2).data<T>();
    const T* mask = ctx.has_input(4) ? ctx.input(4).data<T>() : nullptr;
    const T* bias = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
    T* y = ctx.OutputToOverwrite(0, ctx.input(0).type(), y_dims).template data<T>();
    const int64_t K = g.kernel_size, O = g.out_size;
    const int64_t per_offset_group = g.channels / g.offset_group;
    const int64_t in_per_group = g.channels / g.group, out_per_group = g.out_channels / g.group;
    std::vector<double> columns(g.channels * K * O);
    for (int64_t n = 0; n < g.batch; ++n) {
      // Row (c, k) of the columns: channel c sampled at tap k for every output position.
      ParallelFor(ctx.pool, g.channels * K, 1, [&](int64_t begin, int64_t end) {
        int64_t tap[8], at[8];
        double position[8];
        for (int64_t row = begin; row < end; ++row) {
          const int64_t c = row / K, k = row % K, og = c / per_offset_group;
          Unflatten(k, g.kernel, tap);
          const T* channel = x + (n * g.channels + c) * g.in_size;
          const T* shift = offset + ((n * g.offset_group + og) * K + k) * r * O;
          const T* scale =
              mask == nullptr ? nullptr : mask + ((n * g.offset_group + og) * K + k) * O;
          for (int64_t o = 0; o < O; ++o) {
            Unflatten(o, g.out, at);
            for (int64_t d = 0; d < r; ++d) {
              position[d] =
                  static_cast<double>(at[d] * g.strides[d] - g.pads[d] + tap[d] * g.dilations[d]) +
                  static_cast<double>(shift[d * O + o]);
            }
            double v = Sample(channel, g.in, position);
            if (scale != nullptr) v *= static_cast<double>(scale[o]);
            columns[row * O + o] = v;
          }
        }
      });
      // Y[n, oc] = B[oc] + W[oc] (its group's rows of the columns).
      ParallelFor(ctx.pool, g.out_channels, 1, [&](int64_t begin, int64_t end) {
        std::vector<double> acc(O);
        for (int64_t oc = begin; oc < end; ++oc) {
          std::fill(acc.begin(), acc.end(), bias == nullptr ? 0.0 : static_cast<double>(bias[oc]));
          const int64_t first_row = oc / out_per_group * in_per_group * K;
          const T* weights = w + oc * in_per_group * K;
          for (int64_t j = 0; j < in_per_group * K; ++j) {
            const double wj = static_cast<double>(weights[j]);
            const double* col = columns.data() + (first_row + j) * O;
            for (int64_t o = 0; o < O; ++o) acc[o] += wj * col[o];
          }
          T* out = y + (n * g.out_channels + oc) * O;
          for (int64_t o = 0; o < O; ++o) out[o] = static_cast<T>(acc[o]);
        }
      });
    }
    return absl::OkStatus();
  });
}

}  // namespace

void AddModernDeformConvKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "DeformConv", 19, kLatestOpset, &DeformConvKernel});
}

}  // namespace ovfix::exec
