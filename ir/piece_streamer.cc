#include "ir/piece_streamer.h"

#include <algorithm>

namespace ovfix {

PieceStreamer::PieceStreamer(size_t piece_bytes) : piece_bytes_(std::max<size_t>(piece_bytes, 1)) {}

PieceStreamer::~PieceStreamer() {
  if (!helper_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  helper_.join();
}

void PieceStreamer::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return job_waiting_ || stop_; });
    if (stop_) return;
    job_waiting_ = false;
    const Buffer* buffer = job_buffer_;
    const size_t offset = job_offset_, length = job_length_;
    std::byte* out = pieces_[job_slot_].data();
    lock.unlock();
    buffer->Read(offset, length, out);
    lock.lock();
    job_made_ = true;
    changed_.notify_all();
  }
}

void PieceStreamer::Start(const Buffer& buffer, size_t offset, size_t length, int slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_buffer_ = &buffer;
    job_offset_ = offset;
    job_length_ = length;
    job_slot_ = slot;
    job_made_ = false;
    job_waiting_ = true;
  }
  if (!helper_.joinable()) helper_ = std::thread([this] { Loop(); });
  changed_.notify_all();
}

void PieceStreamer::WaitMade() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return job_made_; });
}

bool PieceStreamer::Stream(const Buffer& buffer,
                           const std::function<bool(const std::byte*, size_t)>& sink) {
  const size_t total = buffer.size();
  if (total == 0) return true;
  for (std::vector<std::byte>& piece : pieces_) {
    if (piece.size() < piece_bytes_) piece.resize(piece_bytes_);
  }
  size_t length = std::min(piece_bytes_, total);
  buffer.Read(0, length, pieces_[0].data());
  int slot = 0;
  for (size_t offset = 0; offset < total;) {
    const size_t next = offset + length;
    const size_t next_length = std::min(piece_bytes_, total - next);
    if (next < total) Start(buffer, next, next_length, 1 - slot);
    const bool taken = sink(pieces_[slot].data(), length);
    if (next < total) WaitMade();
    if (!taken) return false;
    offset = next;
    length = next_length;
    slot = 1 - slot;
  }
  return true;
}

}  // namespace ovfix
