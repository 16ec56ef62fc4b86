// Kernels of a channels-last chain (converter/session_nhwc.h): the session keeps the
// activations between convolutions channels-last (NHWC: pixel after pixel, the channels of a
// pixel contiguous) and converts them only at the chain's ends.
//
// ovfix.fused.NhwcConv: Conv's attributes, X [N, H, W, C] and Y [N, H', W', M] channels-last,
// W [M, C / group, kH, kW] and B as Conv has them, and an optional fourth input R of Y's shape
// added once the bias is (a residual connection's Add, as onnxruntime's FusedConv sums it), for the
// convolutions the Conv kernel computes per pixel (exec/cpu/conv_nhwc.h), with the same sums: a 1x1
// kernel is the product of the pixels (rows of C floats, read in place; a stride picks every
// stride-th first) by W^T, packed once, the bias added once the product is complete, as the Conv
// kernel's pointwise products add it; a kernel the Conv kernel computes channels-last goes through
// ChannelsLastConv reading and writing channels-last (no copy of the image into that layout, no
// transposition of the product back), a 3x3 one the Conv kernel computes by Winograd's F(2x2,
// 3x3) through WinogradConv the same way; depthwise kernels (group == C == M) through
// DepthwiseConv2DNhwc.
//
// ovfix.fused.NhwcGlobalAveragePool: X [N, H, W, C] channels-last to Y [N, C, 1, 1] (the same
// floats as [N, 1, 1, C]), each channel summed as GlobalAveragePool sums a plane.
#include "exec/cpu/conv_nhwc.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "exec/cpu/conv_channels_last.h"
#include "exec/cpu/conv_depthwise.h"
#include "exec/cpu/conv_depthwise_nhwc.h"
#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/conv_winograd.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/math_kernels.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// W packed for the path a geometry takes, kept across runs when W is constant.
struct NhwcWeights {
  const void* source = nullptr;  // W's value (or data when not constant)
  std::string kernel;            // GEMM micro-kernel the packing was made for
  std::optional<PackedB> product;
  std::optional<ChannelsLastWeights> channels_last;
  std::optional<WinogradWeights> winograd;
  std::optional<DepthwiseNhwcWeights> depthwise;
};

// The pixels a strided 1x1 kernel reads, out_h * out_w rows of `channels` floats.
void SubsamplePixels(const float* x, int64_t channels, const Spatial3& s, float* dst,
                     ThreadPool* pool) {
  const int64_t out_w = s.out[2], in_w = s.in[2];
  ParallelFor(s.out_size() * channels >= (int64_t{1} << 16) ? pool : nullptr, s.out[1], 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t oh = begin; oh < end; ++oh) {
                  const float* row = x + oh * s.stride[1] * in_w * channels;
                  for (int64_t ow = 0; ow < out_w; ++ow) {
                    std::memcpy(dst + (oh * out_w + ow) * channels,
                                row + ow * s.stride[2] * channels, channels * sizeof(float));
                  }
                }
              });
}

absl::Status NhwcConv(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(CheckFloatConvOperands(ctx));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.type() != DataType::kFloat || x.rank() != 4 || w.rank() != 4) {
    return ctx.Error("takes float X [N, H, W, C] and W [M, C/group, kH, kW], has ",
                     DescribeTensor(x), " and ", DescribeTensor(w));
  }
  if (ctx.input_affine != nullptr) return ctx.Error("reads no BatchNormalization");
  const int64_t batch = x.dim(0), channels = x.dim(3), maps = w.dim(0);
  const int64_t group = ctx.node.GetInt("group", 1);
  const bool depthwise = group > 1 && group == channels && maps == channels && w.dim(1) == 1;
  if (group != 1 && !depthwise) {
    return ctx.Error("group ", group, " is neither 1 nor depthwise over ", channels, " channels");
  }
  if (w.dim(1) * group != channels) {
    return ctx.Error("W has ", w.dim(1), " input channels per group, X gives ", channels / group);
  }
  const float* bias = nullptr;
  if (ctx.has_input(2)) {
    const Tensor& b = ctx.input(2);
    if (b.type() != DataType::kFloat || b.rank() != 1 || b.dim(0) != maps) {
      return ctx.Error("bias must be a vector of ", maps, " elements, is ", DescribeTensor(b));
    }
    bias = b.data<float>();
  }
  OVFIX_ASSIGN_OR_RETURN(
      std::vector<int64_t> kernel,
      KernelShape(ctx, std::vector<int64_t>(w.dims().begin() + 2, w.dims().end())));
  OVFIX_ASSIGN_OR_RETURN(SpatialGeometry g,
                         ReadSpatialAttributes(ctx, {x.dim(1), x.dim(2)}, std::move(kernel)));
  OVFIX_RETURN_IF_ERROR(ComputeConvOutput(ctx, g));
  const std::vector<int64_t> dims = {batch, g.output[0], g.output[1], maps};
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  const float* residual = nullptr;
  if (ctx.has_input(3)) {
    const Tensor& r = ctx.input(3);
    if (r.type() != DataType::kFloat || r.dims() != dims) {
      return ctx.Error("the residual must be float [", absl::StrJoin(dims, ","), "], is ",
                       DescribeTensor(r));
    }
    if (depthwise) return ctx.Error("adds no residual to a depthwise convolution");
    residual = r.data<float>();
  }
  Tensor& y = ctx.OutputToOverwrite(0, DataType::kFloat, dims);
  const Spatial3 s(g);
  // Offered the residual's buffer (the session's, where nothing reads the residual after this
  // node), the output takes it where each element's residual is read just before the element
  // is written: the 1x1 product in one depth block whose micro-kernel adds the residual in its
  // tile. Elsewhere (Winograd and the channels-last convolution write their product before
  // adding the residual, a deeper product its partial sums) it takes a buffer of its own.
  if (residual != nullptr && y.raw() == residual &&
      !(UnpaddedPointwise(s) && GemmResidualMayBeC(channels))) {
    y = Tensor(DataType::kFloat, dims,
               ctx.recycler != nullptr ? ctx.recycler->Take(y.nbytes(), /*zero=*/false)
                                       : Buffer::Allocate(y.nbytes(), /*zero=*/false));
  }
  if (y.numel() == 0) return absl::OkStatus();
  const int64_t in_pixels = s.in_size(), positions = s.out_size();
  const float* x_data = x.data<float>();
  float* y_data = y.data<float>();

  const ConvPath path = ChooseConvPath(s, 2, group, channels, maps, ctx.input_is_constant(1));
  const bool pointwise = UnpaddedPointwise(s);
  const bool channels_last = path == ConvPath::kChannelsLast;
  const bool winograd = path == ConvPath::kWinograd;
  if (!depthwise && !pointwise && !channels_last && !winograd) {
    return ctx.Error("takes 1x1, depthwise, Winograd and channels-last convolutions: a ",
                     s.kernel[1], "x", s.kernel[2], " kernel to ", s.out[1], "x", s.out[2],
                     " outputs does not take the channels-last path with this CPU kernel");
  }
  // W packed for the path, kept while W (and B) stay the same constants.
  NhwcWeights local;
  NhwcWeights* packed = &local;
  const void* source = w.data<float>();
  if (ctx.state != nullptr && ctx.input_is_constant(1) &&
      (!ctx.has_input(2) || ctx.input_is_constant(2))) {
    if (*ctx.state == nullptr) *ctx.state = std::make_shared<NhwcWeights>();
    packed = static_cast<NhwcWeights*>(ctx.state->get());
    source = ctx.node.input(1);
  }
  const std::string gemm = CurrentGemmGeometry().name;
  if (packed->source != source || packed->kernel != gemm) {
    packed->product.reset();
    packed->channels_last.reset();
    packed->winograd.reset();
    packed->depthwise.reset();
    if (depthwise) {
      packed->depthwise.emplace(w.data<float>(), bias, channels, s.kernel[1], s.kernel[2]);
    } else if (winograd) {
      packed->winograd.emplace(w.data<float>(), maps, channels);
    } else if (channels_last) {
      packed->channels_last.emplace(w.data<float>(), maps, channels, s);
    } else {
      // W (maps x channels) is W^T as a transposed B.
      packed->product.emplace(w.data<float>(), channels, /*trans=*/true, channels, maps);
    }
    packed->source = source;
    packed->kernel = gemm;
  }

  if (depthwise) {
    DepthwiseShape d;
    d.batch = batch;
    d.channels = channels;
    d.in_h = s.in[1], d.in_w = s.in[2], d.out_h = s.out[1], d.out_w = s.out[2];
    d.kernel_h = s.kernel[1], d.kernel_w = s.kernel[2];
    d.stride_h = s.stride[1], d.stride_w = s.stride[2];
    d.dilation_h = s.dilation[1], d.dilation_w = s.dilation[2];
    d.pad_top = s.pad[1], d.pad_left = s.pad[2];
    DepthwiseConv2DNhwc(x_data, *packed->depthwise, y_data, d, ctx.pool, ctx.fused);
    return absl::OkStatus();
  }

  GemmEpilogue epilogue{ctx.fused};
  for (int64_t n = 0; n < batch; ++n) {
    const float* image = x_data + n * in_pixels * channels;
    float* out = y_data + n * positions * maps;
    if (residual != nullptr) epilogue.residual = residual + n * positions * maps;
    if (winograd) {
      epilogue.row_bias = bias;
      WinogradConv(*packed->winograd, image, s, epilogue, out, ctx.pool,
                   {/*input_channels_last=*/true, /*output_channels_last=*/true});
      continue;
    }
    if (channels_last) {
      epilogue.row_bias = bias;
      ChannelsLastConv(*packed->channels_last, image, channels, s, epilogue, out, ctx.pool,
                       {/*input_channels_last=*/true, /*output_channels_last=*/true});
      continue;
    }
    epilogue.column_bias = bias;
    const float* rows = image;
    thread_local std::vector<float> gathered;
    if (positions != in_pixels) {
      gathered.resize(positions * channels);
      SubsamplePixels(image, channels, s, gathered.data(), ctx.pool);
      rows = gathered.data();
    }
    GemmRowsInPlace(rows, channels, positions, channels, *packed->product, maps, out, maps,
                    epilogue, ctx.pool);
  }
  return absl::OkStatus();
}

// Lane j of each channel's sum as GlobalAveragePool's PlaneSum makes a plane's: the pixels j,
// j + 16, ... below the last multiple of 16, in float, in order (`stride` floats a pixel).
__attribute__((target_clones("avx512f", "avx2", "default"))) void ChannelLane(
    const float* x, int64_t full, int64_t stride, int64_t channels, int64_t j, float* lane) {
  std::fill(lane, lane + channels, 0.0f);
  for (int64_t i = j; i < full; i += 16) {
    const float* pixel = x + i * stride;
    for (int64_t c = 0; c < channels; ++c) lane[c] += pixel[c];
  }
}

absl::Status NhwcGlobalAveragePool(KernelContext& ctx) {
  if (ctx.num_inputs() < 1 || !ctx.has_input(0)) return ctx.Error("needs input X");
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kFloat || x.rank() != 4) {
    return ctx.Error("takes float X [N, H, W, C], has ", DescribeTensor(x));
  }
  const int64_t batch = x.dim(0), pixels = x.dim(1) * x.dim(2), channels = x.dim(3);
  Tensor& y = ctx.OutputToOverwrite(0, DataType::kFloat, {batch, channels, 1, 1});
  if (y.numel() == 0) return absl::OkStatus();
  if (pixels == 0) return ctx.Error("cannot pool over empty spatial dims");
  // Each channel's sum as PlaneSum makes it, so that the means are those of the planes bit for
  // bit: 16 float lanes by position (the pixels past the last multiple of 16 aside), added up
  // in double, then those pixels in double. The lanes are independent: one an item.
  const int64_t full = pixels / 16 * 16;
  const float* data = x.data<float>();
  thread_local std::vector<float> scratch;  // the calling thread's; the workers write into it
  scratch.resize(batch * 16 * channels);
  float* const lanes = scratch.data();
  ParallelFor(x.numel() >= (int64_t{1} << 16) ? ctx.pool : nullptr, batch * 16, 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t item = begin; item < end; ++item) {
                  const int64_t n = item / 16, j = item % 16;
                  ChannelLane(data + n * pixels * channels, full, channels, channels, j,
                              lanes + item * channels);
                }
              });
  float* out = y.data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    const float* image = data + n * pixels * channels;
    const float* lane = lanes + n * 16 * channels;
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int j = 0; j < 16; ++j) sum += lane[j * channels + c];
      for (int64_t i = full; i < pixels; ++i) sum += image[i * channels + c];
      out[n * channels + c] = static_cast<float>(sum / pixels);
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddNhwcKernels(std::vector<KernelDef>& table) {
  // Input 3, the residual: a 1x1 product in one depth block adds it in the micro-kernel's tile.
  table.push_back({"ovfix.fused", "NhwcConv", 1, 1, &NhwcConv, Float16Mode::kAsFloat,
                   /*overwritable_input=*/3});
  table.push_back({"ovfix.fused", "NhwcGlobalAveragePool", 1, 1, &NhwcGlobalAveragePool});
}

}  // namespace ovfix::exec
