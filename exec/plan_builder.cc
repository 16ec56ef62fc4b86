#include "exec/plan_builder.h"

#include "absl/container/flat_hash_set.h"

namespace ovfix::exec {

absl::StatusOr<std::vector<const Node*>> NodesInOrder(const Graph& graph) {
  std::vector<const Node*> nodes;
  for (const Node* n : graph.nodes()) nodes.push_back(n);
  absl::flat_hash_set<const Node*> seen;
  bool sorted = true;
  for (const Node* n : nodes) {
    for (const Value* v : n->inputs()) {
      if (v != nullptr && v->producer() != nullptr && v->owner() == &graph &&
          !seen.contains(v->producer())) {
        sorted = false;
      }
    }
    seen.insert(n);
  }
  if (sorted) return nodes;
  absl::flat_hash_map<const Node*, int> pending;
  absl::flat_hash_map<const Node*, std::vector<const Node*>> consumers;
  for (const Node* n : nodes) {
    int count = 0;
    for (const Value* v : n->inputs()) {
      if (v != nullptr && v->producer() != nullptr && v->owner() == &graph) {
        consumers[v->producer()].push_back(n);
        ++count;
      }
    }
    pending[n] = count;
  }
  std::vector<const Node*> ready, result;
  for (const Node* n : nodes) {
    if (pending[n] == 0) ready.push_back(n);
  }
  while (!ready.empty()) {
    const Node* n = ready.back();
    ready.pop_back();
    result.push_back(n);
    for (const Node* c : consumers[n]) {
      if (--pending[c] == 0) ready.push_back(c);
    }
  }
  if (result.size() != nodes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("graph '", graph.name(), "' has a cycle"));
  }
  return result;
}

}  // namespace ovfix::exec
