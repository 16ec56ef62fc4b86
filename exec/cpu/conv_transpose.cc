// ConvTranspose (opsets 1 and 11): 1-D, 2-D and 3-D, groups, strides, dilations, pads,
// output_padding, output_shape and auto_pad. Each image and group is one product
// columns = W_g^T * X_g (a row per output channel and kernel tap, a column per input pixel)
// whose rows are then added into the output at the positions their taps reach (col2im).
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/conv_transpose_geometry.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/math_kernels.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

struct Transposed3 {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// Adds row `r` of the column matrix (output channel r / taps, tap r % taps) into `out` (that
// channel's output plane).
template <typename T>
void AddColumnRow(const T* column, int64_t r, const Transposed3& s, T* out) {
  const int64_t tap = r % s.kernel_size();
  const int64_t kw = tap % s.kernel[2], kh = (tap / s.kernel[2]) % s.kernel[1];
  const int64_t kd = tap / (s.kernel[2] * s.kernel[1]);
  for (int64_t id = 0; id < s.in[0]; ++id) {
    const int64_t od = id * s.stride[0] - s.pad[0] + kd * s.dilation[0];
    if (od < 0 || od >= s.out[0]) continue;
    for (int64_t ih = 0; ih < s.in[1]; ++ih) {
      const int64_t oh = ih * s.stride[1] - s.pad[1] + kh * s.dilation[1];
      if (oh < 0 || oh >= s.out[1]) continue;
      const T* src = column + (id * s.in[1] + ih) * s.in[2];
      T* dst = out + (od * s.out[1] + oh) * s.out[2];
      const int64_t ow0 = -s.pad[2] + kw * s.dilation[2], sw = s.stride[2];
      // Input columns iw with 0 <= ow0 + iw * sw < out width.
      const int64_t lo = ow0 >= 0 ? 0 : (-ow0 + sw - 1) / sw;
      const int64_t hi = std::min(s.in[2], ow0 >= s.out[2] ? 0 : (s.out[2] - ow0 + sw - 1) / sw);
      for (int64_t iw = lo; iw < hi; ++iw) dst[ow0 + iw * sw] += src[iw];
    }
  }
}

template <typename T>
void Product(int64_t m, int64_t n, int64_t k, const T* w, const T* x, T* columns,
             ThreadPool* pool) {
  // columns[m x n] = W_g^T [m x k] * X_g [k x n]; W_g is stored k x m.
  if constexpr (std::is_same_v<T, float>) {
    Sgemm(true, false, m, n, k, 1.0f, w, m, x, n, 0.0f, columns, n, pool);
  } else {
    Dgemm(true, false, m, n, k, 1.0, w, m, x, n, 0.0, columns, n, pool);
  }
}

template <typename T>
void RunTransposed(KernelContext& ctx, const Transposed3& s, int64_t group, Tensor& y) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const T* bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  const int64_t batch = x.dim(0), channels = x.dim(1), maps = y.dim(1);
  const int64_t group_channels = channels / group, group_maps = maps / group;
  const int64_t taps = s.kernel_size(), rows = group_maps * taps;
  const int64_t in_size = s.in_size(), out_size = s.out_size();
  std::vector<T> columns(rows * in_size);
  T* y_data = y.data<T>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t g = 0; g < group; ++g) {
      const T* image = x.data<T>() + (n * channels + g * group_channels) * in_size;
      const T* weights = w.data<T>() + g * group_channels * rows;
      T* out = y_data + (n * maps + g * group_maps) * out_size;
      Product<T>(rows, in_size, group_channels, weights, image, columns.data(), ctx.pool);
      const bool parallel = rows * in_size >= (int64_t{1} << 15);
      ParallelFor(parallel ? ctx.pool : nullptr, group_maps, 1, [&](int64_t begin, int64_t end) {
        for (int64_t map = begin; map < end; ++map) {
          T* plane = out + map * out_size;
          std::fill(plane, plane + out_size, bias != nullptr ? bias[g * group_maps + map] : T(0));
          for (int64_t tap = 0; tap < taps; ++tap) {
            const int64_t r = map * taps + tap;
            AddColumnRow(columns.data() + r * in_size, r, s, plane);
          }
        }
      });
    }
  }
}

absl::Status ConvTranspose(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(CheckFloatConvOperands(ctx));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) {
    return ctx.Error("X and W must have the same rank with 1 to 3 spatial dims, are ",
                     DescribeTensor(x), " and ", DescribeTensor(w));
  }
  const int64_t group = ctx.node.GetInt("group", 1);
  const int64_t channels = x.dim(1);
  if (group <= 0 || channels % group != 0 || w.dim(0) != channels) {
    return ctx.Error("W must have the ", channels, " input channels in dim 0 and group ", group,
                     " must divide them");
  }
  const int64_t maps = w.dim(1) * group;
  if (ctx.has_input(2)) {
    const Tensor& b = ctx.input(2);
    if (b.type() != x.type() || b.rank() != 1 || b.dim(0) != maps) {
      return ctx.Error("bias must be a vector of ", maps, " elements, is ", DescribeTensor(b));
    }
  }
  OVFIX_ASSIGN_OR_RETURN(SpatialGeometry g, ConvTransposeGeometry(ctx, x.dims(), w.dims()));
  const size_t rank = g.rank();
  std::vector<int64_t> dims = {x.dim(0), maps};
  dims.insert(dims.end(), g.output.begin(), g.output.end());
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  Tensor& y = ctx.Output(0, x.type(), dims);
  if (y.numel() == 0) return absl::OkStatus();
  Transposed3 s;
  const size_t shift = 3 - rank;
  for (size_t i = 0; i < rank; ++i) {
    s.in[i + shift] = g.input[i];
    s.out[i + shift] = g.output[i];
    s.kernel[i + shift] = g.kernel[i];
    s.stride[i + shift] = g.strides[i];
    s.dilation[i + shift] = g.dilations[i];
    s.pad[i + shift] = g.pads_begin[i];
  }
  if (x.type() == DataType::kDouble) {
    RunTransposed<double>(ctx, s, group, y);
  } else {
    RunTransposed<float>(ctx, s, group, y);
  }
  return absl::OkStatus();
}

}  // namespace

void AddConvTransposeKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "ConvTranspose", 1, kLatestOpset, &ConvTranspose, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
