#include "converter/layer_precision_hints.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ovfix::converter {
namespace {

bool IsHalf(DataType t) { return t == DataType::kFloat16 || t == DataType::kBfloat16; }

bool ComputesHalf(const Graph& g) {
  for (const Node* n : g.nodes()) {
    for (const Value* o : n->outputs()) {
      if (o != nullptr && o->is_tensor() && IsHalf(o->elem_type())) return true;
    }
  }
  return false;
}

}  // namespace

LayerPrecisionHints MakeLayerPrecisionHints(Model& model) {
  LayerPrecisionHints hints;
  Graph& g = model.graph();
  if (!ComputesHalf(g)) return hints;
  absl::flat_hash_set<std::string> names;
  for (const Node* n : g.nodes()) names.insert(n->name());
  std::vector<std::string> precisions, output_types;
  int counter = 0;
  for (Node* n : g.nodes()) {
    if (n->op_type() == "Cast" || n->op_type() == "CastLike" || n->op_type() == "Constant") {
      continue;
    }
    bool single = false, half = false, all_float32 = true;
    for (const Value* o : n->outputs()) {
      if (o == nullptr || !o->is_tensor()) continue;
      single = single || o->elem_type() == DataType::kFloat;
      half = half || IsHalf(o->elem_type());
      all_float32 = all_float32 && o->elem_type() == DataType::kFloat;
    }
    if (!single || half) continue;
    if (n->name().empty()) {
      std::string name;
      do {
        name = absl::StrCat("ovfix_fp32_", n->op_type(), "_", counter++);
      } while (names.contains(name));
      names.insert(name);
      n->set_name(name);
      ++hints.named;
    }
    if (n->name().find_first_of(",:") != std::string::npos) {
      hints.unquotable.push_back(n->name());
      continue;
    }
    hints.fp32_nodes.push_back(n->name());
    precisions.push_back(absl::StrCat(n->name(), ":fp32"));
    // Output types only where every output is float32 (an index output has its own type).
    if (all_float32) {
      std::vector<std::string> types(n->outputs().size(), "fp32");
      output_types.push_back(absl::StrCat(n->name(), ":", absl::StrJoin(types, "+")));
    }
  }
  if (!precisions.empty()) {
    hints.layer_precisions = absl::StrCat("--layerPrecisions=", absl::StrJoin(precisions, ","));
  }
  if (!output_types.empty()) {
    hints.layer_output_types =
        absl::StrCat("--layerOutputTypes=", absl::StrJoin(output_types, ","));
  }
  return hints;
}

}  // namespace ovfix::converter
