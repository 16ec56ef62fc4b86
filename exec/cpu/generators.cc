// Kernels that build tensors from shapes or indices (ConstantOfShape, Range, EyeLike, OneHot,
// NonZero), select or reorder elements (Trilu, Compress, ReverseSequence, Unique) and shuffle
// between depth and space (DepthToSpace, SpaceToDepth).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cpu/data_movement.h"
#include "exec/cpu/native_kernels.h"
#include "exec/kernel.h"
#include "ir/float16.h"
#include "ir/narrow_types.h"
#include "ir/status_macros.h"
#include "ir/type_list.h"

namespace ovfix::exec {

namespace {

using namespace data_movement;  // NOLINT: the group's shared vocabulary

// Copies `count` elements of `from` starting at `from_at` to `to` at `to_at`.
void CopyElements(const Tensor& from, int64_t from_at, Tensor& to, int64_t to_at, int64_t count) {
  VisitStorage(from.type(), [&]<typename T>() {
    const T* src = Elements<T>(from) + from_at;
    std::copy(src, src + count, MutableElements<T>(to) + to_at);
  });
}

absl::Status ConstantOfShape(KernelContext& ctx) {
  const std::vector<int64_t> dims = ToInt64s(ctx.input(0));
  Tensor value = data_movement::ScalarOfType(DataType::kFloat, 0.0);
  if (ctx.node.HasAttribute("value")) {
    absl::StatusOr<Tensor> attribute = ctx.node.GetTensor("value");
    if (!attribute.ok()) return ctx.Error("value: ", attribute.status().message());
    if (attribute->numel() != 1) return ctx.Error("value must hold exactly one element");
    value = *std::move(attribute);
  }
  const bool packed = IsPacked(value.type());  // int4, uint4, float4e2m1, int2, uint2
  if (!packed) OVFIX_RETURN_IF_ERROR(CheckStorage(ctx, value.type()));
  if (!IsAllocatable(dims, value.type())) return ctx.Error("bad or too large shape");
  Tensor& y = ctx.Output(0, value.type(), dims);
  if (packed) {
    // Whole bytes of the repeated element, then the elements of a last partial byte (its
    // unused bits stay zero).
    const DataType type = value.type();
    const int32_t element = GetPackedElement(type, value.raw(), 0);
    const int64_t per_byte = 8 / BitsPerElement(type);
    unsigned char pattern = 0;
    for (int64_t i = 0; i < per_byte; ++i) SetPackedElement(type, &pattern, i, element);
    const int64_t whole = y.numel() / per_byte;
    std::fill_n(static_cast<unsigned char*>(y.raw()), whole, pattern);
    for (int64_t i = whole * per_byte; i < y.numel(); ++i) {
      SetPackedElement(type, y.raw(), i, element);
    }
    return absl::OkStatus();
  }
  VisitStorage(value.type(), [&]<typename T>() {
    std::fill_n(MutableElements<T>(y), y.numel(), Elements<T>(value)[0]);
  });
  return absl::OkStatus();
}

template <typename T>
absl::Status RangeTyped(KernelContext& ctx) {
  const T start = ctx.input(0).data<T>()[0];
  const T limit = ctx.input(1).data<T>()[0];
  const T delta = ctx.input(2).data<T>()[0];
  if (delta == 0) return ctx.Error("delta is 0");
  constexpr int64_t kMaxCount = int64_t{1} << 36;
  int64_t n = 0;
  if constexpr (std::is_floating_point_v<T>) {
    const double count = std::ceil((static_cast<double>(limit) - start) / delta);
    if (count > kMaxCount) return ctx.Error("too many elements");
    n = count > 0 ? static_cast<int64_t>(count) : 0;  // NaN gives 0
  } else {
    const __int128 diff = static_cast<__int128>(limit) - start;
    __int128 count = 0;
    if (delta > 0 && diff > 0) count = (diff + delta - 1) / delta;
    if (delta < 0 && diff < 0) count = (diff + delta + 1) / delta;
    if (count > kMaxCount) return ctx.Error("too many elements");
    n = static_cast<int64_t>(count);
  }
  T* y = ctx.Output(0, ctx.input(0).type(), {n}).template data<T>();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      y[i] = start + static_cast<T>(i) * delta;
    } else {  // every value lies between start and limit, but i * delta may not fit in T
      y[i] = static_cast<T>(start + static_cast<__int128>(i) * delta);
    }
  }
  return absl::OkStatus();
}

absl::Status Range(KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i) || ctx.input(i).numel() != 1) {
      return ctx.Error("start, limit and delta must be scalars");
    }
    if (ctx.input(i).type() != ctx.input(0).type()) return ctx.Error("inputs differ in type");
  }
  switch (ctx.input(0).type()) {
    case DataType::kFloat:
      return RangeTyped<float>(ctx);
    case DataType::kDouble:
      return RangeTyped<double>(ctx);
    case DataType::kInt16:
      return RangeTyped<int16_t>(ctx);
    case DataType::kInt32:
      return RangeTyped<int32_t>(ctx);
    case DataType::kInt64:
      return RangeTyped<int64_t>(ctx);
    default:
      return ctx.Error("unsupported element type");
  }
}

// 1 where element i is not zero (-0.0 is zero, NaN is not; strings: not empty).
std::vector<uint8_t> NonZeroMask(const Tensor& x) {
  std::vector<uint8_t> mask(static_cast<size_t>(x.numel()));
  const int64_t n = x.numel();
  switch (x.type()) {
    case DataType::kFloat:
      for (int64_t i = 0; i < n; ++i) mask[i] = x.data<float>()[i] != 0.0f;
      break;
    case DataType::kDouble:
      for (int64_t i = 0; i < n; ++i) mask[i] = x.data<double>()[i] != 0.0;
      break;
    case DataType::kFloat16:
    case DataType::kBfloat16:
      for (int64_t i = 0; i < n; ++i) mask[i] = (x.data<uint16_t>()[i] & 0x7fff) != 0;
      break;
    case DataType::kString:
      for (int64_t i = 0; i < n; ++i) mask[i] = !x.strings()[i].empty();
      break;
    default: {  // integers and bool: any set byte
      const size_t size = ElementSize(x.type());
      const auto* bytes = static_cast<const unsigned char*>(x.raw());
      for (int64_t i = 0; i < n; ++i) {
        mask[i] = std::any_of(bytes + i * size, bytes + (i + 1) * size,
                              [](unsigned char b) { return b != 0; });
      }
    }
  }
  return mask;
}

absl::Status NonZero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!StorageSupported(x.type())) return ctx.Error("unsupported element type");
  const std::vector<uint8_t> mask = NonZeroMask(x);
  const int64_t nnz = std::count(mask.begin(), mask.end(), 1);
  // A scalar counts as one dim of size 1, as numpy does.
  const std::vector<int64_t> dims = x.rank() == 0 ? std::vector<int64_t>{1} : x.dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t* y = ctx.Output(0, DataType::kInt64, {rank, nnz}).data<int64_t>();
  std::vector<int64_t> coords(rank, 0);
  for (int64_t i = 0, k = 0; i < x.numel(); ++i) {
    if (mask[i]) {
      for (int64_t d = 0; d < rank; ++d) y[d * nnz + k] = coords[d];
      ++k;
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coords[d] < dims[d]) break;
      coords[d] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status OneHot(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& depth_tensor = ctx.input(1);
  const Tensor& values = ctx.input(2);
  if (depth_tensor.numel() != 1) return ctx.Error("depth must be a scalar");
  const double depth_value = depth_tensor.GetAsDouble(0);
  if (!(depth_value >= 0 && depth_value <= double{1 << 30})) {
    return ctx.Error("depth ", depth_value, " out of range");
  }
  const int64_t depth = static_cast<int64_t>(depth_value);
  if (values.numel() != 2) return ctx.Error("values must hold [off_value, on_value]");
  if (!StorageSupported(values.type())) return ctx.Error("unsupported element type");
  const int64_t rank = static_cast<int64_t>(indices.rank());
  int64_t axis = ctx.node.GetInt("axis", -1);
  if (axis < -rank - 1 || axis > rank) return ctx.Error("axis ", axis, " out of range");
  if (axis < 0) axis += rank + 1;
  std::vector<int64_t> out_dims = indices.dims();
  out_dims.insert(out_dims.begin() + axis, depth);
  if (!IsAllocatable(out_dims, values.type())) return ctx.Error("output too large");
  Tensor& y = ctx.Output(0, values.type(), out_dims);
  const int64_t inner = Product(indices.dims(), axis, indices.rank());
  VisitStorage(values.type(), [&]<typename T>() {
    const T* off_on = Elements<T>(values);
    T* dst = MutableElements<T>(y);
    std::fill_n(dst, y.numel(), off_on[0]);
    for (int64_t p = 0; p < indices.numel(); ++p) {
      // Indices in [-depth, depth) count from the end when negative; others stay all off.
      double v = indices.GetAsDouble(p);
      if (!(v >= -depth && v < depth)) continue;
      int64_t k = static_cast<int64_t>(v);
      if (k < 0) k += depth;
      dst[((p / inner) * depth + k) * inner + p % inner] = off_on[1];
    }
  });
  return absl::OkStatus();
}

absl::Status Trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) return ctx.Error("input must have rank >= 2");
  if (!StorageSupported(x.type())) return ctx.Error("unsupported element type");
  int64_t k = 0;
  if (ctx.has_input(1)) {
    if (ctx.input(1).numel() != 1) return ctx.Error("k must be a scalar");
    k = ctx.input(1).GetAsInt64(0);
  }
  const bool upper = ctx.node.GetInt("upper", 1) != 0;
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  k = std::clamp<int64_t>(k, -rows - 1, cols + 1);  // beyond these nothing changes
  Tensor& y = ctx.Output(0, x.type(), x.dims());    // zero-filled: the removed part
  const int64_t matrices = Product(x.dims(), 0, x.rank() - 2);
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      // upper keeps j - i >= k, lower keeps j - i <= k.
      const int64_t begin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      const int64_t end = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      const int64_t row = (m * rows + i) * cols;
      if (end > begin) CopyElements(x, row + begin, y, row + begin, end - begin);
    }
  }
  return absl::OkStatus();
}

absl::Status EyeLike(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) return ctx.Error("input must be 2-D");
  DataType type = x.type();
  if (ctx.node.HasAttribute("dtype")) {
    const int64_t dtype = ctx.node.GetInt("dtype", 0);
    if (!IsKnownDataType(static_cast<int32_t>(dtype))) return ctx.Error("unknown dtype ", dtype);
    type = static_cast<DataType>(dtype);
  }
  const Tensor one = data_movement::ScalarOfType(type, 1.0);
  if (!one.defined() || type == DataType::kString) {
    return ctx.Error("unsupported element type");
  }
  const int64_t k = ctx.node.GetInt("k", 0);
  Tensor& y = ctx.Output(0, type, x.dims());
  for (int64_t i = 0; i < x.dim(0); ++i) {
    if (k >= -i && k < x.dim(1) - i) CopyElements(one, 0, y, i * x.dim(1) + i + k, 1);
  }
  return absl::OkStatus();
}

// x viewed as [outer, n, inner] around the node's `axis` attribute (made non-negative), or as
// one run of all its elements when the node has none (Compress and Unique then work on the
// flattened tensor).
struct AxisRuns {
  bool has_axis = false;
  int64_t axis = 0, outer = 1, n = 0, inner = 1;
};

absl::StatusOr<AxisRuns> RunsAroundAxis(const KernelContext& ctx, const Tensor& x) {
  AxisRuns r;
  r.n = x.numel();
  r.has_axis = ctx.node.HasAttribute("axis");
  r.axis = ctx.node.GetInt("axis", 0);
  if (!r.has_axis) return r;
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (r.axis < -rank || r.axis >= rank) return ctx.Error("axis ", r.axis, " out of range");
  if (r.axis < 0) r.axis += rank;
  r.outer = Product(x.dims(), 0, r.axis);
  r.n = x.dim(r.axis);
  r.inner = Product(x.dims(), r.axis + 1, x.rank());
  return r;
}

// Output 0: the slices of x at `picked` along the axis, in that order.
void TakeSlices(KernelContext& ctx, const Tensor& x, const AxisRuns& r,
                const std::vector<int64_t>& picked) {
  const int64_t count = static_cast<int64_t>(picked.size());
  std::vector<int64_t> dims = {count};
  if (r.has_axis) {
    dims = x.dims();
    dims[r.axis] = count;
  }
  Tensor& y = ctx.Output(0, x.type(), dims);
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t s = 0; s < count; ++s) {
      CopyElements(x, (o * r.n + picked[s]) * r.inner, y, (o * count + s) * r.inner, r.inner);
    }
  }
}

absl::Status Compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& condition = ctx.input(1);
  if (!StorageSupported(x.type())) return ctx.Error("unsupported element type");
  if (condition.rank() != 1) return ctx.Error("condition must be 1-D");
  OVFIX_ASSIGN_OR_RETURN(const AxisRuns r, RunsAroundAxis(ctx, x));
  // A condition shorter than the axis drops the rest; a longer one may only add falses.
  std::vector<int64_t> selected;
  for (int64_t k = 0; k < condition.numel(); ++k) {
    if (condition.GetAsDouble(k) == 0) continue;
    if (k >= r.n) return ctx.Error("condition selects index ", k, " beyond the axis");
    selected.push_back(k);
  }
  TakeSlices(ctx, x, r, selected);
  return absl::OkStatus();
}

// DepthToSpace and SpaceToDepth are transposes of 6-D views; `offsets` walks the output's
// 6-D view and says where each index reads in the input.
absl::Status ShuffleByOffsets(KernelContext& ctx, const std::vector<int64_t>& out_dims,
                              std::vector<std::vector<int64_t>> offsets) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.Output(0, x.type(), out_dims);
  data_movement::CopyByOffsets(x, std::move(offsets), nullptr, y, ctx.pool);
  return absl::OkStatus();
}

std::vector<int64_t> Arithmetic(int64_t n, int64_t stride) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i * stride;
  return v;
}

// The input of DepthToSpace and SpaceToDepth: blocksize b and a 4-D [n, c, h, w] of a storable
// type.
struct BlockInput {
  int64_t b, n, c, h, w;
};

absl::StatusOr<BlockInput> ReadBlockInput(const KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 4) return ctx.Error("input must be 4-D");
  if (!StorageSupported(x.type())) return ctx.Error("unsupported element type");
  return BlockInput{ctx.node.GetInt("blocksize", 0), x.dim(0), x.dim(1), x.dim(2), x.dim(3)};
}

absl::Status DepthToSpace(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const BlockInput in, ReadBlockInput(ctx));
  const auto [b, n, c, h, w] = in;
  if (b <= 0 || c % (b * b) != 0) return ctx.Error("channels ", c, " not divisible by blocksize^2");
  const std::string mode = ctx.node.GetString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return ctx.Error("unknown mode '", mode, "'");
  const int64_t oc = c / (b * b);
  // Output viewed as [n, oc, h, b1, w, b2]. DCR reads input channel (b1 * b + b2) * oc + oc_i,
  // CRD reads oc_i * b * b + b1 * b + b2.
  const int64_t plane = h * w;
  const bool dcr = mode == "DCR";
  return ShuffleByOffsets(ctx, {n, oc, h * b, w * b},
                          {Arithmetic(n, c * plane), Arithmetic(oc, (dcr ? 1 : b * b) * plane),
                           Arithmetic(h, w), Arithmetic(b, (dcr ? b * oc : b) * plane),
                           Arithmetic(w, 1), Arithmetic(b, (dcr ? oc : 1) * plane)});
}

absl::Status SpaceToDepth(KernelContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const BlockInput in, ReadBlockInput(ctx));
  const auto [b, n, c, h, w] = in;
  if (b <= 0 || h % b != 0 || w % b != 0) {
    return ctx.Error("spatial dims ", h, "x", w, " not divisible by blocksize ", b);
  }
  // Output viewed as [n, b1, b2, c, h / b, w / b]; reads input [n, c, h' * b + b1, w' * b + b2].
  return ShuffleByOffsets(ctx, {n, c * b * b, h / b, w / b},
                          {Arithmetic(n, c * h * w), Arithmetic(b, w), Arithmetic(b, 1),
                           Arithmetic(c, h * w), Arithmetic(h / b, b * w), Arithmetic(w / b, b)});
}

absl::Status ReverseSequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) return ctx.Error("input must have rank >= 2");
  if (!StorageSupported(x.type())) return ctx.Error("unsupported element type");
  const int64_t time_axis = ctx.node.GetInt("time_axis", 0);
  const int64_t batch_axis = ctx.node.GetInt("batch_axis", 1);
  if (!((time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0))) {
    return ctx.Error("time_axis and batch_axis must be 0 and 1");
  }
  const int64_t steps = x.dim(time_axis), batch = x.dim(batch_axis);
  const std::vector<int64_t> lengths = ToInt64s(ctx.input(1));
  if (static_cast<int64_t>(lengths.size()) != batch) {
    return ctx.Error("sequence_lens has ", lengths.size(), " entries for a batch of ", batch);
  }
  for (int64_t len : lengths) {
    if (len < 0 || len > steps) return ctx.Error("sequence length ", len, " out of range");
  }
  const int64_t inner = Product(x.dims(), 2, x.rank());
  Tensor& y = ctx.Output(0, x.type(), x.dims());
  auto at = [&](int64_t t, int64_t b) {
    return (time_axis == 0 ? t * batch + b : b * steps + t) * inner;
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t from = t < lengths[b] ? lengths[b] - 1 - t : t;
      CopyElements(x, at(from, b), y, at(t, b), inner);
    }
  }
  return absl::OkStatus();
}

struct UniqueSlices {
  std::vector<int64_t> first;    // per unique slice (output order): its first input index
  std::vector<int64_t> inverse;  // per input slice: its unique slice
  std::vector<int64_t> counts;   // per unique slice
};

// Slice k of x (viewed as [outer, n, inner]) is x[:, k, :]; slices compare lexicographically.
template <typename K>
UniqueSlices FindUnique(const K* x, int64_t outer, int64_t n, int64_t inner, bool sorted) {
  auto compare = [&](int64_t a, int64_t b) {  // <0, 0, >0
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const K& va = x[(o * n + a) * inner + i];
        const K& vb = x[(o * n + b) * inner + i];
        if (va < vb) return -1;
        if (vb < va) return 1;
      }
    }
    return 0;
  };
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Stable, so the first of each run of equal slices is its first occurrence.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  UniqueSlices u;
  u.inverse.resize(n);
  for (int64_t p = 0; p < n; ++p) {
    if (p == 0 || compare(order[p - 1], order[p]) != 0) {
      u.first.push_back(order[p]);
      u.counts.push_back(0);
    }
    u.inverse[order[p]] = static_cast<int64_t>(u.first.size()) - 1;
    ++u.counts.back();
  }
  if (!sorted) {  // renumber the groups by first occurrence
    std::vector<int64_t> by_first(u.first.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return u.first[a] < u.first[b]; });
    std::vector<int64_t> rank(by_first.size());
    UniqueSlices r;
    for (size_t g = 0; g < by_first.size(); ++g) {
      rank[by_first[g]] = static_cast<int64_t>(g);
      r.first.push_back(u.first[by_first[g]]);
      r.counts.push_back(u.counts[by_first[g]]);
    }
    for (int64_t& g : u.inverse) g = rank[g];
    r.inverse = std::move(u.inverse);
    return r;
  }
  return u;
}

std::vector<float> HalvesToFloats(const Tensor& x, float (*convert)(uint16_t)) {
  std::vector<float> v(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = convert(x.data<uint16_t>()[i]);
  return v;
}

absl::Status Unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool sorted = ctx.node.GetInt("sorted", 1) != 0;
  OVFIX_ASSIGN_OR_RETURN(const AxisRuns r, RunsAroundAxis(ctx, x));
  UniqueSlices u;
  auto find = [&](const auto* keys) { u = FindUnique(keys, r.outer, r.n, r.inner, sorted); };
  if (x.type() == DataType::kString) {
    find(x.strings().data());
  } else if (x.type() == DataType::kFloat16) {
    find(HalvesToFloats(x, HalfBitsToFloat).data());
  } else if (x.type() == DataType::kBfloat16) {
    find(HalvesToFloats(x, Bfloat16BitsToFloat).data());
  } else if (!VisitType(x.type(), kNumericTypes + kBoolTypes,
                        [&](auto tag) { find(x.data<typename decltype(tag)::type>()); })) {
    return ctx.Error("unsupported element type");
  }
  TakeSlices(ctx, x, r, u.first);
  const std::vector<int64_t>* extra[] = {&u.first, &u.inverse, &u.counts};
  for (size_t i = 1; i < ctx.outputs.size() && i < 4; ++i) {
    const std::vector<int64_t>& v = *extra[i - 1];
    Tensor& t = ctx.Output(i, DataType::kInt64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
  }
  return absl::OkStatus();
}

}  // namespace

void AddGeneratorKernels(std::vector<KernelDef>& table) {
  AddNativeKernels(table, {{"ConstantOfShape", 9, ConstantOfShape},
                           {"Range", 11, Range},
                           {"NonZero", 9, NonZero},
                           {"OneHot", 9, OneHot},
                           {"Trilu", 14, Trilu},
                           {"EyeLike", 9, EyeLike},
                           {"Compress", 9, Compress},
                           {"DepthToSpace", 1, DepthToSpace},
                           {"SpaceToDepth", 1, SpaceToDepth},
                           {"ReverseSequence", 10, ReverseSequence},
                           {"Unique", 11, Unique}});
}

}  // namespace ovfix::exec
