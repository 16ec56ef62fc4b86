#include "exec/plan_fusion.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "exec/kernel.h"
#include "ir/graph.h"
#include "ir/value.h"

namespace ovfix::exec {
namespace {

// How far up from a node its answer is looked for. Whether a node's producer was folded in
// turn changes the node's answer only where that producer is a folded bias (a step takes a
// bias, then one activation; after anything else the node is not folded either way), so a
// short walk up decides every answer, and the bound keeps long single-use chains cheap.
constexpr int kMaxDepth = 8;

bool IsDefaultDomain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// A default-domain `op` with one output and a first input: the shape of every folded node.
bool Plain(const Node& n, std::string_view op) {
  return IsDefaultDomain(n) && n.op_type() == op && n.num_outputs() == 1 &&
         n.output(0) != nullptr && n.num_inputs() >= 1 && n.input(0) != nullptr;
}

// `v` is read by `reader` alone (once) and is no graph output.
bool SoleReader(const Value* v, const Node& reader) {
  return v != nullptr && !v->is_graph_output() && v->uses().size() == 1 &&
         v->uses()[0].node == &reader;
}

// The bounds of a Relu, or of a Clip whose bounds are known while compiling (attributes
// before opset 11, initializers from it).
bool ClampBounds(const Node& node, int opset, float& lo, float& hi) {
  if (Plain(node, "Relu")) {
    lo = 0.0f;
    hi = std::numeric_limits<float>::infinity();
    return true;
  }
  if (!Plain(node, "Clip")) return false;
  lo = std::numeric_limits<float>::lowest();
  hi = std::numeric_limits<float>::max();
  if (opset < 11) {
    lo = node.GetFloat("min", lo);
    hi = node.GetFloat("max", hi);
    return true;
  }
  for (size_t i = 1; i < 3 && i < node.num_inputs(); ++i) {
    const Value* v = node.input(i);
    if (v == nullptr) continue;
    if (!v->is_initializer() || v->is_graph_input() || v->tensor().type() != DataType::kFloat ||
        v->tensor().numel() != 1) {
      return false;
    }
    (i == 1 ? lo : hi) = v->tensor().data<float>()[0];
  }
  return true;
}

// Whether the node's output 0 is known to hold float values (not float16: a hard swish fused
// over float16 values would be rounded once where HardSigmoid and Mul round twice). Types
// need not be known for a clamp: Relu and Clip keep their input's type, and a Relu fused over
// float16 values gives what it gives unfused (rounding to half keeps signs and order).
bool MakesFloat(const Node& node) {
  const DataType out = node.output(0)->elem_type();
  if (out != DataType::kUndefined) return out == DataType::kFloat;
  bool any = false;
  for (const Value* v : node.inputs()) {
    if (v == nullptr) continue;
    const DataType t = v->is_initializer() ? v->tensor().type() : v->elem_type();
    if (t == DataType::kUndefined) continue;
    if (t != DataType::kFloat) return false;
    any = true;
  }
  return any;
}

// The float B (not read transposed) of a MatMul that takes a bias (FusesOutputBias) when it
// is constant (an initializer no input overrides) with at least 2 dims (A must then be float too:
// the kernel refuses operands of different types).
const Tensor* ConstantMatrixB(const Node& node) {
  if (!FusesOutputBias(node.domain(), node.op_type()) || node.num_inputs() != 2 ||
      node.input(0) == nullptr || node.input(1) == nullptr) {
    return nullptr;
  }
  // ovfix.fused.MatMul reading B transposed has its columns along B's rows.
  if (node.GetInt("transB", 0) != 0) return nullptr;
  const Value* b = node.input(1);
  if (!b->is_initializer() || b->is_graph_input() || b->tensor().type() != DataType::kFloat ||
      b->tensor().rank() < 2) {
    return nullptr;
  }
  return &b->tensor();
}

// A constant 1-D float tensor of `n` elements.
bool IsConstantFloatVector(const Value* v, int64_t n) {
  if (v == nullptr || !v->is_initializer() || v->is_graph_input()) return false;
  const Tensor& t = v->tensor();
  return t.type() == DataType::kFloat && t.rank() == 1 && t.numel() == n;
}

std::optional<ProducerFusion> FusionOf(const Node& node, int opset, int depth);

// The node whose step makes `v` (read by `reader`) once the plan has folded what it folds,
// and what that step has taken already.
struct Source {
  const Node* node = nullptr;  // null: no step of the reader's graph makes `v` as its output
  bool took_bias = false;
  bool took_activation = false;
};

Source SourceOf(const Value* v, const Node& reader, int opset, int depth) {
  const Node* p = v->producer();
  // A value of an enclosing graph is a copy in the reader's frame, made by no step of it.
  if (p == nullptr || p->owner() != reader.owner()) return {};
  if (const std::optional<ProducerFusion> f = FusionOf(*p, opset, depth + 1)) {
    // A folded node's output is its producer's step's output only when it is the last one.
    if (f->last != p) return {};
    return {f->producer, f->kind == ProducerFusion::Kind::kBias,
            f->kind == ProducerFusion::Kind::kActivation};
  }
  if (p->num_outputs() != 1 || p->output(0) != v) return {};
  return {p};
}

// A step that can take an activation over its single output, and has not taken one.
const Node* ActivationTaker(const Value* v, const Node& reader, int opset, int depth) {
  const Source s = SourceOf(v, reader, opset, depth);
  if (s.node == nullptr || s.took_activation ||
      !FusesOutputClamp(s.node->domain(), s.node->op_type())) {
    return nullptr;
  }
  return s.node;
}

// y = Add(MatMul(a, B), bias) (either order), B and bias constant.
std::optional<ProducerFusion> BiasFusion(const Node& add, int opset, int depth) {
  if (add.num_inputs() != 2 || add.input(1) == nullptr) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Value* product = add.input(side);
    const Value* bias = add.input(1 - side);
    if (!SoleReader(product, add)) continue;
    const Source s = SourceOf(product, add, opset, depth);
    if (s.node == nullptr || s.took_bias || s.took_activation) continue;
    const Tensor* b = ConstantMatrixB(*s.node);
    if (b == nullptr || !IsConstantFloatVector(bias, b->dims().back())) continue;
    ProducerFusion f{ProducerFusion::Kind::kBias, s.node, &add};
    f.bias = &bias->tensor();
    return f;
  }
  return std::nullopt;
}

// y = Mul(x, HardSigmoid(x)) (either order), x read by nothing else, the gate by the Mul alone.
std::optional<ProducerFusion> HardSigmoidMulFusion(const Node& gate_node, int opset, int depth) {
  const Value* x = gate_node.input(0);
  const Value* gate = gate_node.output(0);
  if (x->is_graph_output() || x->uses().size() != 2 || gate->is_graph_output() ||
      gate->uses().size() != 1) {
    return std::nullopt;
  }
  const Node& mul = *gate->uses()[0].node;
  if (mul.owner() != gate_node.owner() || !Plain(mul, "Mul") || mul.num_inputs() != 2 ||
      !((mul.input(0) == x && mul.input(1) == gate) ||
        (mul.input(0) == gate && mul.input(1) == x))) {
    return std::nullopt;
  }
  const Node* source = ActivationTaker(x, gate_node, opset, depth);
  if (source == nullptr || !MakesFloat(*source)) return std::nullopt;
  ProducerFusion f{ProducerFusion::Kind::kActivation, source, &mul};
  f.activation.hard_swish = true;
  f.activation.hard_swish_alpha = gate_node.GetFloat("alpha", 0.2f);
  f.activation.hard_swish_beta = gate_node.GetFloat("beta", 0.5f);
  return f;
}

std::optional<ProducerFusion> FusionOf(const Node& node, int opset, int depth) {
  if (depth > kMaxDepth || !IsDefaultDomain(node)) return std::nullopt;
  const std::string& op = node.op_type();
  if (op == "Add" && Plain(node, "Add")) return BiasFusion(node, opset, depth);
  // One node that is the activation: a clamp, or HardSwish (over float values only).
  FusedActivation activation;
  float lo = 0.0f, hi = 0.0f;
  if (ClampBounds(node, opset, lo, hi)) {
    activation.clamp = true;
    activation.clamp_min = lo;
    activation.clamp_max = hi;
  } else if (Plain(node, "HardSwish")) {
    activation.hard_swish = true;
    activation.hard_swish_alpha = 1.0f / 6.0f;
    activation.hard_swish_beta = 0.5f;
  }
  if (activation.any()) {
    if (!SoleReader(node.input(0), node)) return std::nullopt;
    const Node* source = ActivationTaker(node.input(0), node, opset, depth);
    if (source == nullptr || (activation.hard_swish && !MakesFloat(*source))) return std::nullopt;
    ProducerFusion f{ProducerFusion::Kind::kActivation, source, &node};
    f.activation = activation;
    return f;
  }
  if (Plain(node, "HardSigmoid")) return HardSigmoidMulFusion(node, opset, depth);
  if (Plain(node, "Mul") && node.num_inputs() == 2) {
    // The Mul of a hard swish goes with its HardSigmoid.
    for (const Value* v : node.inputs()) {
      const Node* p = v != nullptr ? v->producer() : nullptr;
      if (p == nullptr || p->owner() != node.owner() || !Plain(*p, "HardSigmoid")) continue;
      std::optional<ProducerFusion> f = HardSigmoidMulFusion(*p, opset, depth + 1);
      if (f && f->last == &node) return f;
    }
  }
  return std::nullopt;
}

// A constant (an initializer no input overrides) float vector; its length, or -1.
int64_t ConstantFloatVectorLength(const Value* v) {
  if (v == nullptr || !v->is_initializer() || v->is_graph_input()) return -1;
  const Tensor& t = v->tensor();
  return t.type() == DataType::kFloat && t.rank() == 1 ? t.numel() : -1;
}

}  // namespace

std::optional<ProducerFusion> FusionIntoProducer(const Node& node, int opset) {
  return FusionOf(node, opset, 0);
}

std::optional<ConsumerFusion> FusionIntoConsumer(const Node& node, int opset) {
  if (opset < 9 || !Plain(node, "BatchNormalization") || node.num_inputs() != 5 ||
      node.GetInt("training_mode", 0) != 0 || !MakesFloat(node)) {
    return std::nullopt;
  }
  const int64_t channels = ConstantFloatVectorLength(node.input(1));
  for (size_t i = 2; i < 5; ++i) {
    if (channels < 0 || ConstantFloatVectorLength(node.input(i)) != channels) return std::nullopt;
  }
  ConsumerFusion f;
  f.last = &node;
  // The clamp the plan folds into the BatchNormalization (a hard swish stays a step of it).
  const Value* out = node.output(0);
  if (out->uses().size() == 1 && !out->is_graph_output()) {
    const Node& reader = *out->uses()[0].node;
    const std::optional<ProducerFusion> taken = FusionIntoProducer(reader, opset);
    if (taken && taken->producer == &node) {
      if (!taken->activation.clamp || taken->last != &reader) return std::nullopt;
      f.last = &reader;
      f.affine.lo = taken->activation.clamp_min;
      f.affine.hi = taken->activation.clamp_max;
    }
  }
  const Value* read = f.last->output(0);
  if (read->is_graph_output() || read->uses().size() != 1) return std::nullopt;
  const Node& conv = *read->uses()[0].node;
  if (conv.owner() != node.owner() || !IsDefaultDomain(conv) || conv.op_type() != "Conv" ||
      read->uses()[0].input_index != 0 || conv.num_inputs() < 2 ||
      std::count(conv.inputs().begin(), conv.inputs().end(), read) != 1) {
    return std::nullopt;
  }
  f.consumer = &conv;
  // The scale and shift as the BatchNormalization kernel makes them (in double, then float).
  const double epsilon = node.GetFloat("epsilon", 1e-5f);
  const Tensor &gamma = node.input(1)->tensor(), &beta = node.input(2)->tensor();
  const Tensor &mean = node.input(3)->tensor(), &var = node.input(4)->tensor();
  f.affine.scale.resize(channels);
  f.affine.shift.resize(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const BatchNormChannel channel(gamma.GetAsDouble(c), beta.GetAsDouble(c), mean.GetAsDouble(c),
                                   var.GetAsDouble(c), epsilon);
    f.affine.scale[c] = static_cast<float>(channel.scale);
    f.affine.shift[c] = static_cast<float>(channel.shift);
  }
  return f;
}

}  // namespace ovfix::exec
