// Layer-by-layer comparison of two runs of a model (two backends or precisions), or of two
// models (an original and its conversion) on one backend: both run with capture on, every
// node output present on both sides is compared, and the node where a divergence starts is
// named, which is where a bug or an fp16 overflow has to be looked for; the nodes after it
// merely inherit it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "ir/model.h"
#include "ir/tensor.h"

namespace ovfix::exec {

// One run: a model and how to run it. `label` names it in reports ("cpu:fp32").
struct CompareSide {
  const Model* model = nullptr;
  SessionOptions options;
  std::string label;
};

// "cpu:fp32", "opencl:fp16-storage", "opencl" (fp32) -> backend and precision.
absl::Status ParseSideSpec(std::string_view spec, SessionOptions& options);

// One value seen on both sides. Floats are compared as doubles (float16 converted), against
// the reference's range: within tolerance when max |test - ref| <= atol + rtol * range, where
// range is max |ref| over its finite elements, and when NaN/inf sit at the same places on both
// sides. The range rather than each element's own magnitude is what makes fp16 rounding noise
// pass on values near zero while an overflow or a wrong kernel fails. Integers and bools
// must be equal.
struct ValueComparison {
  std::string name;
  std::string ref_type, test_type;  // "float[1,64]"
  bool within = true;
  std::string problem;  // why not, in a few words ("3 elements inf on test only")
  // Over the elements finite on both sides; inf when a NaN or inf sits on one side only.
  double max_abs_error = 0;
  double range = 0;
  double rel_error = 0;  // max_abs_error / range (inf when range is 0 and the error not)
  double cosine = 1;     // over the elements finite on both sides
  int64_t ref_non_finite = 0, test_non_finite = 0;
  int64_t elements = 0;
};

ValueComparison CompareValue(const std::string& name, const Tensor& ref, const Tensor& test,
                             const Tolerance& tolerance);

enum class NodeState {
  kWithin,       // every compared output within tolerance
  kDiverged,     // an output crosses the tolerance
  kNotCompared,  // no output present on both sides (it may still carry a divergence)
};

struct NodeComparison {
  int index = 0;  // position in the reference graph's topological order (Constants skipped)
  std::string name, op_type, description;  // description: Node::Describe()
  std::vector<ValueComparison> outputs;    // outputs present on both sides
  NodeState state = NodeState::kWithin;
  // An input (produced by another node on both sides, or reached through values that could
  // not be compared) already out of tolerance: this node shows a divergence, it does not
  // start one.
  bool inputs_diverged = false;
  std::vector<std::string> diverged_inputs;  // names, for the report
  // Worst over `outputs`.
  double max_abs_error = 0, rel_error = 0, cosine = 1;
  int64_t ref_non_finite = 0, test_non_finite = 0;
};

// A float weight or constant that the test side's fp16 storage cannot hold.
struct WeightIssue {
  std::string name;
  std::string source;  // "initializer" or the Constant node's description
  int64_t elements = 0;
  int64_t overflow = 0;   // |w| > 65504: becomes inf
  int64_t underflow = 0;  // nonzero, below fp16's normal range, and flushed to 0 or distorted
  double example = 0, example_fp16 = 0;  // the worst element and what fp16 makes of it
  std::string problem;                   // "1e-08 becomes 0"
};

// A step into a body of the node where a divergence starts (an If, Loop or Scan): the body
// that ran (an If's branch taken; a Loop's or Scan's body at the first iteration whose values
// diverge) and the node in it where the divergence starts.
struct BodyDivergence {
  std::string holder;     // the node holding the body, Node::Describe()
  std::string attribute;  // "then_branch", "else_branch", "body"
  // Which run of the body, from 0: a Loop's or Scan's iteration (a body inside a Loop body
  // counts its runs over all the outer iterations); -1 for an If's branch.
  int iteration = -1;
  NodeComparison node;  // `index` is the position in the body
};

struct LayerReport {
  std::string ref_label, test_label;
  Tolerance tolerance;
  std::vector<NodeComparison> nodes;
  int first_divergence = -1;  // index into `nodes`, -1 when none
  // Where the first divergence is a node holding bodies that ran on both sides (cpu): the
  // steps into them, outermost first, down to a node that holds none.
  std::vector<BodyDivergence> inside;
  std::vector<WeightIssue> weights;
  // Graph inputs and outputs that differ, and remarks (e.g. nodes that ran on the CPU).
  std::vector<ValueComparison> graph_inputs;
  std::vector<std::string> notes;
  // Per device side that ran nodes on the CPU: "LABEL: runs on the CPU: N of M nodes (...)".
  std::vector<std::string> cpu_fallbacks;
  int compared_values = 0;
  int diverged_values = 0;
  bool all_within() const { return diverged_values == 0; }
  // The reference model's graph outputs as each side computed them (by the reference's output
  // names; an output the test side did not compute is absent there), for the verdict on
  // final outputs.
  std::vector<std::pair<std::string, Tensor>> ref_outputs, test_outputs;
};

// "If 'If_0' → then_branch: LSTM 'LSTM_3' (iteration 0)": the first diverging node, and the
// path into the bodies down to where the divergence starts; "" without a divergence.
std::string FirstDivergenceText(const LayerReport& report);
// The node where the divergence starts: the innermost of `inside`, else the first divergence.
const NodeComparison* FirstDivergingNode(const LayerReport& report);

// Walks `ref_graph`'s nodes in topological order over two sets of captured values (by name)
// and fills everything but the weights, notes and bodies.
LayerReport CompareCaptures(const Graph& ref_graph, const TensorMap& ref, const TensorMap& test,
                            const Tolerance& tolerance);

// Float initializers and Constant outputs of `model` that fp16 cannot hold. An element that
// loses its value counts only when it is not negligible next to the tensor's largest
// element (whose own fp16 rounding error is larger), so a conv weight with a few tiny
// entries is not listed but a lone epsilon of 1e-8 is.
std::vector<WeightIssue> FindUnrepresentableWeights(const Model& model,
                                                    double max_relative_loss = 0.1);

// Runs both sides on `inputs` with capture on and compares them; where the first divergence is
// an If, Loop or Scan, the values its bodies computed (on cpu sides, by SessionOptions::
// on_value: once per branch taken or iteration) are compared too, to name the node inside
// where it starts (LayerReport::inside). Weights are checked when
// the test side rounds floats to fp16 (fp16-storage, fp16) and, for two different models,
// where a float weight of the reference is float16 in the test model.
absl::StatusOr<LayerReport> CompareLayers(const CompareSide& ref, const CompareSide& test,
                                          const TensorMap& inputs, const Tolerance& tolerance);

// Makes a feed match the type a model's graph input declares (float <-> float16), so one
// set of inputs drives an original and its fp16 conversion.
Tensor ConvertFeed(const Tensor& feed, DataType wanted);

// Whether any value or initializer of the model is float16 or bfloat16, in its main graph or a
// body.
bool HasFloat16Values(const Model& model);

}  // namespace ovfix::exec
