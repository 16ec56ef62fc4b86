#include "converter/session_elementwise_fusion.h"

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "converter/session_graph.h"
#include "exec/plan_fusion.h"
#include "onnx/defs/attr_proto_util.h"

namespace ovfix::converter {
namespace {

// One op of a chain, as the fused node runs it.
struct Link {
  Node* node = nullptr;
  Value* operand = nullptr;  // a binary op's other input
  bool swapped = false;      // the chain's value is the second input
  float p0 = 0, p1 = 0;
};

bool IsDefaultDomain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool IsBinaryOp(std::string_view op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min";
}

bool IsUnaryOp(std::string_view op) {
  return op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Erf" || op == "Exp" ||
         op == "Neg" || op == "Abs" || op == "Sqrt" || op == "Reciprocal" || op == "HardSwish" ||
         op == "LeakyRelu" || op == "HardSigmoid" || op == "Clip";
}

std::optional<std::vector<int64_t>> FloatShape(const Value* v) {
  if (v == nullptr) return std::nullopt;
  const DataType type = v->is_initializer() ? v->tensor().type() : v->elem_type();
  if (type != DataType::kFloat) return std::nullopt;
  if (v->is_initializer()) return v->tensor().dims();
  return v->static_shape();
}

// Whether `operand` broadcasts to `dims` without widening them.
bool BroadcastsTo(const std::vector<int64_t>& operand, const std::vector<int64_t>& dims) {
  if (operand.size() > dims.size()) return false;
  for (size_t i = 0; i < operand.size(); ++i) {
    const int64_t d = operand[operand.size() - 1 - i];
    if (d != 1 && d != dims[dims.size() - 1 - i]) return false;
  }
  return true;
}

// A constant scalar float input (Clip's bounds from opset 11).
std::optional<float> ConstantScalar(const Value* v) {
  if (v == nullptr || !v->is_initializer() || v->is_graph_input()) return std::nullopt;
  const Tensor& t = v->tensor();
  if (t.type() != DataType::kFloat || t.numel() != 1) return std::nullopt;
  return t.data<float>()[0];
}

// Whether `node` can be a link of a chain whose value so far is `chain` (its output then has
// the chain's shape); fills `link`.
bool AsLink(Node* node, Value* chain, int opset, Link& link) {
  if (!IsDefaultDomain(*node) || node->num_outputs() != 1 || node->output(0) == nullptr) {
    return false;
  }
  const std::string& op = node->op_type();
  const std::optional<std::vector<int64_t>> shape = FloatShape(chain);
  if (!shape || FloatShape(node->output(0)) != shape) return false;
  link = Link{node};
  if (IsBinaryOp(op)) {
    // Before opset 7 binary ops broadcast by attribute; Max and Min of two inputs only.
    if (opset < 8 || node->num_inputs() != 2) return false;
    const int side = node->input(0) == chain ? 0 : (node->input(1) == chain ? 1 : -1);
    if (side < 0 || node->input(0) == node->input(1)) return false;
    link.operand = node->input(1 - side);
    link.swapped = side == 1;
    const std::optional<std::vector<int64_t>> operand = FloatShape(link.operand);
    return operand && BroadcastsTo(*operand, *shape);
  }
  if (!IsUnaryOp(op) || node->num_inputs() < 1 || node->input(0) != chain) return false;
  if (op == "Clip") {
    link.p0 = std::numeric_limits<float>::lowest();
    link.p1 = std::numeric_limits<float>::max();
    if (opset < 11) {
      link.p0 = node->GetFloat("min", link.p0);
      link.p1 = node->GetFloat("max", link.p1);
      return true;
    }
    for (size_t i = 1; i < node->num_inputs(); ++i) {
      if (node->input(i) == nullptr) continue;
      const std::optional<float> bound = ConstantScalar(node->input(i));
      if (!bound) return false;
      (i == 1 ? link.p0 : link.p1) = *bound;
    }
    return true;
  }
  if (node->num_inputs() != 1) return false;
  if (op == "LeakyRelu") link.p0 = node->GetFloat("alpha", 0.01f);
  if (op == "HardSigmoid") {
    link.p0 = node->GetFloat("alpha", 0.2f);
    link.p1 = node->GetFloat("beta", 0.5f);
  }
  return true;
}

// The value a chain starting at `node` continues: its only input for a one-input op; for a
// binary op the input of the output's shape, a computed one before a constant.
Value* ChainInput(const Node& node) {
  if (node.num_inputs() == 0) return nullptr;
  if (!IsBinaryOp(node.op_type()) || node.num_inputs() != 2) return node.input(0);
  const std::optional<std::vector<int64_t>> out = FloatShape(node.output(0));
  Value* best = nullptr;
  for (int i = 0; i < 2; ++i) {
    Value* v = node.input(i);
    if (v == nullptr || FloatShape(v) != out) continue;
    if (best == nullptr || (best->is_initializer() && !v->is_initializer())) best = v;
  }
  return best;
}

void Fuse(rules::PassContext& ctx, Graph& g, Value* x, const std::vector<Link>& chain) {
  rules::Rewriter& r = ctx.rewriter;
  std::vector<Value*> inputs = {x};
  std::vector<std::string> ops;
  std::vector<int64_t> operands, swapped;
  std::vector<float> params;
  for (const Link& link : chain) {
    ops.push_back(link.node->op_type());
    int64_t index = -1;
    if (link.operand != nullptr) {
      for (size_t i = 0; i < inputs.size() && index < 0; ++i) {
        if (inputs[i] == link.operand) index = static_cast<int64_t>(i);
      }
      if (index < 0) {
        index = static_cast<int64_t>(inputs.size());
        inputs.push_back(link.operand);
      }
    }
    operands.push_back(index);
    swapped.push_back(link.swapped ? 1 : 0);
    params.push_back(link.p0);
    params.push_back(link.p1);
  }
  Node* last = chain.back().node;
  Value* y = last->output(0);
  Node* fused = r.CreateNode(g, "Elementwise", inputs, {r.UniqueName(y->name() + "_chain")}, last,
                             last->name(), kFusedDomain);
  r.SetAttribute(fused, onnx::MakeAttribute("ops", ops));
  r.SetAttribute(fused, onnx::MakeAttribute("operands", operands));
  r.SetAttribute(fused, onnx::MakeAttribute("swapped", swapped));
  r.SetAttribute(fused, onnx::MakeAttribute("params", params));
  r.SetType(fused->output(0), y->type());
  r.ReplaceAllUsesWith(y, fused->output(0));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) r.EraseNode(it->node);
}

}  // namespace

absl::StatusOr<int> FuseElementwiseChains(rules::PassContext& ctx) {
  Graph& g = ctx.model.graph();
  const int opset = static_cast<int>(ctx.model.OpsetVersion(""));
  absl::flat_hash_set<const Node*> taken;
  int fused = 0;
  for (Node* head : g.NodeList()) {
    // What the session folds into the node before it (a Relu after a Conv, a bias Add after
    // a MatMul) is left to the session: such a node does not start a chain.
    if (taken.contains(head) || exec::FusesIntoProducer(*head, opset)) continue;
    Value* x = ChainInput(*head);
    Link link;
    if (x == nullptr || !AsLink(head, x, opset, link)) continue;
    std::vector<Link> chain = {link};
    Value* value = head->output(0);
    while (value->uses().size() == 1 && !value->is_graph_output()) {
      Node* next = value->uses()[0].node;
      if (next->owner() != &g || taken.contains(next) || !AsLink(next, value, opset, link)) break;
      chain.push_back(link);
      value = next->output(0);
    }
    if (chain.size() < 2) continue;
    for (const Link& l : chain) taken.insert(l.node);
    ctx.rewriter.Begin(kFuseElementwiseChains, {head});
    Fuse(ctx, g, x, chain);
    if (rules::FinishRewrite(ctx)) ++fused;
  }
  return fused;
}

}  // namespace ovfix::converter
