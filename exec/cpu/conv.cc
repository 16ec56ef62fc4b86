// Conv (opsets 1 and 11): 1-D, 2-D and 3-D, groups, strides, dilations, pads and auto_pad.
// Float goes through the packed GEMM: the weights of each group are the A matrix (packed once
// and kept in the node's state when they are an initializer) and the input is B, either the
// image itself (1x1 kernels with unit stride and no padding), a padded copy of the image read
// in place (other 1-D and 2-D kernels with rows of 8 outputs or more, conv_implicit.h) or im2col
// blocks written straight into the packed layout. With few output positions the product is
// computed transposed, from a channels-last copy of the image (conv_channels_last.h) or im2col
// columns. 3x3 kernels with stride 1 over maps of 7x7 or more take Winograd's F(2x2, 3x3)
// (conv_winograd.h: 16 multiply-adds where the direct product does 36, the outputs the direct
// ones to 1e-6 of their range). Depthwise 2-D convolution has its own direct kernel; double
// uses a plain im2col and Dgemm.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "exec/cpu/conv_channels_last.h"
#include "exec/cpu/conv_depthwise.h"
#include "exec/cpu/conv_geometry.h"
#include "exec/cpu/conv_im2col.h"
#include "exec/cpu/conv_implicit.h"
#include "exec/cpu/conv_nhwc.h"
#include "exec/cpu/conv_winograd.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/math_kernels.h"
#include "exec/kernel.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

// Packed weights of every group, kept across runs when W is constant.
struct ConvWeights {
  // What was packed: W's initializer (the same values every run, even when the session hands
  // them over converted from float16 into a new buffer).
  const void* source = nullptr;
  std::string kernel;                      // micro-kernel the packing was made for
  ConvPath path = ConvPath::kOnePixel;     // the path it was packed for
  int64_t depth_block = 0;                 // what the packing was asked for (0: the GEMM's)
  std::vector<PackedA> groups;             // W as A: the direct products
  std::vector<PackedB> transposed_groups;  // W^T as B: the transposed products
  std::vector<ChannelsLastWeights> channels_last_groups;
  std::vector<WinogradWeights> winograd_groups;
};

const ConvWeights& GetPackedWeights(KernelContext& ctx, const float* w, int64_t group, int64_t rows,
                                    int64_t depth, ConvPath path, const Spatial3& s,
                                    int64_t depth_block, ConvWeights& local) {
  ConvWeights* cache = &local;
  const void* source = w;
  if (ctx.state != nullptr && ctx.input_is_constant(1)) {
    if (*ctx.state == nullptr) *ctx.state = std::make_shared<ConvWeights>();
    cache = static_cast<ConvWeights*>(ctx.state->get());
    source = ctx.node.input(1);
  }
  const std::string kernel = CurrentGemmGeometry().name;
  const size_t packed = cache->groups.size() + cache->transposed_groups.size() +
                        cache->channels_last_groups.size() + cache->winograd_groups.size();
  if (cache->source == source && cache->kernel == kernel && cache->path == path &&
      cache->depth_block == depth_block && static_cast<int64_t>(packed) == group) {
    return *cache;
  }
  cache->groups.clear();
  cache->transposed_groups.clear();
  cache->channels_last_groups.clear();
  cache->winograd_groups.clear();
  for (int64_t g = 0; g < group; ++g) {
    const float* weights = w + g * rows * depth;
    switch (path) {
      case ConvPath::kChannelsLast:
        cache->channels_last_groups.emplace_back(weights, rows, depth / s.kernel_size(), s);
        break;
      case ConvPath::kWinograd:
        cache->winograd_groups.emplace_back(weights, rows, depth / s.kernel_size());
        break;
      case ConvPath::kPointwiseTransposed:
      case ConvPath::kTransposedColumns:
        cache->transposed_groups.emplace_back(weights, depth, true, depth, rows);
        break;
      default:
        cache->groups.emplace_back(weights, depth, false, rows, depth, depth_block);
        break;
    }
  }
  cache->source = source;
  cache->kernel = kernel;
  cache->path = path;
  cache->depth_block = depth_block;
  return *cache;
}

// The channels-last path copies the whole image; up to this many output positions (56x56) it
// measured faster than the implicit GEMM (a chain of 128-channel 3x3 convolutions at 28x28:
// 5.86 -> 5.32 ms on two threads; ResNet's 64-channel 3x3 convolution at 56x56 with its 16
// output rows spanned by tiles, 1.50 -> 1.45 ms).
constexpr int64_t kMaxChannelsLastPositions = 3136;

// Whether to compute the transposed product Y^T = columns^T * W^T: with few output positions
// (late layers) the maps fill the register tiles better than the positions do. The product
// then comes back through a transposition (about one cycle an element), which only a deep
// product earns back: the multiply-adds of both are counted with the padding of their last
// tiles (in cycles: 32 a cycle), the transposition on top of the transposed one. The
// channels-last path (`channels_last`) cuts its tiles to the output rows (no padding) and
// transposes each thread's part while it is in cache (counted at a quarter).
bool UseTransposedProduct(int64_t out_size, int64_t maps, int64_t depth, bool channels_last) {
  if (out_size > (channels_last ? kMaxChannelsLastPositions : 256) || maps < 16) return false;
  const GemmGeometry& g = CurrentGemmGeometry();
  auto padded = [](int64_t n, int64_t tile) { return (n + tile - 1) / tile * tile; };
  const double direct = static_cast<double>(padded(maps, g.mr)) * padded(out_size, g.nr) * depth;
  const double transposed =
      channels_last
          ? static_cast<double>(out_size) * padded(maps, g.nr) * depth + 8.0 * out_size * maps
          : static_cast<double>(padded(out_size, g.mr)) * padded(maps, g.nr) * depth +
                32.0 * out_size * maps;
  return transposed < direct;
}

// The whole transposed product back, the maps split over the pool.
void TransposeAddBias(const float* src, int64_t rows, int64_t cols, const GemmEpilogue& epilogue,
                      float* dst, ThreadPool* pool) {
  constexpr int64_t kMaps = 16;  // per item
  ParallelForEach(rows * cols >= (int64_t{1} << 14) ? pool : nullptr, (cols + kMaps - 1) / kMaps,
                  [&](int64_t item) {
                    TransposeAddBiasMaps(src, cols, rows, item * kMaps,
                                         std::min(cols, (item + 1) * kMaps), epilogue, dst, rows);
                  });
}

// Y (maps x positions) of one image and group through the transposed product. `image` is the
// prepared image, or the plain one for a pointwise convolution.
void TransposedConv(const float* image, bool pointwise, const Spatial3& s,
                    const ColumnLayout& layout, const PackedB& weights,
                    const GemmEpilogue& epilogue, float* out, ThreadPool* pool) {
  const int64_t positions = s.out_size(), maps = weights.columns(), depth = weights.depth();
  // Buffers stay with the thread: big allocations would be fresh pages on every run.
  thread_local PackedA columns;
  if (pointwise) {
    columns.Pack(image, positions, true, positions, depth, pool);
  } else {
    const int mr = CurrentGemmGeometry().mr;
    if (SegmentedColumns::Applies(s, mr)) {
      columns.PackTransposed(SegmentedColumns(image, s, layout, mr), positions, depth, pool);
    } else {
      columns.PackTransposed(Im2colB(image, s, layout), positions, depth, pool);
    }
  }
  thread_local std::vector<float> product;
  product.resize(positions * maps);
  GemmPacked(columns, weights, maps, product.data(), maps, GemmEpilogue{}, pool);
  TransposeAddBias(product.data(), positions, maps, epilogue, out, pool);
}

// The pixels a strided, unpadded 1x1 kernel reads, `channels` planes of s.in_size() gathered
// into planes of s.out_size() in `buffer`; returns the buffer's data.
const float* SubsamplePlanes(const float* image, int64_t channels, const Spatial3& s,
                             std::vector<float>& buffer, ThreadPool* pool) {
  const int64_t in_size = s.in_size(), out_size = s.out_size();
  buffer.resize(channels * out_size);
  float* const dst = buffer.data();
  ParallelFor(channels * out_size >= (int64_t{1} << 16) ? pool : nullptr, channels, 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t ch = begin; ch < end; ++ch) {
                  const float* plane = image + ch * in_size;
                  float* o = dst + ch * out_size;
                  for (int64_t d = 0; d < s.out[0]; ++d) {
                    for (int64_t h = 0; h < s.out[1]; ++h) {
                      const float* row =
                          plane + ((d * s.stride[0]) * s.in[1] + h * s.stride[1]) * s.in[2];
                      for (int64_t w = 0; w < s.out[2]; ++w) *o++ = row[w * s.stride[2]];
                    }
                  }
                }
              });
  return dst;
}

// What both element types read of a convolution: X (N x C x spatial), W (M x C/group x
// kernel), the optional bias and the sizes of one group.
template <typename T>
struct ConvOperands {
  ConvOperands(const KernelContext& ctx, const SpatialGeometry& g, int64_t group)
      : x(ctx.input(0)),
        w(ctx.input(1)),
        bias(ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr),
        s(g),
        batch(x.dim(0)),
        channels(x.dim(1)),
        maps(w.dim(0)),
        group_channels(channels / group),
        group_maps(maps / group),
        depth(group_channels * s.kernel_size()),
        in_size(s.in_size()),
        out_size(s.out_size()) {}

  const Tensor& x;
  const Tensor& w;
  const T* bias;
  const Spatial3 s;
  const int64_t batch, channels, maps, group_channels, group_maps, depth, in_size, out_size;
};

// The `planes` channel planes (`plane` floats each, the first of channel c0 % C) of an input
// read through the map of each channel (KernelContext::input_affine), into `buffer`.
const float* MapChannels(const float* x, int64_t planes, int64_t plane, int64_t c0,
                         const ChannelAffine& affine, std::vector<float>& buffer,
                         ThreadPool* pool) {
  buffer.resize(planes * plane);
  float* const dst = buffer.data();
  const int64_t channels = static_cast<int64_t>(affine.scale.size());
  ParallelFor(planes * plane >= (int64_t{1} << 16) ? pool : nullptr, planes,
              std::max<int64_t>(1, 4096 / std::max<int64_t>(plane, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  const int64_t ch = (c0 + p) % channels;
                  ScaleShiftClampRange(x + p * plane, dst + p * plane, plane, affine.scale[ch],
                                       affine.shift[ch], affine.lo, affine.hi);
                }
              });
  return dst;
}

// B of a pointwise convolution (channels x positions) read through the map of each channel
// as its blocks are packed: row k is channel first_channel + k.
class MappedRowsB : public BSource {
 public:
  MappedRowsB(const float* b, int64_t ldb, const ChannelAffine& affine, int64_t first_channel)
      : b_(b), ldb_(ldb), affine_(affine), first_channel_(first_channel) {}
  const float* Pack(int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                    float* scratch) const override {
    thread_local std::vector<float> row;
    row.resize(nc);
    for (int64_t kk = 0; kk < kc; ++kk) {
      const int64_t ch = first_channel_ + k0 + kk;
      ScaleShiftClampRange(b_ + (k0 + kk) * ldb_ + n0, row.data(), nc, affine_.scale[ch],
                           affine_.shift[ch], affine_.lo, affine_.hi);
      PackRowIntoPanels(row.data(), nc, nr, kc * nr, scratch + kk * nr);
    }
    return scratch;
  }

 private:
  const float* b_;
  int64_t ldb_;
  const ChannelAffine& affine_;
  int64_t first_channel_;
};

absl::Status ConvFloat(KernelContext& ctx, const SpatialGeometry& g, int64_t group, Tensor& y) {
  const ConvOperands<float> c(ctx, g, group);
  if (c.batch == 0 || c.maps == 0 || c.out_size == 0) return absl::OkStatus();
  const ChannelAffine* affine = ctx.input_affine;
  if (affine != nullptr && static_cast<int64_t>(affine->scale.size()) != c.channels) {
    return ctx.Error("the BatchNormalization folded into it has ", affine->scale.size(),
                     " channels, its input ", c.channels);
  }
  // Where the map is not applied as the input is packed, the mapped input whole.
  thread_local std::vector<float> mapped;
  const float* x_data = c.x.data<float>();
  auto map_whole_input = [&] {
    if (affine == nullptr) return;
    x_data = MapChannels(x_data, c.batch * c.channels, c.in_size, 0, *affine, mapped, ctx.pool);
    affine = nullptr;
  };

  const ConvPath path =
      ChooseConvPath(c.s, g.rank(), group, c.channels, c.maps, ctx.input_is_constant(1));
  if (path == ConvPath::kDepthwise) {
    map_whole_input();
    DepthwiseShape d;
    d.batch = c.batch;
    d.channels = c.channels;
    d.multiplier = c.maps / group;
    d.in_h = c.s.in[1], d.in_w = c.s.in[2], d.out_h = c.s.out[1], d.out_w = c.s.out[2];
    d.kernel_h = c.s.kernel[1], d.kernel_w = c.s.kernel[2];
    d.stride_h = c.s.stride[1], d.stride_w = c.s.stride[2];
    d.dilation_h = c.s.dilation[1], d.dilation_w = c.s.dilation[2];
    d.pad_top = c.s.pad[1], d.pad_left = c.s.pad[2];
    DepthwiseConv2D(x_data, c.w.data<float>(), c.bias, y.data<float>(), d, ctx.pool, ctx.fused);
    return absl::OkStatus();
  }

  float* y_data = y.data<float>();
  const bool pointwise = UnpaddedPointwise(c.s);
  // A strided 1x1 kernel (ResNet's downsampling shortcuts) reads every stride-th pixel: those
  // are gathered into planes of the output's size, then it is a pointwise product.
  const bool subsampled = pointwise && c.in_size != c.out_size;

  if (path == ConvPath::kOnePixel) {
    // One output pixel per map (e.g. a 1x1 map in a squeeze-excitation block): a
    // matrix-vector product with the weights as they are, nothing worth packing.
    map_whole_input();
    for (int64_t n = 0; n < c.batch; ++n) {
      for (int64_t gi = 0; gi < group; ++gi) {
        const float* image = x_data + (n * c.channels + gi * c.group_channels) * c.in_size;
        float* out = y_data + (n * c.maps + gi * c.group_maps);
        // A 1x1 kernel over a single pixel reads the channels as they lie.
        const float* column = image;
        std::vector<float> gathered, phases;
        if (!pointwise || subsampled) {
          const ColumnLayout layout(c.s);
          const float* prepared = PrepareImage(image, c.group_channels, c.s, layout, phases);
          gathered.resize(c.depth);
          Tap tap(c.s, 0);
          for (int64_t k = 0; k < c.depth; ++k, tap.Next(c.s)) {
            Im2colRow(prepared, c.s, layout, tap, Position(c.s, 0), 1, gathered.data() + k);
          }
          column = gathered.data();
        }
        for (int64_t m = 0; m < c.group_maps; ++m) {
          out[m] = c.bias != nullptr ? c.bias[gi * c.group_maps + m] : 0.0f;
        }
        Sgemm(false, false, c.group_maps, 1, c.depth, 1.0f,
              c.w.data<float>() + gi * c.group_maps * c.depth, c.depth, column, 1, 1.0f, out, 1,
              ctx.pool);
      }
    }
    ActivateFloats(y_data, y.numel(), ctx.fused, ctx.pool);  // no GEMM epilogue on this path
    return absl::OkStatus();
  }

  const bool channels_last = path == ConvPath::kChannelsLast;
  const bool winograd = path == ConvPath::kWinograd;
  const bool transposed = channels_last || path == ConvPath::kPointwiseTransposed ||
                          path == ConvPath::kTransposedColumns;
  const bool implicit = path == ConvPath::kImplicit;
  // The direct pointwise product maps the channels as it packs them; the other paths read the
  // input in place or through copies of their own.
  if (channels_last || winograd || transposed || !pointwise) map_whole_input();
  ConvWeights local;
  const ConvWeights& packed =
      GetPackedWeights(ctx, c.w.data<float>(), group, c.group_maps, c.depth, path, c.s,
                       implicit ? ImplicitConvDepthBlock(c.depth) : 0, local);
  const int64_t items = c.batch * group;
  const int64_t macs = c.group_maps * c.depth * c.out_size;
  // Many small products (groups, batch): one per thread. Otherwise one after another, each
  // spread over the threads.
  const bool across_items = items > 1 && macs < (int64_t{1} << 22);
  const ColumnLayout layout(c.s);
  auto run_item = [&](int64_t item, ThreadPool* pool) {
    const int64_t n = item / group, gi = item % group;
    const float* image = x_data + (n * c.channels + gi * c.group_channels) * c.in_size;
    float* out = y_data + (n * c.maps + gi * c.group_maps) * c.out_size;
    thread_local std::vector<float> gathered;
    if (subsampled) image = SubsamplePlanes(image, c.group_channels, c.s, gathered, pool);
    GemmEpilogue epilogue{ctx.fused};
    epilogue.row_bias = c.bias != nullptr ? c.bias + gi * c.group_maps : nullptr;
    thread_local std::vector<float> phases;
    if (channels_last) {
      ChannelsLastConv(packed.channels_last_groups[gi], image, c.group_channels, c.s, epilogue, out,
                       pool);
    } else if (winograd) {
      WinogradConv(packed.winograd_groups[gi], image, c.s, epilogue, out, pool);
    } else if (transposed) {
      const float* prepared =
          pointwise ? image : PrepareImage(image, c.group_channels, c.s, layout, phases);
      TransposedConv(prepared, pointwise, c.s, layout, packed.transposed_groups[gi], epilogue, out,
                     pool);
    } else if (pointwise) {
      if (affine != nullptr) {
        GemmPacked(packed.groups[gi],
                   MappedRowsB(image, c.out_size, *affine, gi * c.group_channels), c.out_size, out,
                   c.out_size, epilogue, pool);
      } else {
        GemmPacked(packed.groups[gi], MatrixB(image, c.out_size, false), c.out_size, out,
                   c.out_size, epilogue, pool);
      }
    } else if (implicit) {
      ImplicitConv(packed.groups[gi], image, c.group_channels, c.s, epilogue, out, pool);
    } else {
      const float* prepared = PrepareImage(image, c.group_channels, c.s, layout, phases);
      GemmPacked(packed.groups[gi], Im2colB(prepared, c.s, layout), c.out_size, out, c.out_size,
                 epilogue, pool);
    }
  };
  if (across_items) {
    ParallelFor(ctx.pool, items, 1, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) run_item(item, nullptr);
    });
  } else {
    for (int64_t item = 0; item < items; ++item) run_item(item, ctx.pool);
  }
  return absl::OkStatus();
}

absl::Status ConvDouble(KernelContext& ctx, const SpatialGeometry& g, int64_t group, Tensor& y) {
  const ConvOperands<double> c(ctx, g, group);
  std::vector<double> columns(c.depth * c.out_size), phases;
  const ColumnLayout layout(c.s);
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const double* image =
          c.x.data<double>() + (n * c.channels + gi * c.group_channels) * c.in_size;
      double* out = y.data<double>() + (n * c.maps + gi * c.group_maps) * c.out_size;
      const double* prepared = PrepareImage(image, c.group_channels, c.s, layout, phases);
      Tap tap(c.s, 0);
      for (int64_t k = 0; k < c.depth; ++k, tap.Next(c.s)) {
        Im2colRow(prepared, c.s, layout, tap, Position(c.s, 0), c.out_size,
                  columns.data() + k * c.out_size);
      }
      for (int64_t m = 0; m < c.group_maps; ++m) {
        std::fill(out + m * c.out_size, out + (m + 1) * c.out_size,
                  c.bias != nullptr ? c.bias[gi * c.group_maps + m] : 0.0);
      }
      Dgemm(false, false, c.group_maps, c.out_size, c.depth, 1.0,
            c.w.data<double>() + gi * c.group_maps * c.depth, c.depth, columns.data(), c.out_size,
            1.0, out, c.out_size, ctx.pool);
    }
  }
  if (ctx.fused.clamp) {
    const double lo = ctx.fused.clamp_min, hi = ctx.fused.clamp_max;
    double* data = y.data<double>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double clipped = data[i] < lo ? lo : data[i];
      data[i] = clipped > hi ? hi : clipped;
    }
  }
  if (ctx.fused.hard_swish) {
    const double alpha = ctx.fused.hard_swish_alpha, beta = ctx.fused.hard_swish_beta;
    double* data = y.data<double>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      data[i] *= std::max(0.0, std::min(1.0, alpha * data[i] + beta));
    }
  }
  return absl::OkStatus();
}

absl::Status Conv(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(CheckFloatConvOperands(ctx));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.rank() < 3 || x.rank() > 5) {
    return ctx.Error("X must have 1 to 3 spatial dims, has shape ", DescribeTensor(x));
  }
  if (w.rank() != x.rank()) {
    return ctx.Error("W rank ", w.rank(), " differs from X rank ", x.rank());
  }
  const int64_t group = ctx.node.GetInt("group", 1);
  const int64_t channels = x.dim(1), maps = w.dim(0);
  if (group <= 0 || channels % group != 0 || maps % group != 0) {
    return ctx.Error("group ", group, " must divide the ", channels, " input channels and the ",
                     maps, " output channels");
  }
  if (w.dim(1) != channels / group) {
    return ctx.Error("W has ", w.dim(1), " input channels per group, X gives ", channels / group);
  }
  if (ctx.has_input(2)) {
    const Tensor& b = ctx.input(2);
    if (b.type() != x.type() || b.rank() != 1 || b.dim(0) != maps) {
      return ctx.Error("bias must be a vector of ", maps, " elements, is ", DescribeTensor(b));
    }
  }
  OVFIX_ASSIGN_OR_RETURN(SpatialGeometry geometry, ConvGeometry(ctx, x, w));
  std::vector<int64_t> dims = {x.dim(0), maps};
  dims.insert(dims.end(), geometry.output.begin(), geometry.output.end());
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(ctx, dims));
  Tensor& y = ctx.OutputToOverwrite(0, x.type(), dims);
  if (x.type() == DataType::kDouble) return ConvDouble(ctx, geometry, group, y);
  return ConvFloat(ctx, geometry, group, y);
}

}  // namespace

bool UnpaddedPointwise(const Spatial3& s) {
  if (s.kernel_size() != 1) return false;
  for (int i = 0; i < 3; ++i) {
    // No padding at the start, and none at the end that an output reads.
    if (s.pad[i] != 0 || s.out[i] != (s.in[i] - 1) / s.stride[i] + 1) return false;
  }
  return true;
}

ConvPath ChooseConvPath(const Spatial3& s, size_t spatial_rank, int64_t group, int64_t channels,
                        int64_t maps, bool constant_weights) {
  if (spatial_rank <= 2 && group > 1 && group == channels) return ConvPath::kDepthwise;
  if (s.out_size() == 1) return ConvPath::kOnePixel;
  if (constant_weights && spatial_rank == 2 && WinogradConvApplies(s, group, channels, maps)) {
    return ConvPath::kWinograd;
  }
  const bool pointwise = UnpaddedPointwise(s);
  const int64_t depth = channels / group * s.kernel_size();
  const bool channels_last_applies = !pointwise && ChannelsLastConvApplies(s);
  const bool transposed =
      UseTransposedProduct(s.out_size(), maps / group, depth, channels_last_applies);
  if (pointwise) return transposed ? ConvPath::kPointwiseTransposed : ConvPath::kPointwise;
  if (transposed)
    return channels_last_applies ? ConvPath::kChannelsLast : ConvPath::kTransposedColumns;
  return ImplicitConvApplies(s, depth) ? ConvPath::kImplicit : ConvPath::kColumns;
}

std::optional<ConvPath> NhwcConvPath(const Node& conv, int opset, const std::vector<int64_t>& x,
                                     const std::vector<int64_t>& w) {
  if (x.size() != 4 || w.size() != 4) return std::nullopt;
  const KernelContext ctx = KernelContext::For(conv, opset);
  absl::StatusOr<std::vector<int64_t>> kernel = KernelShape(ctx, {w[2], w[3]});
  if (!kernel.ok()) return std::nullopt;
  absl::StatusOr<SpatialGeometry> g = ReadSpatialAttributes(ctx, {x[2], x[3]}, *kernel);
  if (!g.ok() || !ComputeConvOutput(ctx, *g).ok()) return std::nullopt;
  const int64_t group = conv.GetInt("group", 1), channels = x[1], maps = w[0];
  if (group <= 0 || channels % group != 0 || maps % group != 0 || w[1] * group != channels) {
    return std::nullopt;
  }
  // The session takes only constant weights into a chain.
  const ConvPath path = ChooseConvPath(Spatial3(*g), 2, group, channels, maps, true);
  switch (path) {
    case ConvPath::kDepthwise:
      if (maps == channels) return path;
      return std::nullopt;
    case ConvPath::kPointwise:
    case ConvPath::kPointwiseTransposed:
    case ConvPath::kChannelsLast:
    case ConvPath::kWinograd:
      if (group == 1) return path;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void AddConvKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "Conv", 1, kLatestOpset, &Conv, Float16Mode::kAsFloat});
}

}  // namespace ovfix::exec
