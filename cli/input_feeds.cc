#include "cli/input_feeds.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "converter/data_inputs.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix::cli {

namespace fs = std::filesystem;

absl::StatusOr<exec::TensorMap> ReadFeeds(const Graph& graph, const std::string& folder,
                                          const std::vector<std::string>& specs,
                                          std::vector<std::string>* sources) {
  const std::vector<const Value*> fed = converter::DataInputs(graph);
  exec::TensorMap feeds;
  auto read = [&](const std::string& name, const std::string& file) -> absl::Status {
    absl::StatusOr<Tensor> t = ReadTensorFile(file);
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': ", t.status().message()));
    }
    feeds[name] = *std::move(t);
    if (sources != nullptr) sources->push_back(absl::StrCat(name, "=", file));
    return absl::OkStatus();
  };
  if (!folder.empty()) {
    if (!fs::is_directory(folder)) {
      return absl::NotFoundError(absl::StrCat("--test-data ", folder, " is not a folder"));
    }
    for (size_t k = 0; k < fed.size(); ++k) {
      const std::string file = (fs::path(folder) / absl::StrCat("input_", k, ".pb")).string();
      if (fs::exists(file)) OVFIX_RETURN_IF_ERROR(read(fed[k]->name(), file));
    }
  }
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--input '", spec, "' must be NAME=FILE.pb"));
    }
    const std::string name = spec.substr(0, eq);
    if (std::none_of(fed.begin(), fed.end(), [&](const Value* v) { return v->name() == name; })) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input ", name, ": the model has no input '", name, "'"));
    }
    OVFIX_RETURN_IF_ERROR(read(name, spec.substr(eq + 1)));
  }
  return feeds;
}

}  // namespace ovfix::cli
