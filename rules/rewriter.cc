#include "rules/rewriter.h"

#include <cassert>
#include <optional>

#include "absl/strings/str_cat.h"

namespace ovfix::rules {

Rewriter::~Rewriter() {
  if (open_) Rollback("rewriter destroyed mid-rewrite");
}

void Rewriter::Begin(std::string_view rule, const std::vector<Node*>& matched) {
  assert(!open_);
  open_ = true;
  current_ = RewriteRecord{};
  current_.rule = std::string(rule);
  for (Node* n : matched) current_.matched.push_back(n->Describe());
  if (observer_ != nullptr) observer_->OnBegin(*this);
}

Node* Rewriter::CreateNode(Graph& g, std::string_view op_type, const std::vector<Value*>& inputs,
                           const std::vector<std::string>& output_names, Node* before,
                           std::string_view name, std::string_view domain) {
  assert(open_);
  current_.new_types = true;
  Node* n = g.AddNode(op_type, inputs, output_names, name, domain, before);
  created_.push_back(n);
  modified_set_.insert(n);  // a created node is never also listed as modified
  Record([this, &g, n] {
    std::erase(created_, n);
    std::vector<Value*> outputs = n->outputs();
    g.DetachNode(n).reset();
    for (Value* v : outputs) {
      if (v != nullptr) g.DeleteValue(v);
    }
  });
  return n;
}

Value* Rewriter::CreateInitializer(Graph& g, std::string_view name, Tensor t) {
  assert(open_);
  current_.new_types = true;
  Value* v = g.AddInitializer(name, std::move(t));
  Record([&g, v] {
    g.RemoveInitializer(v);
    g.DeleteValue(v);
  });
  return v;
}

void Rewriter::SetInput(Node* node, size_t index, Value* v) {
  assert(open_);
  Value* old = node->input(index);
  if (old == v) return;
  node->ReplaceInput(index, v);
  MarkModified(node);
  Record([node, index, old] { node->ReplaceInput(index, old); });
}

void Rewriter::SetAttribute(Node* node, onnx::AttributeProto attribute) {
  assert(open_);
  current_.new_types = true;
  const onnx::AttributeProto* existing = node->FindAttribute(attribute.name());
  std::optional<onnx::AttributeProto> old;
  if (existing != nullptr) old = *existing;
  const std::string name = attribute.name();
  node->SetAttribute(std::move(attribute));
  MarkModified(node);
  Record([node, name, old] {
    if (old) {
      node->SetAttribute(*old);
    } else {
      node->RemoveAttribute(name);
    }
  });
}

void Rewriter::RemoveAttribute(Node* node, std::string_view name) {
  assert(open_);
  current_.new_types = true;
  const onnx::AttributeProto* existing = node->FindAttribute(name);
  if (existing == nullptr) return;
  onnx::AttributeProto old = *existing;
  node->RemoveAttribute(name);
  MarkModified(node);
  Record([node, old] { node->SetAttribute(old); });
}

void Rewriter::SetInitializer(Value* v, Tensor t) {
  assert(open_ && v->is_initializer());
  current_.new_types = true;
  Tensor old = v->tensor();
  onnx::TypeProto old_type = v->type();
  v->set_tensor(std::move(t));
  MarkUsersModified(v);
  Record([v, old, old_type] {
    v->set_tensor(old);
    *v->mutable_type() = old_type;
  });
}

void Rewriter::SetType(Value* v, const onnx::TypeProto& type) {
  assert(open_);
  current_.new_types = true;
  onnx::TypeProto old = v->type();
  *v->mutable_type() = type;
  MarkUsersModified(v);
  Record([v, old] { *v->mutable_type() = old; });
}

void Rewriter::ReplaceAllUsesWith(Value* from, Value* to) {
  assert(open_);
  if (from == to) return;
  const std::vector<Use> uses = from->uses();
  for (const Use& u : uses) SetInput(u.node, u.input_index, to);
  if (!from->is_graph_output()) return;
  Graph& g = *from->owner();
  // The output keeps its name. A value that is already an input or output (or lives in
  // another scope) cannot take the name, so an Identity carries it instead.
  Value* carrier = to;
  if (to->is_graph_input() || to->is_graph_output() || to->owner() != &g) {
    Node* last = nullptr;
    Node* identity = CreateNode(g, "Identity", {to}, {from->name() + "_identity"}, last);
    carrier = identity->output(0);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    if (g.outputs()[i] != from) continue;
    g.ReplaceOutput(i, carrier);
    replaced_outputs_.emplace_back(i, from);
    Record([&g, i, from] { g.ReplaceOutput(i, from); });
  }
  const std::string output_name = from->name();
  const std::string carrier_name = carrier->name();
  const std::string parked = g.UniqueName(output_name + "_replaced");
  g.RenameValue(from, parked);
  g.RenameValue(carrier, output_name);
  // The carrier takes over what the file declared for the output (type, doc string).
  SetType(carrier, from->type());
  Record([&g, from, carrier, output_name, carrier_name] {
    g.RenameValue(carrier, carrier_name);
    g.RenameValue(from, output_name);
  });
}

void Rewriter::EraseNode(Node* node) {
  assert(open_);
  Graph& g = *node->owner();
  Graph::NodeRange range = g.nodes();
  Node* next = nullptr;
  bool found = false;
  for (Node* n : range) {
    if (found) {
      next = n;
      break;
    }
    found = n == node;
  }
  erased_view_.push_back(node);
  detached_.push_back(g.DetachNode(node));
  ++current_.removed;
  Record([this, &g, node, next] {
    for (size_t i = 0; i < detached_.size(); ++i) {
      if (detached_[i].get() != node) continue;
      g.ReattachNode(std::move(detached_[i]), next);
      detached_.erase(detached_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
    std::erase(erased_view_, node);
    --current_.removed;
  });
}

void Rewriter::MarkModified(Node* node) {
  if (modified_set_.insert(node).second) modified_.push_back(node);
}

void Rewriter::MarkUsersModified(const Value* v) {
  for (const Use& u : v->uses()) MarkModified(u.node);
}

namespace {

bool NeedsSort(const Graph& g) {
  for (Node* n : g.nodes()) {
    for (Value* v : n->inputs()) {
      if (v != nullptr && v->producer() != nullptr && v->owner() == &g &&
          v->producer()->order() >= n->order()) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

RewriteRecord& Rewriter::Commit() {
  assert(open_);
  if (observer_ != nullptr) observer_->OnCommitting(*this);
  for (Node* n : created_) current_.created.push_back(n->Describe());
  Graph& g = graph();
  current_.removed += g.RemoveDeadCode();
  detached_.clear();
  g.DeleteDanglingValues();
  if (NeedsSort(g)) {
    // Rules insert replacements before the node they replace; a sort is only a safety net.
    (void)g.TopologicalSort();
  }
  undo_.clear();
  created_.clear();
  erased_view_.clear();
  modified_.clear();
  modified_set_.clear();
  replaced_outputs_.clear();
  open_ = false;
  records_.push_back(std::move(current_));
  if (observer_ != nullptr) observer_->OnCommitted(*this);
  return records_.back();
}

void Rewriter::Rollback(std::string reason) {
  assert(open_);
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  undo_.clear();
  detached_.clear();
  created_.clear();
  erased_view_.clear();
  modified_.clear();
  modified_set_.clear();
  replaced_outputs_.clear();
  open_ = false;
  current_.rolled_back = true;
  current_.created.clear();
  current_.removed = 0;
  current_.note = std::move(reason);
  records_.push_back(std::move(current_));
  if (observer_ != nullptr) observer_->OnRolledBack(*this);
}

}  // namespace ovfix::rules
