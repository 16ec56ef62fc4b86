#include "exec/buffer_recycler.h"

#include <cstring>

namespace ovfix::exec {

std::shared_ptr<Buffer> BufferRecycler::Take(size_t bytes, bool zero) {
  std::shared_ptr<Buffer> buffer;
  if (bytes > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      buffer = std::move(it->second.back());
      it->second.pop_back();
      free_bytes_ -= bytes;
    }
  }
  if (buffer == nullptr) return Buffer::Allocate(bytes, zero);
  if (zero) std::memset(buffer->data(), 0, bytes);
  return buffer;
}

void BufferRecycler::Give(Tensor& t) {
  std::shared_ptr<Buffer> buffer = t.buffer();
  t = Tensor();
  // A slice (a value made inside a Concat's output) is never kept itself: handed out again
  // it would alias whatever its whole holds by then. Its whole is, once this was the last
  // thing holding it.
  if (buffer != nullptr && buffer->whole() != nullptr) {
    if (buffer.use_count() != 1) return;
    std::shared_ptr<Buffer> whole = buffer->whole();
    buffer.reset();
    buffer = std::move(whole);
  }
  // Recycled only when no other tensor views it: `buffer` is then its one holder.
  if (buffer == nullptr || buffer.use_count() != 1 || buffer->is_file_view() ||
      buffer->owned_string() != nullptr || buffer->size() == 0) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_bytes_ + buffer->size() > max_bytes_) return;
  free_bytes_ += buffer->size();
  free_[buffer->size()].push_back(std::move(buffer));
}

}  // namespace ovfix::exec
