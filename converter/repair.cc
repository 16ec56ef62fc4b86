#include "converter/repair.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "converter/model_run.h"
#include "converter/precision_cost.h"
#include "exec/compare.h"
#include "exec/random_inputs.h"
#include "ir/graph_walk.h"
#include "ir/status_macros.h"

namespace ovfix::converter {
namespace {

// The least share of the units an add round takes, doubled each round: bounds the rounds
// whatever the estimates say.
constexpr double kFirstRoundShare = 0.02;

std::vector<int> Kept(const std::vector<bool>& fp32) {
  std::vector<int> out;
  for (size_t i = 0; i < fp32.size(); ++i) {
    if (fp32[i]) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::pair<std::vector<int>, std::vector<int>> Halves(const std::vector<int>& nodes) {
  const auto mid = nodes.begin() + static_cast<std::ptrdiff_t>(nodes.size() / 2);
  return {std::vector<int>(nodes.begin(), mid), std::vector<int>(mid, nodes.end())};
}

}  // namespace

absl::StatusOr<UnitSearch> SearchFewestUnits(int nodes, const std::vector<std::vector<int>>& units,
                                             const UnitProbe& first, int max_evaluations,
                                             const EvaluateUnits& evaluate) {
  UnitSearch s;
  s.fp32.assign(nodes, false);
  s.round_of.assign(nodes, 0);
  s.score = first.score;
  if (first.score <= 1 || units.empty()) return s;
  const int unit_count = static_cast<int>(units.size());
  std::vector<bool> unit_kept(unit_count, false);
  std::vector<double> added = first.added;
  added.resize(unit_count, 0);
  int evaluations = 0;
  // Leave two evaluations to give nodes back when there are enough.
  const int add_limit = max_evaluations > 3 ? max_evaluations - 2 : max_evaluations;
  size_t at_least =
      std::max<size_t>(1, static_cast<size_t>(std::ceil(kFirstRoundShare * unit_count)));
  std::vector<int> last_round;  // the nodes of the last kept add round, best-ranked unit first
  int round = 0;
  while (!s.meets() && evaluations < add_limit) {
    std::vector<int> order;  // units still float16, best-ranked first
    for (int i = 0; i < unit_count; ++i) {
      if (!unit_kept[i]) order.push_back(i);
    }
    if (order.empty()) break;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return added[a] > added[b]; });
    double total = 0;
    for (int i : order) total += std::max(0.0, added[i]);
    // If the error went down in proportion to the added error taken away, this share would
    // bring the score to 0.8: taking a little more than needed saves a round.
    const double share = std::isfinite(s.score) ? std::clamp(1 - 0.8 / s.score, 0.2, 0.95) : 0.95;
    size_t take = 0;
    double covered = 0;
    while (take < order.size() && (take < at_least || covered < share * total)) {
      covered += std::max(0.0, added[order[take]]);
      ++take;
    }
    ++round;
    ++evaluations;
    if (evaluations == add_limit) take = order.size();  // the last add round: all that is left
    UnitRound r;
    r.fp32 = s.fp32;
    std::vector<int> taken;
    for (size_t k = 0; k < take; ++k) {
      for (int n : units[order[k]]) {
        r.fp32[n] = true;
        taken.push_back(n);
      }
    }
    r.changed = static_cast<int>(taken.size());
    OVFIX_ASSIGN_OR_RETURN(UnitProbe probe, evaluate(r.fp32));
    r.score = probe.score;
    // A round that does not lower the score is not kept: rounding errors that cancelled
    // can stop cancelling when one side becomes exact.
    if (probe.score < s.score) {
      r.kept = true;
      s.fp32 = r.fp32;
      s.score = probe.score;
      added = probe.added;
      added.resize(unit_count, 0);
      for (size_t k = 0; k < take; ++k) unit_kept[order[k]] = true;
      last_round = taken;
      for (int n : taken) s.round_of[n] = round;
      at_least *= 2;
    } else {
      // The same base again with more of the ranking: the units tried stay candidates.
      at_least = std::max(at_least * 2, 2 * take);
    }
    s.rounds.push_back(std::move(r));
  }
  if (!s.meets()) return s;

  // Give back: the last round's lower-ranked half, then its upper half, then each earlier
  // round's nodes (latest first); a chunk that cannot go is split in two, down to single
  // nodes, so a unit can be given back in part.
  std::deque<std::vector<int>> chunks;
  if (last_round.size() > 1) {
    auto [upper, lower] = Halves(last_round);
    chunks.push_back(std::move(lower));
    chunks.push_back(std::move(upper));
  }
  for (int r = round - 1; r >= 1; --r) {
    std::vector<int> earlier;
    for (int n : Kept(s.fp32)) {
      if (s.round_of[n] == r) earlier.push_back(n);
    }
    if (!earlier.empty()) chunks.push_back(std::move(earlier));
  }
  while (!chunks.empty() && evaluations < max_evaluations) {
    std::vector<int> chunk = std::move(chunks.front());
    chunks.pop_front();
    UnitRound r;
    r.fp32 = s.fp32;
    for (int n : chunk) r.fp32[n] = false;
    r.give_back = true;
    r.changed = static_cast<int>(chunk.size());
    ++evaluations;
    OVFIX_ASSIGN_OR_RETURN(UnitProbe probe, evaluate(r.fp32));
    r.score = probe.score;
    if (probe.score <= 1) {
      r.kept = true;
      s.fp32 = r.fp32;
      s.score = probe.score;
      for (int n : chunk) s.round_of[n] = 0;
    } else if (chunk.size() > 1) {
      auto [upper, lower] = Halves(chunk);
      chunks.push_back(std::move(lower));
      chunks.push_back(std::move(upper));
    }
    s.rounds.push_back(std::move(r));
  }
  return s;
}

namespace {

// What a measuring run learnt: each float value's error against fp32, and which values the
// converted model holds as float16 (the run's types: a graph read back from bytes need not
// declare its intermediate values).
struct ValueErrors {
  std::map<std::string, double> error;
  std::set<std::string> float16;
};

// Whether the run held `v` as float16 or bfloat16 (as float when it widened float16 values).
bool HeldInHalf(const Value& v, const Tensor& t) {
  return t.type() == DataType::kFloat16 || t.type() == DataType::kBfloat16 ||
         (t.type() == DataType::kFloat && v.elem_type() == DataType::kFloat16);
}

// `errors` gets what `t`, the converted model's value `name` held in half or not as `half`
// says, tells against the fp32 run.
void Compare(const std::string& name, const Tensor& t, bool half, const exec::TensorMap& fp32,
             ValueErrors& errors) {
  if (half) errors.float16.insert(name);  // bfloat16 too: the repair is the same for both
  if (!IsFloatingPoint(t.type())) return;
  auto it = fp32.find(name);
  if (it == fp32.end() || it->second.dims() != t.dims()) return;
  errors.error[name] = exec::RelativeError(t, it->second, exec::kFloat16Resolution);
}

// The runs of a body's values compared (the first iterations of a Loop or Scan body): the
// fp32 run keeps each, so a long loop would hold every iteration.
constexpr int kBodyRunsCompared = 16;

// The key of value `v` in a run whose main graph is `g`: its name, and in a body, for each run
// of the body after the first (an iteration, a branch taken again), "NAME#RUN", counted in
// `runs`; "" past kBodyRunsCompared runs.
std::string RunKey(const Value& v, const Graph& g, std::map<std::string, int>& runs) {
  if (v.owner() == &g) return v.name();
  const int k = runs[v.name()]++;
  if (k >= kBodyRunsCompared) return "";
  return k == 0 ? v.name() : absl::StrCat(v.name(), "#", k);
}

// The fp32 graph's run on the first set: its main graph's inputs and the values computed in
// every graph (RunKey) as the store keeps them (past its budget, in its file), and the scale and
// float16 rounding of each float value, weights included (Weights), measured as it was computed.
struct Fp32Run {
  exec::TensorMap values;
  std::map<std::string, double> scale, rounding;
  void Measure(const std::string& name, const Tensor& t) {
    if (!IsFloatingPoint(t.type())) return;
    const exec::Comparison c = exec::CompareTensors(t, t);
    const double largest = std::max(std::abs(c.expected_min), std::abs(c.expected_max));
    const double range = c.expected_max - c.expected_min;
    scale[name] = std::max(range > 0 ? range : (largest > 0 ? largest : 1),
                           exec::kFloat16Resolution * largest);
    rounding[name] = 0x1.0p-11 * largest / scale[name];
  }
};

absl::StatusOr<Fp32Run> RunFp32(const Model& fp32, ReferenceValidator& reference) {
  Fp32Run run;
  const Graph& g = fp32.graph();
  std::map<std::string, int> runs;
  absl::StatusOr<std::vector<Tensor>> outputs =
      RunObserving(fp32, reference.sets()[0], [&](const Value& v, const Tensor& t) {
        // Body values too, each run apart: the repair keeps nodes inside bodies as well.
        const std::string key = RunKey(v, g, runs);
        if (key.empty()) return;
        if (key == v.name()) run.Measure(v.name(), t);
        run.values[key] = reference.store().Keep(AsDeclared(v, t));
      });
  reference.count_model_runs(1);
  if (!outputs.ok()) return outputs.status();
  for (auto& [name, t] : MatchInputTypes(g, reference.sets()[0])) {
    run.Measure(name, t);
    run.values[name] = t;
  }
  for (const Value* w : g.initializers()) {
    if (!run.values.contains(w->name())) run.Measure(w->name(), w->tensor());
  }
  return run;
}

// Runs `model`'s serialized bytes on the first set, comparing each value with the fp32 run's
// as it is computed (nothing of the run is kept), and compares its outputs on every set (only
// the first when `first_set_only`); `errors` gets each value's error against `fp32`.
absl::StatusOr<EndToEndResult> MeasureRound(const Model& model, ReferenceValidator& reference,
                                            const exec::TensorMap& fp32, bool first_set_only,
                                            ValueErrors& errors) {
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> bytes, SerializedGraphCopy(model));
  const Graph& g = bytes->graph();
  errors = ValueErrors();
  std::map<std::string, int> runs;
  absl::StatusOr<std::vector<Tensor>> outputs =
      RunObserving(*bytes, reference.sets()[0], [&](const Value& v, const Tensor& t) {
        const std::string key = RunKey(v, g, runs);
        if (key.empty()) return;
        Compare(key, t, HeldInHalf(v, t), fp32, errors);
        if (key == v.name()) return;
        // A body value's error is its worst run's.
        if (auto it = errors.error.find(key); it != errors.error.end()) {
          errors.error[v.name()] = std::max(errors.error[v.name()], it->second);
          errors.error.erase(it);
        }
        errors.float16.erase(key);
      });
  reference.count_model_runs(1);
  if (!outputs.ok()) return outputs.status();
  for (const auto& [name, t] : MatchInputTypes(g, reference.sets()[0])) {
    const Value* v = g.FindValue(name);
    if (v != nullptr) Compare(name, t, HeldInHalf(*v, t), fp32, errors);
  }
  OVFIX_ASSIGN_OR_RETURN(EndToEndResult worst, reference.Compare(g, *outputs, 0));
  for (size_t k = 1; !first_set_only && k < reference.sets().size(); ++k) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunAsTyped(*bytes, reference.sets()[k], exec::kValidationSeed);
    reference.count_model_runs(1);
    if (!out.ok()) return out.status();
    OVFIX_ASSIGN_OR_RETURN(EndToEndResult r, reference.Compare(bytes->graph(), *out, k));
    KeepWorst(worst, r);
  }
  return worst;
}

bool Sums(const Node& n) {
  return n.op_type() == "Add" || n.op_type() == "Sub" || n.op_type() == "Sum";
}

// A unit (chain) starts at each op that sums many products, and at each junction where two
// computed values are added (a residual Add, with what follows it up to the next start).
bool StartsUnit(const Node& n) {
  static const std::set<std::string> kOps = {"Conv",   "ConvTranspose", "MatMul",       "Gemm",
                                             "Einsum", "ConvInteger",   "MatMulInteger"};
  if (kOps.contains(n.op_type())) return true;
  if (!Sums(n)) return false;
  int computed = 0;
  for (const Value* v : n.inputs()) {
    computed += v != nullptr && !v->is_initializer() && v->producer() != nullptr &&
                v->producer()->op_type() != "Constant";
  }
  return computed >= 2;
}

// A value read through the Casts the conversion put in front of it: the value of the fp32
// graph it stands for (its name is in the fp32 activations).
const Value* ThroughCasts(const Value* v) {
  while (v != nullptr && v->producer() != nullptr && v->producer()->op_type() == "Cast") {
    v = v->producer()->input(0);
  }
  return v;
}

// The name a node's output has in the original model: the repair keeps nodes by it. A main
// output the conversion gave back its original type (keep_io_types) is the Cast's; the node
// itself computes a renamed value.
std::string KeepKey(const Node* n) {
  const Value* v = n->output(0);
  if (v->uses().size() == 1 && !v->is_graph_output()) {
    const Node* reader = v->uses()[0].node;
    if (reader->op_type() == "Cast" && reader->output(0) != nullptr &&
        reader->output(0)->is_graph_output()) {
      return reader->output(0)->name();
    }
  }
  return v->name();
}

struct UnitNode {
  const Node* node;                 // of the first conversion
  std::string output;               // its first output's name (the keep key)
  std::vector<std::string> inputs;  // non-weight inputs, through Casts
  bool sums = false;                // Add, Sub, Sum: absolute errors of inputs add up
};

struct Unit {
  std::vector<UnitNode> nodes;
};

void AddToUnit(const Node& n, Unit& unit) {
  UnitNode u{&n, KeepKey(&n), {}, Sums(n)};
  for (const Value* v : n.inputs()) {
    const Value* source = ThroughCasts(v);
    if (source == nullptr || source->is_initializer()) continue;
    u.inputs.push_back(source->name());
  }
  unit.nodes.push_back(std::move(u));
}

// Units of every graph, bodies of If, Loop and Scan included (a unit stays in one graph).
std::vector<Unit> MakeUnits(const Graph& root, const ValueErrors& first) {
  std::vector<Unit> units;
  for (const Graph* g : GraphsRecursive(const_cast<Graph&>(root))) {
    bool graph_started = false;
    for (const Node* n : g->nodes()) {
      if (n->outputs().empty() || n->output(0) == nullptr) continue;
      if (n->op_type() == "Cast" || n->op_type() == "CastLike") continue;
      if (!first.float16.contains(n->output(0)->name())) continue;
      if (!graph_started || StartsUnit(*n)) units.emplace_back();
      graph_started = true;
      AddToUnit(*n, units.back());
    }
  }
  return units;
}

// How much a value's error (relative to its range) weighs in the outputs' error, to first
// order: 1 at an output; an input of an Add, Sub or Sum passes its absolute error on, so its
// relative error weighs its range over the sum's (a residual branch far smaller than the
// stream it joins weighs little, the stream's own rounding fully); other ops pass relative
// error on as it is. A value read by several nodes weighs the most any of them gives it.
struct Weights {
  std::map<std::string, double> scale;  // ErrorScale of each fp32 value
  // Half a float16 ulp at the value's largest magnitude, relative to its scale: what
  // rounding it to float16 costs at least.
  std::map<std::string, double> rounding;
  std::map<std::string, double> weight;  // by value name of the first conversion
  double Scale(const std::string& name) const {
    auto it = scale.find(name);
    return it == scale.end() ? 1 : it->second;
  }
  double Rounding(const std::string& name) const {
    auto it = rounding.find(name);
    return it == rounding.end() ? 0 : it->second;
  }
  double Weight(const std::string& name) const {
    auto it = weight.find(name);
    return it == weight.end() ? 0 : it->second;
  }
};

// From the outputs of `g`'s nodes back to their inputs.
void PassWeights(const Graph& g, Weights& w) {
  std::vector<Node*> nodes = g.NodeList();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* n = *it;
    double out = 0;
    for (const Value* v : n->outputs()) {
      if (v != nullptr) out = std::max(out, w.Weight(v->name()));
    }
    if (out == 0 || n->output(0) == nullptr) continue;
    const std::string out_name = ThroughCasts(n->output(0))->name();
    for (const Value* v : n->inputs()) {
      if (v == nullptr || v->is_initializer()) continue;
      double passed = out;
      if (Sums(*n)) passed = out * w.Scale(ThroughCasts(v)->name()) / w.Scale(out_name);
      double& to = w.weight[v->name()];
      to = std::max(to, passed);
    }
  }
}

// Every graph's: a body's outputs weigh what the outputs of the node holding it weigh.
Weights MakeWeights(const Graph& root, const Fp32Run& fp32) {
  Weights w;
  w.scale = fp32.scale;
  w.rounding = fp32.rounding;
  for (const Value* v : root.outputs()) w.weight[v->name()] = 1;
  for (const Graph* g : GraphsRecursive(const_cast<Graph&>(root))) {
    if (const Node* holder = g->owner_node(); holder != nullptr) {
      double out = 0;
      for (const Value* v : holder->outputs()) {
        if (v != nullptr) out = std::max(out, w.Weight(v->name()));
      }
      for (const Value* v : g->outputs()) {
        double& to = w.weight[v->name()];
        to = std::max(to, out);
      }
    }
    PassWeights(*g, w);
  }
  return w;
}

// The error each unit adds in a run, weighed by how much it reaches the outputs: per node,
// its output's error minus what its inputs bring (their worst relative error; for a sum,
// their absolute errors added up, relative to the sum's range), at least the rounding of its
// output to float16, times the output's weight.
// Weights are not inputs: their rounding is part of what a node adds.
std::vector<double> AddedErrors(const std::vector<Unit>& units, const Weights& weights,
                                const ValueErrors& errors) {
  std::vector<double> added;
  auto error_of = [&](const std::string& name) {
    auto it = errors.error.find(name);
    return it == errors.error.end() ? 0.0 : it->second;
  };
  for (const Unit& u : units) {
    double total = 0;
    for (const UnitNode& n : u.nodes) {
      double in = 0;
      for (const std::string& v : n.inputs) {
        if (n.sums) {
          in += error_of(v) * weights.Scale(v) / weights.Scale(n.output);
        } else {
          in = std::max(in, error_of(v));
        }
      }
      // What a run measures of one node is the difference of two maxima, often below the
      // rounding it surely adds (a residual Add on a stream whose error is already large).
      const double own = std::max(error_of(n.output) - in, weights.Rounding(n.output));
      total += std::max(0.0, own) * weights.Weight(n.output);
    }
    added.push_back(total);
  }
  return added;
}

// The accuracy criteria's score (ReferenceValidator::Compare fills it; infinite where an
// output has a NaN or infinity the original does not have), over `tolerance`: the pipeline
// passes 1, the score's own bound.
double Score(const EndToEndResult& r, double tolerance) {
  if (std::isnan(r.score)) return std::numeric_limits<double>::infinity();
  return tolerance > 0 ? r.score / tolerance
                       : (r.score > 0 ? std::numeric_limits<double>::infinity() : 0);
}

struct Evaluated {
  EndToEndResult end_to_end;
  std::map<std::string, double> kept_errors;  // of the nodes kept in fp32
  double fp32_share = 0;
  bool all_fp32 = false;  // no float node of the converted model computes float16
  int fp32_nodes = 0;
};

}  // namespace

absl::StatusOr<RepairResult> RepairToTolerance(const Model& fp32, std::unique_ptr<Model> first,
                                               double first_error, ReferenceValidator& reference,
                                               double tolerance, const Reconvert& reconvert,
                                               const std::function<void(const std::string&)>& log) {
  const int runs_before = reference.model_runs();
  const int sets = static_cast<int>(reference.sets().size());
  RepairResult result;
  // The rewrites' activations are not read again: the fp32 run's take their place.
  reference.ForgetActivations();
  OVFIX_ASSIGN_OR_RETURN(const Fp32Run fp32_run, RunFp32(fp32, reference));

  // The conversion that failed: its score over every set is known, its activations are
  // not (one run on the first set).
  ValueErrors first_errors;
  OVFIX_ASSIGN_OR_RETURN(
      EndToEndResult first_measured,
      MeasureRound(*first, reference, fp32_run.values, /*first_set_only=*/true, first_errors));
  const std::vector<Unit> units = MakeUnits(first->graph(), first_errors);
  // The nodes the search keeps or gives back, and each unit's nodes among them.
  std::vector<const Node*> nodes;
  std::vector<std::vector<int>> unit_nodes;
  for (const Unit& u : units) {
    unit_nodes.emplace_back();
    for (const UnitNode& n : u.nodes) {
      unit_nodes.back().push_back(static_cast<int>(nodes.size()));
      nodes.push_back(n.node);
    }
  }
  UnitProbe first_probe;
  first_probe.score = std::max(Score(first_measured, tolerance), first_error / tolerance);
  const Weights weights = MakeWeights(first->graph(), fp32_run);
  first_probe.added = AddedErrors(units, weights, first_errors);
  const int max_evaluations = std::max(3, (kRepairModelRuns - 2) / std::max(1, sets));

  std::map<std::vector<bool>, Evaluated> evaluated;
  auto keep_map = [&](const std::vector<bool>& flags) {
    std::map<std::string, std::string> keep;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (flags[i]) keep[KeepKey(nodes[i])] = "repair: kept to meet the criterion";
    }
    return keep;
  };
  int evaluation = 0;
  auto evaluate = [&](const std::vector<bool>& flags) -> absl::StatusOr<UnitProbe> {
    ++evaluation;
    OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> candidate, reconvert(keep_map(flags)));
    ValueErrors errors;
    OVFIX_ASSIGN_OR_RETURN(
        EndToEndResult measured,
        MeasureRound(*candidate, reference, fp32_run.values, /*first_set_only=*/false, errors));
    measured.score = Score(measured, tolerance);
    Evaluated e;
    e.end_to_end = measured;
    const PrecisionCost cost = MeasurePrecisionCost(*candidate, 0);
    e.fp32_share = cost.NodeShare();
    e.all_fp32 = cost.fp32_nodes == cost.float_nodes;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!flags[i]) continue;
      ++e.fp32_nodes;
      const std::string v = KeepKey(nodes[i]);
      if (auto it = errors.error.find(v); it != errors.error.end()) e.kept_errors[v] = it->second;
    }
    log(absl::StrFormat(
        "repair evaluation %d: %d node(s) from the first conversion in fp32 (%.1f%% of float "
        "nodes), end-to-end error %.3g, score %.3g",
        evaluation, e.fp32_nodes, 100 * e.fp32_share, measured.max_error, measured.score));
    evaluated[flags] = std::move(e);
    return UnitProbe{measured.score, AddedErrors(units, weights, errors)};
  };
  OVFIX_ASSIGN_OR_RETURN(UnitSearch search,
                         SearchFewestUnits(static_cast<int>(nodes.size()), unit_nodes, first_probe,
                                           max_evaluations, evaluate));

  // Round 0: the conversion that failed, for the plot of error against fp32 share.
  result.history.push_back({0, false, 0, 0, MeasurePrecisionCost(*first, 0).NodeShare(),
                            first_probe.score, std::max(first_error, first_measured.max_error),
                            true});
  int round = 0;
  for (const UnitRound& r : search.rounds) {
    const Evaluated& e = evaluated.at(r.fp32);
    result.history.push_back({++round, r.give_back, r.changed, e.fp32_nodes, e.fp32_share, r.score,
                              e.end_to_end.max_error, r.kept});
  }
  result.rounds = round;
  const std::vector<int> kept_nodes = Kept(search.fp32);
  if (kept_nodes.empty()) {
    // Nothing kept (the search could not start): the failed conversion stands.
    result.model = std::move(first);
    result.end_to_end = first_measured;
    result.end_to_end.score = first_probe.score;
  } else {
    // The set found, converted again (deterministic: the model measured).
    OVFIX_ASSIGN_OR_RETURN(result.model, reconvert(keep_map(search.fp32)));
    const Evaluated& e = evaluated.at(search.fp32);
    result.end_to_end = e.end_to_end;
    for (int i : kept_nodes) {
      const Node* n = nodes[i];
      const std::string out = KeepKey(n);
      RepairedNode k{n->Describe(), n->op_type(), out, 0, 0, search.round_of[i]};
      if (auto it = first_errors.error.find(out); it != first_errors.error.end()) {
        k.error_before = it->second;
      }
      if (auto it = e.kept_errors.find(out); it != e.kept_errors.end()) {
        k.error_after = it->second;
      }
      result.kept.push_back(std::move(k));
    }
  }
  // Every node the search could keep, or a set whose conversion has no float16 node left
  // (what the kept nodes leave between them goes to fp32 too): the fp32 model.
  result.only_fp32 = search.meets() && !kept_nodes.empty() &&
                     (kept_nodes.size() == nodes.size() || evaluated.at(search.fp32).all_fp32);
  result.within_tolerance = search.meets() && !result.only_fp32;
  result.model_runs = reference.model_runs() - runs_before;
  return result;
}

// --- The island certificate ---

const char* IslandVerdictName(IslandVerdict v, bool bf16) {
  switch (v) {
    case IslandVerdict::kNeeded:
      return bf16 ? "fp32 needed" : "needed";
    case IslandVerdict::kGivenBack:
      return bf16 ? "in bf16" : "given back";
    case IslandVerdict::kKeptBack:
      return bf16 ? "kept in fp32" : "kept back";
    case IslandVerdict::kSpec:
      return "not tried: its reason";
    case IslandVerdict::kNotTried:
      return "not tried: bound";
  }
  return "";
}

namespace {

// Reasons the spec or the user fixes; the float math feeding a quantizer (fp16 rounding
// there flips integer codes, which the next quantized layers carry on: the policy keeps it so
// that a quantized model converts in a couple of runs, and trying each of its many small
// units would cost a run each for next to no multiply-adds); and values calibration saw
// within 4x of fp16's limit: such islands are certified by the reason, not tried. Tried in
// bfloat16 (`fp16_range` false), fp16's range is no reason: those are tried.
bool SpecKept(const std::string& reason, bool fp16_range = true) {
  for (const char* prefix :
       {"no float16 in the ONNX spec", "sparse constant", "output type set by an attribute",
        "op outside the ONNX domain", "control flow", "--keep-fp32"}) {
    if (absl::StartsWith(reason, prefix)) return true;
  }
  if (absl::StrContains(reason, "before a quantizer flips its integer codes")) return true;
  if (!fp16_range) return false;
  // Calibration saw the value within 4x of fp16's limit (or rounding to inf): that it holds on
  // these inputs says little of the next, brighter one.
  if (absl::StrContains(reason, "which fp16 rounding makes inf")) return true;
  const size_t at = reason.find("with observed |x| up to ");
  double observed = 0;
  return at != std::string::npos &&
         absl::SimpleAtod(
             absl::StripSuffix(reason.substr(at + 24, reason.find(' ', at + 24) - (at + 24)), ","),
             &observed) &&
         observed >= 65504.0 / 4;
}

// Reasons the closing rules give (a node joined to the islands around it): a unit is named
// by another of its reasons where it has one.
bool Joined(const std::string& reason) {
  return absl::StartsWith(reason, "all its float inputs come from fp32 islands") ||
         absl::StartsWith(reason, "between fp32 islands") ||
         absl::StartsWith(reason, "makes float that only fp32 islands read");
}

double LargestMagnitude(const Tensor& t) {
  if (!IsFloatingPoint(t.type())) return 0;
  double largest = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double x = std::abs(t.GetAsDouble(i));
    if (std::isfinite(x)) largest = std::max(largest, x);
  }
  return largest;
}

// Why a unit is needed, from its conversion's run on the first set: the first value (in graph
// order) that became inf or NaN where the fp32 run's is finite, with its fp32 magnitude; else
// the unit's value with the largest error.
std::string WhyNeeded(const Model& candidate, const ValueErrors& errors,
                      const std::vector<std::string>& unit_outputs, const exec::TensorMap& fp32,
                      const std::string& tried_as) {
  auto fp32_largest = [&](const Value* v) {
    const Value* source = ThroughCasts(v);
    auto it = fp32.find(source != nullptr ? source->name() : v->name());
    return it == fp32.end() ? -1.0 : LargestMagnitude(it->second);
  };
  for (const Graph* g : GraphsRecursive(const_cast<Graph&>(candidate.graph()))) {
    for (const Node* n : g->nodes()) {
      for (const Value* v : n->outputs()) {
        if (v == nullptr) continue;
        auto it = errors.error.find(v->name());
        if (it == errors.error.end() || std::isfinite(it->second)) continue;
        const double largest = fp32_largest(v);
        std::string magnitude;
        if (largest >= 0) {
          magnitude = absl::StrFormat(" (fp32 |x| up to %.3g%s)", largest,
                                      largest > 65504 ? ", beyond fp16's max 65504" : "");
        }
        return absl::StrCat("overflow: ", n->Describe(), " computes '", v->name(),
                            "' = inf or NaN in ", tried_as, magnitude);
      }
    }
  }
  double worst = -1;
  std::string name;
  for (const std::string& o : unit_outputs) {
    auto it = errors.error.find(o);
    if (it != errors.error.end() && it->second > worst) {
      worst = it->second;
      name = o;
    }
  }
  if (worst < 0) return "the outputs miss the criteria (no value of the unit was compared)";
  const Value* v = candidate.graph().FindValue(name);
  const std::string node =
      v != nullptr && v->producer() != nullptr ? v->producer()->Describe() : name;
  return absl::StrFormat("precision: %s computes '%s' with an error of %.3g of its range", node,
                         name, worst);
}

// The certificate and the bf16 tries: `bf16` false tries units back in fp16 (a unit that holds
// is given back), true tries them in bfloat16 (a unit that holds computes in bfloat16).
absl::StatusOr<CertifyResult> TryIslands(const Model& fp32, const std::vector<IslandInput>& islands,
                                         const std::map<std::string, std::string>& keep,
                                         ReferenceValidator& reference,
                                         const ReconvertReleasing& reconvert,
                                         const std::function<void(const std::string&)>& log,
                                         bool bf16) {
  const std::string tried_as = bf16 ? "bf16" : "fp16";
  const int runs_before = reference.model_runs();
  const int sets = std::max<int>(1, static_cast<int>(reference.sets().size()));
  CertifyResult result;
  IslandCertificate& c = result.certificate;
  c.tried_as = tried_as;
  auto spec_kept = [&](const std::string& reason) { return SpecKept(reason, !bf16); };

  // The islands' nodes in the fp32 graph, in graph order, joined where one reads another's
  // output (the spec's islands among themselves: they are not tried).
  std::map<std::string, int> by_output;
  for (size_t i = 0; i < islands.size(); ++i) {
    if (!islands[i].output.empty()) by_output[islands[i].output] = static_cast<int>(i);
  }
  std::vector<int> parent(islands.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<int>(i);
  std::function<int(int)> find = [&](int i) {
    return parent[i] == i ? i : parent[i] = find(parent[i]);
  };
  std::vector<int> order;  // islands in graph order
  for (const Graph* g : GraphsRecursive(const_cast<Graph&>(fp32.graph()))) {
    for (const Node* n : g->nodes()) {
      if (n->outputs().empty() || n->output(0) == nullptr) continue;
      auto it = by_output.find(n->output(0)->name());
      if (it == by_output.end()) continue;
      const int i = it->second;
      order.push_back(i);
      for (const Value* v : n->inputs()) {
        if (v == nullptr || v->producer() == nullptr || v->producer()->owner() != n->owner() ||
            v->producer()->outputs().empty() || v->producer()->output(0) == nullptr) {
          continue;
        }
        auto p = by_output.find(v->producer()->output(0)->name());
        if (p == by_output.end()) continue;
        if (spec_kept(islands[i].reason) != spec_kept(islands[p->second].reason)) continue;
        parent[find(i)] = find(p->second);
      }
    }
  }
  // Multiply-adds of the fp32 graph's nodes (main graph), by description.
  const PrecisionCost cost = MeasurePrecisionCost(fp32, 0);
  std::map<std::string, double> macs;
  for (const NodePrecision& n : cost.nodes) macs[n.node] = n.multiply_adds;
  std::map<int, int> unit_of_root;
  std::vector<CertifiedIsland> units;
  std::vector<bool> spec;
  for (int i : order) {
    const int root = find(i);
    auto [it, added] = unit_of_root.try_emplace(root, static_cast<int>(units.size()));
    if (added) {
      units.emplace_back();
      spec.push_back(spec_kept(islands[i].reason));
    }
    CertifiedIsland& u = units[it->second];
    u.nodes.push_back(islands[i].node);
    u.outputs.push_back(islands[i].output);
    u.repair = u.repair || absl::StartsWith(islands[i].reason, "repair");
    if (auto m = macs.find(islands[i].node); m != macs.end()) u.multiply_adds += m->second;
    if (u.reason.empty() || (Joined(u.reason) && !Joined(islands[i].reason))) {
      u.reason = islands[i].reason;
    }
  }
  for (CertifiedIsland& u : units) {
    u.multiply_add_share = cost.multiply_adds > 0 ? u.multiply_adds / cost.multiply_adds : 0;
  }

  // The units to try, the largest first.
  std::vector<int> candidates;
  for (size_t i = 0; i < units.size(); ++i) {
    if (spec[i]) {
      units[i].verdict = IslandVerdict::kSpec;
      ++c.spec;
    } else {
      candidates.push_back(static_cast<int>(i));
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int a, int b) { return units[a].multiply_adds > units[b].multiply_adds; });
  const int allowed = std::min(kCertifyUnits, std::max(1, kCertifyModelRuns / sets));
  // A unit tried in fp16 leaves `keep` (or is released from the policy's islands); one tried in
  // bfloat16 stays an island, computed in bfloat16.
  auto keep_and_release = [&](const std::vector<int>& given) {
    std::pair<std::map<std::string, std::string>, std::set<std::string>> kr{keep, {}};
    for (int u : given) {
      for (const std::string& o : units[u].outputs) {
        if (bf16 || kr.first.erase(o) == 0) kr.second.insert(o);
      }
    }
    return kr;
  };
  // One conversion with the units `given` tried, measured on every input set: its score and
  // end-to-end result, with the conversion; or why it did not convert or run.
  struct Trial {
    std::unique_ptr<Model> model;
    EndToEndResult end_to_end;
    ValueErrors errors;
    double score = 0;
    std::string failed;  // "does not convert/run with it in ...: ..."
  };
  auto trial = [&](const std::vector<int>& given, const exec::TensorMap& fp32_values) {
    Trial t;
    const auto [k, release] = keep_and_release(given);
    absl::StatusOr<std::unique_ptr<Model>> candidate = reconvert(k, release);
    if (!candidate.ok()) {
      t.failed = absl::StrCat("does not convert with it in ", tried_as, ": ",
                              candidate.status().message());
      return t;
    }
    absl::StatusOr<EndToEndResult> measured =
        MeasureRound(**candidate, reference, fp32_values, /*first_set_only=*/false, t.errors);
    if (!measured.ok()) {
      t.failed =
          absl::StrCat("does not run with it in ", tried_as, ": ", measured.status().message());
      return t;
    }
    t.model = *std::move(candidate);
    t.end_to_end = *std::move(measured);
    t.score = Score(t.end_to_end, 1.0);
    return t;
  };
  std::vector<int> tried_order;
  Fp32Run fp32_run;
  bool settled = false;  // bf16: every unit at once met the criteria
  if (!candidates.empty()) {
    reference.ForgetActivations();
    OVFIX_ASSIGN_OR_RETURN(fp32_run, RunFp32(fp32, reference));
    if (bf16 && candidates.size() > 1) {
      // bfloat16 has float's range: what fp16 overflowed in usually holds, so every unit is
      // tried at once first (one conversion instead of one per unit).
      Trial all = trial(candidates, fp32_run.values);
      log(absl::StrFormat("islands in bf16: every one of %d unit(s) at once: score %.3g",
                          candidates.size(), all.failed.empty() ? all.score : -1.0));
      if (all.failed.empty() && all.score <= 1) {
        for (int u : candidates) {
          units[u].verdict = IslandVerdict::kGivenBack;
          tried_order.push_back(u);
        }
        c.tried = c.given_back = static_cast<int>(candidates.size());
        c.final_score = all.score;
        c.note = "every unit in bf16 at once meets the criteria";
        result.model = std::move(all.model);
        result.end_to_end = std::move(all.end_to_end);
        settled = true;
      }
    }
    for (int u : candidates) {
      if (settled) break;
      CertifiedIsland& unit = units[u];
      if (c.tried >= allowed) {
        ++c.not_tried;
        continue;
      }
      ++c.tried;
      tried_order.push_back(u);
      Trial t = trial({u}, fp32_run.values);
      if (!t.failed.empty()) {
        unit.verdict = IslandVerdict::kNeeded;
        unit.why = std::move(t.failed);
        ++c.needed;
        continue;
      }
      unit.score = t.score;
      unit.error = t.end_to_end.max_error;
      if (unit.score <= 1) {
        unit.verdict = IslandVerdict::kGivenBack;
        ++c.given_back;
      } else {
        unit.verdict = IslandVerdict::kNeeded;
        unit.why = WhyNeeded(*t.model, t.errors, unit.outputs, fp32_run.values, tried_as);
        ++c.needed;
      }
      log(absl::StrFormat("%s: %s (%d node(s), %.1f%% of multiply-adds) in %s: score %.3g, %s",
                          bf16 ? "islands in bf16" : "certificate", unit.nodes.front(),
                          unit.nodes.size(), 100 * unit.multiply_add_share, tried_as, unit.score,
                          IslandVerdictName(unit.verdict, bf16)));
    }
  }

  // Every unit given back at once, measured: where it misses, the units closest to failing
  // alone go back to fp32 first.
  std::vector<int> given;
  for (int u : tried_order) {
    if (!settled && units[u].verdict == IslandVerdict::kGivenBack) given.push_back(u);
  }
  std::stable_sort(given.begin(), given.end(),
                   [&](int a, int b) { return units[a].score > units[b].score; });
  while (!given.empty()) {
    Trial t = trial(given, fp32_run.values);
    if (t.failed.empty() && t.score <= 1) {
      result.model = std::move(t.model);
      result.end_to_end = std::move(t.end_to_end);
      c.final_score = t.score;
      break;
    }
    units[given.front()].verdict = IslandVerdict::kKeptBack;
    --c.given_back;
    ++c.kept_back;
    given.erase(given.begin());
  }
  if (c.kept_back > 0) {
    c.note = absl::StrCat(c.kept_back, " unit(s) that met the criteria alone in ", tried_as,
                          " missed them with the others: kept in fp32");
  }
  // Tried first, in the order tried; then the spec's and those past the bound.
  std::vector<int> listed = tried_order;
  for (size_t i = 0; i < units.size(); ++i) {
    if (std::find(listed.begin(), listed.end(), static_cast<int>(i)) == listed.end()) {
      listed.push_back(static_cast<int>(i));
    }
  }
  for (int i : listed) c.islands.push_back(std::move(units[i]));
  c.model_runs = reference.model_runs() - runs_before;
  return result;
}

}  // namespace

absl::StatusOr<CertifyResult> CertifyIslands(const Model& fp32,
                                             const std::vector<IslandInput>& islands,
                                             const std::map<std::string, std::string>& keep,
                                             ReferenceValidator& reference,
                                             const ReconvertReleasing& reconvert,
                                             const std::function<void(const std::string&)>& log) {
  return TryIslands(fp32, islands, keep, reference, reconvert, log, /*bf16=*/false);
}

absl::StatusOr<CertifyResult> IslandsToBf16(const Model& fp32,
                                            const std::vector<IslandInput>& islands,
                                            const std::map<std::string, std::string>& keep,
                                            ReferenceValidator& reference,
                                            const ReconvertReleasing& reconvert,
                                            const std::function<void(const std::string&)>& log) {
  return TryIslands(fp32, islands, keep, reference, reconvert, log, /*bf16=*/true);
}

}  // namespace ovfix::converter
