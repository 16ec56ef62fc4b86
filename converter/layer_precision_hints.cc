#include "converter/layer_precision_hints.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ovfix::converter {
namespace {

bool IsHalf(DataType t) { return t == DataType::kFloat16 || t == DataType::kBfloat16; }

bool Computes(const Graph& g, DataType t) {
  for (const Node* n : g.nodes()) {
    for (const Value* o : n->outputs()) {
      if (o != nullptr && o->is_tensor() && o->elem_type() == t) return true;
    }
  }
  return false;
}

}  // namespace

LayerPrecisionHints MakeLayerPrecisionHints(Model& model) {
  LayerPrecisionHints hints;
  Graph& g = model.graph();
  const bool fp16 = Computes(g, DataType::kFloat16);
  if (!fp16 && !Computes(g, DataType::kBfloat16)) return hints;
  // An fp16 model's bf16 islands are pinned too: the builder's --fp16 --bf16 flags would let
  // TensorRT pick either type for them.
  absl::flat_hash_set<std::string> names;
  for (const Node* n : g.nodes()) names.insert(n->name());
  std::vector<std::string> precisions, output_types;
  int counter = 0;
  for (Node* n : g.nodes()) {
    if (n->op_type() == "Cast" || n->op_type() == "CastLike" || n->op_type() == "Constant") {
      continue;
    }
    bool single = false, half = false, bf16 = false, all_float32 = true, all_bf16 = true;
    for (const Value* o : n->outputs()) {
      if (o == nullptr || !o->is_tensor()) continue;
      single = single || o->elem_type() == DataType::kFloat;
      half = half || IsHalf(o->elem_type());
      bf16 = bf16 || o->elem_type() == DataType::kBfloat16;
      all_float32 = all_float32 && o->elem_type() == DataType::kFloat;
      all_bf16 = all_bf16 && o->elem_type() == DataType::kBfloat16;
    }
    const bool pin_bf16 = fp16 && bf16 && !single;
    if ((!single || half) && !pin_bf16) continue;
    const std::string type = pin_bf16 ? "bf16" : "fp32";
    if (n->name().empty()) {
      std::string name;
      do {
        name = absl::StrCat("ovfix_", type, "_", n->op_type(), "_", counter++);
      } while (names.contains(name));
      names.insert(name);
      n->set_name(name);
      ++hints.named;
    }
    if (n->name().find_first_of(",:") != std::string::npos) {
      hints.unquotable.push_back(n->name());
      continue;
    }
    (pin_bf16 ? hints.bf16_nodes : hints.fp32_nodes).push_back(n->name());
    precisions.push_back(absl::StrCat(n->name(), ":", type));
    // Output types only where every output is of that type (an index output has its own).
    if (pin_bf16 ? all_bf16 : all_float32) {
      std::vector<std::string> types(n->outputs().size(), type);
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
