#include "ir/tensor.h"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/float16.h"
#include "ir/mapped_file.h"
#include "ir/narrow_types.h"
#include "ir/type_list.h"

namespace ovfix {

namespace {

// Bytes of memory the machine has. An allocation beyond it cannot be used even when the
// kernel's overcommit grants it: filling it would end in the OOM killer, not in bad_alloc.
size_t PhysicalMemory() {
  static const size_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page)
                                 : std::numeric_limits<size_t>::max();
  }();
  return bytes;
}

}  // namespace

std::shared_ptr<Buffer> Buffer::Allocate(size_t bytes, bool zero) {
  if (bytes > PhysicalMemory()) throw std::bad_alloc();
  std::shared_ptr<Buffer> b(new Buffer());
  b->size_ = bytes;
  if (bytes > 0) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    b->data_ = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
    if (b->data_ == nullptr) throw std::bad_alloc();
    if (zero) std::memset(b->data_, 0, rounded);
    b->aligned_alloc_ = true;
  }
  return b;
}

std::shared_ptr<Buffer> Buffer::FromString(std::string&& bytes) {
  std::shared_ptr<Buffer> b(new Buffer());
  b->string_ = std::make_unique<std::string>(std::move(bytes));
  b->data_ = reinterpret_cast<std::byte*>(b->string_->data());
  b->size_ = b->string_->size();
  return b;
}

std::shared_ptr<Buffer> Buffer::View(std::shared_ptr<const MappedFile> file, size_t offset,
                                     size_t size) {
  assert(offset + size <= file->size());
  std::shared_ptr<Buffer> b(new Buffer());
  // The map is read-only; kernels never write through a view (views back initializers).
  b->data_ = const_cast<std::byte*>(file->data()) + offset;
  b->size_ = size;
  if (file->progress() != nullptr) b->lazy_ = std::make_unique<LazyState>();
  b->file_ = std::move(file);
  return b;
}

std::shared_ptr<Buffer> Buffer::Lazy(size_t size, Producer produce) {
  std::shared_ptr<Buffer> b(new Buffer());
  b->size_ = size;
  b->lazy_ = std::make_unique<LazyState>();
  b->lazy_->produce = std::move(produce);
  return b;
}

std::shared_ptr<Buffer> Buffer::Slice(std::shared_ptr<Buffer> whole, size_t offset, size_t size) {
  if (whole->whole_ != nullptr) {
    offset += static_cast<size_t>(whole->data() - whole->whole_->data());
    whole = whole->whole_;
  }
  assert(offset + size <= whole->size());
  std::shared_ptr<Buffer> b(new Buffer());
  b->data_ = whole->data() + offset;  // owned by `whole`: never freed here
  b->size_ = size;
  b->whole_ = std::move(whole);
  return b;
}

Buffer::~Buffer() {
  if (aligned_alloc_) std::free(data_);
}

void Buffer::Materialize() const {
  // Kernels may reach a constant from several threads at once.
  std::call_once(lazy_->made, [this] {
    if (!lazy_->produce) {
      // A view of a file being written: its bytes are awaited where they are mapped.
      file_->progress()->WaitFor(static_cast<uint64_t>(data_ - file_->data()) + size_);
    } else if (size_ > 0) {
      const size_t rounded = (size_ + 63) / 64 * 64;
      data_ = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
      if (data_ == nullptr) throw std::bad_alloc();
      aligned_alloc_ = true;
      lazy_->produce(0, size_, data_);
    }
    lazy_->ready.store(true, std::memory_order_release);
  });
}

bool Buffer::is_pending() const {
  return lazy_ != nullptr && lazy_->produce && !lazy_->ready.load(std::memory_order_acquire);
}

void Buffer::Read(size_t offset, size_t length, std::byte* out) const {
  assert(offset + length <= size_);
  if (is_pending()) {
    lazy_->produce(offset, length, out);
  } else if (length > 0) {
    if (lazy_ != nullptr) Materialize();  // awaits a view's bytes
    std::memcpy(out, data_ + offset, length);
  }
}

int64_t Tensor::NumElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Tensor::Tensor(DataType type, std::vector<int64_t> dims) : type_(type), dims_(std::move(dims)) {
  if (type_ == DataType::kString) {
    strings_.resize(static_cast<size_t>(numel()));
  } else {
    buffer_ = Buffer::Allocate(nbytes());
  }
}

Tensor Tensor::Uninitialized(DataType type, std::vector<int64_t> dims) {
  assert(type != DataType::kString);
  const size_t bytes = StorageBytes(type, NumElements(dims));
  return Tensor(type, std::move(dims), Buffer::Allocate(bytes, false));
}

Tensor::Tensor(DataType type, std::vector<int64_t> dims, std::shared_ptr<Buffer> buffer)
    : type_(type), dims_(std::move(dims)), buffer_(std::move(buffer)) {
  assert(!buffer_ || buffer_->size() >= nbytes());
}

Tensor::Tensor(std::vector<int64_t> dims, std::vector<std::string> strings)
    : type_(DataType::kString), dims_(std::move(dims)), strings_(std::move(strings)) {}

Tensor Tensor::Reshaped(std::vector<int64_t> dims) const {
  assert(NumElements(dims) == numel());
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::Clone() const {
  if (type_ == DataType::kString) return Tensor(dims_, strings_);
  Tensor t = Uninitialized(type_, dims_);
  if (nbytes() > 0) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

namespace {

// How element type T is held: bool as a byte (any non-zero byte reads as true).
template <typename T>
using Stored = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <typename T>
double ElementToDouble(Stored<T> x) {
  if constexpr (std::is_same_v<T, Half>)
    return HalfBitsToFloat(x.bits);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return Bfloat16BitsToFloat(x.bits);
  else if constexpr (std::is_same_v<T, bool>)
    return x != 0 ? 1.0 : 0.0;
  else
    return static_cast<double>(x);
}

template <typename T>
Stored<T> DoubleToElement(double v) {
  if constexpr (std::is_same_v<T, Half>)
    return {FloatToHalfBits(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, BFloat16>)
    return {FloatToBfloat16Bits(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, bool>)
    return v != 0 ? 1 : 0;
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(v);
  // Integers: clamped to the type's range, NaN to 0 (an out-of-range float-to-integer
  // conversion is undefined behaviour).
  else if (std::isnan(v))
    return 0;
  else if (v <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  else if (v >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  else
    return static_cast<T>(v);
}

}  // namespace

double Tensor::GetAsDouble(int64_t i) const {
  if (IsPacked(type_)) {
    const int32_t element = GetPackedElement(type_, raw(), i);
    return type_ == DataType::kFloat4E2M1 ? NarrowFloatToFloat(type_, static_cast<uint8_t>(element))
                                          : static_cast<double>(element);
  }
  if (IsNarrowFloat(type_)) return NarrowFloatToFloat(type_, data<uint8_t>()[i]);
  double v = 0.0;
  VisitType(type_, kStoredTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = ElementToDouble<T>(data<Stored<T>>()[i]);
  });
  return v;
}

void Tensor::SetFromDouble(int64_t i, double v) {
  // The narrow floats saturate (what a conversion into a format without room means here);
  // Cast's kernel chooses for itself.
  if (IsNarrowFloat(type_)) {
    const uint8_t code = FloatToNarrowFloat(type_, static_cast<float>(v), /*saturate=*/true);
    if (IsPacked(type_)) {
      SetPackedElement(type_, raw(), i, code);
    } else {
      data<uint8_t>()[i] = code;
    }
    return;
  }
  if (IsPacked(type_)) {
    const double clamped =
        std::isnan(v) ? 0.0
                      : std::clamp<double>(v, PackedIntegerMin(type_), PackedIntegerMax(type_));
    SetPackedElement(type_, raw(), i, static_cast<int32_t>(clamped));
    return;
  }
  VisitType(type_, kStoredTypes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    data<Stored<T>>()[i] = DoubleToElement<T>(v);
  });
}

int64_t Tensor::GetAsInt64(int64_t i) const {
  switch (type_) {
    case DataType::kInt64:
      return data<int64_t>()[i];
    case DataType::kInt32:
      return data<int32_t>()[i];
    case DataType::kUint64:
      return static_cast<int64_t>(data<uint64_t>()[i]);
    default:
      return static_cast<int64_t>(GetAsDouble(i));
  }
}

std::string DescribeTensor(const Tensor& t) {
  return absl::StrCat(std::string(DataTypeName(t.type())), "[", absl::StrJoin(t.dims(), ","), "]");
}

Tensor ConvertTensor(const Tensor& t, DataType to) {
  if (t.type() == to) return t;
  const int64_t n = t.numel();
  if (t.type() == DataType::kFloat && to == DataType::kFloat16) {
    Tensor out = Tensor::Uninitialized(to, t.dims());
    FloatsToHalves(t.data<float>(), out.data<uint16_t>(), n);
    return out;
  }
  if (t.type() == DataType::kFloat16 && to == DataType::kFloat) {
    Tensor out = Tensor::Uninitialized(to, t.dims());
    HalvesToFloats(t.data<uint16_t>(), out.data<float>(), n);
    return out;
  }
  Tensor out(to, t.dims());
  for (int64_t i = 0; i < n; ++i) out.SetFromDouble(i, t.GetAsDouble(i));
  return out;
}

Tensor ConvertTensorLazily(const Tensor& t, DataType to, size_t min_lazy_bytes) {
  const bool to_half = t.type() == DataType::kFloat && to == DataType::kFloat16;
  const bool to_float = t.type() == DataType::kFloat16 && to == DataType::kFloat;
  const size_t out_bytes = static_cast<size_t>(t.numel()) * ElementSize(to);
  if ((!to_half && !to_float) || out_bytes < min_lazy_bytes) return ConvertTensor(t, to);
  const size_t in_size = ElementSize(t.type()), out_size = ElementSize(to);
  // Holds `t` (and so its mapping) until the lazy tensor goes.
  Buffer::Producer produce = [t, to_half, in_size, out_size](size_t offset, size_t length,
                                                             std::byte* out) {
    const size_t first = offset / out_size;
    const size_t n = length / out_size;
    const std::byte* in = nullptr;
    std::vector<std::byte> unmade;  // `t` itself lazy: only this piece of it is made
    if (t.buffer()->is_pending()) {
      unmade.resize(n * in_size);
      t.buffer()->Read(first * in_size, n * in_size, unmade.data());
      in = unmade.data();
    } else {
      in = static_cast<const std::byte*>(t.raw()) + first * in_size;
    }
    if (to_half) {
      FloatsToHalves(reinterpret_cast<const float*>(in), reinterpret_cast<uint16_t*>(out),
                     static_cast<int64_t>(n));
    } else {
      HalvesToFloats(reinterpret_cast<const uint16_t*>(in), reinterpret_cast<float*>(out),
                     static_cast<int64_t>(n));
    }
  };
  return Tensor(to, t.dims(), Buffer::Lazy(out_bytes, std::move(produce)));
}

void Float16TensorToFloats(const Tensor& half, float* out) {
  const int64_t n = half.numel();
  if (half.buffer() == nullptr || !half.buffer()->is_pending()) {
    HalvesToFloats(half.data<uint16_t>(), out, n);
    return;
  }
  constexpr int64_t kPiece = 16 << 10;  // elements: the halves stay in L1/L2
  uint16_t piece[kPiece];
  for (int64_t i = 0; i < n; i += kPiece) {
    const int64_t count = std::min(kPiece, n - i);
    half.buffer()->Read(static_cast<size_t>(i) * 2, static_cast<size_t>(count) * 2,
                        reinterpret_cast<std::byte*>(piece));
    HalvesToFloats(piece, out + i, count);
  }
}

}  // namespace ovfix
