// Shape inference through onnx's InferShapes (with data propagation): the inferred element
// types and shapes are stored on the Values; symbolic dims stay symbols.
#pragma once

#include "absl/status/status.h"
#include "ir/model.h"
#include "onnx/defs/schema.h"

namespace ovfix {

struct ShapeInferenceOptions {
  bool strict = false;  // fail on inference errors instead of leaving those values unknown
  bool data_propagation = true;
};

// Updates the type of every value of the model's graphs that onnx can infer. A model whose
// nodes fail ir/node_check.h's CheckNodes is refused first: onnx's inference trusts them.
absl::Status InferShapes(Model& model, const ShapeInferenceOptions& options = {});

// InferShapes over `proto`, a copy of `model` in full or with its large weights left out
// (rules/light_proto.h): onnx's inference runs on the proto, with data propagation when
// `data_propagation` (and the model needs it), failing on its errors when `strict`, and the
// types it infers are stored on model's values.
absl::Status InferShapesOfCopy(onnx::ModelProto& proto, bool strict, bool data_propagation,
                               Model& model);
// Stores the types onnx's inference wrote into `proto` (value_info and outputs, subgraphs
// walked in the order they were written) on the values of `graph`, the graph it was written
// from; initializers keep theirs.
void ApplyInferredTypes(const onnx::GraphProto& proto, Graph& graph);

// Whether onnx's data propagation can add anything to inference on `model`: it computes
// the values of shape tensors, which start at Shape and Size nodes or at int32/int64
// constants of rank 0 or 1 read by an op that propagates data (Concat, Gather, Add, ...).
// Without either it costs as much as the inference itself and changes nothing.
bool NeedsDataPropagation(const Model& model);

// The schemas every call of onnx's shape inference is given: onnx's own, with a check in
// front of each inference function of onnx 1.12 that trusts an attribute it indexes with
// (and crashes on a bad one), so that such a node fails inference instead.
const onnx::ISchemaRegistry* InferenceSchemas();

}  // namespace ovfix
