// A private folder per fuzzer process for the files a target reads and writes. The loaders
// under test take paths (LoadModel maps external data next to the model, ReadTensorFile opens
// a file), so the input goes through a real file rather than a parse from memory: that is the
// code users run. The folder is in /dev/shm when there is one (on a disk, the file system and
// not the code under test sets the pace), else in $TMPDIR or /tmp. Each process (libFuzzer's
// -fork and -jobs start several) gets its own folder, removed when the process exits normally.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace ovfix::fuzz {

class ScratchFolder {
 public:
  static ScratchFolder& Get() {
    static ScratchFolder* folder = new ScratchFolder();  // never destroyed: atexit removes it
    return *folder;
  }

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  // Replaces `name` with the bytes. Aborts when the scratch file cannot be written: a fuzzer
  // that silently tests nothing is worse than one that stops.
  std::string Write(const std::string& name, const uint8_t* data, size_t size) const {
    const std::string file = File(name);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    return file;
  }

  // Removes everything a run left (outputs, external data files) except the folder itself.
  void Clear() const {
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(path_, ignored)) {
      std::filesystem::remove_all(entry.path(), ignored);
    }
  }

 private:
  ScratchFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp != nullptr && *tmp ? tmp : "/tmp";
    if (::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    std::string pattern = base + "/ovfix-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(Get().path_, ignored);
    });
  }

  std::string path_;
};

}  // namespace ovfix::fuzz
