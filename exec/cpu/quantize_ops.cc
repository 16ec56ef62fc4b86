// Linear quantization: QuantizeLinear, DequantizeLinear (8-bit integers; from opset 19 the
// float8 types, 21 int4/uint4/int16/uint16 and blocks, 23 float4e2m1, 25 int2/uint2),
// DynamicQuantizeLinear, and the integer products MatMulInteger and QLinearMatMul.
//
// Quantized values q stand for real values (q - zero_point) * scale. Rounding is to nearest,
// ties to even, then saturation (quantize_math.h); products on the int16 GEMM (gemm_int8.h);
// every loop over the elements runs on the pool. With AVX-512 VNNI the products run on its
// uint8 x int8 dot product (matmul_integer_vnni.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "exec/cpu/broadcast.h"
#include "exec/cpu/conv_integer_vnni.h"
#include "exec/cpu/gemm_int8.h"
#include "exec/cpu/matmul_integer_vnni.h"
#include "exec/cpu/misc_kernels.h"
#include "exec/cpu/quantize_math.h"
#include "exec/cpu/required_inputs.h"
#include "exec/kernel.h"
#include "ir/float16.h"
#include "ir/narrow_types.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

bool IsEightBit(DataType t) { return t == DataType::kUint8 || t == DataType::kInt8; }

std::string TypeName(DataType t) { return std::string(DataTypeName(t)); }

// Elements per task of the element-wise loops.
constexpr int64_t kElementsPerTask = 1 << 15;

// Scale and zero point for each element of x: per tensor, per slice along `axis`, or (opset
// 21 on) per block of `block` consecutive slices along `axis`.
struct Quantization {
  std::vector<double> scales;
  std::vector<double> zero_points;  // integers, or the decoded float8 zero point
  int64_t inner = 1;                // elements per step along the axis
  int64_t axis_dim = 1;             // x's size along the axis
  int64_t block = 0;                // > 0: blocked
  int64_t scale_axis_dim = 1;       // the scale's size along the axis (blocked)
  bool blocked() const { return block > 0; }
  int64_t channel(int64_t i) const {
    if (scales.size() == 1) return 0;
    const int64_t along = (i / inner) % axis_dim;
    if (!blocked()) return along;
    const int64_t outer = i / (inner * axis_dim);
    return (outer * scale_axis_dim + along / block) * inner + i % inner;
  }
};

absl::StatusOr<Quantization> ReadQuantization(const KernelContext& ctx, const Tensor& x,
                                              const Tensor& scale, const Tensor* zero_point) {
  Quantization q;
  const int64_t channels = scale.numel();
  if (zero_point != nullptr && zero_point->numel() != channels) {
    return ctx.Error("scale and zero point have different sizes");
  }
  const int64_t block = ctx.opset >= 21 ? ctx.node.GetInt("block_size", 0) : 0;
  if (block < 0) return ctx.Error("block_size ", block, " is negative");
  if (channels != 1 || block > 0) {
    if (ctx.opset < 13 || (block == 0 && scale.rank() != 1)) {
      return ctx.Error("scale must be a scalar", ctx.opset >= 13 ? " or 1-D" : "");
    }
    int64_t axis = ctx.node.GetInt("axis", 1);
    const int64_t rank = static_cast<int64_t>(x.rank());
    if (axis < -rank || axis >= rank) return ctx.Error("axis ", axis, " out of range");
    if (axis < 0) axis += rank;
    q.axis_dim = x.dim(axis);
    for (int64_t d = axis + 1; d < rank; ++d) q.inner *= x.dim(d);
    if (block == 0) {
      if (x.dim(axis) != channels) {
        return ctx.Error("scale has ", channels, " values for an axis of size ", x.dim(axis));
      }
    } else {
      // Blocked: the scale has x's shape but ceil(D / block) along the axis.
      bool fits = scale.rank() == x.rank();
      for (int64_t d = 0; fits && d < rank; ++d) {
        const int64_t want = d == axis ? (x.dim(d) + block - 1) / block : x.dim(d);
        fits = scale.dim(d) == want;
      }
      if (!fits) {
        return ctx.Error("scale ", DescribeTensor(scale), " does not block ", DescribeTensor(x),
                         " by ", block, " along axis ", axis);
      }
      q.block = block;
      q.scale_axis_dim = scale.dim(axis);
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    q.scales.push_back(scale.GetAsDouble(c));
    q.zero_points.push_back(zero_point ? zero_point->GetAsDouble(c) : 0.0);
  }
  return q;
}

// out[i] = Quantize(in[i] / scale, zero) for n values; a plain loop over restrict pointers
// that the compiler vectorizes.
template <typename T>
void QuantizeValues(const float* __restrict in, int64_t n, float scale, int32_t zero,
                    T* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = Quantize<T>(in[i] / scale, zero);
}

template <typename T>
void DequantizeValues(const T* __restrict in, int64_t n, float scale, int32_t zero,
                      float* __restrict out) {
  if constexpr (sizeof(T) == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(int32_t{in[i]} - zero) * scale;
  } else {  // int32: the difference may not fit in 32 bits
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(int64_t{in[i]} - zero) * scale;
  }
}

// Widens [low, high] to the values of in[0, n); NaNs are skipped (comparisons with them are
// false). Local accumulators over a restrict pointer, so the loop vectorizes.
void ExtendRange(const float* __restrict in, int64_t n, float& low_out, float& high_out) {
  float low = low_out, high = high_out;
  for (int64_t i = 0; i < n; ++i) {
    low = in[i] < low ? in[i] : low;
    high = in[i] > high ? in[i] : high;
  }
  low_out = low;
  high_out = high;
}

// Calls fn(begin, end, channel) over [0, count) on the pool, in runs of one channel each.
template <typename Fn>
void ForEachRun(ThreadPool* pool, int64_t count, const Quantization& q, Fn fn) {
  const int64_t channels = static_cast<int64_t>(q.scales.size());
  ParallelFor(pool, count, kElementsPerTask, [&](int64_t begin, int64_t end) {
    if (channels == 1) {
      fn(begin, end, 0);
      return;
    }
    while (begin < end) {
      const int64_t run_end = std::min(end, (begin / q.inner + 1) * q.inner);
      fn(begin, run_end, q.channel(begin));
      begin = run_end;
    }
  });
}

// The element type input i has in the model (before the session hands float16 over as
// float), else the tensor's own.
DataType DeclaredType(const KernelContext& ctx, size_t i) {
  const Value* v = i < ctx.node.num_inputs() ? ctx.node.input(i) : nullptr;
  const DataType declared = v != nullptr ? v->elem_type() : DataType::kUndefined;
  return declared != DataType::kUndefined ? declared : ctx.input(i).type();
}

// A float result rounded to the arithmetic of `type` (float16/bfloat16; others unchanged).
// The float operations here take operands of at most 24 significant bits, so rounding their
// float result once more is the same as computing in the narrower type.
float RoundTo(DataType type, float v) {
  if (type == DataType::kFloat16) return HalfBitsToFloat(FloatToHalfBits(v));
  if (type == DataType::kBfloat16) return Bfloat16BitsToFloat(FloatToBfloat16Bits(v));
  return v;
}

// The types QuantizeLinear writes and DequantizeLinear reads (besides int32).
bool IsQuantizedType(DataType t) {
  switch (t) {
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kUint16:
    case DataType::kInt16:
      return true;
    default:
      return IsNarrowFloat(t) || IsSubByteInteger(t);
  }
}

bool IsFloatOutput(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

// The saturation range of an integer quantized type.
std::pair<double, double> IntegerRange(DataType t) {
  switch (t) {
    case DataType::kUint8:
      return {0, 255};
    case DataType::kInt8:
      return {-128, 127};
    case DataType::kUint16:
      return {0, 65535};
    case DataType::kInt16:
      return {-32768, 32767};
    default:
      return {PackedIntegerMin(t), PackedIntegerMax(t)};
  }
}

// Writes element i of a quantized tensor from the quotient x / scale: integers round half to
// even, add the zero point and saturate (NaN gives the lowest value, as Quantize does); the
// narrow floats add the decoded zero point and round as Cast does.
void StoreQuantized(Tensor& y, int64_t i, double quotient, double zero, bool saturate) {
  const DataType type = y.type();
  if (IsNarrowFloat(type)) {
    const uint8_t code = FloatToNarrowFloat(type, static_cast<float>(quotient + zero), saturate);
    if (IsPacked(type)) {
      SetPackedElement(type, y.raw(), i, code);
    } else {
      y.data<uint8_t>()[i] = code;
    }
    return;
  }
  const auto [lo, hi] = IntegerRange(type);
  const double v = std::isnan(quotient) ? lo : std::clamp(std::nearbyint(quotient) + zero, lo, hi);
  switch (type) {
    case DataType::kUint8:
      y.data<uint8_t>()[i] = static_cast<uint8_t>(v);
      break;
    case DataType::kInt8:
      y.data<int8_t>()[i] = static_cast<int8_t>(v);
      break;
    case DataType::kUint16:
      y.data<uint16_t>()[i] = static_cast<uint16_t>(v);
      break;
    case DataType::kInt16:
      y.data<int16_t>()[i] = static_cast<int16_t>(v);
      break;
    default:
      SetPackedElement(type, y.raw(), i, static_cast<int32_t>(v));
  }
}

// Runs fn(begin, end) over [0, n): on the pool, except for packed types, whose neighbouring
// elements share bytes.
template <typename Fn>
void ForElements(ThreadPool* pool, int64_t n, DataType type, Fn fn) {
  if (IsPacked(type)) {
    fn(int64_t{0}, n);
  } else {
    ParallelFor(pool, n, kElementsPerTask, fn);
  }
}

// The type QuantizeLinear writes: the zero point's, or `output_dtype` (opset 21 on), or uint8.
absl::StatusOr<DataType> QuantizedOutputType(const KernelContext& ctx, const Tensor* zero_point) {
  DataType type = zero_point ? zero_point->type() : DataType::kUint8;
  const int64_t output_dtype = ctx.opset >= 21 ? ctx.node.GetInt("output_dtype", 0) : 0;
  if (output_dtype != 0) {
    if (output_dtype < 0 || output_dtype > INT32_MAX ||
        !IsKnownDataType(static_cast<int32_t>(output_dtype))) {
      return ctx.Error("unknown output_dtype ", output_dtype);
    }
    const DataType wanted = static_cast<DataType>(output_dtype);
    if (zero_point != nullptr && wanted != type) {
      return ctx.Error("output_dtype ", TypeName(wanted), " differs from the zero point's type ",
                       TypeName(type));
    }
    type = wanted;
  }
  if (!IsQuantizedType(type)) return ctx.Error("unsupported output type ", TypeName(type));
  return type;
}

absl::Status QuantizeLinear(KernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs x and y_scale");
  }
  const Tensor& x = ctx.input(0);
  const Tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  OVFIX_ASSIGN_OR_RETURN(const DataType type, QuantizedOutputType(ctx, zero_point));
  if (x.type() != DataType::kFloat && x.type() != DataType::kInt32 &&
      x.type() != DataType::kFloat16 && x.type() != DataType::kBfloat16) {
    return ctx.Error("unsupported input type ", TypeName(x.type()));
  }
  OVFIX_ASSIGN_OR_RETURN(Quantization q, ReadQuantization(ctx, x, ctx.input(1), zero_point));
  // The division's precision: `precision` (opset 25), else the scale's type in the model.
  DataType precision = DeclaredType(ctx, 1);
  if (const int64_t p = ctx.opset >= 25 ? ctx.node.GetInt("precision", 0) : 0; p != 0) {
    precision = static_cast<DataType>(p);
  }
  const bool saturate = ctx.node.GetInt("saturate", 1) != 0;
  Tensor& y = ctx.Output(0, type, x.dims());
  const bool float_division = x.type() == DataType::kFloat && precision == DataType::kFloat;
  if (IsEightBit(type) && !q.blocked() && (float_division || x.type() == DataType::kInt32)) {
    // The common case, vectorized.
    const auto quantize = [&](auto* out) {
      using T = std::remove_pointer_t<decltype(out)>;
      ForEachRun(ctx.pool, x.numel(), q, [&](int64_t begin, int64_t end, int64_t c) {
        const int32_t zero = static_cast<int32_t>(q.zero_points[c]);
        if (x.type() == DataType::kFloat) {
          // Float inputs divide in float, as onnxruntime and the reference do.
          QuantizeValues(x.data<float>() + begin, end - begin, static_cast<float>(q.scales[c]),
                         zero, out + begin);
        } else {  // int32 input: in double, which holds every quotient's rounding exactly
          for (int64_t i = begin; i < end; ++i) {
            const double v = std::nearbyint(x.data<int32_t>()[i] / q.scales[c]) + zero;
            out[i] = static_cast<T>(std::clamp<double>(v, std::numeric_limits<T>::min(),
                                                       std::numeric_limits<T>::max()));
          }
        }
      });
    };
    if (type == DataType::kUint8) {
      quantize(y.data<uint8_t>());
    } else {
      quantize(y.data<int8_t>());
    }
    return absl::OkStatus();
  }
  ForElements(ctx.pool, x.numel(), type, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = q.channel(i);
      double quotient;
      if (x.type() == DataType::kInt32) {
        quotient = x.data<int32_t>()[i] / q.scales[c];
      } else {
        quotient = RoundTo(precision,
                           static_cast<float>(x.GetAsDouble(i)) / static_cast<float>(q.scales[c]));
      }
      StoreQuantized(y, i, quotient, q.zero_points[c], saturate);
    }
  });
  return absl::OkStatus();
}

// The type DequantizeLinear writes: `output_dtype` (opset 23 on), else the scale's type (opset
// 19 on; float before). Under the session a float16 scale arrives as float, and the session
// turns the float result back into the float16 the model declares.
absl::StatusOr<DataType> DequantizedOutputType(const KernelContext& ctx) {
  DataType type = DataType::kFloat;
  if (ctx.opset >= 19 && IsFloatOutput(ctx.input(1).type())) type = ctx.input(1).type();
  const int64_t output_dtype = ctx.opset >= 23 ? ctx.node.GetInt("output_dtype", 0) : 0;
  if (output_dtype != 0) {
    if (output_dtype < 0 || output_dtype > INT32_MAX ||
        !IsFloatOutput(static_cast<DataType>(output_dtype))) {
      return ctx.Error("output_dtype ", output_dtype, " is not float, float16 or bfloat16");
    }
    type = static_cast<DataType>(output_dtype);
  }
  return type;
}

absl::Status DequantizeLinear(KernelContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return ctx.Error("needs inputs x and x_scale");
  }
  const Tensor& x = ctx.input(0);
  const Tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!IsQuantizedType(x.type()) && x.type() != DataType::kInt32) {
    return ctx.Error("unsupported input type ", TypeName(x.type()));
  }
  if (zero_point && zero_point->type() != x.type()) {
    return ctx.Error("zero point type differs from the input's");
  }
  OVFIX_ASSIGN_OR_RETURN(Quantization q, ReadQuantization(ctx, x, ctx.input(1), zero_point));
  OVFIX_ASSIGN_OR_RETURN(const DataType out_type, DequantizedOutputType(ctx));
  Tensor& y = ctx.Output(0, out_type, x.dims());
  const bool plain = IsEightBit(x.type()) || x.type() == DataType::kInt32;
  if (plain && !q.blocked() && out_type == DataType::kFloat) {
    // The common case, vectorized.
    float* out = y.data<float>();
    const auto dequantize = [&](const auto* in) {
      ForEachRun(ctx.pool, x.numel(), q, [&](int64_t begin, int64_t end, int64_t c) {
        DequantizeValues(in + begin, end - begin, static_cast<float>(q.scales[c]),
                         static_cast<int32_t>(q.zero_points[c]), out + begin);
      });
    };
    if (x.type() == DataType::kUint8) {
      dequantize(x.data<uint8_t>());
    } else if (x.type() == DataType::kInt8) {
      dequantize(x.data<int8_t>());
    } else {
      dequantize(x.data<int32_t>());
    }
    return absl::OkStatus();
  }
  // Every other type: element by element, the product in the output's precision.
  ParallelFor(ctx.pool, x.numel(), kElementsPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = q.channel(i);
      const float difference = static_cast<float>(x.GetAsDouble(i) - q.zero_points[c]);
      const float value = difference * static_cast<float>(q.scales[c]);
      switch (out_type) {
        case DataType::kFloat16:
          y.data<uint16_t>()[i] = FloatToHalfBits(value);
          break;
        case DataType::kBfloat16:
          y.data<uint16_t>()[i] = FloatToBfloat16Bits(value);
          break;
        default:
          y.data<float>()[i] = value;
      }
    }
  });
  return absl::OkStatus();
}

absl::Status DynamicQuantizeLinear(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("missing input x");
  const Tensor& x = ctx.input(0);
  if (x.type() != DataType::kFloat) return ctx.Error("unsupported type ", TypeName(x.type()));
  const float* in = x.data<float>();
  const int64_t count = x.numel();
  // The range always includes 0 so that 0 is exactly representable. Each task finds its
  // slice's range; NaNs are skipped (comparisons with them are false).
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>(64, count / kElementsPerTask));
  std::vector<float> lows(tasks, 0.0f), highs(tasks, 0.0f);
  ParallelFor(ctx.pool, tasks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t first = count * t / tasks;
      ExtendRange(in + first, count * (t + 1) / tasks - first, lows[t], highs[t]);
    }
  });
  const float low = *std::min_element(lows.begin(), lows.end());
  const float high = *std::max_element(highs.begin(), highs.end());
  // An all-zero input has no range: onnxruntime then uses scale 1 (and every value is 0).
  const float scale = high == low ? 1.0f : (high - low) / 255.0f;
  const float zero_point = std::clamp(std::nearbyint((0.0f - low) / scale), 0.0f, 255.0f);
  const int32_t zero = static_cast<int32_t>(zero_point);
  uint8_t* out = ctx.Output(0, DataType::kUint8, x.dims()).data<uint8_t>();
  ParallelFor(ctx.pool, count, kElementsPerTask, [&](int64_t begin, int64_t end) {
    QuantizeValues(in + begin, end - begin, scale, zero, out + begin);
  });
  if (ctx.outputs.size() > 1) ctx.Output(1, DataType::kFloat, {}).data<float>()[0] = scale;
  if (ctx.outputs.size() > 2) {
    ctx.Output(2, DataType::kUint8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zero);
  }
  return absl::OkStatus();
}

// The operands of an integer matrix product, with numpy's MatMul shape rules.
struct ProductShape {
  std::vector<int64_t> out_dims;
  int64_t m = 0, n = 0, k = 0;
  int64_t a_batches = 1, b_batches = 1;
  std::vector<int64_t> a_batch_of, b_batch_of;  // per output batch: the operand's batch
};

absl::StatusOr<ProductShape> MakeProductShape(const KernelContext& ctx, const Tensor& a,
                                              const Tensor& b) {
  if (a.rank() == 0 || b.rank() == 0) return ctx.Error("operands must have rank >= 1");
  ProductShape s;
  std::vector<int64_t> a_dims = a.dims(), b_dims = b.dims();
  if (a.rank() == 1) a_dims.insert(a_dims.begin(), 1);
  if (b.rank() == 1) b_dims.push_back(1);
  s.m = a_dims[a_dims.size() - 2];
  s.k = a_dims.back();
  s.n = b_dims.back();
  if (b_dims[b_dims.size() - 2] != s.k) {
    return ctx.Error("cannot multiply ", DescribeTensor(a), " by ", DescribeTensor(b));
  }
  const std::vector<int64_t> a_batch(a_dims.begin(), a_dims.end() - 2);
  const std::vector<int64_t> b_batch(b_dims.begin(), b_dims.end() - 2);
  s.a_batches = Tensor::NumElements(a_batch);
  s.b_batches = Tensor::NumElements(b_batch);
  absl::StatusOr<BroadcastPlan> plan = BroadcastPlan::Make(a_batch, b_batch);
  if (!plan.ok()) return ctx.Error(plan.status().message());
  s.a_batch_of = plan->OperandOffsets(0);
  s.b_batch_of = plan->OperandOffsets(1);
  s.out_dims = plan->output_dims();
  if (a.rank() > 1) s.out_dims.push_back(s.m);
  if (b.rank() > 1) s.out_dims.push_back(s.n);
  return s;
}

// A zero point or scale given per tensor, per row of A (per column of B), or per row of each
// batch ([..., M, 1] / [..., 1, N]); expanded to one value per (operand batch, row).
absl::StatusOr<std::vector<double>> ExpandParameter(const KernelContext& ctx, const Tensor* t,
                                                    int64_t batches, int64_t rows,
                                                    double fallback) {
  std::vector<double> values(batches * rows, fallback);
  if (t == nullptr) return values;
  const int64_t count = t->numel();
  for (int64_t i = 0; i < batches * rows; ++i) {
    if (count == 1) {
      values[i] = t->GetAsDouble(0);
    } else if (count == rows && t->rank() == 1) {
      values[i] = t->GetAsDouble(i % rows);
    } else if (count == batches * rows) {
      values[i] = t->GetAsDouble(i);
    } else {
      return ctx.Error("a zero point or scale has ", count, " values, expected 1 or ", rows);
    }
  }
  return values;
}

// Element i of an int8 or uint8 tensor.
int32_t ByteAt(const Tensor& t, int64_t i) {
  return t.type() == DataType::kInt8 ? int32_t{t.data<int8_t>()[i]} : int32_t{t.data<uint8_t>()[i]};
}

// acc[batch, m, n] = sum_k (a - a_zero) * (b - b_zero), exactly, in 32-bit integers.
absl::StatusOr<std::vector<int32_t>> IntegerProduct(const KernelContext& ctx, const Tensor& a,
                                                    const Tensor& b, const Tensor* a_zero,
                                                    const Tensor* b_zero, const ProductShape& s,
                                                    ThreadPool* pool) {
  if (!IsEightBit(a.type()) || !IsEightBit(b.type())) {
    return ctx.Error("operands must be int8 or uint8, got ", TypeName(a.type()), " and ",
                     TypeName(b.type()));
  }
  if ((a_zero && a_zero->type() != a.type()) || (b_zero && b_zero->type() != b.type())) {
    return ctx.Error("zero point types differ from the operands'");
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> a_zeros,
                         ExpandParameter(ctx, a_zero, s.a_batches, s.m, 0.0));
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> b_zeros,
                         ExpandParameter(ctx, b_zero, s.b_batches, s.n, 0.0));
  if (IntegerConvVnniAvailable()) {
    IntegerMatMulShape shape{s.m, s.k, s.n, s.a_batches, s.b_batches, s.a_batch_of, s.b_batch_of};
    std::vector<int32_t> acc(s.a_batch_of.size() * s.m * s.n);
    IntegerMatMulVnni(a, b, std::vector<int32_t>(a_zeros.begin(), a_zeros.end()),
                      std::vector<int32_t>(b_zeros.begin(), b_zeros.end()), shape, acc.data(),
                      pool);
    return acc;
  }
  // Both operands widened with the zero points taken off and packed for the int16 GEMM.
  std::vector<PackedQuantA> a_packed(s.a_batches);
  for (int64_t batch = 0; batch < s.a_batches; ++batch) {
    const int64_t base = batch * s.m * s.k;
    const double* zeros = a_zeros.data() + batch * s.m;
    a_packed[batch].Pack(s.m, s.k, [&](int64_t row, int64_t p) {
      return static_cast<int16_t>(ByteAt(a, base + row * s.k + p) -
                                  static_cast<int32_t>(zeros[row]));
    });
  }
  const int nr = CurrentQuantGemmKernel().nr;
  const int64_t pairs = (s.k + 1) / 2, b_size = QuantPackedBSize(pairs, nr, s.n);
  std::vector<int16_t> b_packed(s.b_batches * b_size, 0);
  for (int64_t batch = 0; batch < s.b_batches; ++batch) {
    int16_t* packed = b_packed.data() + batch * b_size;
    for (int64_t p = 0; p < s.k; ++p) {
      for (int64_t col = 0; col < s.n; ++col) {
        packed[QuantPackedBIndex(pairs, nr, p, col)] =
            static_cast<int16_t>(ByteAt(b, (batch * s.k + p) * s.n + col) -
                                 static_cast<int32_t>(b_zeros[batch * s.n + col]));
      }
    }
  }
  const int64_t batches = static_cast<int64_t>(s.a_batch_of.size());
  std::vector<int32_t> acc(batches * s.m * s.n, 0);
  for (int64_t batch = 0; batch < batches; ++batch) {
    QuantGemm(a_packed[s.a_batch_of[batch]], b_packed.data() + s.b_batch_of[batch] * b_size, s.n,
              acc.data() + batch * s.m * s.n, s.n, pool);
  }
  return acc;
}

const Tensor* OptionalInput(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

absl::Status MatMulInteger(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Error("needs inputs A and B");
  OVFIX_ASSIGN_OR_RETURN(ProductShape s, MakeProductShape(ctx, ctx.input(0), ctx.input(1)));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int32_t> acc,
                         IntegerProduct(ctx, ctx.input(0), ctx.input(1), OptionalInput(ctx, 2),
                                        OptionalInput(ctx, 3), s, ctx.pool));
  Tensor& y = ctx.Output(0, DataType::kInt32, s.out_dims);
  std::copy(acc.begin(), acc.end(), y.data<int32_t>());
  return absl::OkStatus();
}

// Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
absl::Status QLinearMatMul(KernelContext& ctx) {
  OVFIX_RETURN_IF_ERROR(RequireInputs(ctx, 8));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor& y_scale = ctx.input(6);
  const Tensor& y_zero = ctx.input(7);
  if (y_scale.numel() != 1 || y_zero.numel() != 1) {
    return ctx.Error("y_scale and y_zero_point must be scalars");
  }
  if (!IsEightBit(y_zero.type())) return ctx.Error("unsupported output type");
  OVFIX_ASSIGN_OR_RETURN(ProductShape s, MakeProductShape(ctx, a, b));
  OVFIX_ASSIGN_OR_RETURN(std::vector<int32_t> acc,
                         IntegerProduct(ctx, a, b, &ctx.input(2), &ctx.input(5), s, ctx.pool));
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> a_scales,
                         ExpandParameter(ctx, &ctx.input(1), s.a_batches, s.m, 1.0));
  OVFIX_ASSIGN_OR_RETURN(std::vector<double> b_scales,
                         ExpandParameter(ctx, &ctx.input(4), s.b_batches, s.n, 1.0));
  const float output_scale = static_cast<float>(y_scale.GetAsDouble(0));
  const int32_t output_zero = static_cast<int32_t>(y_zero.GetAsInt64(0));
  if (!(output_scale != 0)) return ctx.Error("y_scale must not be zero");
  Tensor& y = ctx.Output(0, y_zero.type(), s.out_dims);
  const int64_t m = std::max<int64_t>(s.m, 1), n = std::max<int64_t>(s.n, 1);
  ParallelFor(ctx.pool, static_cast<int64_t>(acc.size()), 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t batch = i / (m * n), row = i / n % m, col = i % n;
      const float multiplier = RequantizeMultiplier(
          static_cast<float>(a_scales[s.a_batch_of[batch] * s.m + row]),
          static_cast<float>(b_scales[s.b_batch_of[batch] * s.n + col]), output_scale);
      const float value = static_cast<float>(acc[i]) * multiplier;
      if (y.type() == DataType::kUint8) {
        y.data<uint8_t>()[i] = Quantize<uint8_t>(value, output_zero);
      } else {
        y.data<int8_t>()[i] = Quantize<int8_t>(value, output_zero);
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace

void AddQuantizeKernels(std::vector<KernelDef>& table) {
  table.push_back({"", "QuantizeLinear", 10, kLatestOpset, QuantizeLinear, Float16Mode::kAsFloat});
  table.push_back(
      {"", "DequantizeLinear", 10, kLatestOpset, DequantizeLinear, Float16Mode::kAsFloat});
  table.push_back({"", "DynamicQuantizeLinear", 11, kLatestOpset, DynamicQuantizeLinear,
                   Float16Mode::kAsFloat});
  table.push_back({"", "MatMulInteger", 10, kLatestOpset, MatMulInteger, Float16Mode::kAsFloat});
  table.push_back({"", "QLinearMatMul", 10, kLatestOpset, QLinearMatMul, Float16Mode::kAsFloat});
  AddQLinearConvKernels(table);
}

}  // namespace ovfix::exec
