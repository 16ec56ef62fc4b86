// External data (weights stored beside the model file): resolving a TensorProto's
// external_data entries to a mapped view, with the checks that keep a model from reading
// outside its folder or past the end of a file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ir/mapped_file.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

struct ExternalDataRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: to the end of the file
};

absl::StatusOr<ExternalDataRef> ParseExternalData(const onnx::TensorProto& proto);

// Maps external data files once each, by location.
class ExternalDataFiles {
 public:
  explicit ExternalDataFiles(std::string base_dir) : base_dir_(std::move(base_dir)) {}
  // A view of `bytes` bytes of the tensor's external data.
  absl::StatusOr<std::shared_ptr<Buffer>> Resolve(const onnx::TensorProto& proto, size_t bytes);
  // Resolves the data file at `path` (as ExternalDataPath gives it) to `file`: a file still
  // being written under another name.
  void Provide(const std::string& path, std::shared_ptr<const MappedFile> file) {
    files_[path] = std::move(file);
  }
  // The files resolved so far, sorted.
  std::vector<std::string> paths() const;

 private:
  std::string base_dir_;
  absl::flat_hash_map<std::string, std::shared_ptr<const MappedFile>> files_;
};

// Checks that `location` is relative and stays inside `base_dir`; returns the full path.
absl::StatusOr<std::string> ExternalDataPath(const std::string& base_dir,
                                             const std::string& location);

}  // namespace ovfix
