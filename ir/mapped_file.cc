#include "ir/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace ovfix {

absl::StatusOr<std::shared_ptr<const MappedFile>> MappedFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would wait for a writer, forever; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    return absl::Status(
        err == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kInvalidArgument,
        absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  absl::Status mapped = file->Map(fd);
  ::close(fd);
  if (!mapped.ok()) return mapped;
  return std::shared_ptr<const MappedFile>(std::move(file));
}

absl::StatusOr<std::shared_ptr<const MappedFile>> MappedFile::MapBeingWritten(
    int fd, size_t size, const std::string& path, std::shared_ptr<const WriteProgress> progress) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = size;
  file->progress_ = std::move(progress);
  OVFIX_RETURN_IF_ERROR(file->Map(fd));
  return std::shared_ptr<const MappedFile>(std::move(file));
}

absl::StatusOr<std::shared_ptr<const MappedFile>> MappedFile::MapRegion(int fd, uint64_t offset,
                                                                        size_t size,
                                                                        const std::string& path) {
  if (offset % static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot map from offset ", offset, " (not page aligned)"));
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = size;
  OVFIX_RETURN_IF_ERROR(file->Map(fd, offset));
  return std::shared_ptr<const MappedFile>(std::move(file));
}

absl::Status MappedFile::Map(int fd, uint64_t offset) {
  if (size_ == 0) return absl::OkStatus();
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    return absl::InternalError(absl::StrCat(path_, ": cannot map: ", std::strerror(errno)));
  }
  data_ = static_cast<std::byte*>(p);
  return absl::OkStatus();
}

void WriteProgress::Advance(uint64_t written) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    written_ = written;
  }
  changed_.notify_all();
}

void WriteProgress::Finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  changed_.notify_all();
}

void WriteProgress::WaitFor(uint64_t end) const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return finished_ || written_ >= end; });
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace ovfix
