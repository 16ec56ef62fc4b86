#include "converter/bf16_opset.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/opset_conversion.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/op_schemas.h"
#include "ir/status_macros.h"
#include "onnx/defs/schema.h"
#include "rules/passes/bf16_island_rules.h"

namespace ovfix::converter {
namespace {

bool IsFloatNode(const Node& n) {
  for (const Value* v : n.inputs()) {
    if (rules::IsFloat32(v)) return true;
  }
  for (const Value* v : n.outputs()) {
    if (rules::IsFloat32(v)) return true;
  }
  return false;
}

// Whether onnx's schema of `n` at `opset` has no bfloat16 for its float data (outputs, first
// input), or has no such op at all (a later opset removed or renamed it).
bool LacksBfloat16(const Node& n, int64_t opset) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  if (!IsFloatNode(n) || n.op_type() == "Shape" || n.op_type() == "Size") return false;
  if (FindSchema(n.op_type(), static_cast<int>(opset), "") == nullptr) {
    return true;
  }
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    if (rules::IsFloat32(n.output(i)) && !rules::SpecAllowsBfloat16(n, opset, true, i)) {
      return true;
    }
  }
  return !n.inputs().empty() && rules::IsFloat32(n.input(0)) &&
         !rules::SpecAllowsBfloat16(n, opset, false, 0);
}

}  // namespace

int NodesLackingBfloat16(const Model& model, int64_t opset) {
  int lacking = 0;
  for (const Graph* g : GraphsRecursive(const_cast<Graph&>(model.graph()))) {
    for (const Node* n : g->nodes()) lacking += LacksBfloat16(*n, opset) ? 1 : 0;
  }
  return lacking;
}

absl::StatusOr<OpsetRaise> RaiseOpsetForBfloat16(Model& model) {
  OpsetRaise r;
  r.from = r.to = model.OpsetVersion("");
  if (r.from < 1) return r;
  const int64_t newest = kLatestOnnxOpset;
  r.lacking_before = r.lacking_after = NodesLackingBfloat16(model, r.from);
  if (r.lacking_before == 0) return r;
  int64_t best = r.from;
  for (int64_t v = r.from + 1; v <= newest; ++v) {
    const int lacking = NodesLackingBfloat16(model, v);
    if (lacking < r.lacking_after) {
      best = v;
      r.lacking_after = lacking;
    }
  }
  auto stays = [&](int64_t opset, int lacking) {
    return absl::StrCat(lacking, " float node(s) whose op has no bfloat16 at opset ", opset,
                        " stay fp32");
  };
  if (best == r.from) {
    r.note =
        absl::StrCat("opset ", r.from, " kept (no opset up to ", newest,
                     " accepts bfloat16 for more of its ops): ", stays(r.from, r.lacking_before));
    return r;
  }
  absl::StatusOr<OpsetChange> change = ConvertOpset(model, best);
  if (!change.ok()) {
    r.lacking_after = r.lacking_before;
    r.note = absl::StrCat("opset ", r.from, " kept: it could not be raised to ", best, " (",
                          change.status().message(), "): ", stays(r.from, r.lacking_before));
    return r;
  }
  r.to = best;
  r.note = absl::StrCat(
      "opset raised from ", r.from, " to ", r.to, " so that ", r.lacking_before - r.lacking_after,
      " more float node(s) can compute in bfloat16",
      r.lacking_after > 0 ? absl::StrCat("; ", stays(r.to, r.lacking_after)) : std::string());
  return r;
}

}  // namespace ovfix::converter
