// Conv, Gemm, pooling and BatchNormalization on the device. The spatial arithmetic (auto_pad,
// output sizes) is the CPU kernels' own (exec/cpu/conv_geometry.h), so both backends agree.
#include <algorithm>

#include "exec/cpu/conv_geometry.h"
#include "exec/opencl/kernel_args.h"
#include "exec/opencl/matmul_shape.h"
#include "exec/opencl/op_context.h"
#include "ir/op_groups.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

absl::StatusOr<SpatialGeometry> Geometry(OpContext& ctx, const std::vector<int64_t>& dims,
                                         std::vector<int64_t> kernel, bool ceil_mode) {
  KernelContext kc = KernelContext::For(ctx.node, ctx.opset);
  std::vector<int64_t> spatial(dims.begin() + 2, dims.end());
  OVFIX_ASSIGN_OR_RETURN(auto g, ReadSpatialAttributes(kc, spatial, std::move(kernel)));
  OVFIX_RETURN_IF_ERROR(ComputeConvOutput(kc, g, ceil_mode));
  return g;
}

absl::Status Conv(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  const ClValue& w = ctx.input(1);
  if (!IsFloat(x) || !IsFloat(w)) return ctx.Unsupported("non-float Conv");
  if (x.dims.size() < 3 || x.dims.size() > 5) return ctx.Unsupported("rank ", x.dims.size());
  if (w.dims.size() != x.dims.size()) return ctx.Error("weight rank differs from input rank");
  const int64_t group = ctx.node.GetInt("group", 1);
  const int64_t C = x.dims[1], M = w.dims[0];
  if (group <= 0 || C % group != 0 || M % group != 0 || w.dims[1] * group != C) {
    return ctx.Error("channels ", C, " and weight ", w.dims[1], " do not fit group ", group);
  }
  KernelContext kc = KernelContext::For(ctx.node, ctx.opset);
  OVFIX_ASSIGN_OR_RETURN(auto kernel, KernelShape(kc, {w.dims.begin() + 2, w.dims.end()}));
  OVFIX_ASSIGN_OR_RETURN(auto g, Geometry(ctx, x.dims, kernel, false));
  std::vector<int64_t> out_dims = {x.dims[0], M};
  out_dims.insert(out_dims.end(), g.output.begin(), g.output.end());
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, out_dims));
  const bool has_bias = ctx.has_input(2);
  if (has_bias && ctx.input(2).numel() != M) return ctx.Error("bias must have ", M, " values");
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto dw, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(cl::Buffer * db, ctx.DeviceOr(2, dw));
  // The kernel computes tiles of MT output channels (a divisor of the channels per group) by
  // TW output positions along w, over an input padded wide enough for the last tile. CPU
  // devices get big tiles (the accumulators fit their vector registers); GPUs smaller ones,
  // which keep more work items in flight.
  const bool cpu_device = !ctx.rt.device().gpu;
  const int64_t m_per_group = M / group;
  int64_t tile_m = cpu_device ? 16 : 4;
  while (m_per_group % tile_m != 0) tile_m /= 2;
  const int64_t out_w = g.output.back();
  const int64_t tile_w = cpu_device && out_w > 8 ? 16 : 8;
  const int64_t tiles_w = (out_w + tile_w - 1) / tile_w;
  std::vector<int64_t> padded(g.rank());
  for (size_t i = 0; i < g.rank(); ++i) {
    const int64_t last_tap = (g.output[i] - 1) * g.strides[i] + g.extent(i);
    padded[i] = std::max(g.input[i] + g.pads_begin[i] + g.pads_end[i], last_tap);
  }
  // The last tile reads tile_w positions per tap (stride 2 loads twice that, keeps the even).
  const int64_t stride_w = g.strides.back();
  const int64_t last_tile = (tiles_w - 1) * tile_w * stride_w + g.extent(g.rank() - 1);
  padded.back() = std::max(padded.back(),
                           last_tile + (stride_w == 2 ? 2 * tile_w - 1 : (tile_w - 1) * stride_w));
  const std::string options = ctx.Options(
      {{"A", &x}, {"W", &w}, {"C", has_bias ? &ctx.input(2) : nullptr}, {"Y", y}},
      absl::StrCat("-DMODE=0 -DMT=", tile_m, " -DTW=", tile_w, " -DSTRIDE_W=", stride_w));
  // The kernel reads float: half input and weights are widened first (the input while it is
  // padded), once per run instead of at every tap.
  cl::Buffer* input = dx;
  std::shared_ptr<cl::Buffer> padded_buffer, float_weights;
  if (padded != g.input || x.half) {
    int64_t rows = x.dims[0] * C;
    for (size_t i = 0; i + 1 < padded.size(); ++i) rows *= padded[i];
    OVFIX_ASSIGN_OR_RETURN(
        padded_buffer,
        ctx.rt.AllocateShared(static_cast<size_t>(rows * padded.back()) * sizeof(float)));
    input = padded_buffer.get();
    OVFIX_ASSIGN_OR_RETURN(auto pad, ctx.Kernel("conv.cl", "pad_input", options));
    if (auto s = SetArgs(ctx, pad, *dx, *padded_buffer, Spatial3(g.input, 1), Spatial3(padded, 1),
                         Spatial3(g.pads_begin, 0));
        !s.ok()) {
      return s;
    }
    OVFIX_RETURN_IF_ERROR(ctx.Run(pad, cl::NDRange(static_cast<size_t>(rows))));
  }
  cl::Buffer* weights = dw;
  if (w.half) {
    OVFIX_ASSIGN_OR_RETURN(float_weights,
                           ctx.rt.AllocateShared(static_cast<size_t>(w.numel()) * sizeof(float)));
    weights = float_weights.get();
    OVFIX_ASSIGN_OR_RETURN(auto widen, ctx.Kernel("conv.cl", "widen_weights", options));
    OVFIX_RETURN_IF_ERROR(SetArgs(ctx, widen, *dw, *float_weights));
    OVFIX_RETURN_IF_ERROR(ctx.Run(widen, cl::NDRange(static_cast<size_t>(w.numel()))));
  }
  OVFIX_ASSIGN_OR_RETURN(auto k, ctx.Kernel("conv.cl", "conv", options));
  if (auto s =
          SetArgs(ctx, k, *input, *weights, *db, cl_int{has_bias}, *y->device,
                  static_cast<cl_int>(C), static_cast<cl_int>(M), static_cast<cl_int>(group),
                  Spatial3(padded, 1), Spatial3(g.output, 1), Spatial3(g.kernel, 1),
                  Spatial3(g.strides, 1), Spatial3(g.dilations, 1), static_cast<cl_int>(tiles_w));
      !s.ok()) {
    return s;
  }
  int64_t positions = tiles_w;
  for (size_t i = 0; i + 1 < g.rank(); ++i) positions *= g.output[i];
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(positions), static_cast<size_t>(M / tile_m),
                                static_cast<size_t>(x.dims[0])));
}

absl::Status Gemm(OpContext& ctx) {
  const ClValue& a = ctx.input(0);
  const ClValue& b = ctx.input(1);
  if (!IsFloat(a) || !IsFloat(b)) return ctx.Unsupported("non-float Gemm");
  if (a.dims.size() != 2 || b.dims.size() != 2) return ctx.Error("Gemm inputs must be 2-D");
  const int trans_a = static_cast<int>(ctx.node.GetInt("transA", 0));
  const int trans_b = static_cast<int>(ctx.node.GetInt("transB", 0));
  const int64_t M = trans_a ? a.dims[1] : a.dims[0], K = trans_a ? a.dims[0] : a.dims[1];
  const int64_t K2 = trans_b ? b.dims[1] : b.dims[0], N = trans_b ? b.dims[0] : b.dims[1];
  if (K != K2) return ctx.Error("inner dims differ (", K, " vs ", K2, ")");
  const bool has_c = ctx.has_input(2);
  int64_t c_rows = 1, c_cols = 1;
  if (has_c) {
    const auto& cd = ctx.input(2).dims;
    if (cd.size() > 2) return ctx.Error("C must have rank <= 2");
    c_cols = cd.empty() ? 1 : cd.back();
    c_rows = cd.size() == 2 ? cd[0] : 1;
    if ((c_rows != 1 && c_rows != M) || (c_cols != 1 && c_cols != N)) {
      return ctx.Error("C cannot be broadcast to [", M, ",", N, "]");
    }
  }
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, a.type, {M, N}));
  OVFIX_ASSIGN_OR_RETURN(auto da, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto db, ctx.Device(1));
  cl::Buffer* dc = da;
  if (has_c) {
    OVFIX_ASSIGN_OR_RETURN(auto c, ctx.Device(2));
    dc = c;
  }
  OVFIX_ASSIGN_OR_RETURN(
      auto k,
      ctx.Kernel(
          "conv.cl", "gemm",
          ctx.Options({{"A", &a}, {"B", &b}, {"C", has_c ? &ctx.input(2) : nullptr}, {"Y", y}},
                      "-DMODE=0")));
  if (auto s =
          SetArgs(ctx, k, *da, *db, *dc, cl_int{has_c}, *y->device, static_cast<cl_int>(M),
                  static_cast<cl_int>(N), static_cast<cl_int>(K), cl_int{trans_a}, cl_int{trans_b},
                  ctx.node.GetFloat("alpha", 1.0f), ctx.node.GetFloat("beta", 1.0f),
                  static_cast<cl_int>(c_rows), static_cast<cl_int>(c_cols));
      !s.ok()) {
    return s;
  }
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(N), static_cast<size_t>(M)));
}

// MatMul (numpy semantics): a 1-D A is a row [1, K] and a 1-D B a column [K, 1], their
// unit dims dropped from the output; the dims before the last two broadcast.
absl::Status MatMul(OpContext& ctx) {
  const ClValue& a = ctx.input(0);
  const ClValue& b = ctx.input(1);
  if (!IsFloat(a) || !IsFloat(b)) return ctx.Unsupported("non-float MatMul");
  if (a.dims.empty() || b.dims.empty()) return ctx.Error("MatMul inputs must have rank >= 1");
  MatMulShape shape(a.dims, b.dims);
  const int64_t M = shape.m, K = shape.k, N = shape.n;
  if (K != shape.b_k) return ctx.Error("inner dims differ (", K, " vs ", shape.b_k, ")");
  OVFIX_RETURN_IF_ERROR(shape.BroadcastBatch(ctx));
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, a.type, shape.out_dims));
  OVFIX_ASSIGN_OR_RETURN(auto da, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto db, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(
      auto k,
      ctx.Kernel("conv.cl", "matmul", ctx.Options({{"A", &a}, {"B", &b}, {"Y", y}}, "-DMODE=0")));
  if (auto s = SetArgs(ctx, k, *da, *db, *y->device, static_cast<cl_int>(M), static_cast<cl_int>(N),
                       static_cast<cl_int>(K), PaddedDims(shape.batch),
                       BroadcastStrides(shape.a_batch, shape.batch),
                       BroadcastStrides(shape.b_batch, shape.batch));
      !s.ok()) {
    return s;
  }
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(N), static_cast<size_t>(M),
                                static_cast<size_t>(Tensor::NumElements(shape.batch))));
}

absl::Status Pool(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (!IsFloat(x)) return ctx.Unsupported("non-float pooling");
  if (x.dims.size() < 3 || x.dims.size() > 5) return ctx.Unsupported("rank ", x.dims.size());
  const bool max = ctx.node.op_type() == "MaxPool";
  if (max && ctx.outputs.size() > 1 && ctx.node.output(1) != nullptr) {
    return ctx.Unsupported("MaxPool indices output");
  }
  if (max && ctx.node.GetInt("storage_order", 0) != 0) return ctx.Unsupported("storage_order");
  OVFIX_ASSIGN_OR_RETURN(auto g, Geometry(ctx, x.dims, ctx.node.GetInts("kernel_shape"),
                                          ctx.node.GetInt("ceil_mode", 0) != 0));
  std::vector<int64_t> out_dims = {x.dims[0], x.dims[1]};
  out_dims.insert(out_dims.end(), g.output.begin(), g.output.end());
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, out_dims));
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  const int mode = max ? 0 : (ctx.node.GetInt("count_include_pad", 0) ? 2 : 1);
  OVFIX_ASSIGN_OR_RETURN(
      auto k, ctx.Kernel("conv.cl", "pool",
                         ctx.Options({{"A", &x}, {"Y", y}}, absl::StrCat("-DMODE=", mode))));
  if (auto s = SetArgs(ctx, k, *dx, *y->device, Spatial3(g.input, 1), Spatial3(g.output, 1),
                       Spatial3(g.kernel, 1), Spatial3(g.strides, 1), Spatial3(g.pads_begin, 0),
                       Spatial3(g.pads_end, 0), Spatial3(g.dilations, 1));
      !s.ok()) {
    return s;
  }
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y->numel())));
}

absl::Status GlobalPool(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (!IsFloat(x)) return ctx.Unsupported("non-float pooling");
  if (x.dims.size() < 2) return ctx.Error("input must have rank >= 2");
  std::vector<int64_t> out_dims(x.dims.size(), 1);
  out_dims[0] = x.dims[0];
  out_dims[1] = x.dims[1];
  const cl_long size = x.numel() / std::max<int64_t>(1, x.dims[0] * x.dims[1]);
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, out_dims));
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  const bool max = ctx.node.op_type() == "GlobalMaxPool";
  OVFIX_ASSIGN_OR_RETURN(
      auto k, ctx.Kernel("conv.cl", "global_pool",
                         ctx.Options({{"A", &x}, {"Y", y}}, max ? "-DMODE=0" : "-DMODE=1")));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *dx, *y->device, size));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(x.dims[0] * x.dims[1])));
}

absl::Status BatchNorm(OpContext& ctx) {
  const ClValue& x = ctx.input(0);
  if (!IsFloat(x) || x.dims.size() < 2) return ctx.Unsupported("non-float BatchNormalization");
  if (ctx.node.GetInt("training_mode", 0) != 0 || ctx.outputs.size() > 1) {
    return ctx.Unsupported("training mode");
  }
  const int64_t C = x.dims[1];
  for (int i = 1; i <= 4; ++i) {
    if (ctx.input(i).numel() != C) return ctx.Error("input ", i, " must have ", C, " values");
  }
  if (ctx.input(3).half != ctx.input(4).half) return ctx.Unsupported("mixed mean/var storage");
  OVFIX_ASSIGN_OR_RETURN(auto y, ctx.NewOutput(0, x.type, x.dims));
  std::vector<cl::Buffer*> buffers;
  for (size_t i = 0; i < 5; ++i) {
    OVFIX_ASSIGN_OR_RETURN(auto b, ctx.Device(i));
    buffers.push_back(b);
  }
  OVFIX_ASSIGN_OR_RETURN(auto k, ctx.Kernel("conv.cl", "batch_norm",
                                            ctx.Options({{"A", &x},
                                                         {"W", &ctx.input(1)},
                                                         {"B", &ctx.input(2)},
                                                         {"C", &ctx.input(3)},
                                                         {"Y", y}},
                                                        "-DMODE=0")));
  const cl_long spatial = x.numel() / std::max<int64_t>(1, x.dims[0] * C);
  if (auto s =
          SetArgs(ctx, k, *buffers[0], *buffers[1], *buffers[2], *buffers[3], *buffers[4],
                  *y->device, static_cast<cl_int>(C), spatial, ctx.node.GetFloat("epsilon", 1e-5f));
      !s.ok()) {
    return s;
  }
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(x.numel())));
}

}  // namespace

void AddConvOps(std::vector<OpDef>& table) {
  table.push_back({"Conv", 1, kOpenVersion, Conv});
  table.push_back({"Gemm", 1, kOpenVersion, Gemm});
  table.push_back({"MatMul", 1, kOpenVersion, MatMul});
  table.push_back({"MaxPool", 1, kOpenVersion, Pool});
  table.push_back({"AveragePool", 1, kOpenVersion, Pool});
  table.push_back({"GlobalAveragePool", 1, kOpenVersion, GlobalPool});
  table.push_back({"GlobalMaxPool", 1, kOpenVersion, GlobalPool});
  // Before version 9, `spatial = 0` gave per-element statistics, which the kernel does not do.
  table.push_back({"BatchNormalization", 9, kOpenVersion, BatchNorm});
}

}  // namespace ovfix::exec::opencl
