// Streams a lazy buffer's bytes to a sink a piece at a time, making the next piece on a helper
// thread while the sink takes the current one. Saving a converted model this way overlaps the
// conversion of its weights with their write, whose time goes to the kernel copying them into
// new page-cache pages.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "ir/tensor.h"

namespace ovfix {

class PieceStreamer {
 public:
  explicit PieceStreamer(size_t piece_bytes = size_t{1} << 20);
  ~PieceStreamer();
  PieceStreamer(const PieceStreamer&) = delete;
  PieceStreamer& operator=(const PieceStreamer&) = delete;

  // Hands `sink` the bytes of `buffer` in order, a piece at a time (Buffer::Read: a pending
  // lazy buffer stays unmade); stops at the first piece the sink refuses (returns false).
  // Returns whether every piece was taken.
  bool Stream(const Buffer& buffer, const std::function<bool(const std::byte*, size_t)>& sink);

 private:
  // Makes [offset, offset + length) of `buffer` into pieces_[slot] on the helper thread.
  void Start(const Buffer& buffer, size_t offset, size_t length, int slot);
  void WaitMade();
  void Loop();

  const size_t piece_bytes_;
  std::vector<std::byte> pieces_[2];
  std::mutex mutex_;
  std::condition_variable changed_;
  // The helper's job, guarded by mutex_.
  const Buffer* job_buffer_ = nullptr;
  size_t job_offset_ = 0, job_length_ = 0;
  int job_slot_ = 0;
  bool job_waiting_ = false, job_made_ = false, stop_ = false;
  std::thread helper_;  // started with the first job
};

}  // namespace ovfix
