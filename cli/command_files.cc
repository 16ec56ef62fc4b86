#include "cli/command_files.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/atomic_file.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

void AddTensorFiles(const fs::path& folder, std::vector<std::string>& out) {
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".pb") out.push_back(it->path().string());
  }
}

}  // namespace

std::string FirstTestDataSet(const std::string& folder, int* sets) {
  if (sets != nullptr) *sets = 0;
  std::vector<std::string> here;
  AddTensorFiles(folder, here);
  if (!here.empty()) {
    if (sets != nullptr) *sets = 1;
    return folder;
  }
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) &&
        absl::StartsWith(it->path().filename().string(), "test_data_set_")) {
      found.push_back(it->path().string());
    }
  }
  if (found.empty()) return folder;
  std::sort(found.begin(), found.end());
  if (sets != nullptr) *sets = static_cast<int>(found.size());
  return found[0];
}

void CommandFiles::Read(const std::string& path, const std::string& what) {
  reads_.push_back({path, what});
}

void CommandFiles::ReadModel(const std::string& path, const Model& model, const std::string& what) {
  Read(path, what);
  for (const std::string& data : model.external_data_files()) {
    Read(data, absl::StrCat("the external data of ", path));
  }
}

void CommandFiles::ReadTestData(const std::string& folder, const std::string& what) {
  std::vector<std::string> files;
  AddTensorFiles(folder, files);
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (absl::StartsWith(it->path().filename().string(), "test_data_set_")) {
      AddTensorFiles(it->path(), files);
    }
  }
  for (const std::string& f : files) Read(f, what);
}

void CommandFiles::Write(const std::string& path, const std::string& what, bool makes_folder) {
  writes_.push_back({{path, what}, false, {}, makes_folder});
}

void CommandFiles::WriteInPlace(const std::string& path, const std::string& what,
                                const std::vector<std::string>& replaces) {
  writes_.push_back({{path, what}, true, replaces, false});
}

namespace {

// Why `path` cannot be written, or "" when it can be (as far as can be known before
// writing: the folder exists and is writable, the path is not a folder).
std::string WriteProblem(const std::string& path, bool makes_folder) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "is a folder, not a file name";
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (makes_folder) {
    while (!fs::exists(folder, ec) && folder.has_parent_path() && folder != folder.parent_path()) {
      folder = folder.parent_path();
    }
    if (folder.empty()) folder = ".";
  }
  if (!fs::exists(folder, ec)) {
    return absl::StrCat("cannot be written: the folder ", folder.string(), " does not exist");
  }
  if (!fs::is_directory(folder, ec)) {
    return absl::StrCat("cannot be written: ", folder.string(), " is not a folder");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    return absl::StrCat("cannot be written: no permission to write in ", folder.string());
  }
  return "";
}

}  // namespace

absl::Status CommandFiles::Check() const {
  auto refuse = [](const File& out, const std::string& problem) {
    return absl::InvalidArgumentError(absl::StrCat(out.path, ": ", out.what, " ", problem));
  };
  for (size_t i = 0; i < writes_.size(); ++i) {
    const Output& w = writes_[i];
    std::error_code ec;
    if (std::string problem = WriteProblem(w.file.path, w.makes_folder); !problem.empty()) {
      return refuse(w.file, problem);
    }
    if (!w.in_place && fs::is_symlink(fs::symlink_status(w.file.path, ec))) {
      return refuse(w.file, absl::StrCat("is a symbolic link (to ", WriteTarget(w.file.path),
                                         "): name the file itself"));
    }
    for (const File& r : reads_) {
      if (!SameFile(w.file.path, r.path)) continue;
      if (std::none_of(w.replaces.begin(), w.replaces.end(),
                       [&](const std::string& p) { return SameFile(p, r.path); })) {
        return refuse(w.file, absl::StrCat("would overwrite ", r.what, " (", r.path, ")"));
      }
    }
    for (size_t j = 0; j < i; ++j) {
      const File& other = writes_[j].file;
      if (SameFile(w.file.path, other.path)) {
        return refuse(w.file, absl::StrCat("would overwrite ", other.what, " (", other.path, ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace ovfix::converter
