#include "rules/shape_facts.h"

#include <algorithm>

#include "ir/graph_walk.h"
#include "ir/op_groups.h"

namespace ovfix::rules {

bool ShapeFacts::Observe(Value& v, const std::vector<int64_t>& seen, bool dims_fixed) {
  if (!v.is_tensor()) return false;
  std::optional<std::vector<Dim>> known = v.shape();
  std::vector<Dim> merged;
  if (!known || known->size() != seen.size()) {
    if (known && known->size() != seen.size()) return false;  // inference disagrees: keep it
    merged.resize(seen.size());
  } else {
    merged = *known;
  }
  bool added = !known.has_value();
  if (dims_fixed) {
    for (size_t i = 0; i < seen.size(); ++i) {
      if (merged[i].known()) continue;
      merged[i] = Dim{seen[i], ""};
      added = true;
    }
  }
  if (!added) return false;
  v.set_shape(merged);
  observed_.insert(v.name());
  return true;
}

RankFact ShapeFacts::Rank(const Value& v) const {
  const int rank = v.rank();
  if (rank < 0) return {};
  return {rank, IsObserved(v) ? ShapeSource::kObserved : ShapeSource::kInferred};
}

DimsFact ShapeFacts::Dims(const Value& v) const {
  DimsFact fact;
  std::optional<std::vector<Dim>> dims = v.shape();
  if (!dims) return fact;
  fact.dims = *dims;
  fact.all_known = true;
  for (const Dim& d : fact.dims) fact.all_known = fact.all_known && d.known();
  fact.source = IsObserved(v) ? ShapeSource::kObserved : ShapeSource::kInferred;
  return fact;
}

void ListKnownShapesInValueInfo(Graph& root) {
  for (Graph* g : GraphsRecursive(root)) {
    std::vector<Value*> known;
    for (Node* n : g->nodes()) {
      for (Value* v : n->outputs()) {
        if (v != nullptr && !v->is_graph_output() && v->rank() >= 0) known.push_back(v);
      }
    }
    ListInValueInfo(*g, known);
  }
}

namespace {

// The rank of `n`'s first output from its inputs' ranks, or -1.
int RankFromInputs(const Node& n) {
  const std::string& op = n.op_type();
  if (!n.domain().empty() && n.domain() != "ai.onnx") return -1;
  auto input_rank = [&](size_t i) {
    return i < n.inputs().size() && n.input(i) != nullptr ? n.input(i)->rank() : -1;
  };
  if (InOpGroup("broadcasting", n.domain(), op)) {
    int rank = 0;
    for (const Value* in : n.inputs()) {
      if (in == nullptr) continue;
      if (in->rank() < 0) return -1;
      rank = std::max(rank, in->rank());
    }
    return rank;
  }
  const bool keeps_rank = InOpGroup("unary_math", n.domain(), op) ||
                          InOpGroup("activation", n.domain(), op) || op == "Softmax" ||
                          op == "LogSoftmax" || op == "Cast" || op == "Identity" ||
                          // Whatever their other inputs (starts, pads, repeats) hold, and
                          // whether or not onnx can read them (an outer graph's constants):
                          // the first input's rank.
                          op == "Slice" || op == "Pad" || op == "Tile" || op == "Transpose" ||
                          (InOpGroup("reduction", n.domain(), op) && n.GetInt("keepdims", 1) != 0);
  return keeps_rank ? input_rank(0) : -1;
}

}  // namespace

int AddRankFacts(Graph& root) {
  int added = 0;
  for (Graph* g : GraphsRecursive(root)) {
    std::vector<Value*> known;
    for (Node* n : g->nodes()) {
      if (n->outputs().size() != 1 || n->output(0) == nullptr) continue;
      Value* v = n->output(0);
      if (!v->is_tensor() || v->rank() >= 0) continue;
      const int rank = RankFromInputs(*n);
      if (rank < 0) continue;
      v->set_shape(std::vector<Dim>(rank));
      ++added;
      if (!v->is_graph_output()) known.push_back(v);
    }
    ListInValueInfo(*g, known);
  }
  return added;
}

}  // namespace ovfix::rules
