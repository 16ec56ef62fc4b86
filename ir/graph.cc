#include "ir/graph.h"

#include <algorithm>
#include <queue>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace ovfix {
namespace {

constexpr int64_t kOrderGap = 1 << 16;

void RemoveUse(Value* v, Node* node, int index) {
  auto& uses = const_cast<std::vector<Use>&>(v->uses());
  auto it = std::find(uses.begin(), uses.end(), Use{node, index});
  if (it != uses.end()) uses.erase(it);
}

// Values that nodes of `g` (and deeper subgraphs) read from scopes outside `g`.
void CollectOuterReads(const Graph& g, const Graph& boundary, absl::flat_hash_set<Value*>& out) {
  for (Node* n : g.nodes()) {
    for (Value* v : n->inputs()) {
      if (v == nullptr) continue;
      // Outside the boundary subgraph if its owner is not `boundary` or a descendant.
      const Graph* owner = v->owner();
      const Graph* walk = owner;
      bool inside = false;
      while (walk != nullptr) {
        if (walk == &boundary) {
          inside = true;
          break;
        }
        walk = walk->parent();
      }
      if (!inside) out.insert(v);
    }
    for (const auto& s : n->subgraphs()) CollectOuterReads(*s.graph, boundary, out);
  }
  for (Value* v : g.outputs()) {
    if (v->owner() != &g) {
      const Graph* walk = v->owner();
      bool inside = false;
      while (walk != nullptr) {
        if (walk == &boundary) inside = true;
        walk = walk->parent();
      }
      if (!inside) out.insert(v);
    }
  }
}

}  // namespace

Graph::~Graph() {
  // Our nodes may read values of enclosing graphs (which outlive us): drop those uses. Nodes
  // go before our values, since nested subgraphs hold uses of them.
  for (auto& n : nodes_) {
    for (size_t i = 0; i < n->inputs_.size(); ++i) {
      Value* v = n->inputs_[i];
      if (v != nullptr && v->owner_ != this) RemoveUse(v, n.get(), static_cast<int>(i));
    }
  }
  nodes_.clear();
}

std::vector<Node*> Graph::NodeList() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

Value* Graph::FindValue(std::string_view name) const {
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::LookupValue(std::string_view name) const {
  for (const Graph* g = this; g != nullptr; g = g->parent_) {
    if (Value* v = g->FindValue(name)) return v;
  }
  return nullptr;
}

Value* Graph::NewValue(std::string name) {
  values_.push_back(std::unique_ptr<Value>(new Value(this, name)));
  Value* v = values_.back().get();
  by_name_.emplace(std::move(name), v);
  return v;
}

std::string Graph::UniqueName(std::string_view base) {
  if (LookupValue(base) == nullptr && !base.empty()) return std::string(base);
  for (;;) {
    std::string candidate =
        absl::StrCat(base.empty() ? "v" : std::string(base), "_", ++name_counter_);
    if (LookupValue(candidate) == nullptr) return candidate;
  }
}

Value* Graph::CreateValue(std::string_view name) { return NewValue(UniqueName(name)); }

void Graph::RenameValue(Value* v, std::string_view name) {
  by_name_.erase(v->name_);
  v->name_ = std::string(name);
  by_name_.emplace(v->name_, v);
}

void Graph::AddInput(Value* v) {
  v->graph_input_ = true;
  inputs_.push_back(v);
}

void Graph::SetInputs(std::vector<Value*> inputs) {
  for (Value* v : inputs_) v->graph_input_ = false;
  inputs_ = std::move(inputs);
  for (Value* v : inputs_) v->graph_input_ = true;
}

void Graph::AddOutput(Value* v) {
  ++v->graph_output_count_;
  outputs_.push_back(v);
}

void Graph::ReplaceOutput(size_t i, Value* v) {
  --outputs_[i]->graph_output_count_;
  outputs_[i] = v;
  ++v->graph_output_count_;
}

void Graph::AddInitializer(Value* v, Tensor t) {
  if (!v->is_initializer()) initializers_.push_back(v);
  v->source_proto_.reset();
  v->set_tensor(std::move(t));
}

Value* Graph::AddInitializer(std::string_view name, Tensor t) {
  Value* v = CreateValue(name);
  AddInitializer(v, std::move(t));
  return v;
}

Node* Graph::AddNodeWithOutputs(std::string_view op_type, const std::vector<Value*>& inputs,
                                const std::vector<Value*>& outputs, std::string_view name,
                                std::string_view domain, Node* before) {
  auto node = std::unique_ptr<Node>(new Node());
  Node* n = node.get();
  n->owner_ = this;
  n->op_type_ = std::string(op_type);
  n->name_ = std::string(name);
  n->domain_ = std::string(domain);
  for (Value* v : inputs) n->AddInput(v);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* v = outputs[i];
    n->outputs_.push_back(v);
    if (v != nullptr) {
      v->producer_ = n;
      v->producer_output_ = static_cast<int>(i);
    }
  }
  auto pos = before != nullptr ? before->position_ : nodes_.end();
  n->position_ = nodes_.insert(pos, std::move(node));
  // Order: midway between neighbours, renumbering when the gap is used up.
  const int64_t prev = n->position_ == nodes_.begin() ? 0 : (*std::prev(n->position_))->order_;
  const int64_t next = std::next(n->position_) == nodes_.end() ? prev + 2 * kOrderGap
                                                               : (*std::next(n->position_))->order_;
  if (next - prev >= 2) {
    n->order_ = prev + (next - prev) / 2;
  } else {
    Renumber();
  }
  return n;
}

Node* Graph::AddNode(std::string_view op_type, const std::vector<Value*>& inputs,
                     const std::vector<std::string>& output_names, std::string_view name,
                     std::string_view domain, Node* before) {
  std::vector<Value*> outputs;
  for (const auto& o : output_names) outputs.push_back(o.empty() ? nullptr : CreateValue(o));
  return AddNodeWithOutputs(op_type, inputs, outputs, name, domain, before);
}

void Graph::Renumber() {
  int64_t order = kOrderGap;
  for (auto& n : nodes_) {
    n->order_ = order;
    order += kOrderGap;
  }
}

void Graph::EraseNode(Node* node) {
  for (size_t i = 0; i < node->inputs_.size(); ++i) {
    if (node->inputs_[i] != nullptr) RemoveUse(node->inputs_[i], node, static_cast<int>(i));
  }
  for (Value* v : node->outputs_) {
    if (v == nullptr) continue;
    v->producer_ = nullptr;
    if (!v->has_uses() && !v->is_graph_output()) {
      std::erase(value_info_, v);
      by_name_.erase(v->name());
      std::erase_if(values_, [&](const std::unique_ptr<Value>& p) { return p.get() == v; });
    }
  }
  nodes_.erase(node->position_);
}

std::unique_ptr<Node> Graph::DetachNode(Node* node) {
  for (size_t i = 0; i < node->inputs_.size(); ++i) {
    if (node->inputs_[i] != nullptr) RemoveUse(node->inputs_[i], node, static_cast<int>(i));
  }
  for (Value* v : node->outputs_) {
    if (v != nullptr) v->producer_ = nullptr;
  }
  std::unique_ptr<Node> owned = std::move(*node->position_);
  nodes_.erase(node->position_);
  return owned;
}

Node* Graph::ReattachNode(std::unique_ptr<Node> node, Node* before) {
  Node* n = node.get();
  auto pos = before != nullptr ? before->position_ : nodes_.end();
  n->position_ = nodes_.insert(pos, std::move(node));
  for (size_t i = 0; i < n->inputs_.size(); ++i) {
    if (n->inputs_[i] != nullptr) n->inputs_[i]->uses_.push_back(Use{n, static_cast<int>(i)});
  }
  for (size_t i = 0; i < n->outputs_.size(); ++i) {
    if (n->outputs_[i] != nullptr) {
      n->outputs_[i]->producer_ = n;
      n->outputs_[i]->producer_output_ = static_cast<int>(i);
    }
  }
  Renumber();
  return n;
}

void Graph::DeleteValue(Value* v) {
  std::erase(value_info_, v);
  by_name_.erase(v->name());
  std::erase_if(values_, [&](const std::unique_ptr<Value>& p) { return p.get() == v; });
}

void Graph::RemoveInitializer(Value* v) {
  std::erase(initializers_, v);
  v->initializer_.reset();
  v->source_proto_.reset();
}

int Graph::DeleteDanglingValues() {
  // One pass over the values (and one over value_info), however many go: callers batch
  // their removals into this.
  absl::flat_hash_set<const Value*> dangling;
  for (const auto& v : values_) {
    if (v->producer_ == nullptr && v->uses_.empty() && !v->graph_input_ &&
        v->graph_output_count_ == 0 && !v->initializer_) {
      dangling.insert(v.get());
      by_name_.erase(v->name());
    }
  }
  if (dangling.empty()) return 0;
  std::erase_if(value_info_, [&](Value* v) { return dangling.contains(v); });
  std::erase_if(values_,
                [&](const std::unique_ptr<Value>& v) { return dangling.contains(v.get()); });
  return static_cast<int>(dangling.size());
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  const std::vector<Use> uses = from->uses();
  for (const Use& u : uses) u.node->ReplaceInput(u.input_index, to);
}

int Graph::RemoveDeadCode() {
  int removed = 0;
  // Reverse order: a node's users are looked at (and maybe removed) before the node.
  std::vector<Node*> order = NodeList();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    bool live = false;
    for (Value* v : n->outputs_) {
      if (v != nullptr && (v->has_uses() || v->is_graph_output())) live = true;
    }
    if (!live) {
      EraseNode(n);
      ++removed;
    }
  }
  std::vector<Value*> kept;
  for (Value* v : initializers_) {
    if (v->has_uses() || v->is_graph_output() || v->is_graph_input()) {
      kept.push_back(v);
    } else {
      std::erase(value_info_, v);
      by_name_.erase(v->name());
      std::erase_if(values_, [&](const std::unique_ptr<Value>& p) { return p.get() == v; });
    }
  }
  initializers_ = std::move(kept);
  return removed;
}

absl::Status Graph::TopologicalSort() {
  std::vector<Node*> order = NodeList();
  absl::flat_hash_map<Node*, size_t> index;
  for (size_t i = 0; i < order.size(); ++i) index[order[i]] = i;
  // Dependencies within this graph, including values read by subgraph bodies.
  std::vector<std::vector<size_t>> users(order.size());
  std::vector<int> pending(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    absl::flat_hash_set<Value*> reads(order[i]->inputs_.begin(), order[i]->inputs_.end());
    for (const auto& s : order[i]->subgraphs_) CollectOuterReads(*s.graph, *s.graph, reads);
    absl::flat_hash_set<size_t> deps;
    for (Value* v : reads) {
      if (v == nullptr || v->producer_ == nullptr || v->owner_ != this) continue;
      auto it = index.find(v->producer_);
      if (it != index.end() && deps.insert(it->second).second) {
        users[it->second].push_back(i);
        ++pending[i];
      }
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < order.size(); ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> sorted;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    sorted.push_back(i);
    for (size_t u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  if (sorted.size() != order.size()) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (pending[i] > 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph has a cycle through node ", order[i]->Describe()));
      }
    }
  }
  std::list<std::unique_ptr<Node>> reordered;
  std::vector<std::unique_ptr<Node>> owned(order.size());
  for (auto& n : nodes_) owned[index[n.get()]] = std::move(n);
  nodes_.clear();
  for (size_t i : sorted) {
    reordered.push_back(std::move(owned[i]));
    reordered.back()->position_ = std::prev(reordered.end());
  }
  nodes_ = std::move(reordered);
  Renumber();
  return absl::OkStatus();
}

absl::Status Graph::Verify() const {
  absl::flat_hash_set<const Value*> available;
  for (const Graph* g = parent_; g != nullptr; g = g->parent_) {
    for (const auto& v : g->values_) available.insert(v.get());
  }
  for (const auto& v : values_) {
    if (v->producer_ == nullptr) available.insert(v.get());
  }
  int64_t last_order = INT64_MIN;
  for (const auto& n : nodes_) {
    if (n->order_ <= last_order) return absl::InternalError("node order is not increasing");
    last_order = n->order_;
    for (size_t i = 0; i < n->inputs_.size(); ++i) {
      const Value* v = n->inputs_[i];
      if (v == nullptr) continue;
      if (!available.contains(v)) {
        return absl::InternalError(
            absl::StrCat(n->Describe(), " reads '", v->name(), "' before it is produced"));
      }
      const auto& uses = v->uses();
      if (std::find(uses.begin(), uses.end(), Use{n.get(), static_cast<int>(i)}) == uses.end()) {
        return absl::InternalError(
            absl::StrCat("use list of '", v->name(), "' misses ", n->Describe()));
      }
    }
    for (const Value* v : n->outputs_) {
      if (v == nullptr) continue;
      if (v->producer_ != n.get()) {
        return absl::InternalError(absl::StrCat("producer of '", v->name(), "' is wrong"));
      }
      available.insert(v);
    }
    for (const auto& s : n->subgraphs_) {
      OVFIX_RETURN_IF_ERROR(s.graph->Verify());
    }
  }
  for (const Value* v : outputs_) {
    if (!available.contains(v)) {
      return absl::InternalError(absl::StrCat("graph output '", v->name(), "' is not produced"));
    }
  }
  return absl::OkStatus();
}

size_t Graph::CountNodesRecursive() const {
  size_t n = nodes_.size();
  for (const auto& node : nodes_) {
    for (const auto& s : node->subgraphs_) n += s.graph->CountNodesRecursive();
  }
  return n;
}

}  // namespace ovfix
