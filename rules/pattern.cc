#include "rules/pattern.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/op_groups.h"
#include "onnx/defs/parser.h"

namespace ovfix::rules {
namespace {

// onnx's parser reports "[ParseError at position (line: L column: C)]\nError context: ...\n
// message"; the position and the last line are what a caller can show.
void ReadParserMessage(const std::string& text, TextError& error) {
  const size_t at = text.find("(line: ");
  if (at != std::string::npos) {
    int line = 0, column = 0;
    if (std::sscanf(text.c_str() + at, "(line: %d column: %d)", &line, &column) == 2) {
      error.line = line;
      error.column = column;
    }
  }
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  error.message = lines.empty() ? "cannot parse graph text" : lines.back();
}

ValueConstraint ConstraintOf(const onnx::ValueInfoProto& info) {
  ValueConstraint c;
  if (!info.has_type() || !info.type().has_tensor_type()) return c;
  const auto& tensor = info.type().tensor_type();
  c.type = static_cast<DataType>(tensor.elem_type());
  // An empty shape is what onnx's parser makes of `float x`: in a pattern, any shape.
  if (tensor.has_shape() && tensor.shape().dim_size() > 0) {
    std::vector<DimConstraint> dims;
    for (const auto& d : tensor.shape().dim()) {
      DimConstraint dim;
      if (d.has_dim_value()) dim.value = d.dim_value();
      if (d.has_dim_param() && d.dim_param() != "?") dim.symbol = d.dim_param();
      dims.push_back(dim);
    }
    c.dims = std::move(dims);
  }
  return c;
}

TemplateNode NodeOf(const onnx::NodeProto& proto, const std::set<std::string>& variadic) {
  TemplateNode n;
  n.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  n.op_type = proto.op_type();
  n.inputs.assign(proto.input().begin(), proto.input().end());
  n.outputs.assign(proto.output().begin(), proto.output().end());
  n.attributes.assign(proto.attribute().begin(), proto.attribute().end());
  n.commutative = IsCommutative(n.domain, n.op_type);
  n.variadic = !n.inputs.empty() && variadic.count(n.inputs.back()) > 0;
  return n;
}

bool Fail(TemplateError& error, std::string message, std::string token = "") {
  error.message = std::move(message);
  error.token = std::move(token);
  return false;
}

// Variadic captures may only be the last input of one node.
bool CheckVariadicUse(const std::vector<TemplateNode>& nodes, const std::set<std::string>& variadic,
                      TemplateError& error) {
  std::set<std::string> used;
  for (const auto& n : nodes) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (variadic.count(n.inputs[i]) == 0) continue;
      if (i + 1 != n.inputs.size()) {
        return Fail(
            error,
            absl::StrCat("variadic '", n.inputs[i], "' must be the last input of ", n.op_type),
            n.inputs[i]);
      }
      if (!used.insert(n.inputs[i]).second) {
        return Fail(error, absl::StrCat("variadic '", n.inputs[i], "' is used twice"), n.inputs[i]);
      }
    }
  }
  return true;
}

// Marks the inputs that are `any_input` names (captures or pattern values); each must be used
// once, as a node input.
bool MarkAnyPositions(Pattern& pattern, TemplateError& error) {
  for (const auto& name : pattern.any_input) {
    if (!pattern.IsCapture(name) && pattern.producers.count(name) == 0) {
      return Fail(error,
                  absl::StrCat("any_input '", name, "' is neither a capture nor a pattern value"),
                  name);
    }
    if (pattern.variadic.count(name)) {
      return Fail(error, absl::StrCat("'", name, "' cannot be both variadic and any_input"), name);
    }
  }
  std::map<std::string, int> uses;
  for (auto& n : pattern.nodes) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (pattern.any_input.count(n.inputs[i]) == 0) continue;
      if (++uses[n.inputs[i]] > 1) {
        return Fail(error,
                    absl::StrCat("any_input '", n.inputs[i],
                                 "' is used twice: it stands for one input position"),
                    n.inputs[i]);
      }
      n.any_position.push_back(static_cast<int>(i));
    }
  }
  for (const auto& name : pattern.any_input) {
    if (uses[name] == 0) {
      return Fail(error, absl::StrCat("any_input '", name, "' is not an input of a pattern node"),
                  name);
    }
  }
  return true;
}

// onnx's parser recurses for every nested graph, attribute list and type, without a limit:
// text nested deeper than any real graph is refused before it gets there.
constexpr int kMaxGraphTextNesting = 200;

// Nodes in a pattern, and inputs of one pattern node: far more than a rule needs.
constexpr int kMaxPatternSize = 100;

bool CheckNesting(std::string_view text, TextError& error) {
  int depth = 0, line = 1, column = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i, ++column) {
    const char c = text[i];
    if (c == '\n') {
      line++;
      column = 0;
    } else if (in_string) {
      if (c == '\\') {
        ++i;
        ++column;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxGraphTextNesting) {
        error = {line, column,
                 absl::StrCat("graph text nested deeper than ", kMaxGraphTextNesting, " levels")};
        return false;
      }
    } else if ((c == ')' || c == ']' || c == '}' || (c == '>' && i > 0 && text[i - 1] != '=')) &&
               depth > 0) {
      --depth;
    }
  }
  return true;
}

}  // namespace

bool ParseGraphText(std::string_view text, onnx::GraphProto& graph, TextError& error) {
  if (!CheckNesting(text, error)) return false;
  const std::string source(text);
  try {
    onnx::OnnxParser parser(source.c_str());
    auto status = parser.Parse(graph);
    if (!status.IsOK()) {
      ReadParserMessage(status.ErrorMessage(), error);
      return false;
    }
    if (!parser.EndOfInput()) {
      error.message = "unexpected text after the graph";
      error.line = 1 + static_cast<int>(std::count(source.begin(), source.end(), '\n'));
      error.column = 1;
      return false;
    }
  } catch (const std::exception& e) {
    error.message = e.what();
    return false;
  }
  return true;
}

bool IsCommutative(std::string_view domain, std::string_view op_type) {
  return InOpGroup("commutative", domain, op_type);
}

bool Pattern::IsCapture(const std::string& name) const {
  return std::find(inputs.begin(), inputs.end(), name) != inputs.end();
}

bool Pattern::Binds(const std::string& name) const {
  return IsCapture(name) || producers.count(name) > 0 || attribute_captures.count(name) > 0;
}

bool BuildPattern(const onnx::GraphProto& graph, const std::set<std::string>& variadic,
                  const std::set<std::string>& any_input, Pattern& pattern, TemplateError& error) {
  pattern = Pattern{};
  pattern.variadic = variadic;
  pattern.any_input = any_input;
  for (const auto& in : graph.input()) {
    if (pattern.IsCapture(in.name())) {
      return Fail(error, absl::StrCat("capture '", in.name(), "' is declared twice"), in.name());
    }
    pattern.inputs.push_back(in.name());
    if (ValueConstraint c = ConstraintOf(in); !c.empty()) pattern.constraints[in.name()] = c;
  }
  for (const auto& name : variadic) {
    if (!pattern.IsCapture(name)) {
      return Fail(error, absl::StrCat("variadic '", name, "' is not an input of the pattern"),
                  name);
    }
  }
  if (graph.node_size() == 0) return Fail(error, "the pattern has no node");
  // Matching recurses once per pattern node and once per input of a commutative node.
  if (graph.node_size() > kMaxPatternSize) {
    return Fail(error, absl::StrCat("the pattern has ", graph.node_size(), " nodes; at most ",
                                    kMaxPatternSize));
  }
  for (const auto& proto : graph.node()) {
    if (proto.input_size() > kMaxPatternSize) {
      return Fail(error,
                  absl::StrCat(proto.op_type(), " has ", proto.input_size(),
                               " inputs in the pattern; at most ", kMaxPatternSize),
                  proto.output_size() > 0 ? proto.output(0) : "");
    }
    pattern.nodes.push_back(NodeOf(proto, variadic));
  }
  for (int i = 0; i < static_cast<int>(pattern.nodes.size()); ++i) {
    const auto& n = pattern.nodes[i];
    for (int k = 0; k < static_cast<int>(n.outputs.size()); ++k) {
      const std::string& out = n.outputs[k];
      if (out.empty()) continue;
      if (pattern.IsCapture(out) || !pattern.producers.emplace(out, std::make_pair(i, k)).second) {
        return Fail(error, absl::StrCat("'", out, "' is defined twice in the pattern"), out);
      }
    }
    for (const auto& a : n.attributes) {
      if (a.ref_attr_name().empty()) continue;
      if (pattern.IsCapture(a.ref_attr_name()) || pattern.producers.count(a.ref_attr_name()) ||
          !pattern.attribute_captures.insert(a.ref_attr_name()).second) {
        return Fail(error, absl::StrCat("'@", a.ref_attr_name(), "' is bound twice"),
                    a.ref_attr_name());
      }
    }
  }
  std::set<std::string> used;
  for (const auto& n : pattern.nodes) {
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      if (!pattern.IsCapture(in) && pattern.producers.count(in) == 0) {
        return Fail(error,
                    absl::StrCat("'", in, "' is neither a pattern input nor produced by a node"),
                    in);
      }
      used.insert(in);
    }
  }
  for (const auto& in : pattern.inputs) {
    if (used.count(in) == 0) {
      return Fail(error, absl::StrCat("capture '", in, "' is not used by the pattern"), in);
    }
  }
  if (!CheckVariadicUse(pattern.nodes, variadic, error)) return false;
  if (!MarkAnyPositions(pattern, error)) return false;
  if (graph.output_size() == 0) return Fail(error, "the pattern has no output");
  for (const auto& out : graph.output()) {
    auto it = pattern.producers.find(out.name());
    if (it == pattern.producers.end()) {
      return Fail(error,
                  absl::StrCat("pattern output '", out.name(), "' is not produced by a node"),
                  out.name());
    }
    pattern.outputs.push_back(out.name());
    if (ValueConstraint c = ConstraintOf(out); !c.empty()) pattern.constraints[out.name()] = c;
  }
  pattern.root = pattern.producers.at(pattern.outputs[0]).first;
  // Matching walks from the root towards the inputs: every node must be on that walk.
  std::vector<bool> reached(pattern.nodes.size(), false);
  std::vector<int> stack = {pattern.root};
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (reached[i]) continue;
    reached[i] = true;
    for (const auto& in : pattern.nodes[i].inputs) {
      auto it = pattern.producers.find(in);
      if (it != pattern.producers.end()) stack.push_back(it->second.first);
    }
  }
  for (size_t i = 0; i < reached.size(); ++i) {
    if (!reached[i]) {
      const std::string& out = pattern.nodes[i].outputs.empty() ? "" : pattern.nodes[i].outputs[0];
      return Fail(
          error,
          absl::StrCat("node producing '", out, "' does not feed the pattern's first output '",
                       pattern.outputs[0], "'"),
          out);
    }
  }
  return true;
}

bool BuildReplacement(const onnx::GraphProto& graph, const std::set<std::string>& variadic,
                      const std::function<bool(const std::string&)>& bound,
                      const std::vector<std::string>& pattern_outputs, Replacement& replacement,
                      TemplateError& error) {
  auto is_pattern_output = [&](const std::string& name) {
    return std::find(pattern_outputs.begin(), pattern_outputs.end(), name) != pattern_outputs.end();
  };
  replacement = Replacement{};
  for (const auto& in : graph.input()) {
    if (!bound(in.name())) {
      return Fail(
          error, absl::StrCat("'", in.name(), "' is used in replace but not bound in match or let"),
          in.name());
    }
    replacement.inputs.push_back(in.name());
  }
  std::set<std::string> produced;
  for (const auto& proto : graph.node()) {
    TemplateNode n = NodeOf(proto, variadic);
    n.commutative = false;
    for (const auto& in : n.inputs) {
      if (in.empty() || produced.count(in)) continue;
      if (is_pattern_output(in)) {
        // The pattern's output is the value this replacement replaces: reading it would make
        // the new nodes depend on what they stand for.
        error.in_body = true;
        return Fail(error,
                    absl::StrCat("'", in,
                                 "' is an output the replacement replaces; a replacement node "
                                 "cannot read it (read the values it is computed from)"),
                    in);
      }
      if (bound(in)) continue;
      return Fail(error,
                  absl::StrCat("'", in, "' is used in replace but not bound in match or let"), in);
    }
    for (const auto& a : n.attributes) {
      if (!a.ref_attr_name().empty() && !bound(a.ref_attr_name())) {
        return Fail(error,
                    absl::StrCat("'@", a.ref_attr_name(),
                                 "' is used in replace but not bound in match or let"),
                    a.ref_attr_name());
      }
    }
    for (const auto& out : n.outputs) {
      if (out.empty()) continue;
      if ((bound(out) && !is_pattern_output(out)) || !produced.insert(out).second) {
        return Fail(error,
                    absl::StrCat("'", out,
                                 "' is already defined; a replacement node "
                                 "must produce new names"),
                    out);
      }
    }
    replacement.nodes.push_back(std::move(n));
  }
  if (!CheckVariadicUse(replacement.nodes, variadic, error)) return false;
  for (const auto& out : graph.output()) {
    if (!produced.count(out.name()) && !bound(out.name())) {
      return Fail(error,
                  absl::StrCat("replacement output '", out.name(),
                               "' is neither produced by a replacement node nor bound"),
                  out.name());
    }
    if (variadic.count(out.name())) {
      return Fail(error, absl::StrCat("a variadic capture cannot be an output"), out.name());
    }
    replacement.outputs.push_back(out.name());
  }
  return true;
}

onnx::GraphProto SubstituteOpType(const onnx::GraphProto& graph, const std::string& placeholder,
                                  const std::string& op) {
  onnx::GraphProto copy = graph;
  for (auto& node : *copy.mutable_node()) {
    if (node.op_type() == placeholder && (node.domain().empty() || node.domain() == "ai.onnx")) {
      node.set_op_type(op);
    }
  }
  return copy;
}

}  // namespace ovfix::rules
