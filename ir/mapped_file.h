// A read-only memory map of a whole file, also of one still being written.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

namespace ovfix {

// How far the writer of a file has come, for readers of a map of it taken before the bytes
// are all there: a reader waits until the writer has passed the end of what it reads.
class WriteProgress {
 public:
  // Writer: bytes [0, written) are in the file.
  void Advance(uint64_t written);
  // Writer: done, or given up; no reader waits any more (past a failure they read what the
  // file holds, zeros where nothing was written).
  void Finish();
  // Reader: returns once bytes [0, end) are written, or the writer has finished.
  void WaitFor(uint64_t end) const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  uint64_t written_ = 0;
  bool finished_ = false;
};

class MappedFile {
 public:
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  // Maps the first `size` bytes of the open file `fd` (already that long), whose writer
  // reports to `progress`: views of it wait for their bytes (Buffer::View). `path` names it
  // in messages.
  static absl::StatusOr<std::shared_ptr<const MappedFile>> MapBeingWritten(
      int fd, size_t size, const std::string& path, std::shared_ptr<const WriteProgress> progress);
  // Maps bytes [offset, offset + size) of the open file `fd`, whose bytes are all written;
  // `offset` a multiple of the page size. `path` names it in messages.
  static absl::StatusOr<std::shared_ptr<const MappedFile>> MapRegion(int fd, uint64_t offset,
                                                                     size_t size,
                                                                     const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The writer's progress for a file mapped while written, else nullptr.
  const WriteProgress* progress() const { return progress_.get(); }

 private:
  MappedFile() = default;
  absl::Status Map(int fd, uint64_t offset = 0);
  std::shared_ptr<const WriteProgress> progress_;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace ovfix
