// A read-only memory map of a whole file.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ovfix {

class MappedFile {
 public:
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace ovfix
