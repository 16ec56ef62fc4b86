#include "converter/activation_store.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "ir/mapped_file.h"
#include "ir/status_macros.h"

namespace ovfix::converter {
namespace {

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

// An unlinked file in the temporary folder: nothing is left behind whatever ends the process.
absl::StatusOr<int> OpenUnlinkedFile(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // A file system without O_TMPFILE: a named file, unlinked at once.
  std::string name = (std::filesystem::path(dir) / "ovfix_activations_XXXXXX").string();
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat(dir, ": cannot create a temporary file: ", std::strerror(errno)));
  }
  ::unlink(name.c_str());
  return fd;
}

absl::Status WriteAt(int fd, const std::byte* data, size_t size, uint64_t offset,
                     const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::UnavailableError(
          absl::StrCat(path, ": cannot write a temporary file: ", std::strerror(errno)));
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

ActivationStore::~ActivationStore() {
  if (fd_ >= 0) ::close(fd_);  // the maps of tensors still held keep the file alive
}

bool ActivationStore::Movable(const Tensor& t) {
  const std::shared_ptr<Buffer>& b = t.buffer();
  return t.type() != DataType::kString && b != nullptr && !b->is_file_view() && !b->is_pending() &&
         b->size() == t.nbytes();
}

void ActivationStore::Recount() {
  memory_bytes_ = 0;
  for (auto it = memory_.begin(); it != memory_.end();) {
    if (it->second.buffer.expired()) {
      memory_.erase(it++);
    } else {
      memory_bytes_ += it->second.bytes;
      ++it;
    }
  }
}

Tensor ActivationStore::Keep(Tensor t) {
  if (!Movable(t)) return t;
  const Buffer* key = t.buffer().get();
  if (auto it = memory_.find(key); it != memory_.end() && !it->second.buffer.expired()) return t;
  const size_t bytes = t.buffer()->size();
  if (memory_bytes_ + bytes > budget_) Recount();
  if (memory_bytes_ + bytes > budget_ && bytes >= kSmallestMoved) {
    absl::StatusOr<Tensor> moved = MoveToFile(t);
    if (moved.ok()) {
      moved_bytes_ += static_cast<int64_t>(bytes);
      return *std::move(moved);
    }
  }
  memory_[key] = Held{t.buffer(), bytes};
  memory_bytes_ += bytes;
  return t;
}

absl::StatusOr<uint64_t> ActivationStore::Allocate(size_t capacity, size_t& region) {
  // Regions whose tensor is let go: their pages are given back (no writeback of bytes nobody
  // reads), and the smallest free one that fits is used again.
  size_t best = regions_.size();
  for (size_t i = 0; i < regions_.size(); ++i) {
    Region& r = regions_[i];
    if (!r.free && r.view.expired()) {
      ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(r.offset),
                  static_cast<off_t>(r.capacity));
      r.free = true;
    }
    if (r.free && r.capacity >= capacity &&
        (best == regions_.size() || r.capacity < regions_[best].capacity)) {
      best = i;
    }
  }
  if (best == regions_.size()) {
    regions_.push_back(Region{end_, capacity, {}, true});
    end_ += capacity;
  }
  region = best;
  regions_[best].free = false;
  return regions_[best].offset;
}

absl::StatusOr<Tensor> ActivationStore::MoveToFile(const Tensor& t) {
  if (fd_ < 0) {
    path_ = std::filesystem::temp_directory_path().string();
    OVFIX_ASSIGN_OR_RETURN(fd_, OpenUnlinkedFile(path_));
  }
  const size_t bytes = t.nbytes();
  const size_t page = PageSize();
  const size_t capacity = (bytes + page - 1) / page * page;
  size_t region = 0;
  OVFIX_ASSIGN_OR_RETURN(const uint64_t offset, Allocate(capacity, region));
  OVFIX_RETURN_IF_ERROR(WriteAt(fd_, static_cast<const std::byte*>(t.raw()), bytes, offset, path_));
  OVFIX_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> map,
                         MappedFile::MapRegion(fd_, offset, bytes, path_));
  regions_[region].view = map;
  return Tensor(t.type(), t.dims(), Buffer::View(std::move(map), 0, bytes));
}

}  // namespace ovfix::converter
