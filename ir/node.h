// Node: one operator application. Attributes are kept as onnx AttributeProtos (so nothing is
// lost on the way through); subgraph attributes (If/Loop/Scan bodies) are owned Graphs.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

class Graph;
class Value;

struct Subgraph {
  std::string attribute;  // the GRAPH / GRAPHS attribute that holds it
  int index = -1;         // position within a GRAPHS attribute, -1 for GRAPH
  std::unique_ptr<Graph> graph;
};

class Node {
 public:
  ~Node();
  const std::string& domain() const { return domain_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  const std::string& doc_string() const { return doc_string_; }
  void set_doc_string(std::string s) { doc_string_ = std::move(s); }
  Graph* owner() const { return owner_; }
  // "Conv 'conv1'" or "Conv #12" when unnamed: how messages name a node.
  std::string Describe() const;

  // Inputs/outputs; nullptr stands for an omitted optional ("" in the file).
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  void ReplaceInput(size_t i, Value* v);  // keeps use lists right
  void AddInput(Value* v);

  // Attributes (graph attributes have their graph moved into subgraphs()).
  const std::vector<onnx::AttributeProto>& attributes() const { return attributes_; }
  const onnx::AttributeProto* FindAttribute(std::string_view name) const;
  bool HasAttribute(std::string_view name) const { return FindAttribute(name) != nullptr; }
  int64_t GetInt(std::string_view name, int64_t fallback) const;
  float GetFloat(std::string_view name, float fallback) const;
  std::string GetString(std::string_view name, std::string fallback = "") const;
  std::vector<int64_t> GetInts(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> GetFloats(std::string_view name, std::vector<float> fallback = {}) const;
  std::vector<std::string> GetStrings(std::string_view name) const;
  // A TENSOR attribute decoded (e.g. Constant's value).
  absl::StatusOr<Tensor> GetTensor(std::string_view name) const;
  void SetAttribute(onnx::AttributeProto attribute);  // replaces one of the same name
  void RemoveAttribute(std::string_view name);

  std::vector<Subgraph>& subgraphs() { return subgraphs_; }
  const std::vector<Subgraph>& subgraphs() const { return subgraphs_; }
  // The subgraph held by a GRAPH attribute, or nullptr.
  Graph* GetSubgraph(std::string_view attribute) const;

  // Position in the owning graph's node order (increasing along the list; not dense).
  int64_t order() const { return order_; }

 private:
  friend class Graph;
  friend class ModelIO;
  Node() = default;

  Graph* owner_ = nullptr;
  std::string domain_, op_type_, name_, doc_string_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<onnx::AttributeProto> attributes_;
  std::vector<Subgraph> subgraphs_;
  std::list<std::unique_ptr<Node>>::iterator position_;
  int64_t order_ = 0;
};

}  // namespace ovfix
