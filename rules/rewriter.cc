#include "rules/rewriter.h"

#include <algorithm>
#include <cassert>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/graph_walk.h"

namespace ovfix::rules {

Rewriter::~Rewriter() {
  if (open_) Rollback("rewriter destroyed mid-rewrite");
  DeleteDanglingValues();
}

void Rewriter::DeleteDanglingValues() {
  for (auto& [g, count] : dangling_) {
    if (count > 0) g->DeleteDanglingValues();
  }
  dangling_.clear();
}

const std::vector<Graph*>& Rewriter::Graphs() {
  if (!graphs_known_) {
    graphs_ = GraphsRecursive(model_.graph());
    graphs_known_ = true;
  }
  return graphs_;
}

void Rewriter::ForgetBodiesOf(const Node& node) {
  if (node.subgraphs().empty()) return;
  graphs_known_ = false;
  for (const Subgraph& s : node.subgraphs()) {
    for (Graph* body : GraphsRecursive(*s.graph)) dangling_.erase(body);
  }
}

bool Rewriter::NameTaken(std::string_view name) {
  for (const Graph* g : Graphs()) {
    if (g->FindValue(name) != nullptr) return true;
  }
  return false;
}

std::string Rewriter::UniqueName(std::string_view base) {
  if (!base.empty() && !NameTaken(base)) return std::string(base);
  for (;;) {
    std::string candidate =
        absl::StrCat(base.empty() ? "v" : std::string(base), "_", ++name_counter_);
    if (!NameTaken(candidate)) return candidate;
  }
}

void Rewriter::DeleteDangling(Graph& g, size_t count, bool now) {
  size_t& waiting = dangling_[&g];
  waiting += count;
  if (waiting == 0) return;
  if (now || g.num_nodes() < 4096 || waiting * 8 > g.num_nodes()) {
    g.DeleteDanglingValues();
    waiting = 0;
  }
}

void Rewriter::Begin(std::string_view rule, const std::vector<Node*>& matched) {
  assert(!open_);
  open_ = true;
  current_ = RewriteRecord{};
  current_.rule = std::string(rule);
  for (Node* n : matched) current_.matched.push_back(n->Describe());
  if (facts_ != nullptr && facts_->size() > 0) {
    for (Node* n : matched) {
      for (const std::vector<Value*>* values : {&n->inputs(), &n->outputs()}) {
        for (const Value* v : *values) {
          if (v == nullptr || !facts_->IsObserved(*v)) continue;
          auto& names = current_.observed_shapes;
          if (std::find(names.begin(), names.end(), v->name()) == names.end()) {
            names.push_back(v->name());
          }
        }
      }
    }
  }
  if (observer_ != nullptr) observer_->OnBegin(*this);
}

Node* Rewriter::CreateNode(Graph& g, std::string_view op_type, const std::vector<Value*>& inputs,
                           const std::vector<std::string>& output_names, Node* before,
                           std::string_view name, std::string_view domain) {
  assert(open_);
  current_.new_types = true;
  std::vector<std::string> names;
  for (const std::string& o : output_names) names.push_back(o.empty() ? o : UniqueName(o));
  Node* n = g.AddNode(op_type, inputs, names, name, domain, before);
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
  Value* v = g.AddInitializer(UniqueName(name), std::move(t));
  created_values_.push_back(v);
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
  if (old != nullptr) lost_use_.push_back(old);
  if (rewired_.insert({node, index}).second) rewirings_.push_back({node, index, old});
  MarkModified(node, /*beyond_inputs=*/false);
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
  MarkModified(node, /*beyond_inputs=*/true);
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
  MarkModified(node, /*beyond_inputs=*/true);
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

std::string Rewriter::GraphInterfaceConflict(const Value* from, const Value* to) {
  if (from == to || to == nullptr || !from->is_graph_output()) return "";
  std::string what;
  if (to->is_graph_input()) {
    what = "a graph input";
  } else if (to->is_graph_output()) {
    what = "another graph output";
  } else if (to->owner() != from->owner()) {
    what = "a value of an enclosing graph";
  } else if (to->is_initializer()) {
    what = "an initializer";
  } else {
    return "";
  }
  return absl::StrCat("graph output '", from->name(), "' would be replaced by '", to->name(), "', ",
                      what,
                      ", which cannot take its name (the rewriter keeps graph inputs and "
                      "outputs)");
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
    lost_use_.push_back(from);
    Record([&g, i, from] { g.ReplaceOutput(i, from); });
  }
  const std::string output_name = from->name();
  const std::string carrier_name = carrier->name();
  const std::string parked = UniqueName(output_name + "_replaced");
  g.RenameValue(from, parked);
  g.RenameValue(carrier, output_name);
  // The carrier takes over what the file declared for the output (type, doc string).
  SetType(carrier, from->type());
  Record([&g, from, carrier, output_name, carrier_name] {
    g.RenameValue(carrier, carrier_name);
    g.RenameValue(from, output_name);
  });
}

void Rewriter::TypesPreserved() {
  assert(open_);
  auto complete = [](const Node* n) {
    if (!n->subgraphs().empty()) return false;
    return std::all_of(n->outputs().begin(), n->outputs().end(), [](const Value* v) {
      return v == nullptr || (v->elem_type() != DataType::kUndefined && v->static_shape());
    });
  };
  current_.new_types = !std::all_of(created_.begin(), created_.end(), complete) ||
                       !std::all_of(modified_.begin(), modified_.end(), complete);
}

void Rewriter::EraseNode(Node* node) {
  assert(open_);
  Graph& g = *node->owner();
  Node* next = NextNode(*node);
  for (Value* in : node->inputs()) {
    if (in != nullptr) lost_use_.push_back(in);
  }
  erased_view_.push_back(node);
  if (!node->subgraphs().empty()) graphs_known_ = false;
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

void Rewriter::MarkModified(Node* node, bool beyond_inputs) {
  if (beyond_inputs) changed_beyond_inputs_.insert(node);
  if (modified_set_.insert(node).second) modified_.push_back(node);
}

void Rewriter::MarkUsersModified(const Value* v) {
  for (const Use& u : v->uses()) MarkModified(u.node, /*beyond_inputs=*/true);
}

namespace {

bool IsDeadNode(const Node& n) {
  for (const Value* v : n.outputs()) {
    if (v != nullptr && (v->has_uses() || v->is_graph_output())) return false;
  }
  return true;
}

bool Inside(const Graph* g, const Graph* scope) {
  for (; g != nullptr; g = g->parent()) {
    if (g == scope) return true;
  }
  return false;
}

// Values outside `node`'s bodies that they read: erasing `node` takes those uses away.
void OuterReads(const Node& node, std::vector<Value*>& out) {
  for (const Subgraph& s : node.subgraphs()) {
    for (Graph* body : GraphsRecursive(*s.graph)) {
      for (Node* n : body->nodes()) {
        for (Value* v : n->inputs()) {
          if (v != nullptr && !Inside(v->owner(), s.graph.get())) out.push_back(v);
        }
      }
    }
  }
}

// Whether `g` is one of `node`'s bodies or nested in one.
bool InBodyOf(const Graph* g, const Node* node) {
  for (; g != nullptr; g = g->parent()) {
    if (g->owner_node() == node) return true;
  }
  return false;
}

// The node of `scope` that holds `n` (itself, or the If/Loop/Scan whose body holds it).
const Node* AncestorIn(const Node* n, const Graph* scope) {
  while (n != nullptr && n->owner() != scope) n = n->owner()->owner_node();
  return n;
}

}  // namespace

void Rewriter::RemoveDead() {
  // Dead nodes holding bodies are removed only in graphs the transaction edited: a pass
  // walking the model's graphs never meets a body whose holder went behind its back.
  absl::flat_hash_set<const Graph*> edited;
  for (const std::vector<Node*>* list : {&created_, &modified_, &erased_view_}) {
    for (const Node* n : *list) edited.insert(n->owner());
  }
  // The outputs of erased nodes stay in their graph until here (validation reads them).
  std::vector<Value*> work;
  for (const auto& node : detached_) {
    last_removed_.push_back(node.get());
    ForgetBodiesOf(*node);
    for (Value* v : node->outputs()) {
      if (v != nullptr) work.push_back(v);
    }
  }
  detached_.clear();
  work.insert(work.end(), lost_use_.begin(), lost_use_.end());
  work.insert(work.end(), created_values_.begin(), created_values_.end());
  for (Node* n : created_) {
    for (Value* v : n->outputs()) {
      if (v != nullptr) work.push_back(v);
    }
  }
  // Values left without producer and readers wait for a batched deletion (DeleteDangling):
  // deleting them one by one costs a pass over the graph's values each.
  absl::flat_hash_map<Graph*, size_t> dangling;
  absl::flat_hash_set<Value*> pending(work.begin(), work.end());
  while (!work.empty()) {
    Value* v = work.back();
    work.pop_back();
    if (pending.erase(v) == 0) continue;  // done already, or gone with a removed body
    Graph& g = *v->owner();
    if (v->has_uses() || v->is_graph_output() || v->is_graph_input()) continue;
    Node* p = v->producer();
    if (p == nullptr) {
      if (v->is_initializer()) g.RemoveInitializer(v);
      ++dangling[&g];
      continue;
    }
    if (!IsDeadNode(*p) || (!p->subgraphs().empty() && !edited.contains(&g))) continue;
    std::vector<Value*> freed(p->inputs().begin(), p->inputs().end());
    OuterReads(*p, freed);
    if (!p->subgraphs().empty()) {
      absl::erase_if(pending, [&](Value* w) { return InBodyOf(w->owner(), p); });
      std::erase_if(work, [&](Value* w) { return !pending.contains(w); });
      absl::erase_if(dangling, [&](const auto& entry) { return InBodyOf(entry.first, p); });
      ForgetBodiesOf(*p);
    }
    for (Value* o : p->outputs()) {
      if (o == nullptr) continue;
      pending.erase(o);
      ++dangling[&g];
    }
    last_removed_.push_back(p);
    g.DetachNode(p).reset();  // its outputs are left dangling, deleted with the batch
    ++current_.removed;
    for (Value* in : freed) {
      if (in != nullptr && pending.insert(in).second) work.push_back(in);
    }
  }
  for (auto& [g, count] : dangling) DeleteDangling(*g, count);
}

void Rewriter::SortWhereNeeded() {
  // Rules insert replacements before the node they replace; a sort is only a safety net,
  // needed when an edited node now reads a value produced after it (or after its holder).
  absl::flat_hash_set<Graph*> unsorted;
  for (const std::vector<Node*>* list : {&created_, &modified_}) {
    for (const Node* n : *list) {
      if (n->owner() == nullptr) continue;
      for (const Value* v : n->inputs()) {
        if (v == nullptr || v->producer() == nullptr) continue;
        const Node* holder = AncestorIn(n, v->owner());
        if (holder != nullptr && v->producer()->order() >= holder->order()) {
          unsorted.insert(v->owner());
        }
      }
    }
  }
  for (Graph* g : unsorted) {
    // Only a cycle stops the sort, and the graph keeps its order then. The commit goes on:
    // the record says why, and the onnx checker at the end of the conversion refuses the
    // unsorted graph.
    if (absl::Status s = g->TopologicalSort(); !s.ok()) {
      absl::StrAppend(&current_.note, current_.note.empty() ? "" : "; ",
                      "graph left unsorted: ", s.message());
    }
  }
}

RewriteRecord& Rewriter::Commit() {
  assert(open_);
  if (observer_ != nullptr) observer_->OnCommitting(*this);
  for (Node* n : created_) current_.created.push_back(n->Describe());
  last_removed_.clear();
  const absl::flat_hash_set<const Node*> erased(erased_view_.begin(), erased_view_.end());
  std::erase_if(created_, [&](Node* n) { return erased.contains(n); });
  std::erase_if(modified_, [&](Node* n) { return erased.contains(n); });
  RemoveDead();
  // Created or modified nodes that the cleanup removed are no longer candidates for sorting.
  const absl::flat_hash_set<const Node*> removed(last_removed_.begin(), last_removed_.end());
  std::erase_if(created_, [&](Node* n) { return removed.contains(n); });
  std::erase_if(modified_, [&](Node* n) { return removed.contains(n); });
  SortWhereNeeded();
  last_touched_ = created_;
  last_touched_.insert(last_touched_.end(), modified_.begin(), modified_.end());
  EndTransaction();
  records_.push_back(std::move(current_));
  if (observer_ != nullptr) observer_->OnCommitted(*this);
  return records_.back();
}

void Rewriter::EndTransaction() {
  undo_.clear();
  created_.clear();
  erased_view_.clear();
  modified_.clear();
  modified_set_.clear();
  replaced_outputs_.clear();
  rewirings_.clear();
  rewired_.clear();
  changed_beyond_inputs_.clear();
  lost_use_.clear();
  created_values_.clear();
  open_ = false;
}

void Rewriter::Rollback(std::string reason) {
  assert(open_);
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  detached_.clear();
  EndTransaction();
  current_.rolled_back = true;
  current_.created.clear();
  current_.removed = 0;
  current_.note = std::move(reason);
  records_.push_back(std::move(current_));
  if (observer_ != nullptr) observer_->OnRolledBack(*this);
}

}  // namespace ovfix::rules
