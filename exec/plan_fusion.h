// What the cpu session folds into the node before it, said of the graph: the one statement of
// that rule. The session's plan (exec/session.cc) folds exactly the nodes this names into the
// steps it names, and the converter's element-wise chain fusion
// (converter/session_elementwise_fusion.cc) leaves those nodes to the session.
//
// Folded, when the value between the two nodes has no other reader and is no graph output:
//   - the Add of a constant float vector to a MatMul by a constant float B of at least 2 dims
//     whose last dim is the vector's length (FusesOutputBias), either operand order;
//   - a Relu, or a Clip with constant bounds, after a node that takes an activation
//     (FusesOutputClamp: Conv, BatchNormalization, ovfix.fused.NhwcConv; after its folded bias,
//     were it to take one too);
//   - a hard swish after such a node when it makes float values: HardSwish, or HardSigmoid
//     and the Mul of its input by it (either order; the gate read by the Mul alone).
// A step takes a bias, then at most one activation. All of this only where the session fuses
// at all: not while it captures or observes every value or rounds float tensors to half
// (widened float16, fp16 precisions).
//
// Folded into the node after it (FusionIntoConsumer): an inference BatchNormalization (opset
// 9 on, its four parameters constant float vectors of one length), with the clamp the session
// folds into it if any, whose output (the clamp's, then) is read by one float Conv alone, as
// its input 0 (DenseNet's pre-activation BatchNormalization + Relu after a Concat, which
// cannot fold into a weight): the Conv reads the BatchNormalization's input through the
// per-channel scale and shift (KernelContext::input_affine).
#pragma once

#include <optional>

#include "exec/fused_activation.h"
#include "ir/node.h"
#include "ir/tensor.h"

namespace ovfix::exec {

// How a node goes into the step of the node that makes its input.
struct ProducerFusion {
  enum class Kind { kBias, kActivation };
  Kind kind = Kind::kActivation;
  // The node whose kernel takes it (a Conv, BatchNormalization or MatMul of the same graph).
  const Node* producer = nullptr;
  // The last node folded with it, whose output the producer's step then makes: the node
  // itself, or for the HardSigmoid of a hard swish the Mul after it.
  const Node* last = nullptr;
  const Tensor* bias = nullptr;  // kBias: the constant vector added
  FusedActivation activation;    // kActivation: the clamp or hard swish applied
};

// How a BatchNormalization goes into the step of the Conv that reads its output.
struct ConsumerFusion {
  const Node* consumer = nullptr;  // the Conv
  // The node whose output the Conv reads: the BatchNormalization, or the clamp folded into it.
  const Node* last = nullptr;
  ChannelAffine affine;  // what the Conv applies to each channel of its input 0
};

// Whether and how the session's plan folds `node` (a BatchNormalization) into the node that
// reads its output.
std::optional<ConsumerFusion> FusionIntoConsumer(const Node& node, int opset);

// Whether and how the session's plan folds `node` into the node that makes its input; `opset`
// is the model's opset of the default domain (Clip's bounds are attributes before 11).
std::optional<ProducerFusion> FusionIntoProducer(const Node& node, int opset);

// Whether the session's plan folds `node` into the node that makes its input.
inline bool FusesIntoProducer(const Node& node, int opset) {
  return FusionIntoProducer(node, opset).has_value();
}

// Whether the session's plan folds `node` into another node's step, before or after it.
inline bool FusesIntoStep(const Node& node, int opset) {
  return FusesIntoProducer(node, opset) || FusionIntoConsumer(node, opset).has_value();
}

}  // namespace ovfix::exec
