#include "rules/embedded_files.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace ovfix {
// Generated from rules/builtin and rules/targets (rules/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& RuleFileSources();
}  // namespace ovfix

namespace ovfix::rules {

std::span<const EmbeddedFile> EmbeddedFiles() {
  static const std::vector<EmbeddedFile> files = [] {
    std::vector<EmbeddedFile> out;
    for (const auto& [path, contents] : RuleFileSources()) out.push_back({path, contents});
    return out;  // already sorted by path
  }();
  return files;
}

const EmbeddedFile* FindEmbeddedFile(std::string_view path) {
  for (const EmbeddedFile& f : EmbeddedFiles()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<std::string> BuiltinTargetNames() {
  constexpr std::string_view kFolder = "targets/", kExtension = ".target";
  std::vector<std::string> names;
  for (const EmbeddedFile& f : EmbeddedFiles()) {
    if (!f.path.starts_with(kFolder) || !f.path.ends_with(kExtension)) continue;
    const std::string_view name = f.path.substr(kFolder.size());
    names.emplace_back(name.substr(0, name.size() - kExtension.size()));
  }
  // Paths sort '-' before '.': "a-b.target" comes before "a.target", names the other way.
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ovfix::rules
