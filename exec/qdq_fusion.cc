#include "exec/qdq_fusion.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "ir/model_io.h"
#include "ir/node.h"

namespace ovfix::exec {
namespace {

bool IsOp(const Node* n, const char* op_type) {
  return n != nullptr && n->op_type() == op_type &&
         (n->domain().empty() || n->domain() == "ai.onnx");
}

bool IsEightBit(DataType t) { return t == DataType::kUint8 || t == DataType::kInt8; }

// The constant tensor of `v`: an initializer that no run can override.
const Tensor* Constant(const Value* v) {
  if (v == nullptr || !v->is_initializer() || v->is_graph_input()) return nullptr;
  return &v->tensor();
}

// The value's only reader, when it has exactly one and is not a graph output.
Node* OnlyReader(const Value* v) {
  if (v == nullptr || v->is_graph_output() || v->uses().size() != 1) return nullptr;
  return v->uses()[0].node;
}

// A DequantizeLinear's constant parameters: scale (float) and zero point (or absent where
// allowed), `count` values or one; per-axis only along axis `axis` of a rank `rank` input.
struct Dequantization {
  const Tensor* scale = nullptr;
  const Tensor* zero = nullptr;
};

bool ReadDequantization(const Node* dq, int64_t count, int rank, bool zero_required,
                        Dequantization& d, int64_t expected_axis = 0) {
  if (!IsOp(dq, "DequantizeLinear") || dq->num_inputs() < 2) return false;
  d.scale = Constant(dq->input(1));
  d.zero = Constant(dq->input(2));
  if (d.scale == nullptr || d.scale->type() != DataType::kFloat) return false;
  if (dq->input(2) != nullptr && d.zero == nullptr) return false;
  if (zero_required && d.zero == nullptr) return false;
  const int64_t n = d.scale->numel();
  if (n != 1 && n != count) return false;
  if (d.zero != nullptr && d.zero->numel() != n) return false;
  if (n > 1) {
    int64_t axis = dq->GetInt("axis", 1);
    if (axis < 0) axis += rank;
    if (axis != expected_axis) return false;
  }
  return true;
}

// The QuantizeLinear that alone reads `v`, directly or through a Relu that the quantization
// makes a no-op (its zero point is the type's lowest value); constant scalar parameters.
Node* QuantizingReader(const Value* v) {
  Node* next = OnlyReader(v);
  const bool relu = IsOp(next, "Relu");
  if (relu) next = OnlyReader(next->output(0));
  if (!IsOp(next, "QuantizeLinear") || next->num_inputs() < 3 || next->num_outputs() != 1) {
    return nullptr;
  }
  const Tensor* y_scale = Constant(next->input(1));
  const Tensor* y_zero = Constant(next->input(2));
  if (y_scale == nullptr || y_scale->type() != DataType::kFloat || y_scale->numel() != 1 ||
      y_zero == nullptr || !IsEightBit(y_zero->type()) || y_zero->numel() != 1 ||
      !(y_scale->data<float>()[0] != 0)) {
    return nullptr;
  }
  if (relu) {
    const int64_t lowest = y_zero->type() == DataType::kUint8 ? 0 : -128;
    if (y_zero->GetAsInt64(0) != lowest) return nullptr;
  }
  return next;
}

// The group around `conv`, when it is one; fills `inputs` with QLinearConv's inputs and
// `q` with the QuantizeLinear whose output the fused node takes over.
bool MatchGroup(const Node* conv, std::vector<Value*>& inputs, Node*& q) {
  if (!IsOp(conv, "Conv") || conv->num_inputs() < 2 || conv->num_outputs() != 1) return false;
  Node* dq_x = conv->input(0) ? conv->input(0)->producer() : nullptr;
  Node* dq_w = conv->input(1) ? conv->input(1)->producer() : nullptr;
  Dequantization x, w, bias;
  if (!ReadDequantization(dq_x, 1, 0, /*zero_required=*/true, x)) return false;
  if (!IsEightBit(x.zero->type()) || dq_x->input(0) == nullptr) return false;
  const Tensor* weights = dq_w != nullptr ? Constant(dq_w->input(0)) : nullptr;
  if (weights == nullptr || !IsEightBit(weights->type()) || weights->rank() < 3) return false;
  const int64_t filters = weights->dim(0);
  if (!ReadDequantization(dq_w, filters, static_cast<int>(weights->rank()), true, w)) {
    return false;
  }
  if (w.zero->type() != weights->type()) return false;
  Value* bias_q = nullptr;
  if (conv->num_inputs() > 2 && conv->input(2) != nullptr) {
    Node* dq_b = conv->input(2)->producer();
    const Tensor* b = dq_b != nullptr ? Constant(dq_b->input(0)) : nullptr;
    if (b == nullptr || b->type() != DataType::kInt32 || b->rank() != 1 || b->numel() != filters ||
        !ReadDequantization(dq_b, filters, 1, false, bias)) {
      return false;
    }
    // The bias must be in the accumulator's units: its scale x_scale * w_scale, zero 0.
    const float x_scale = x.scale->data<float>()[0];
    for (int64_t m = 0; m < filters; ++m) {
      const float w_scale = w.scale->data<float>()[w.scale->numel() == 1 ? 0 : m];
      const float b_scale = bias.scale->data<float>()[bias.scale->numel() == 1 ? 0 : m];
      if (b_scale != x_scale * w_scale) return false;
      if (bias.zero != nullptr && bias.zero->GetAsInt64(bias.zero->numel() == 1 ? 0 : m) != 0) {
        return false;
      }
    }
    bias_q = dq_b->input(0);
  }
  Node* next = QuantizingReader(conv->output(0));
  if (next == nullptr) return false;
  inputs = {dq_x->input(0), dq_x->input(1), dq_x->input(2), dq_w->input(0),
            dq_w->input(1), dq_w->input(2), next->input(1), next->input(2)};
  if (bias_q != nullptr) inputs.push_back(bias_q);
  q = next;
  return true;
}

// DequantizeLinear(a) and DequantizeLinear(b) (per tensor, or per column of a constant 2-D
// b) into MatMul, then QuantizeLinear: QLinearMatMul's inputs.
bool MatchMatMulGroup(const Node* matmul, std::vector<Value*>& inputs, Node*& q) {
  if (!IsOp(matmul, "MatMul") || matmul->num_inputs() != 2 || matmul->num_outputs() != 1 ||
      matmul->input(0) == nullptr || matmul->input(1) == nullptr) {
    return false;
  }
  const Node* dq_a = matmul->input(0)->producer();
  const Node* dq_b = matmul->input(1)->producer();
  Dequantization a, b;
  if (!ReadDequantization(dq_a, 1, 0, true, a) || !IsEightBit(a.zero->type()) ||
      dq_a->input(0) == nullptr || dq_b == nullptr || dq_b->input(0) == nullptr) {
    return false;
  }
  const Tensor* weights = Constant(dq_b->input(0));
  const int64_t columns = weights != nullptr && weights->rank() == 2 ? weights->dim(1) : 1;
  if (!ReadDequantization(dq_b, columns, 2, true, b, /*expected_axis=*/1) ||
      !IsEightBit(b.zero->type())) {
    return false;
  }
  Node* next = QuantizingReader(matmul->output(0));
  if (next == nullptr) return false;
  inputs = {dq_a->input(0), dq_a->input(1), dq_a->input(2), dq_b->input(0),
            dq_b->input(1), dq_b->input(2), next->input(1), next->input(2)};
  q = next;
  return true;
}

// A fusable group around `n`: QLinearConv's or QLinearMatMul's inputs and the op.
const char* Match(const Node* n, std::vector<Value*>& inputs, Node*& q) {
  if (MatchGroup(n, inputs, q)) return "QLinearConv";
  if (MatchMatMulGroup(n, inputs, q)) return "QLinearMatMul";
  return nullptr;
}

// ---- QuantizeLinear through ops that only move or select values ----
//
// Static quantization dequantizes a value before MaxPool and Concat and quantizes their
// result again, with the same scale and zero point. With those equal, Q(DQ(a)) is a for
// every 8-bit a ((a - zero) * scale / scale is within a float rounding of a - zero), max
// commutes with the non-decreasing DQ of a positive scale, and Q of a Concat is the Concat
// of the Qs: so the integers can go through directly, bit for bit what the float graph
// computes, without the float tensors between.

// A QuantizeLinear's or DequantizeLinear's constant scalar scale (finite, positive) and
// 8-bit zero point.
struct ScalarQuantization {
  float scale = 0;
  DataType type = DataType::kUndefined;
  int64_t zero = 0;
};

bool ReadScalarQuantization(const Node* n, const char* op, ScalarQuantization& q) {
  if (!IsOp(n, op) || n->num_inputs() < 3 || n->num_outputs() != 1 || n->input(0) == nullptr) {
    return false;
  }
  const Tensor* scale = Constant(n->input(1));
  const Tensor* zero = Constant(n->input(2));
  if (scale == nullptr || scale->type() != DataType::kFloat || scale->numel() != 1 ||
      zero == nullptr || !IsEightBit(zero->type()) || zero->numel() != 1) {
    return false;
  }
  q.scale = scale->data<float>()[0];
  if (!(q.scale > 0) || !std::isfinite(q.scale)) return false;
  q.type = zero->type();
  q.zero = zero->GetAsInt64(0);
  return true;
}

bool SameQuantization(const ScalarQuantization& a, const ScalarQuantization& b) {
  return a.scale == b.scale && a.type == b.type && a.zero == b.zero;
}

// The integers that `v` dequantizes with exactly `q`'s parameters, or null.
Value* DequantizedFrom(const Value* v, const ScalarQuantization& q) {
  const Node* dq = v != nullptr ? v->producer() : nullptr;
  ScalarQuantization d;
  if (!ReadScalarQuantization(dq, "DequantizeLinear", d) || !SameQuantization(d, q)) {
    return nullptr;
  }
  return dq->input(0);  // of the zero point's type (DequantizeLinear's constraint)
}

// The op that `q` (a QuantizeLinear) alone reads when q can move before it: Q(MaxPool(DQ(x)))
// is MaxPool(x), Q(Concat(DQ(a), b, ...)) is Concat(a, Q(b), ...). `inputs` gets the moved
// op's inputs, null where a QuantizeLinear of the op's input is to go.
Node* MovableOp(const Node* q, std::vector<Value*>& inputs) {
  ScalarQuantization params;
  if (!ReadScalarQuantization(q, "QuantizeLinear", params)) return nullptr;
  Node* op = q->input(0)->producer();
  if (op == nullptr || OnlyReader(q->input(0)) != q) return nullptr;
  inputs.clear();
  if (IsOp(op, "MaxPool") && op->num_inputs() == 1 &&
      (op->num_outputs() == 1 || op->output(1) == nullptr ||
       (op->output(1)->uses().empty() && !op->output(1)->is_graph_output()))) {
    Value* x = DequantizedFrom(op->input(0), params);
    if (x == nullptr) return nullptr;
    inputs = {x};
    return op;
  }
  if (IsOp(op, "Concat") && op->num_outputs() == 1) {
    bool any = false;
    for (Value* in : op->inputs()) {
      if (in == nullptr) return nullptr;
      Value* x = DequantizedFrom(in, params);
      any = any || x != nullptr;
      inputs.push_back(x);
    }
    return any ? op : nullptr;
  }
  return nullptr;
}

// Moves `q` before the op it reads (MovableOp); returns whether it did.
bool MoveQuantizationBefore(Graph& graph, Node* q, std::vector<std::unique_ptr<Node>>& detached) {
  std::vector<Value*> inputs;
  Node* op = MovableOp(q, inputs);
  if (op == nullptr) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr) continue;
    Node* requantize =
        graph.AddNode("QuantizeLinear", {op->input(i), q->input(1), q->input(2)},
                      {graph.UniqueName(op->input(i)->name() + "_quantized")}, q->name(), "", op);
    for (const onnx::AttributeProto& a : q->attributes()) requantize->SetAttribute(a);
    inputs[i] = requantize->output(0);
  }
  Value* output = q->output(0);
  detached.push_back(graph.DetachNode(q));
  Node* moved = graph.AddNodeWithOutputs(op->op_type(), inputs, {output}, op->name(), "", op);
  for (const onnx::AttributeProto& a : op->attributes()) moved->SetAttribute(a);
  return true;
}

bool HasGroup(const Graph& graph) {
  for (const Node* n : graph.nodes()) {
    std::vector<Value*> inputs;
    Node* q = nullptr;
    if (Match(n, inputs, q) != nullptr || MovableOp(n, inputs) != nullptr) return true;
  }
  return false;
}

}  // namespace

int FuseQdqConvs(Graph& graph) {
  int fused = 0;
  // Detached QuantizeLinear nodes live until the loop is done (the list still points at them).
  std::vector<std::unique_ptr<Node>> detached;
  for (Node* node : graph.NodeList()) {
    if (IsOp(node, "QuantizeLinear") && MoveQuantizationBefore(graph, node, detached)) ++fused;
  }
  for (Node* node : graph.NodeList()) {
    std::vector<Value*> inputs;
    Node* q = nullptr;
    const char* op = Match(node, inputs, q);
    if (op == nullptr) continue;
    Value* output = q->output(0);
    const std::string name = node->name();
    // The QuantizeLinear hands its output to the fused node, which takes the Conv's (MatMul's)
    // place (everything it reads is available there).
    detached.push_back(graph.DetachNode(q));
    Node* fused_node = graph.AddNodeWithOutputs(op, inputs, {output}, name, "", node);
    for (const onnx::AttributeProto& a : node->attributes()) fused_node->SetAttribute(a);
    ++fused;
  }
  if (fused > 0) graph.RemoveDeadCode();
  return fused;
}

absl::StatusOr<std::unique_ptr<Model>> FuseQdqConvsInCopy(const Model& model) {
  // At opsets the kernel table has no QLinearConv for, the graph runs as written.
  const int64_t opset = model.OpsetVersion("");
  if (opset < 0 || FindKernel("", "QLinearConv", static_cast<int>(opset)) == nullptr ||
      FindKernel("", "QLinearMatMul", static_cast<int>(opset)) == nullptr ||
      !HasGroup(model.graph())) {
    return nullptr;
  }
  // Weights of more than a few bytes are shared with `model`, not copied.
  absl::StatusOr<std::unique_ptr<Model>> copy = CopyModel(model, /*share_at_least=*/256);
  if (!copy.ok()) return copy.status();
  FuseQdqConvs((*copy)->graph());
  return copy;
}

}  // namespace ovfix::exec
