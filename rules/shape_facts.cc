#include "rules/shape_facts.h"

#include "ir/graph_walk.h"

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

}  // namespace ovfix::rules
