// The types a model declares, checked when it is read: onnx 1.12's checker, shape inference
// and version converter dereference the parts of a TypeProto they expect (a graph input
// declared with an empty `type {}` crashes its inference), so no TypeProto reaches them that
// is not whole. Every entry point reads models through ModelFromProto, which runs this first.
#pragma once

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

// A declared type is whole when its kind is set and every element type in it is one of
// TensorProto's (1-26), a map's key an integer or string type, and no dim negative. Values may
// leave their type out or declare it empty (`type {}`: a graph output, a value_info entry, a
// body's input or output, as exporters write If branches), except the main graph's inputs;
// a type that says anything must be whole. Walks the graph's inputs, outputs and value_info,
// the type attributes of its nodes, and every subgraph; errors name the value or node.
absl::Status CheckDeclaredTypes(const onnx::GraphProto& graph);

// Every input of the main graph declares a type, as the ONNX IR requires (onnx's checker
// and onnxruntime refuse a model that does not): what a file or a ModelProto handed to the
// API must hold. The text form of the tests may leave them out (a rule meeting an unknown
// type); onnx's inference is not run on such a model (ir/shape_inference.h).
absl::Status RequireInputTypes(const onnx::GraphProto& graph);

// One TypeProto; `what` names it in the error ("graph input 'x'").
absl::Status CheckTypeProto(const onnx::TypeProto& type, const std::string& what);

}  // namespace ovfix
