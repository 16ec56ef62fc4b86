// Buffers of released intermediate tensors, kept by a session for the next tensors of the same
// byte size: in this run (a layer's output often has the size of an earlier one) and in later
// runs (the same sizes again). A new allocation of a large tensor is fresh pages from the
// kernel, which cost a page fault each and come zero-filled; a recycled buffer is warm.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ir/tensor.h"

namespace ovfix::exec {

class BufferRecycler {
 public:
  // Holds at most this many bytes of free buffers; a buffer that would pass it is freed.
  explicit BufferRecycler(size_t max_bytes = size_t{1} << 31) : max_bytes_(max_bytes) {}

  // A buffer of exactly `bytes` bytes: a free one of that size, else a new allocation. Its
  // contents are unspecified unless `zero`.
  std::shared_ptr<Buffer> Take(size_t bytes, bool zero);
  // Keeps `t`'s buffer for reuse when nothing else holds it and it is an allocation of ours
  // (not a view of a file or of a parsed protobuf; of a Buffer::Slice, its whole, once no
  // other slice or tensor holds that); `t` is left empty either way.
  void Give(Tensor& t);

  size_t free_bytes() const { return free_bytes_; }

 private:
  std::mutex mutex_;
  absl::flat_hash_map<size_t, std::vector<std::shared_ptr<Buffer>>> free_;
  size_t free_bytes_ = 0;
  size_t max_bytes_;
};

}  // namespace ovfix::exec
