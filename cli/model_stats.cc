#include "cli/model_stats.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "ir/graph_walk.h"

namespace ovfix::converter {

ModelStats MeasureModel(const Model& model) {
  ModelStats s;
  for (Graph* g : GraphsRecursive(const_cast<Graph&>(model.graph()))) {
    for (const Node* n : g->nodes()) {
      ++s.nodes;
      const bool default_domain = n->domain().empty() || n->domain() == "ai.onnx";
      ++s.ops[default_domain ? n->op_type() : absl::StrCat(n->domain(), "::", n->op_type())];
    }
    for (const Value* v : g->initializers()) {
      s.weight_bytes += static_cast<int64_t>(v->tensor().nbytes());
    }
  }
  return s;
}

int64_t FileBytes(const std::string& path, const std::vector<std::string>& data_files) {
  std::error_code ec;
  int64_t total = 0;
  for (const std::string& f : data_files) {
    const auto n = std::filesystem::file_size(f, ec);
    if (ec) return -1;
    total += static_cast<int64_t>(n);
  }
  const auto n = std::filesystem::file_size(path, ec);
  if (ec) return -1;
  return total + static_cast<int64_t>(n);
}

}  // namespace ovfix::converter
