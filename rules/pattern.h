// Patterns and replacements of rules, written in ONNX's graph text syntax:
//
//   (float x, c) => (y) { t = Mul(x, c)  y = Add(t, x) }
//
// The graph's inputs are captures: each binds one value of the model, and a capture used
// twice must be the same value both times. A declaration constrains what it binds only as
// far as it is written: no type (`c`) means any type; `float x` or `float[] x` means a float
// of any shape (onnx's parser reads `float x` as a scalar, a pattern does not); `float[N, 3]
// x` means rank 2 with a last dim of 3, and a symbol used twice means equal dims. A capture
// named in the rule's `variadic` clause binds the rest of a node's inputs as a list.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/data_type.h"
#include "onnx/onnx_pb.h"

namespace ovfix::rules {

// A problem found in graph text, at a 1-based position within that text.
struct TextError {
  int line = 1;
  int column = 1;
  std::string message;
};

// Parses ONNX graph text ("name (inputs) => (outputs) { nodes }", the name optional).
// Returns false and fills `error` when the text does not parse.
bool ParseGraphText(std::string_view text, onnx::GraphProto& graph, TextError& error);

// One dim of a declared shape: a fixed size, a symbol (equal wherever it is used), or any.
struct DimConstraint {
  int64_t value = -1;
  std::string symbol;
};

// What a declaration asks of the value it binds.
struct ValueConstraint {
  DataType type = DataType::kUndefined;            // kUndefined: any element type
  std::optional<std::vector<DimConstraint>> dims;  // nullopt: any shape
  bool empty() const { return type == DataType::kUndefined && !dims.has_value(); }
};

// A node of a pattern or replacement, as written.
struct TemplateNode {
  std::string domain;  // "" for the default domain ("ai.onnx" is normalized to "")
  std::string op_type;
  std::vector<std::string> inputs;  // "" stands for an omitted optional input
  std::vector<std::string> outputs;
  // Literal attributes are constraints (pattern) or values to set (replacement); an attribute
  // written `name = @ref` captures the attribute as `ref` (pattern) or sets it from the value
  // bound to `ref` (replacement).
  std::vector<onnx::AttributeProto> attributes;
  bool commutative = false;  // pattern only: inputs may match in any order
  bool variadic = false;     // the last input is a variadic capture
  // Pattern only: indices of inputs named in `any_input`. Each may stand at any input
  // position of the node; the other inputs keep their order in the positions left.
  std::vector<int> any_position;
};

// Ops whose inputs may be matched in any order.
bool IsCommutative(std::string_view domain, std::string_view op_type);

struct Pattern {
  std::vector<TemplateNode> nodes;
  std::vector<std::string> inputs;                     // captures, as declared
  std::vector<std::string> outputs;                    // values the replacement replaces, in order
  std::map<std::string, ValueConstraint> constraints;  // declared inputs and outputs
  std::set<std::string> variadic;
  std::set<std::string> any_input;  // values that may stand at any input position of their node
  // Value name -> (node index, output index) for values produced by pattern nodes.
  std::map<std::string, std::pair<int, int>> producers;
  // Attribute captures (`@ref` in pattern attributes).
  std::set<std::string> attribute_captures;
  int root = 0;  // the node that produces outputs[0]; matching starts there

  const TemplateNode& root_node() const { return nodes[root]; }
  bool IsCapture(const std::string& name) const;
  // Every name a rule's clauses may refer to: captures, produced values, attribute captures.
  bool Binds(const std::string& name) const;
};

// A semantic problem in a pattern or replacement: the message and the name it is about
// (for the caller to find in the text; empty when it is about the graph as a whole).
struct TemplateError {
  std::string message;
  std::string token;
  bool in_body = false;  // the token is read by a node: look for it after the graph's '{'
};

// Builds and checks a pattern from its parsed graph. An `any_input` capture must be used once,
// as an input of a node (of a commutative node it changes nothing: those try every order).
bool BuildPattern(const onnx::GraphProto& graph, const std::set<std::string>& variadic,
                  const std::set<std::string>& any_input, Pattern& pattern, TemplateError& error);

struct Replacement {
  std::vector<TemplateNode> nodes;
  std::vector<std::string> inputs;   // bound names the replacement reads (informative)
  std::vector<std::string> outputs;  // replace the pattern's outputs, position by position
};

// Builds a replacement; `bound` says whether a name is bound by the match or a `let`.
// Checks that every name read is bound or produced earlier, and every output is available.
// Replacement nodes produce new names, or the pattern's output names (which then stand for
// the new values from there on).
bool BuildReplacement(const onnx::GraphProto& graph, const std::set<std::string>& variadic,
                      const std::function<bool(const std::string&)>& bound,
                      const std::vector<std::string>& pattern_outputs, Replacement& replacement,
                      TemplateError& error);

// Copies `graph` with every node of op type `placeholder` (default domain) renamed to `op`.
onnx::GraphProto SubstituteOpType(const onnx::GraphProto& graph, const std::string& placeholder,
                                  const std::string& op);

}  // namespace ovfix::rules
