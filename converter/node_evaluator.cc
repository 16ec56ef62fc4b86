#include "converter/node_evaluator.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "ir/status_macros.h"

namespace ovfix::converter {

absl::StatusOr<std::vector<Tensor>> CpuNodeEvaluator::Evaluate(const Model& model,
                                                               const Node& node) {
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
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<exec::Session> session,
                         exec::CreateSession(small, options));
  OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> results, session->Run({}));
  std::vector<Tensor> outputs(node.outputs().size());
  for (size_t k = 0; k < positions.size() && k < results.size(); ++k) {
    outputs[positions[k]] = std::move(results[k]);
  }
  return outputs;
}

}  // namespace ovfix::converter
