#include "ir/graph_walk.h"

#include <algorithm>

#include "ir/status_macros.h"

namespace ovfix {

Graph& RootGraph(Graph& g) {
  Graph* root = &g;
  while (root->parent() != nullptr) root = root->parent();
  return *root;
}

std::vector<Graph*> GraphsRecursive(Graph& root) {
  std::vector<Graph*> out{&root};
  for (size_t i = 0; i < out.size(); ++i) {
    for (Node* n : out[i]->nodes()) {
      for (Subgraph& s : n->subgraphs()) out.push_back(s.graph.get());
    }
  }
  return out;
}

void CarryValueTypes(const Graph& from, Graph& to) {
  const std::vector<Graph*> sources = GraphsRecursive(const_cast<Graph&>(from));
  const std::vector<Graph*> targets = GraphsRecursive(to);
  auto carry = [](const Value* source, Value* target) {
    if (source != nullptr && target != nullptr && !target->is_initializer()) {
      *target->mutable_type() = source->type();
    }
  };
  for (size_t i = 0; i < sources.size() && i < targets.size(); ++i) {
    const std::vector<Node*> a = sources[i]->NodeList(), b = targets[i]->NodeList();
    for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
      for (size_t o = 0; o < a[k]->num_outputs() && o < b[k]->num_outputs(); ++o) {
        carry(a[k]->outputs()[o], b[k]->outputs()[o]);
      }
    }
    const std::vector<Value*>&x = sources[i]->outputs(), &y = targets[i]->outputs();
    for (size_t o = 0; o < x.size() && o < y.size(); ++o) carry(x[o], y[o]);
  }
}

bool DeclaresFloat16(const Graph& root) {
  auto half = [](const Value* v) {
    return v != nullptr && v->is_tensor() && v->elem_type() == DataType::kFloat16;
  };
  for (const Graph* g : GraphsRecursive(const_cast<Graph&>(root))) {
    for (const auto* list : {&g->inputs(), &g->outputs(), &g->initializers(), &g->value_info()}) {
      if (std::any_of(list->begin(), list->end(), half)) return true;
    }
    for (const Node* n : g->nodes()) {
      if (n->op_type() == "Cast" &&
          n->GetInt("to", 0) == static_cast<int64_t>(DataType::kFloat16)) {
        return true;
      }
      for (size_t i = 0; i < n->num_outputs(); ++i) {
        if (half(n->output(i))) return true;
      }
    }
  }
  return false;
}

namespace {

// Pushes the bodies of `g`'s nodes so that they pop in node order.
void PushBodies(const Graph& g, std::vector<Graph*>& pending) {
  std::vector<Graph*> bodies;
  for (const Node* n : g.nodes()) {
    for (const Subgraph& s : n->subgraphs()) bodies.push_back(s.graph.get());
  }
  pending.insert(pending.end(), bodies.rbegin(), bodies.rend());
}

}  // namespace

absl::Status ForEachGraph(Graph& root, const std::function<absl::Status(Graph&)>& fn) {
  std::vector<Graph*> pending{&root};
  while (!pending.empty()) {
    Graph* g = pending.back();
    pending.pop_back();
    OVFIX_RETURN_IF_ERROR(fn(*g));
    PushBodies(*g, pending);
  }
  return absl::OkStatus();
}

void VisitGraphs(Graph& root, const std::function<void(Graph&)>& fn) {
  std::vector<Graph*> pending{&root};
  while (!pending.empty()) {
    Graph* g = pending.back();
    pending.pop_back();
    fn(*g);
    PushBodies(*g, pending);
  }
}

}  // namespace ovfix
