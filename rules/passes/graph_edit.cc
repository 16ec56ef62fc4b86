#include "rules/passes/node_eval.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "exec/executor.h"

namespace ovfix::rules {

absl::StatusOr<std::vector<Tensor>> EvaluateNode(const Model& model, const Node& node) {
  Model small;
  small.extras().set_ir_version(model.extras().ir_version());
  *small.extras().mutable_opset_import() = model.extras().opset_import();
  Graph& g = small.graph();
  std::vector<Value*> inputs;
  for (const Value* in : node.inputs()) {
    if (in == nullptr) {
      inputs.push_back(nullptr);
      continue;
    }
    if (!in->is_initializer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": input '", in->name(), "' is not a constant"));
    }
    Value* v = g.FindValue(in->name());
    inputs.push_back(v != nullptr ? v : g.AddInitializer(in->name(), in->tensor()));
  }
  std::vector<std::string> names;
  for (const Value* o : node.outputs()) names.push_back(o != nullptr ? o->name() : "");
  Node* copy = g.AddNode(node.op_type(), inputs, names, node.name(), node.domain());
  for (const onnx::AttributeProto& a : node.attributes()) copy->SetAttribute(a);
  std::vector<size_t> positions;
  for (size_t i = 0; i < copy->outputs().size(); ++i) {
    if (copy->output(i) == nullptr) continue;
    g.AddOutput(copy->output(i));
    positions.push_back(i);
  }
  exec::SessionOptions options;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<exec::Session>> session = exec::CreateSession(small, options);
  if (!session.ok()) return session.status();
  absl::StatusOr<std::vector<Tensor>> results = (*session)->Run({});
  if (!results.ok()) return results.status();
  std::vector<Tensor> outputs(node.outputs().size());
  for (size_t k = 0; k < positions.size() && k < results->size(); ++k) {
    outputs[positions[k]] = std::move((*results)[k]);
  }
  return outputs;
}

void RedirectGraphOutput(Rewriter& rewriter, Value* from, Value* to) {
  const std::vector<Use> readers = from->uses();
  rewriter.ReplaceAllUsesWith(from, to);
  for (const Use& u : readers) rewriter.SetInput(u.node, u.input_index, from);
}

bool IsBroadcastingElementwise(const Node& node) {
  static const absl::flat_hash_set<std::string> kOps = {
      "Add",   "Sub",   "Mul",     "Div",         "Pow",     "Mod",
      "Where", "Equal", "Less",    "LessOrEqual", "Greater", "GreaterOrEqual",
      "And",   "Or",    "Xor",     "Max",         "Min",     "Sum",
      "Mean",  "PRelu", "BitShift"};
  return node.domain().empty() && kOps.contains(node.op_type());
}

}  // namespace ovfix::rules
