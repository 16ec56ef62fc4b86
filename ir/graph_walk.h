// Walking every graph of a model: the main graph and the If/Loop/Scan bodies inside it, at
// any depth. Rewrites and passes reach bodies through these.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"

namespace ovfix {

// The outermost graph holding `g` (the model's main graph).
Graph& RootGraph(Graph& g);

// `root` and every body inside it, recursively: each graph before the bodies of its nodes,
// bodies in node order.
std::vector<Graph*> GraphsRecursive(Graph& root);

// Calls `fn` on `root` and then on every body inside it, recursively: a graph's bodies are
// taken once `fn` has run on it, so `fn` may remove nodes (and their bodies) of the graph it
// is given. Stops at the first error.
absl::Status ForEachGraph(Graph& root, const std::function<absl::Status(Graph&)>& fn);
// The same walk for an `fn` that cannot fail.
void VisitGraphs(Graph& root, const std::function<void(Graph&)>& fn);

// Gives each value that a node of `to` or of a body inside it computes, and each graph output,
// the type of its counterpart in `from`, a graph of the same structure (`to` a copy of it):
// the types inference gave `from`, without inferring them again. Graph outputs that are
// initializers keep their own.
void CarryValueTypes(const Graph& from, Graph& to);

// Lists `values` (of `g`) in g's value_info, after those already listed, each once: in time
// linear in the graph, however many there are.
void ListInValueInfo(Graph& g, std::span<Value* const> values);

// Whether `root` or a body inside it declares float16 data: a float16 input, output,
// initializer or typed value, or a Cast to float16. Such a model (a converted one) says
// itself which values are fp16 and which stay fp32.
bool DeclaresFloat16(const Graph& root);

// Bytes of the weights of at least `at_least` bytes each in `g` and every body inside it.
int64_t WeightBytes(const Graph& g, size_t at_least = 0);

// The node after `n` in its graph's order, or nullptr when `n` is last: constant time.
Node* NextNode(const Node& n);

}  // namespace ovfix
