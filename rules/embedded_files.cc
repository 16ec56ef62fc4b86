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

}  // namespace ovfix::rules
