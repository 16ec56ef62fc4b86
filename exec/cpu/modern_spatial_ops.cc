// Spatial rearrangements of opset 18:
//   Col2Im-18: columns [N, C * prod(block_shape), L] summed back into an image [N, C, image
//     dims...] (the adjoint of im2col: overlapping patches add up), N-D, with per-dim
//     dilations, pads (begins then ends) and strides;
//   CenterCropPad-18: each listed axis cropped to a centered window or zero-padded around the
//     input. Where the difference is odd, a crop starts half an element left of center (start
//     rounded down) and a pad puts the extra element on the right (end) side.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/cpu/data_movement.h"
#include "exec/cpu/dispatch.h"
#include "exec/cpu/modern_ops.h"
#include "ir/narrow_types.h"
#include "ir/node_check.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {
namespace {

using data_movement::kFill;

// A 1-D int32/int64 tensor's values, or an error naming `what`.
absl::StatusOr<std::vector<int64_t>> IntVector(const KernelContext& ctx, const Tensor& t,
                                               const char* what) {
  if ((t.type() != DataType::kInt64 && t.type() != DataType::kInt32) || t.rank() != 1) {
    return ctx.Error(what, " must be a 1-D int64 tensor, got ", DescribeTensor(t));
  }
  return data_movement::ToInt64s(t);
}

// ---- Col2Im ----

// Where one spatial dim's blocks and block elements land in the image.
struct Col2ImDim {
  int64_t image = 0, block = 0, count = 0;  // image size, block size, blocks along the dim
  int64_t stride = 1, dilation = 1, pad_begin = 0;
};

absl::Status Col2ImKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) {
    return ctx.Error("expects input, image_shape and block_shape");
  }
  const Tensor& x = ctx.input(0);
  OVFIX_ASSIGN_OR_RETURN(const std::vector<int64_t> image,
                         IntVector(ctx, ctx.input(1), "image_shape"));
  OVFIX_ASSIGN_OR_RETURN(const std::vector<int64_t> block,
                         IntVector(ctx, ctx.input(2), "block_shape"));
  const size_t spatial = image.size();
  if (spatial == 0 || block.size() != spatial) {
    return ctx.Error("image_shape (", spatial, " values) and block_shape (", block.size(),
                     " values) must hold the same number of spatial dims, at least one");
  }
  if (x.rank() != 3) return ctx.Error("input ", DescribeTensor(x), " must be [N, C * K, L]");
  const std::vector<int64_t> dilations =
      ctx.node.GetInts("dilations", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> strides =
      ctx.node.GetInts("strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads = ctx.node.GetInts("pads", std::vector<int64_t>(2 * spatial, 0));
  if (dilations.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial) {
    return ctx.Error("dilations and strides need ", spatial, " values and pads ", 2 * spatial);
  }
  std::vector<Col2ImDim> dims(spatial);
  int64_t block_size = 1, blocks = 1, image_size = 1;
  for (size_t d = 0; d < spatial; ++d) {
    Col2ImDim& g = dims[d];
    g.image = image[d];
    g.block = block[d];
    g.stride = strides[d];
    g.dilation = dilations[d];
    g.pad_begin = pads[d];
    if (g.image < 0 || g.block <= 0 || g.stride <= 0 || g.dilation <= 0 || pads[d] < 0 ||
        pads[d + spatial] < 0) {
      return ctx.Error("spatial dim ", d, ": image ", g.image, ", block ", g.block, ", stride ",
                       g.stride, ", dilation ", g.dilation, ", pads ", pads[d], "/",
                       pads[d + spatial], " (blocks, strides and dilations must be positive)");
    }
    const int64_t padded = g.image + pads[d] + pads[d + spatial];
    const int64_t extent = g.dilation * (g.block - 1) + 1;  // the dilated block
    g.count = padded < extent ? 0 : (padded - extent) / g.stride + 1;
    block_size *= g.block;
    blocks *= g.count;
    image_size *= g.image;
  }
  if (x.dim(1) % block_size != 0) {
    return ctx.Error("input dim 1 (", x.dim(1), ") is not a multiple of the block size ",
                     block_size);
  }
  if (x.dim(2) != blocks) {
    return ctx.Error("input has ", x.dim(2), " blocks (dim 2) where image, block, pads, strides ",
                     "and dilations give ", blocks);
  }
  const int64_t batch = x.dim(0), channels = x.dim(1) / block_size;
  std::vector<int64_t> out_dims = {batch, channels};
  out_dims.insert(out_dims.end(), image.begin(), image.end());
  if (!data_movement::IsAllocatable(out_dims, x.type())) return ctx.Error("output too large");
  // Row-major strides of the image.
  std::vector<int64_t> image_strides(spatial, 1);
  for (size_t d = spatial - 1; d-- > 0;) image_strides[d] = image_strides[d + 1] * image[d + 1];
  const Col2ImDim& last = dims.back();
  const int64_t rows =
      blocks / std::max<int64_t>(last.count, 1);  // runs of blocks along the last dim

  return Dispatch(ctx, x.type(), kNumericTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.Output(0, x.type(), out_dims);  // zero-filled: the sums start there
    if (y.numel() == 0 || blocks == 0) return absl::OkStatus();
    const T* columns = x.data<T>();
    T* out = y.template data<T>();
    // One plane (n, c) at a time: its block_size rows of L columns all land in its own image.
    ParallelFor(ctx.pool, batch * channels, 1, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> k_index(spatial);
      for (int64_t plane = begin; plane < end; ++plane) {
        T* image_plane = out + plane * image_size;
        for (int64_t k = 0; k < block_size; ++k) {
          const T* row = columns + (plane * block_size + k) * blocks;
          int64_t k_rest = k;
          for (size_t d = spatial; d-- > 0;) {
            k_index[d] = k_rest % dims[d].block;
            k_rest /= dims[d].block;
          }
          // The last dim's offset of this block element; its blocks step by `stride`.
          const int64_t last_first = k_index.back() * last.dilation - last.pad_begin;
          for (int64_t r = 0; r < rows; ++r) {
            // Blocks along every dim but the last: where this element of them lands.
            int64_t base = 0;
            bool inside = true;
            int64_t r_rest = r;
            for (size_t d = spatial - 1; d-- > 0;) {
              const int64_t l = r_rest % dims[d].count;
              r_rest /= dims[d].count;
              const int64_t at =
                  l * dims[d].stride + k_index[d] * dims[d].dilation - dims[d].pad_begin;
              if (at < 0 || at >= dims[d].image) {
                inside = false;
                break;
              }
              base += at * image_strides[d];
            }
            if (!inside) continue;
            const T* run = row + r * last.count;
            for (int64_t j = 0; j < last.count; ++j) {
              const int64_t at = last_first + j * last.stride;
              if (at >= 0 && at < last.image) image_plane[base + at] += run[j];
            }
          }
        }
      }
    });
    return absl::OkStatus();
  });
}

// ---- CenterCropPad ----

absl::Status CenterCropPadKernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("expects input_data and shape");
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  OVFIX_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, IntVector(ctx, ctx.input(1), "shape"));
  std::vector<int64_t> axes;
  if (ctx.node.HasAttribute("axes")) {
    for (int64_t a : ctx.node.GetInts("axes")) {
      OVFIX_ASSIGN_OR_RETURN(const int64_t axis, NormalizedAxis(ctx.node, a, rank));
      if (std::find(axes.begin(), axes.end(), axis) != axes.end()) {
        return ctx.Error("axis ", a, " is repeated in axes");
      }
      axes.push_back(axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (shape.size() != axes.size()) {
    return ctx.Error("shape holds ", shape.size(), " values for ", axes.size(), " axes");
  }
  std::vector<int64_t> out_dims = x.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape[i] < 0) return ctx.Error("shape value ", shape[i], " is negative");
    out_dims[axes[i]] = shape[i];
  }
  if (!data_movement::IsAllocatable(out_dims, x.type())) return ctx.Error("output too large");
  // Per dim, the input element (times its stride) of each output position, or kFill.
  const std::vector<int64_t> strides = data_movement::Strides(x.dims());
  std::vector<std::vector<int64_t>> offsets(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t in = x.dim(d), out = out_dims[d];
    // A crop starts at floor((in - out) / 2); a pad puts floor((out - in) / 2) before the
    // input (and the odd one after it): both are "source = j - before".
    const int64_t before = in >= out ? -((in - out) / 2) : (out - in) / 2;
    offsets[d].resize(out);
    for (int64_t j = 0; j < out; ++j) {
      const int64_t source = j - before;
      offsets[d][j] = source >= 0 && source < in ? source * strides[d] : kFill;
    }
  }
  Tensor& y = ctx.Output(0, x.type(), out_dims);  // zero-filled (empty strings): the padding
  if (y.numel() == 0) return absl::OkStatus();
  if (!IsPacked(x.type())) {
    OVFIX_RETURN_IF_ERROR(data_movement::CheckStorage(ctx, x.type()));
    data_movement::CopyByOffsets(x, std::move(offsets), nullptr, y, ctx.pool);
    return absl::OkStatus();
  }
  // Packed sub-byte elements: one at a time, by an odometer over the output.
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank && source != kFill; ++d) {
      source = offsets[d][index[d]] == kFill ? kFill : source + offsets[d][index[d]];
    }
    if (source != kFill) {
      SetPackedElement(x.type(), y.raw(), i, GetPackedElement(x.type(), x.raw(), source));
    }
    for (int64_t d = rank; d-- > 0;) {
      if (++index[d] < out_dims[d]) break;
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddModernSpatialKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "Col2Im", 18, kLatestOpset, &Col2ImKernel});
  // CenterCropPad moves elements of any type, float16 included, unconverted.
  table.push_back(
      {"", "CenterCropPad", 18, kLatestOpset, &CenterCropPadKernel, Float16Mode::kNative});
}

}  // namespace ovfix::exec
