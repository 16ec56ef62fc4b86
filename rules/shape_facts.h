// Shape facts: what is known of a value's rank and dims, and where that knowledge comes from.
// onnx's static inference loses track on real exports (Reshape shapes computed from data,
// every dim dynamic); the reference run of a conversion saw every main-graph value's shape.
// What it saw becomes a fact where inference left a gap: a value's rank always (a model runs
// with one rank per value for all inputs of the same ranks), its dims only where the inputs
// are fixed (--batch, --input-shape, or a model whose inputs are all static).
//
// Observed facts are written into the values' types (and listed in value_info), so shape
// inference builds on them, rules and passes read them like inferred shapes, and the written
// model carries them for downstream parsers. The source stays queryable, so the report can
// say which rewrites relied on shapes only a run showed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "ir/graph.h"

namespace ovfix::rules {

enum class ShapeSource {
  kUnknown,   // neither inference nor a run knows it
  kInferred,  // from the model's declarations and onnx's shape inference
  kObserved,  // from what the reference run computed
};

struct RankFact {
  int rank = -1;
  ShapeSource source = ShapeSource::kUnknown;
};

struct DimsFact {
  std::vector<Dim> dims;  // each dim a number, a symbol, or unknown
  bool all_known = false;
  ShapeSource source = ShapeSource::kUnknown;
};

class ShapeFacts {
 public:
  // Takes what a run saw for `v` where inference knows less: the rank (as unknown dims) when
  // the rank is unknown; the dims too when `dims_fixed`. Returns whether anything was added
  // (the caller lists such values in value_info, so shape inference keeps them).
  bool Observe(Value& v, const std::vector<int64_t>& seen, bool dims_fixed);

  RankFact Rank(const Value& v) const;
  DimsFact Dims(const Value& v) const;
  // Whether part of `v`'s shape comes from a run rather than from inference.
  bool IsObserved(const Value& v) const { return observed_.contains(v.name()); }
  size_t size() const { return observed_.size(); }

 private:
  // By name: names are unique across the model, and a value keeps its name through rewrites.
  absl::flat_hash_set<std::string> observed_;
};

// Lists every value of every graph whose type has a known rank in its graph's value_info
// (graph inputs, outputs and initializers excepted: they declare their own types), so the
// written model carries all that is known of its shapes.
void ListKnownShapesInValueInfo(Graph& root);

// Ranks that onnx's inference leaves open where ovfix can tell them: element-wise ops (the
// largest rank of their inputs), ops that keep their input's rank (unary math, activations,
// Softmax, Slice, Pad, Tile, Transpose) and reductions with keepdims, whose axes onnx does not read
// when they come from an initializer of an outer graph. Each such output gets its rank (unknown
// dims) and a place in value_info. Returns how many.
int AddRankFacts(Graph& root);

}  // namespace ovfix::rules
