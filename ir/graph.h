// Graph: nodes in topological order, the values they connect, graph inputs/outputs,
// initializers. Every edit goes through methods that keep producers and use lists right.
// Subgraphs (If/Loop/Scan bodies) are Graphs with a parent; names they do not define are
// looked up in the enclosing graphs, and such outer values record the inner uses.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "ir/node.h"
#include "ir/value.h"
#include "onnx/onnx_pb.h"

namespace ovfix {

class Graph {
 public:
  explicit Graph(Graph* parent = nullptr, Node* owner_node = nullptr)
      : parent_(parent), owner_node_(owner_node) {}
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  Graph* parent() const { return parent_; }
  Node* owner_node() const { return owner_node_; }
  // GraphProto fields the IR does not model (doc_string, sparse initializers, quantization
  // annotations): kept as read and written back.
  onnx::GraphProto& extras() { return extras_; }
  const onnx::GraphProto& extras() const { return extras_; }

  // Nodes in topological order.
  class NodeRange {
   public:
    using Iter = std::list<std::unique_ptr<Node>>::const_iterator;
    struct iterator {
      Iter it;
      Node* operator*() const { return it->get(); }
      iterator& operator++() {
        ++it;
        return *this;
      }
      bool operator!=(const iterator& o) const { return it != o.it; }
      bool operator==(const iterator& o) const { return it == o.it; }
    };
    NodeRange(Iter b, Iter e) : b_(b), e_(e) {}
    iterator begin() const { return {b_}; }
    iterator end() const { return {e_}; }

   private:
    Iter b_, e_;
  };
  NodeRange nodes() const { return {nodes_.begin(), nodes_.end()}; }
  std::vector<Node*> NodeList() const;
  size_t num_nodes() const { return nodes_.size(); }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Value*>& initializers() const { return initializers_; }
  // Values listed in value_info (written back on save, in this order).
  const std::vector<Value*>& value_info() const { return value_info_; }

  // Values of this scope by name; Lookup also searches the enclosing graphs.
  Value* FindValue(std::string_view name) const;
  Value* LookupValue(std::string_view name) const;
  // A new value named `name`, or a fresh unique name built from it when taken.
  Value* CreateValue(std::string_view name);
  std::string UniqueName(std::string_view base);
  void RenameValue(Value* v, std::string_view name);  // name must be free

  // Edits.
  void AddInput(Value* v);
  void AddOutput(Value* v);
  void ReplaceOutput(size_t i, Value* v);
  void SetInputs(std::vector<Value*> inputs);
  void AddInitializer(Value* v, Tensor t);
  Value* AddInitializer(std::string_view name, Tensor t);
  // A new node before `before` (at the end when null). Outputs are created by name.
  Node* AddNode(std::string_view op_type, const std::vector<Value*>& inputs,
                const std::vector<std::string>& output_names, std::string_view name = "",
                std::string_view domain = "", Node* before = nullptr);
  Node* AddNodeWithOutputs(std::string_view op_type, const std::vector<Value*>& inputs,
                           const std::vector<Value*>& outputs, std::string_view name = "",
                           std::string_view domain = "", Node* before = nullptr);
  // Removes a node whose outputs have no uses and are not graph outputs.
  void EraseNode(Node* node);
  // Takes a node out of the graph without destroying it or its output values (which stay,
  // without a producer): the rewriter keeps detached nodes to undo or validate a rewrite.
  std::unique_ptr<Node> DetachNode(Node* node);
  // Puts a detached node back before `before` (at the end when null), restoring its uses
  // and its outputs' producer.
  Node* ReattachNode(std::unique_ptr<Node> node, Node* before);
  // Removes a value that nothing produces, uses, or lists (not an input/output/initializer).
  void DeleteValue(Value* v);
  // Drops an initializer's tensor and its place in the initializer list (the value stays).
  void RemoveInitializer(Value* v);
  // Deletes every value that nothing produces, uses or lists. Returns how many.
  int DeleteDanglingValues();
  // Every use of `from` (in this graph and its subgraphs) now uses `to`.
  void ReplaceAllUsesWith(Value* from, Value* to);
  // Removes nodes whose outputs are unused, initializers and values nobody uses.
  int RemoveDeadCode();
  // Reorders nodes so every input is produced before it is used. Fails on a cycle.
  absl::Status TopologicalSort();
  // Checks producers/uses/order invariants (tests; after rewrites).
  absl::Status Verify() const;
  // Total nodes including those of subgraphs.
  size_t CountNodesRecursive() const;

 private:
  friend class ModelIO;
  void Renumber();
  Value* NewValue(std::string name);

  std::string name_;
  Graph* parent_;
  Node* owner_node_;
  onnx::GraphProto extras_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  absl::flat_hash_map<std::string, Value*> by_name_;
  std::vector<Value*> inputs_, outputs_, initializers_, value_info_;
  int64_t name_counter_ = 0;
};

}  // namespace ovfix
