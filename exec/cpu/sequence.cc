// Sequence and optional ops (value kernels, see exec/cpu/control_flow.h) and the tensor
// slicing/stacking helpers they share with Loop and Scan. All work on any element type by
// bytes (strings element by element).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "exec/cpu/control_flow.h"
#include "ir/narrow_types.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) n *= dims[i];
  return n;
}

// Copies `count` elements from src[src_at] to dst[dst_at] (element offsets); packed sub-byte
// elements (int4, uint4, float4e2m1, int2, uint2) one at a time, so that Scan and Loop slices
// and stacks and the sequence ops move them too.
void CopyElements(const Tensor& src, int64_t src_at, Tensor& dst, int64_t dst_at, int64_t count) {
  if (count <= 0) return;
  if (src.type() == DataType::kString) {
    for (int64_t i = 0; i < count; ++i) dst.strings()[dst_at + i] = src.strings()[src_at + i];
    return;
  }
  if (IsPacked(src.type())) {  // sub-byte elements: one at a time, by value
    for (int64_t i = 0; i < count; ++i) {
      SetPackedElement(dst.type(), dst.raw(), dst_at + i,
                       GetPackedElement(src.type(), src.raw(), src_at + i));
    }
    return;
  }
  const size_t element = ElementSize(src.type());
  std::memcpy(static_cast<std::byte*>(dst.raw()) + dst_at * element,
              static_cast<const std::byte*>(src.raw()) + src_at * element, count * element);
}

Tensor NewLike(DataType type, std::vector<int64_t> dims) {
  if (type == DataType::kString) {
    const int64_t n = Tensor::NumElements(dims);
    return Tensor(std::move(dims), std::vector<std::string>(n));
  }
  return Tensor(type, std::move(dims));
}

// Normalizes a possibly negative axis against `rank`; -1 when out of [-rank, rank).
int64_t NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < 0) axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

Tensor ScalarInt64(int64_t v) { return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {v}); }

absl::StatusOr<const RuntimeValue::Sequence*> SequenceInput(const ValueContext& ctx, size_t i) {
  if (!ctx.has_input(i) || !ctx.input(i).is_sequence()) {
    return ctx.Error("input ", i, " must be a sequence");
  }
  return ctx.input(i).sequence.get();
}

// A position input (int32/int64 scalar) checked against [-size, size - 1 + extra].
absl::StatusOr<int64_t> PositionInput(const ValueContext& ctx, size_t i, int64_t size,
                                      int64_t fallback, int64_t extra) {
  if (!ctx.has_input(i)) return fallback;
  OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.TensorInput(i));
  if (t->numel() != 1) return ctx.Error("position must be a scalar");
  int64_t p = t->GetAsInt64(0);
  if (p < -size || p > size - 1 + extra) {
    return ctx.Error("position ", p, " out of range for a sequence of ", size);
  }
  return p < 0 ? p + size : p;
}

absl::Status SequenceEmptyKernel(ValueContext& ctx) {
  ctx.outputs[0] = RuntimeValue::FromSequence({});
  return absl::OkStatus();
}

absl::Status SequenceConstructKernel(ValueContext& ctx) {
  RuntimeValue::Sequence items;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.TensorInput(i));
    if (!items.empty() && t->type() != items[0].type()) {
      return ctx.Error("sequence elements differ in element type");
    }
    items.push_back(*t);
  }
  ctx.outputs[0] = RuntimeValue::FromSequence(std::move(items));
  return absl::OkStatus();
}

absl::Status SequenceInsertKernel(ValueContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const RuntimeValue::Sequence* seq, SequenceInput(ctx, 0));
  OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.TensorInput(1));
  const int64_t size = static_cast<int64_t>(seq->size());
  OVFIX_ASSIGN_OR_RETURN(int64_t at, PositionInput(ctx, 2, size, size, 1));
  if (size > 0 && (*seq)[0].type() != t->type()) {
    return ctx.Error("inserted tensor's element type differs from the sequence's");
  }
  RuntimeValue::Sequence items = *seq;
  items.insert(items.begin() + at, *t);
  ctx.outputs[0] = RuntimeValue::FromSequence(std::move(items));
  return absl::OkStatus();
}

absl::Status SequenceAtKernel(ValueContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const RuntimeValue::Sequence* seq, SequenceInput(ctx, 0));
  if (!ctx.has_input(1)) return ctx.Error("position is required");
  OVFIX_ASSIGN_OR_RETURN(int64_t at, PositionInput(ctx, 1, seq->size(), 0, 0));
  ctx.outputs[0] = RuntimeValue((*seq)[at]);
  return absl::OkStatus();
}

absl::Status SequenceEraseKernel(ValueContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const RuntimeValue::Sequence* seq, SequenceInput(ctx, 0));
  const int64_t size = static_cast<int64_t>(seq->size());
  if (size == 0) return ctx.Error("cannot erase from an empty sequence");
  OVFIX_ASSIGN_OR_RETURN(int64_t at, PositionInput(ctx, 1, size, size - 1, 0));
  RuntimeValue::Sequence items = *seq;
  items.erase(items.begin() + at);
  ctx.outputs[0] = RuntimeValue::FromSequence(std::move(items));
  return absl::OkStatus();
}

absl::Status SequenceLengthKernel(ValueContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const RuntimeValue::Sequence* seq, SequenceInput(ctx, 0));
  ctx.outputs[0] = RuntimeValue(ScalarInt64(static_cast<int64_t>(seq->size())));
  return absl::OkStatus();
}

absl::Status SplitToSequenceKernel(ValueContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const Tensor* input, ctx.TensorInput(0));
  const Tensor& t = *input;
  const int64_t axis = NormalizeAxis(ctx.node.GetInt("axis", 0), t.rank());
  if (axis < 0) return ctx.Error("axis out of range for ", DescribeTensor(t));
  const int64_t length = t.dim(axis);
  RuntimeValue::Sequence items;
  if (!ctx.has_input(1)) {
    const bool keepdims = ctx.node.GetInt("keepdims", 1) != 0;
    for (int64_t i = 0; i < length; ++i) {
      if (keepdims) {
        items.push_back(SliceAxis(t, axis, i, i + 1));
      } else {
        absl::StatusOr<Tensor> part = TakeAlongAxis(t, axis, i);
        if (!part.ok()) return ctx.Error(part.status().message());
        items.push_back(std::move(*part));
      }
    }
  } else {
    OVFIX_ASSIGN_OR_RETURN(const Tensor* split, ctx.TensorInput(1));
    std::vector<int64_t> sizes;
    if (split->rank() == 0) {
      const int64_t chunk = split->GetAsInt64(0);
      if (chunk <= 0) return ctx.Error("split must be positive");
      for (int64_t at = 0; at < length; at += chunk) sizes.push_back(std::min(chunk, length - at));
    } else {
      for (int64_t i = 0; i < split->numel(); ++i) {
        sizes.push_back(split->GetAsInt64(i));
        if (sizes.back() < 0) return ctx.Error("split sizes must not be negative");
      }
      if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != length) {
        return ctx.Error("split sizes do not add up to dim ", length);
      }
    }
    int64_t at = 0;
    for (int64_t size : sizes) {
      items.push_back(SliceAxis(t, axis, at, at + size));
      at += size;
    }
  }
  ctx.outputs[0] = RuntimeValue::FromSequence(std::move(items));
  return absl::OkStatus();
}

absl::Status ConcatFromSequenceKernel(ValueContext& ctx) {
  OVFIX_ASSIGN_OR_RETURN(const RuntimeValue::Sequence* seq, SequenceInput(ctx, 0));
  if (seq->empty()) return ctx.Error("cannot concatenate an empty sequence");
  const bool new_axis = ctx.node.GetInt("new_axis", 0) != 0;
  const int64_t rank = static_cast<int64_t>((*seq)[0].rank());
  const int64_t axis = NormalizeAxis(ctx.node.GetInt("axis", 0), rank + (new_axis ? 1 : 0));
  if (axis < 0) return ctx.Error("axis out of range");
  absl::StatusOr<Tensor> out = new_axis ? StackOnNewAxis(*seq, axis) : ConcatOnAxis(*seq, axis);
  if (!out.ok()) return ctx.Error(out.status().message());
  ctx.outputs[0] = RuntimeValue(std::move(*out));
  return absl::OkStatus();
}

absl::Status OptionalKernel(ValueContext& ctx) {
  ctx.outputs[0] = ctx.has_input(0) ? ctx.input(0) : RuntimeValue::None();
  return absl::OkStatus();
}

absl::Status OptionalHasElementKernel(ValueContext& ctx) {
  const bool has = ctx.has_input(0) && ctx.input(0).is_set() && !ctx.input(0).is_none();
  ctx.outputs[0] =
      RuntimeValue(Tensor::FromVector<uint8_t>(DataType::kBool, {}, {static_cast<uint8_t>(has)}));
  return absl::OkStatus();
}

absl::Status OptionalGetElementKernel(ValueContext& ctx) {
  if (!ctx.has_input(0) || ctx.input(0).is_none() || !ctx.input(0).is_set()) {
    return ctx.Error("the optional is empty");
  }
  ctx.outputs[0] = ctx.input(0);
  return absl::OkStatus();
}

}  // namespace

const std::vector<ValueKernelEntry>& SequenceValueKernels() {
  static const std::vector<ValueKernelEntry> kEntries = {
      {"SequenceEmpty", 11, SequenceEmptyKernel},
      {"SequenceConstruct", 11, SequenceConstructKernel},
      {"SequenceInsert", 11, SequenceInsertKernel},
      {"SequenceAt", 11, SequenceAtKernel},
      {"SequenceErase", 11, SequenceEraseKernel},
      {"SequenceLength", 11, SequenceLengthKernel},
      {"SplitToSequence", 11, SplitToSequenceKernel},
      {"ConcatFromSequence", 11, ConcatFromSequenceKernel},
      {"Optional", 15, OptionalKernel},
      {"OptionalHasElement", 15, OptionalHasElementKernel},
      {"OptionalGetElement", 15, OptionalGetElementKernel},
  };
  return kEntries;
}

absl::StatusOr<Tensor> TakeAlongAxis(const Tensor& t, int64_t axis, int64_t index) {
  if (axis < 0 || axis >= (int64_t)t.rank()) return absl::InvalidArgumentError("axis out of range");
  if (index < 0 || index >= t.dim(axis)) return absl::InvalidArgumentError("index out of range");
  std::vector<int64_t> dims = t.dims();
  dims.erase(dims.begin() + axis);
  Tensor out = NewLike(t.type(), dims);
  const int64_t outer = Product(t.dims(), 0, axis);
  const int64_t inner = Product(t.dims(), axis + 1, t.rank());
  const int64_t extent = t.dim(axis);
  for (int64_t o = 0; o < outer; ++o) {
    CopyElements(t, (o * extent + index) * inner, out, o * inner, inner);
  }
  return out;
}

Tensor SliceAxis(const Tensor& t, int64_t axis, int64_t begin, int64_t end) {
  std::vector<int64_t> dims = t.dims();
  dims[axis] = end - begin;
  Tensor out = NewLike(t.type(), dims);
  const int64_t outer = Product(t.dims(), 0, axis);
  const int64_t inner = Product(t.dims(), axis + 1, t.rank());
  const int64_t extent = t.dim(axis);
  for (int64_t o = 0; o < outer; ++o) {
    CopyElements(t, (o * extent + begin) * inner, out, o * dims[axis] * inner, dims[axis] * inner);
  }
  return out;
}

absl::StatusOr<Tensor> StackOnNewAxis(const std::vector<Tensor>& parts, int64_t axis) {
  if (parts.empty()) return absl::InvalidArgumentError("nothing to stack");
  const Tensor& first = parts[0];
  if (axis < 0 || axis > (int64_t)first.rank()) {
    return absl::InvalidArgumentError("stack axis out of range");
  }
  for (const Tensor& p : parts) {
    if (p.type() != first.type() || p.dims() != first.dims()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot stack ", DescribeTensor(p), " with ", DescribeTensor(first)));
    }
  }
  std::vector<int64_t> dims = first.dims();
  const int64_t count = static_cast<int64_t>(parts.size());
  dims.insert(dims.begin() + axis, count);
  Tensor out = NewLike(first.type(), dims);
  const int64_t outer = Product(first.dims(), 0, axis);
  const int64_t inner = Product(first.dims(), axis, first.rank());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      CopyElements(parts[k], o * inner, out, (o * count + k) * inner, inner);
    }
  }
  return out;
}

absl::StatusOr<Tensor> ConcatOnAxis(const std::vector<Tensor>& parts, int64_t axis) {
  if (parts.empty()) return absl::InvalidArgumentError("nothing to concatenate");
  const Tensor& first = parts[0];
  if (axis < 0 || axis >= (int64_t)first.rank()) {
    return absl::InvalidArgumentError("concat axis out of range");
  }
  std::vector<int64_t> dims = first.dims();
  dims[axis] = 0;
  for (const Tensor& p : parts) {
    bool same = p.type() == first.type() && p.rank() == first.rank();
    for (size_t d = 0; same && d < p.rank(); ++d) {
      same = (int64_t)d == axis || p.dim(d) == first.dim(d);
    }
    if (!same) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot concatenate ", DescribeTensor(p), " with ", DescribeTensor(first)));
    }
    dims[axis] += p.dim(axis);
  }
  Tensor out = NewLike(first.type(), dims);
  const int64_t outer = Product(dims, 0, axis);
  const int64_t inner = Product(dims, axis + 1, dims.size());
  int64_t offset = 0;
  for (const Tensor& p : parts) {
    const int64_t block = p.dim(axis) * inner;
    for (int64_t o = 0; o < outer; ++o) {
      CopyElements(p, o * block, out, o * dims[axis] * inner + offset, block);
    }
    offset += block;
  }
  return out;
}

}  // namespace ovfix::exec
