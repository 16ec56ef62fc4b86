// Tensor: an element type, dims, and bytes. The bytes live in a shared Buffer that either
// owns them (an aligned allocation, or a std::string moved out of a parsed protobuf so the
// weights are never copied), views a memory-mapped external-data file, or makes them on
// demand (a lazy buffer: converted weights that the saver streams to disk piece by piece).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ir/data_type.h"

namespace ovfix {

class MappedFile;

class Buffer {
 public:
  // 64-byte aligned; zero-initialized unless `zero` is false (for bytes about to be
  // overwritten whole). Throws std::bad_alloc when the memory cannot be had, also for more
  // bytes than the machine has (which overcommit would grant, to be killed when touched).
  static std::shared_ptr<Buffer> Allocate(size_t bytes, bool zero = true);
  // Takes the string's bytes without copying them.
  static std::shared_ptr<Buffer> FromString(std::string&& bytes);
  // A view of [offset, offset + size) of a mapped file; the file stays mapped while viewed.
  // Of a file still being written (MappedFile::progress), data() and Read() first wait until
  // the writer has passed the view's bytes.
  static std::shared_ptr<Buffer> View(std::shared_ptr<const MappedFile> file, size_t offset,
                                      size_t size);
  // Writes bytes [offset, offset + length) of a lazy buffer to `out`; both fall on element
  // boundaries of the tensor the buffer holds.
  using Producer = std::function<void(size_t offset, size_t length, std::byte* out)>;
  // Bytes made by `produce` when they are first needed. Read() hands out pieces without
  // keeping them (a saver streams a tensor to disk through a small buffer); data() makes all
  // of them once and keeps them, for readers that need the whole tensor in memory.
  static std::shared_ptr<Buffer> Lazy(size_t size, Producer produce);
  // Bytes [offset, offset + size) of `whole`, which stays alive while sliced: a tensor that
  // lives inside a larger one (the cpu executor's Concat without copies). A slice of a slice
  // views the first one's whole directly.
  static std::shared_ptr<Buffer> Slice(std::shared_ptr<Buffer> whole, size_t offset, size_t size);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::byte* data() {
    if (lazy_ != nullptr) [[unlikely]]
      Materialize();
    return data_;
  }
  const std::byte* data() const {
    if (lazy_ != nullptr) [[unlikely]]
      Materialize();
    return data_;
  }
  size_t size() const { return size_; }
  // Where the bytes are, without making or awaiting them (null while a lazy buffer is unmade):
  // tells buffers apart.
  const std::byte* address() const { return data_; }
  bool is_file_view() const { return file_ != nullptr; }
  // The buffer this one is a Slice of (never itself a slice); null for any other buffer.
  const std::shared_ptr<Buffer>& whole() const { return whole_; }
  // Whether the bytes are still to be made (data() has not been called on a lazy buffer).
  bool is_pending() const;
  // Copies bytes [offset, offset + length) to `out` (on element boundaries); a pending lazy
  // buffer produces them without keeping them.
  void Read(size_t offset, size_t length, std::byte* out) const;
  // The owned string when the buffer was made FromString (for handing the bytes back to a
  // protobuf message while saving), else nullptr.
  std::string* owned_string() { return string_.get(); }

 private:
  struct LazyState {
    Producer produce;  // empty for a view of a file being written: its bytes are awaited
    std::once_flag made;
    std::atomic<bool> ready = false;  // set once `made` has made the bytes
  };
  Buffer() = default;
  void Materialize() const;

  mutable std::byte* data_ = nullptr;
  size_t size_ = 0;
  mutable bool aligned_alloc_ = false;
  std::unique_ptr<std::string> string_;
  std::shared_ptr<const MappedFile> file_;
  std::unique_ptr<LazyState> lazy_;
  std::shared_ptr<Buffer> whole_;  // see Slice
};

class Tensor {
 public:
  Tensor() = default;
  // A new zero-filled tensor.
  Tensor(DataType type, std::vector<int64_t> dims);
  // A new tensor whose bytes the caller writes whole before reading any (not strings).
  static Tensor Uninitialized(DataType type, std::vector<int64_t> dims);
  // A tensor over existing bytes (buffer->size() must equal the tensor's byte size).
  Tensor(DataType type, std::vector<int64_t> dims, std::shared_ptr<Buffer> buffer);
  // A string tensor.
  Tensor(std::vector<int64_t> dims, std::vector<std::string> strings);

  template <typename T>
  static Tensor FromVector(DataType type, std::vector<int64_t> dims, const std::vector<T>& v);

  DataType type() const { return type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(size_t i) const { return dims_[i]; }
  int64_t numel() const { return NumElements(dims_); }
  size_t nbytes() const { return StorageBytes(type_, numel()); }
  bool defined() const { return type_ != DataType::kUndefined; }

  void* raw() { return buffer_ ? buffer_->data() : nullptr; }
  const void* raw() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(raw());
  }
  template <typename T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<size_t>(numel())};
  }

  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  std::vector<std::string>& strings() { return strings_; }
  const std::vector<std::string>& strings() const { return strings_; }

  // Same bytes, other dims (numel must match). No copy.
  Tensor Reshaped(std::vector<int64_t> dims) const;
  // A deep copy with its own buffer.
  Tensor Clone() const;

  // Element i as double / int64, whatever the element type (for shape arithmetic, tests).
  double GetAsDouble(int64_t i) const;
  // Writes element i of a numeric or bool tensor from a double: float types round, integers
  // truncate toward zero, clamped to their range (NaN gives 0), bool is v != 0. Other types
  // are left alone.
  void SetFromDouble(int64_t i, double v);
  int64_t GetAsInt64(int64_t i) const;

  static int64_t NumElements(const std::vector<int64_t>& dims);

 private:
  DataType type_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  std::shared_ptr<Buffer> buffer_;
  std::vector<std::string> strings_;
};

template <typename T>
Tensor Tensor::FromVector(DataType type, std::vector<int64_t> dims, const std::vector<T>& v) {
  Tensor t(type, std::move(dims));
  if (!v.empty()) std::memcpy(t.raw(), v.data(), std::min(t.nbytes(), v.size() * sizeof(T)));
  return t;
}

// "float[1,3,224,224]"
std::string DescribeTensor(const Tensor& t);

// The tensor with its elements converted to `to` (same tensor when already of that type).
// float <-> float16 take the fast bulk path of ir/float16.h; other numeric pairs convert
// through double.
Tensor ConvertTensor(const Tensor& t, DataType to);
// ConvertTensor for weights on their way to the output file: a float <-> float16 conversion
// of at least `min_lazy_bytes` comes back as a lazy tensor that reads `t` (a mapped weight
// stays mapped) and converts piece by piece when saved, so converted weights are never all
// in memory at once. Bytes are those of ConvertTensor.
Tensor ConvertTensorLazily(const Tensor& t, DataType to, size_t min_lazy_bytes = 1 << 20);
// A float copy of a float16 tensor in `out` (numel floats). A pending lazy tensor is read
// piece by piece, so it stays unmade.
void Float16TensorToFloats(const Tensor& half, float* out);

}  // namespace ovfix
