#include "ir/graph_walk.h"

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

absl::Status ForEachGraph(Graph& root, const std::function<absl::Status(Graph&)>& fn) {
  std::vector<Graph*> pending{&root};
  while (!pending.empty()) {
    Graph* g = pending.back();
    pending.pop_back();
    OVFIX_RETURN_IF_ERROR(fn(*g));
    std::vector<Graph*> bodies;
    for (Node* n : g->nodes()) {
      for (Subgraph& s : n->subgraphs()) bodies.push_back(s.graph.get());
    }
    pending.insert(pending.end(), bodies.rbegin(), bodies.rend());
  }
  return absl::OkStatus();
}

}  // namespace ovfix
