#include "rules/passes/dead_code_elimination.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/graph_walk.h"

namespace ovfix::rules {
namespace {

// Values a subgraph (and the subgraphs in it) reads, from every scope.
void SubgraphReads(const Graph& sub, std::vector<const Value*>& out) {
  for (const Node* n : sub.nodes()) {
    out.insert(out.end(), n->inputs().begin(), n->inputs().end());
    for (const Subgraph& s : n->subgraphs()) SubgraphReads(*s.graph, out);
  }
  out.insert(out.end(), sub.outputs().begin(), sub.outputs().end());
}

// Nodes that do not contribute to any graph output, found by walking back from the outputs
// (so dead chains go in one step, not one node per sweep).
std::vector<Node*> DeadNodes(const Graph& g) {
  absl::flat_hash_set<const Node*> live;
  std::vector<const Value*> stack(g.outputs().begin(), g.outputs().end());
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (v == nullptr || v->producer() == nullptr || v->owner() != &g) continue;
    const Node* p = v->producer();
    if (!live.insert(p).second) continue;
    stack.insert(stack.end(), p->inputs().begin(), p->inputs().end());
    for (const Subgraph& s : p->subgraphs()) SubgraphReads(*s.graph, stack);
  }
  std::vector<Node*> dead;
  for (Node* n : g.nodes()) {
    if (!live.contains(n)) dead.push_back(n);
  }
  return dead;
}

}  // namespace

absl::StatusOr<int> EliminateDeadCode(PassContext& ctx) {
  int rewrites = 0;
  size_t nodes = 0, initializers = 0;
  // Graph by graph, the main graph first: a dead If/Loop/Scan goes with its bodies before
  // they are looked at.
  VisitGraphs(ctx.model.graph(), [&](Graph& g) {
    std::vector<Node*> dead = DeadNodes(g);
    const size_t before = g.initializers().size();
    bool unread = false;
    for (const Value* v : g.initializers()) {
      unread = unread || (!v->has_uses() && !v->is_graph_output() && !v->is_graph_input());
    }
    if (dead.empty() && !unread) return;
    ctx.rewriter.Begin(kDeadCodeElimination, dead);
    // Consumers first, so no erased node is still read by a live one while erasing.
    for (auto it = dead.rbegin(); it != dead.rend(); ++it) ctx.rewriter.EraseNode(*it);
    // Unread initializers go too (a commit removes what lost its last reader).
    for (Value* v : std::vector<Value*>(g.initializers())) {
      if (!v->has_uses() && !v->is_graph_output() && !v->is_graph_input()) {
        ctx.rewriter.ConsiderDead(v);
      }
    }
    FinishRewrite(ctx);
    nodes += dead.size();
    initializers += before - g.initializers().size();
    ++rewrites;
  });
  if (rewrites == 0) return 0;
  ctx.log(absl::StrCat(kDeadCodeElimination, ": removed ", nodes, " node(s) and ", initializers,
                       " initializer(s)"));
  return nodes + initializers > 0 ? 1 : 0;
}

}  // namespace ovfix::rules
