#include "converter/shape_observation.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/graph_walk.h"
#include "ir/op_groups.h"
#include "rules/light_proto.h"

namespace ovfix::converter {
namespace {

using SeenShapes = absl::flat_hash_map<std::string, SeenShape>;

// "holder.attribute" for `body` (its holder's name, or op type when it has none).
std::string BodyLabel(const Graph& body) {
  const Node* holder = body.owner_node();
  const std::string who = holder->name().empty() ? holder->op_type() : holder->name();
  for (const Subgraph& s : holder->subgraphs()) {
    if (s.graph.get() != &body) continue;
    return s.index < 0 ? absl::StrCat(who, ".", s.attribute)
                       : absl::StrCat(who, ".", s.attribute, "[", s.index, "]");
  }
  return who;
}

BodyName NameOf(const Graph& body) {
  BodyName name;
  const Node* holder = body.owner_node();
  for (const Subgraph& s : holder->subgraphs()) {
    if (s.graph.get() != &body) continue;
    // Node names survive rewrites (an output can be renamed after the graph output it feeds).
    const std::string who = !holder->name().empty() ? holder->name()
                            : holder->outputs().empty() || holder->output(0) == nullptr
                                ? ""
                                : absl::StrCat("output ", holder->output(0)->name());
    if (!who.empty()) name.key = absl::StrCat(who, ".", s.attribute, ".", s.index);
  }
  for (const Graph* g = &body; g->owner_node() != nullptr; g = g->owner_node()->owner()) {
    name.path.insert(name.path.begin(), BodyLabel(*g));
  }
  return name;
}

// Whether `g` is a Loop or Scan body or sits inside one: a value there is computed once per
// iteration, and the iterations a run made say nothing of another run's.
bool Iterated(const Graph& g) {
  for (const Graph* at = &g; at->owner_node() != nullptr; at = at->owner_node()->owner()) {
    if (at->owner_node()->op_type() != "If") return true;
  }
  return false;
}

// Whether a run executed `body`: it computed one of its values (a body without nodes has
// nothing to convert, and counts as run).
bool Ran(const Graph& body, const SeenShapes& seen) {
  bool any = false;
  for (const Node* n : body.nodes()) {
    any = true;
    for (const Value* o : n->outputs()) {
      if (o != nullptr && seen.contains(o->name())) return true;
    }
  }
  return !any;
}

// The rank a branch gives its output `v`: as a run saw it, else as inference knows it.
int BranchRank(const Value* v, const SeenShapes& seen) {
  if (auto it = seen.find(v->name()); it != seen.end()) {
    return it->second.same_rank ? static_cast<int>(it->second.dims.size()) : -1;
  }
  return v->rank();
}

enum class Agreement { kAgree, kDisagree, kUnknown };

// Whether every branch of the If `n` gives its output `k` rank `rank`; kUnknown where a
// branch no run executed has no rank by inference (yet: the ranks the runs saw outside it may
// tell it).
Agreement BranchesAgree(const Node& n, size_t k, size_t rank, const SeenShapes& seen) {
  Agreement agreement = Agreement::kAgree;
  for (const Subgraph& s : n.subgraphs()) {
    if (k >= s.graph->outputs().size()) return Agreement::kDisagree;
    const int branch = BranchRank(s.graph->outputs()[k], seen);
    if (branch >= 0 && branch != static_cast<int>(rank)) return Agreement::kDisagree;
    if (branch < 0) agreement = Agreement::kUnknown;
  }
  return agreement;
}

// Whether `v` may carry another value's shape as data (Shape, Size and what is computed from
// them are integers): a rank that differs from run to run upstream can reach its values,
// hence a Reshape's rank, even where its own rank is known.
bool MayCarryShape(const Value& v) {
  const DataType t = v.elem_type();
  return t == DataType::kInt64 || t == DataType::kInt32;
}

std::string NodeLabel(const Node& n) {
  return n.name().empty() ? absl::StrCat(n.op_type(), " (unnamed)") : n.name();
}

}  // namespace

bool DataShaped(const Node& n) {
  static const absl::flat_hash_set<std::string> kOps = {
      "NonZero", "Unique", "NonMaxSuppression", "Compress", "TopK", "Loop", "Scan", "If"};
  return kOps.contains(n.op_type());
}

namespace {

// One walk of ObserveShapes over every graph; `retry` is set where an If output's rank was
// left open only because a branch no run executed has no rank by inference yet.
int ObserveOnce(Model& model, ReferenceValidator& validator, bool dims_fixed,
                rules::ShapeFacts& facts, std::vector<BodyName>& not_run, bool bodies_only,
                bool& retry) {
  const SeenShapes& seen = validator.body_shapes();
  Graph& root = model.graph();
  // Values whose dims depend on data, and values whose rank a run cannot tell (an If output
  // whose branches may give other ranks), with everything computed from them; graphs come
  // before the bodies inside them, so an outer value is sorted before a body reads it.
  absl::flat_hash_set<const Value*> dependent, rank_unknown;
  absl::flat_hash_set<const Graph*> skipped;  // bodies not run, and the bodies inside them
  int count = 0;
  for (Graph* g : GraphsRecursive(root)) {
    const bool is_body = g != &root;
    if (is_body && skipped.contains(g->owner_node()->owner())) {
      skipped.insert(g);
      continue;
    }
    if (is_body && !Ran(*g, seen)) {
      skipped.insert(g);
      not_run.push_back(NameOf(*g));
      continue;
    }
    std::vector<Value*> observed;
    for (Node* n : g->nodes()) {
      bool depends = false, unknown = false;
      if (DataShaped(*n)) {
        for (const Value* o : n->outputs()) depends |= o != nullptr && !o->static_shape();
      }
      for (const Value* in : n->inputs()) {
        depends |= dependent.contains(in);
        unknown |= rank_unknown.contains(in);
      }
      for (size_t k = 0; k < n->outputs().size(); ++k) {
        Value* v = n->output(k);
        if (v == nullptr) continue;
        if (depends) dependent.insert(v);
        if (!v->is_tensor() || v->static_shape() || (bodies_only && !is_body)) continue;
        std::vector<int64_t> dims;
        bool same_dims = true;
        if (!is_body) {
          absl::StatusOr<Tensor> t = validator.Activation(v);
          if (!t.ok()) continue;
          dims = t->dims();
        } else {
          auto it = seen.find(v->name());
          if (it == seen.end() || !it->second.same_rank) continue;
          dims = it->second.dims;
          same_dims = it->second.same_dims;
        }
        // A value whose rank inference proves has that rank in every run, whatever the
        // branches before it gave: it ends the uncertainty, unless it may carry a shape.
        if (unknown && (v->rank() < 0 || MayCarryShape(*v))) {
          rank_unknown.insert(v);
          continue;
        }
        if (n->op_type() == "If" && v->rank() < 0) {
          const Agreement agreement = BranchesAgree(*n, k, dims.size(), seen);
          if (agreement != Agreement::kAgree) {
            retry |= agreement == Agreement::kUnknown;
            rank_unknown.insert(v);
            continue;
          }
        }
        const bool fixed = dims_fixed && same_dims && !dependent.contains(v) && !Iterated(*g);
        if (facts.Observe(*v, dims, fixed)) {
          ++count;
          if (!v->is_graph_output()) observed.push_back(v);
        }
      }
    }
    ListInValueInfo(*g, observed);
  }
  return count;
}

}  // namespace

int ObserveShapes(Model& model, ReferenceValidator& validator, bool dims_fixed,
                  rules::ShapeFacts& facts, std::vector<BodyName>& not_run, bool bodies_only) {
  // A branch no run executed gets ranks from inference once the ranks the runs saw outside it
  // are facts (an empty result sliced from a value of observed rank), and an If whose every
  // branch then agrees gives its output's rank: observe again after inference, while that adds
  // facts.
  constexpr int kRounds = 4;
  int count = 0;
  std::vector<BodyName> again;  // the bodies not run, listed in the first round
  for (int round = 0; round < kRounds; ++round) {
    bool retry = false;
    const int added = ObserveOnce(model, validator, dims_fixed, facts, round == 0 ? not_run : again,
                                  bodies_only, retry);
    count += added;
    if (!retry || added == 0) break;
    if (!rules::InferShapesLight(model).ok()) break;
    if (rules::AddRankFacts(model.graph()) > 0 && !rules::InferShapesLight(model).ok()) break;
  }
  return count;
}

std::vector<BodyNotRun> DescribeBodiesNotRun(Model& model, const std::vector<BodyName>& not_run) {
  std::vector<BodyNotRun> out;
  if (not_run.empty()) return out;
  for (Graph* body : GraphsRecursive(model.graph())) {
    if (body == &model.graph()) continue;
    const BodyName name = NameOf(*body);
    // Named as in the model read: bodies around it may have been inlined since.
    auto as_read = std::find_if(not_run.begin(), not_run.end(),
                                [&](const BodyName& b) { return b.key == name.key; });
    if (name.key.empty() || as_read == not_run.end()) continue;
    BodyNotRun entry{absl::StrJoin(as_read->path, " / "), {}};
    for (Graph* g : GraphsRecursive(*body)) {
      for (const Node* n : g->nodes()) {
        const bool standard = n->domain().empty() || n->domain() == "ai.onnx";
        if (!standard) continue;
        if (n->op_type() == "Shape" || n->op_type() == "Size") {
          entry.left.push_back(absl::StrCat(n->op_type(), ": ", NodeLabel(*n)));
        } else if (n->op_type() == "Squeeze" && n->inputs().size() < 2 &&
                   !n->HasAttribute("axes")) {
          entry.left.push_back(absl::StrCat("Squeeze without axes: ", NodeLabel(*n)));
        } else if (InOpGroup("broadcasting", n->domain(), n->op_type())) {
          for (const Value* in : n->inputs()) {
            if (in == nullptr || in->rank() >= 0) continue;
            entry.left.push_back(absl::StrCat("element-wise input of unknown rank: ", NodeLabel(*n),
                                              " (", n->op_type(), ")"));
            break;
          }
        }
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace ovfix::converter
