#include "ir/external_data.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace ovfix {

absl::StatusOr<ExternalDataRef> ParseExternalData(const onnx::TensorProto& proto) {
  ExternalDataRef ref;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      ref.location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t n;
      if (!absl::SimpleAtoi(entry.value(), &n) || n < 0) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", proto.name(),
                                                       "': bad external data ", entry.key(), " '",
                                                       entry.value(), "'"));
      }
      (entry.key() == "offset" ? ref.offset : ref.length) = n;
    }
  }
  if (ref.location.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", proto.name(), "': external data without a location"));
  }
  return ref;
}

absl::StatusOr<std::string> ExternalDataPath(const std::string& base_dir,
                                             const std::string& location) {
  namespace fs = std::filesystem;
  const fs::path loc(location);
  if (loc.is_absolute() || location.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("external data location '", location,
                     "' is absolute; it must be relative to the model's folder"));
  }
  const fs::path normal = loc.lexically_normal();
  if (normal.empty() || *normal.begin() == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("external data location '", location, "' points outside the model's folder"));
  }
  const fs::path base = base_dir.empty() ? fs::path(".") : fs::path(base_dir);
  // Symbolic links must not lead out of the folder either.
  std::error_code ec;
  const fs::path real_base = fs::weakly_canonical(base, ec);
  const fs::path real_file = fs::weakly_canonical(base / normal, ec);
  if (!ec) {
    auto [b, f] =
        std::mismatch(real_base.begin(), real_base.end(), real_file.begin(), real_file.end());
    if (b != real_base.end()) {
      return absl::InvalidArgumentError(absl::StrCat("external data location '", location,
                                                     "' resolves outside the model's folder"));
    }
  }
  return (base / normal).string();
}

std::vector<std::string> ExternalDataFiles::paths() const {
  std::vector<std::string> out;
  for (const auto& [path, file] : files_) out.push_back(path);
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::shared_ptr<Buffer>> ExternalDataFiles::Resolve(const onnx::TensorProto& proto,
                                                                   size_t bytes) {
  OVFIX_ASSIGN_OR_RETURN(auto ref, ParseExternalData(proto));
  auto path = ExternalDataPath(base_dir_, ref.location);
  if (!path.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", proto.name(), "': ", path.status().message()));
  }
  auto it = files_.find(*path);
  if (it == files_.end()) {
    auto file = MappedFile::Open(*path);
    if (absl::IsNotFound(file.status())) {
      return absl::NotFoundError(absl::StrCat(
          "tensor '", proto.name(), "': missing external data file '", ref.location, "'"));
    }
    if (!file.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", proto.name(), "': external data file ", file.status().message()));
    }
    it = files_.emplace(*path, *std::move(file)).first;
  }
  const auto& file = it->second;
  const int64_t length =
      ref.length >= 0 ? ref.length : static_cast<int64_t>(file->size()) - ref.offset;
  if (ref.offset > static_cast<int64_t>(file->size()) ||
      length > static_cast<int64_t>(file->size()) - ref.offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", proto.name(), "': external data range [", ref.offset, ", ", ref.offset + length,
        ") is past the end of '", ref.location, "' (", file->size(), " bytes)"));
  }
  if (static_cast<size_t>(length) != bytes) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", proto.name(),
                                                   "': external data has ", length,
                                                   " bytes, its dims need ", bytes));
  }
  return Buffer::View(file, static_cast<size_t>(ref.offset), bytes);
}

}  // namespace ovfix
