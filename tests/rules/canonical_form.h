// A text form of a graph for golden comparisons: graph inputs and outputs keep their names,
// every other value is renamed by order of first appearance (%0, %1, ... for computed values,
// c0, c1, ... for constants), attributes are sorted, constants are printed by value. Two graphs
// that differ only in the names a rewrite invented print the same.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/graph.h"
#include "ir/model.h"
#include "ir/tensor_proto.h"

namespace ovfix::rules {

inline std::string CanonicalTensor(const Tensor& t) {
  std::vector<std::string> values;
  for (int64_t i = 0; i < t.numel() && t.type() != DataType::kString; ++i) {
    values.push_back(absl::StrCat(t.GetAsDouble(i)));
  }
  return absl::StrCat(DescribeTensor(t), " {", absl::StrJoin(values, ", "), "}");
}

inline std::string CanonicalAttribute(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  std::string value;
  switch (a.type()) {
    case A::INT:
      value = absl::StrCat(a.i());
      break;
    case A::FLOAT:
      value = absl::StrCat(a.f());
      break;
    case A::STRING:
      value = absl::StrCat("\"", a.s(), "\"");
      break;
    case A::INTS:
      value = absl::StrCat("[", absl::StrJoin(a.ints(), ", "), "]");
      break;
    case A::FLOATS:
      value = absl::StrCat("[", absl::StrJoin(a.floats(), ", "), "]");
      break;
    case A::TENSOR: {
      auto t = TensorFromProto(a.t());
      value = t.ok() ? CanonicalTensor(*t) : "(bad tensor)";
      break;
    }
    default:
      value = a.ShortDebugString();
  }
  return absl::StrCat(a.name(), " = ", value);
}

// If/Loop/Scan bodies are printed under their node, indented, with the same renaming (a body
// reading an outer value prints the outer value's canonical name).
inline std::string CanonicalForm(const Model& model) {
  std::map<const Value*, std::string> names;
  std::vector<const Value*> constants;
  int computed = 0;
  auto name_of = [&](const Value* v) -> std::string {
    if (v == nullptr) return "";
    if (v->is_graph_input() || v->is_graph_output()) return v->name();
    auto it = names.find(v);
    if (it != names.end()) return it->second;
    std::string name;
    if (v->is_initializer()) {
      name = absl::StrCat("c", constants.size());
      constants.push_back(v);
    } else {
      name = absl::StrCat("%", computed++);
    }
    names[v] = name;
    return name;
  };
  std::string out;
  std::function<void(const Graph&, const std::string&)> print = [&](const Graph& g,
                                                                    const std::string& indent) {
    absl::StrAppend(&out, indent, "inputs:");
    for (const Value* v : g.inputs()) {
      absl::StrAppend(&out, " ", v->name(), ":", DescribeType(*v));
    }
    absl::StrAppend(&out, "\n", indent, "outputs:");
    for (const Value* v : g.outputs()) absl::StrAppend(&out, " ", name_of(v));
    absl::StrAppend(&out, "\n");
    for (const Node* n : g.nodes()) {
      std::vector<std::string> inputs, outputs, attributes;
      for (const Value* v : n->inputs()) inputs.push_back(name_of(v));
      for (const Value* v : n->outputs()) outputs.push_back(name_of(v));
      for (const auto& a : n->attributes()) attributes.push_back(CanonicalAttribute(a));
      std::sort(attributes.begin(), attributes.end());
      absl::StrAppend(
          &out, indent, absl::StrJoin(outputs, ", "), " = ",
          n->domain().empty() ? "" : absl::StrCat(n->domain(), "."), n->op_type(),
          attributes.empty() ? "" : absl::StrCat("<", absl::StrJoin(attributes, ", "), ">"), "(",
          absl::StrJoin(inputs, ", "), ")\n");
      for (const Subgraph& s : n->subgraphs()) {
        absl::StrAppend(&out, indent, "  ", s.attribute, ":\n");
        print(*s.graph, indent + "    ");
      }
    }
  };
  print(model.graph(), "");
  for (const Value* v : constants) {
    absl::StrAppend(&out, names[v], " = ", CanonicalTensor(v->tensor()), "\n");
  }
  return out;
}

}  // namespace ovfix::rules
