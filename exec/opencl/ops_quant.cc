// Linear quantization on the device: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
// (opsets 10-18, 8-bit integers) and the integer products MatMulInteger and ConvInteger. The
// integer results are the CPU kernels' bits (exec/cpu/quantize_ops.cc, conv_integer.cc): the
// same float steps (kernels/quant.cl) and the same checks, with the same messages. Scales and
// zero points are small (per tensor or per channel) and read on the host.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_join.h"
#include "exec/cpu/conv_geometry.h"
#include "exec/opencl/host_upload.h"
#include "exec/opencl/kernel_args.h"
#include "exec/opencl/matmul_shape.h"
#include "exec/opencl/op_context.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

bool IsEightBit(DataType t) { return t == DataType::kUint8 || t == DataType::kInt8; }
std::string TypeName(DataType t) { return std::string(DataTypeName(t)); }
const char* ClType(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return "char";
    case DataType::kInt32:
      return "int";
    default:
      return "uchar";
  }
}

// Float division must round correctly for the quotients to quantize as on the CPU.
std::string QuantOptions(int group, const std::string& extra) {
  return absl::StrCat("-cl-fp32-correctly-rounded-divide-sqrt -DGROUP=", group, " ", extra);
}

// Scale and zero point per tensor, or per slice along `axis` (opset 13): as the CPU's
// ReadQuantization, scales as float.
struct Quantization {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  int64_t inner = 1;
};

absl::StatusOr<Quantization> ReadQuantization(OpContext& ctx, const ClValue& x) {
  OVFIX_ASSIGN_OR_RETURN(const Tensor* scale, ctx.Host(1));
  const Tensor* zero_point = nullptr;
  if (ctx.has_input(2)) {
    OVFIX_ASSIGN_OR_RETURN(zero_point, ctx.Host(2));
  }
  Quantization q;
  const int64_t channels = scale->numel();
  if (zero_point != nullptr && zero_point->numel() != channels) {
    return ctx.Error("scale and zero point have different sizes");
  }
  if (channels != 1) {
    if (ctx.opset < 13 || scale->rank() != 1) {
      return ctx.Error("scale must be a scalar", ctx.opset >= 13 ? " or 1-D" : "");
    }
    int64_t axis = ctx.node.GetInt("axis", 1);
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    if (axis < -rank || axis >= rank) return ctx.Error("axis ", axis, " out of range");
    if (axis < 0) axis += rank;
    if (x.dims[axis] != channels) {
      return ctx.Error("scale has ", channels, " values for an axis of size ", x.dims[axis]);
    }
    for (int64_t d = axis + 1; d < rank; ++d) q.inner *= x.dims[d];
  }
  for (int64_t c = 0; c < channels; ++c) {
    q.scales.push_back(static_cast<float>(scale->GetAsDouble(c)));
    q.zero_points.push_back(zero_point ? static_cast<int32_t>(zero_point->GetAsInt64(c)) : 0);
  }
  return q;
}

// Runs `kernel` from GROUP `group` over the quantization's elements: (x, scales, zeros, y,
// inner, channels).
absl::Status RunQuantization(OpContext& ctx, const char* name, int group,
                             const std::string& options, const Quantization& q, ClValue& y) {
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto scales, UploadVector(ctx, q.scales));
  OVFIX_ASSIGN_OR_RETURN(auto zeros, UploadVector(ctx, q.zero_points));
  OVFIX_ASSIGN_OR_RETURN(auto k, ctx.Kernel("quant.cl", name, QuantOptions(group, options)));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, k, *dx, *scales, *zeros, *y.device,
                                static_cast<cl_long>(q.inner),
                                static_cast<cl_int>(q.scales.size())));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(y.numel())));
}

// What opsets 19-25 added beyond 8-bit integers with a float scale, per tensor or per axis:
// blocks, output_dtype, precision, the narrow types and float16 scales run on the CPU.
absl::Status DeclineNewForms(OpContext& ctx, DataType quantized) {
  if (ctx.opset < 19) return absl::OkStatus();
  for (const char* attribute : {"block_size", "output_dtype", "precision"}) {
    if (ctx.node.GetInt(attribute, 0) != 0) return ctx.Unsupported(attribute);
  }
  if (!IsEightBit(quantized) && quantized != DataType::kInt32) {
    return ctx.Unsupported(TypeName(quantized));
  }
  if (ctx.input(1).type != DataType::kFloat) return ctx.Unsupported("a scale other than float");
  return absl::OkStatus();
}

absl::Status QuantizeLinear(OpContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs x and y_scale");
  }
  const ClValue& x = ctx.input(0);
  const DataType type = ctx.has_input(2) ? ctx.input(2).type : DataType::kUint8;
  OVFIX_RETURN_IF_ERROR(DeclineNewForms(ctx, type));
  if (!IsEightBit(type)) return ctx.Error("unsupported zero point type ", TypeName(type));
  if (x.type == DataType::kInt32) return ctx.Unsupported("int32 input");
  if (x.type != DataType::kFloat) return ctx.Error("unsupported input type ", TypeName(x.type));
  OVFIX_ASSIGN_OR_RETURN(Quantization q, ReadQuantization(ctx, x));
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, type, x.dims));
  if (y->numel() == 0) return absl::OkStatus();
  std::string options = type == DataType::kInt8 ? "-DQ_SIGNED" : "";
  if (x.half) absl::StrAppend(&options, " -DA_HALF");
  return RunQuantization(ctx, "quantize_linear", 1, options, q, *y);
}

absl::Status DequantizeLinear(OpContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs x and x_scale");
  }
  const ClValue& x = ctx.input(0);
  OVFIX_RETURN_IF_ERROR(DeclineNewForms(ctx, x.type));
  if (!IsEightBit(x.type) && x.type != DataType::kInt32) {
    return ctx.Error("unsupported input type ", TypeName(x.type));
  }
  if (ctx.has_input(2) && ctx.input(2).type != x.type) {
    return ctx.Error("zero point type differs from the input's");
  }
  OVFIX_ASSIGN_OR_RETURN(Quantization q, ReadQuantization(ctx, x));
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, DataType::kFloat, x.dims));
  if (y->numel() == 0) return absl::OkStatus();
  std::string options = absl::StrCat("-DX_T=", ClType(x.type));
  if (y->half) absl::StrAppend(&options, " -DY_HALF");
  return RunQuantization(ctx, "dequantize_linear", 2, options, q, *y);
}

absl::Status DynamicQuantizeLinear(OpContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input x");
  const ClValue& x = ctx.input(0);
  if (x.type != DataType::kFloat) return ctx.Error("unsupported type ", TypeName(x.type));
  const int64_t count = x.numel();
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, DataType::kUint8, x.dims));
  // y_scale and y_zero_point are written whether or not the node names them.
  ClValue scratch_scale, scratch_zero;
  ClValue* y_scale = &scratch_scale;
  ClValue* y_zero = &scratch_zero;
  if (ctx.outputs.size() > 1) {
    OVFIX_ASSIGN_OR_RETURN(y_scale, ctx.NewOutput(1, DataType::kFloat, {}));
  } else {
    OVFIX_ASSIGN_OR_RETURN(scratch_scale.device, ctx.rt.AllocateShared(sizeof(float)));
  }
  if (ctx.outputs.size() > 2) {
    OVFIX_ASSIGN_OR_RETURN(y_zero, ctx.NewOutput(2, DataType::kUint8, {}));
  } else {
    OVFIX_ASSIGN_OR_RETURN(scratch_zero.device, ctx.rt.AllocateShared(1));
  }
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  // Slices of at least 4096 elements, at most 256 of them: the partial ranges stay few.
  const int64_t parts = std::clamp<int64_t>(count / 4096, 1, 256);
  OVFIX_ASSIGN_OR_RETURN(auto partial,
                         ctx.rt.AllocateShared(static_cast<size_t>(2 * parts) * sizeof(float)));
  OVFIX_ASSIGN_OR_RETURN(auto params, ctx.rt.AllocateShared(2 * sizeof(float)));
  std::string options = x.half ? "-DA_HALF" : "";
  if (y_scale->half) absl::StrAppend(&options, " -DS_HALF");
  const std::string built = QuantOptions(3, options);
  OVFIX_ASSIGN_OR_RETURN(auto range, ctx.Kernel("quant.cl", "range_partial", built));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, range, *dx, static_cast<cl_long>(count), *partial));
  OVFIX_RETURN_IF_ERROR(ctx.Run(range, cl::NDRange(static_cast<size_t>(parts))));
  OVFIX_ASSIGN_OR_RETURN(auto final_range, ctx.Kernel("quant.cl", "range_final", built));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, final_range, *partial, static_cast<cl_int>(parts), *params,
                                *y_scale->device, *y_zero->device));
  OVFIX_RETURN_IF_ERROR(ctx.Run(final_range, cl::NDRange(1)));
  if (count == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto quantize, ctx.Kernel("quant.cl", "dynamic_quantize", built));
  OVFIX_RETURN_IF_ERROR(SetArgs(ctx, quantize, *dx, *params, *y->device));
  return ctx.Run(quantize, cl::NDRange(static_cast<size_t>(count)));
}

// A zero point per tensor, per row of A (per column of B), or per row of each batch
// ([..., M, 1] / [..., 1, N]); expanded to one value per (operand batch, row), as the CPU's
// ExpandParameter.
absl::StatusOr<std::vector<int32_t>> ExpandZeroPoint(OpContext& ctx, size_t index, int64_t batches,
                                                     int64_t rows) {
  std::vector<int32_t> values(static_cast<size_t>(batches * rows), 0);
  if (!ctx.has_input(index)) return values;
  OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.Host(index));
  const int64_t count = t->numel();
  for (int64_t i = 0; i < batches * rows; ++i) {
    if (count == 1) {
      values[i] = static_cast<int32_t>(t->GetAsInt64(0));
    } else if (count == rows && t->rank() == 1) {
      values[i] = static_cast<int32_t>(t->GetAsInt64(i % rows));
    } else if (count == batches * rows) {
      values[i] = static_cast<int32_t>(t->GetAsInt64(i));
    } else {
      return ctx.Error("a zero point or scale has ", count, " values, expected 1 or ", rows);
    }
  }
  return values;
}

absl::Status MatMulInteger(OpContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("needs inputs A and B");
  const ClValue& a = ctx.input(0);
  const ClValue& b = ctx.input(1);
  if (a.dims.empty() || b.dims.empty()) return ctx.Error("operands must have rank >= 1");
  MatMulShape shape(a.dims, b.dims);
  const int64_t M = shape.m, K = shape.k, N = shape.n;
  if (shape.b_k != K) {
    return ctx.Error("cannot multiply ", TypeName(a.type), "[", absl::StrJoin(a.dims, ","), "] by ",
                     TypeName(b.type), "[", absl::StrJoin(b.dims, ","), "]");
  }
  OVFIX_RETURN_IF_ERROR(shape.BroadcastBatch(ctx));
  if (!IsEightBit(a.type) || !IsEightBit(b.type)) {
    return ctx.Error("operands must be int8 or uint8, got ", TypeName(a.type), " and ",
                     TypeName(b.type));
  }
  if ((ctx.has_input(2) && ctx.input(2).type != a.type) ||
      (ctx.has_input(3) && ctx.input(3).type != b.type)) {
    return ctx.Error("zero point types differ from the operands'");
  }
  OVFIX_ASSIGN_OR_RETURN(auto a_zeros,
                         ExpandZeroPoint(ctx, 2, Tensor::NumElements(shape.a_batch), M));
  OVFIX_ASSIGN_OR_RETURN(auto b_zeros,
                         ExpandZeroPoint(ctx, 3, Tensor::NumElements(shape.b_batch), N));
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, DataType::kInt32, shape.out_dims));
  if (y->numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto da, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto db, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(auto za, UploadVector(ctx, a_zeros));
  OVFIX_ASSIGN_OR_RETURN(auto zb, UploadVector(ctx, b_zeros));
  OVFIX_ASSIGN_OR_RETURN(auto k,
                         ctx.Kernel("quant.cl", "matmul_integer",
                                    QuantOptions(4, absl::StrCat("-DA_Q=", ClType(a.type),
                                                                 " -DB_Q=", ClType(b.type)))));
  OVFIX_RETURN_IF_ERROR(SetArgs(
      ctx, k, *da, *db, *za, *zb, *y->device, static_cast<cl_int>(M), static_cast<cl_int>(N),
      static_cast<cl_int>(K), PaddedDims(shape.batch), BroadcastStrides(shape.a_batch, shape.batch),
      BroadcastStrides(shape.b_batch, shape.batch)));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(N), static_cast<size_t>(M),
                                static_cast<size_t>(Tensor::NumElements(shape.batch))));
}

// Input `index`'s zero point for filter i: one value or `count` of the operand's type; 0 when
// omitted (the CPU's ZeroPoint).
absl::StatusOr<int32_t> ZeroPoint(OpContext& ctx, const ClValue& operand, size_t index,
                                  int64_t count, const char* name, int64_t i = 0) {
  if (!ctx.has_input(index)) return 0;
  OVFIX_ASSIGN_OR_RETURN(const Tensor* zero, ctx.Host(index));
  if (zero->type() != operand.type || (zero->numel() != 1 && zero->numel() != count)) {
    return ctx.Error(name, " zero point must be one value or ", count, " of the same type, is ",
                     DescribeTensor(*zero));
  }
  return static_cast<int32_t>(zero->GetAsInt64(zero->numel() == 1 ? 0 : i));
}

std::string Describe(const ClValue& v) {
  return absl::StrCat(TypeName(v.type), "[", absl::StrJoin(v.dims, ","), "]");
}

absl::Status ConvInteger(OpContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs x and w");
  }
  const ClValue& x = ctx.input(0);
  const ClValue& w = ctx.input(1);
  if (!IsEightBit(x.type) || !IsEightBit(w.type)) {
    return ctx.Error("x and w must be int8 or uint8, are ", Describe(x), " and ", Describe(w));
  }
  if (x.dims.size() < 3 || x.dims.size() > 5 || w.dims.size() != x.dims.size()) {
    return ctx.Error("x and w must have the same rank with 1 to 3 spatial dims, are ", Describe(x),
                     " and ", Describe(w));
  }
  const int64_t group = ctx.node.GetInt("group", 1);
  const int64_t batch = x.dims[0], channels = x.dims[1], maps = w.dims[0];
  if (group <= 0 || channels % group != 0 || maps % group != 0 || w.dims[1] != channels / group) {
    return ctx.Error("group ", group, " does not fit ", channels, " input channels and W ",
                     Describe(w));
  }
  KernelContext kc = KernelContext::For(ctx.node, ctx.opset);
  OVFIX_ASSIGN_OR_RETURN(auto kernel, KernelShape(kc, {w.dims.begin() + 2, w.dims.end()}));
  OVFIX_ASSIGN_OR_RETURN(
      SpatialGeometry g,
      ReadSpatialAttributes(kc, {x.dims.begin() + 2, x.dims.end()}, std::move(kernel)));
  OVFIX_RETURN_IF_ERROR(ComputeConvOutput(kc, g));
  OVFIX_ASSIGN_OR_RETURN(int32_t x_zero, ZeroPoint(ctx, x, 2, 1, "x"));
  std::vector<int32_t> w_zeros(maps);
  for (int64_t m = 0; m < maps; ++m) {
    OVFIX_ASSIGN_OR_RETURN(w_zeros[m], ZeroPoint(ctx, w, 3, maps, "w", m));
  }
  std::vector<int64_t> dims = {batch, maps};
  dims.insert(dims.end(), g.output.begin(), g.output.end());
  OVFIX_RETURN_IF_ERROR(CheckOutputSize(kc, dims));
  OVFIX_ASSIGN_OR_RETURN(ClValue * y, ctx.NewOutput(0, DataType::kInt32, dims));
  if (y->numel() == 0) return absl::OkStatus();
  OVFIX_ASSIGN_OR_RETURN(auto dx, ctx.Device(0));
  OVFIX_ASSIGN_OR_RETURN(auto dw, ctx.Device(1));
  OVFIX_ASSIGN_OR_RETURN(auto zw, UploadVector(ctx, w_zeros));
  OVFIX_ASSIGN_OR_RETURN(auto k,
                         ctx.Kernel("quant.cl", "conv_integer",
                                    QuantOptions(5, absl::StrCat("-DA_Q=", ClType(x.type),
                                                                 " -DB_Q=", ClType(w.type)))));
  OVFIX_RETURN_IF_ERROR(
      SetArgs(ctx, k, *dx, *dw, *zw, cl_int{x_zero}, *y->device, static_cast<cl_int>(channels),
              static_cast<cl_int>(maps), static_cast<cl_int>(group), Spatial3(g.input, 1),
              Spatial3(g.output, 1), Spatial3(g.kernel, 1), Spatial3(g.strides, 1),
              Spatial3(g.pads_begin, 0), Spatial3(g.dilations, 1)));
  return ctx.Run(k, cl::NDRange(static_cast<size_t>(g.output_size()), static_cast<size_t>(maps),
                                static_cast<size_t>(batch)));
}

}  // namespace

void AddQuantOps(std::vector<OpDef>& table) {
  table.push_back({"QuantizeLinear", 10, kLatestOpset, QuantizeLinear});
  table.push_back({"DequantizeLinear", 10, kLatestOpset, DequantizeLinear});
  table.push_back({"DynamicQuantizeLinear", 11, kLatestOpset, DynamicQuantizeLinear});
  table.push_back({"MatMulInteger", 10, kLatestOpset, MatMulInteger});
  table.push_back({"ConvInteger", 10, kLatestOpset, ConvInteger});
}

}  // namespace ovfix::exec::opencl
