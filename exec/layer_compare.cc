#include "exec/layer_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "exec/opencl/opencl_session.h"
#include "ir/constant.h"
#include "ir/float16.h"
#include "ir/status_macros.h"

namespace ovfix::exec {
namespace {

constexpr double kHalfMax = 65504.0;
constexpr double kHalfMinNormal = 6.103515625e-05;  // 2^-14
// fp16 keeps 11 significant bits: an element smaller than this fraction of a tensor's largest
// element is below the rounding error of that element and losing it changes nothing.
constexpr double kHalfRelativeUlp = 1.0 / 2048.0;

bool SameNonFinite(double a, double e) { return (std::isnan(a) && std::isnan(e)) || a == e; }

void CompareFloats(const Tensor& ref, const Tensor& test, const Tolerance& tolerance,
                   ValueComparison& c) {
  double dot = 0, ref_norm = 0, test_norm = 0;
  int64_t non_finite_mismatches = 0, first_bad = -1;
  for (int64_t i = 0; i < c.elements; ++i) {
    const double e = ref.GetAsDouble(i), a = test.GetAsDouble(i);
    const bool e_finite = std::isfinite(e), a_finite = std::isfinite(a);
    if (!e_finite) ++c.ref_non_finite;
    if (!a_finite) ++c.test_non_finite;
    if (e_finite) c.range = std::max(c.range, std::fabs(e));
    if (e_finite && a_finite) {
      c.max_abs_error = std::max(c.max_abs_error, std::fabs(a - e));
      dot += a * e;
      ref_norm += e * e;
      test_norm += a * a;
    } else if (!SameNonFinite(a, e)) {
      ++non_finite_mismatches;
      if (first_bad < 0) first_bad = i;
    }
  }
  if (ref_norm == 0 && test_norm == 0) {
    c.cosine = 1;
  } else if (ref_norm == 0 || test_norm == 0) {
    c.cosine = 0;
  } else {
    c.cosine = dot / std::sqrt(ref_norm * test_norm);
  }
  if (c.range > 0) {
    c.rel_error = c.max_abs_error / c.range;
  } else {
    c.rel_error = c.max_abs_error > 0 ? std::numeric_limits<double>::infinity() : 0;
  }
  const double limit = tolerance.atol + tolerance.rtol * c.range;
  if (non_finite_mismatches > 0) {
    // An inf or NaN on one side only is an unbounded error; the finite elements' error
    // would understate it.
    c.max_abs_error = c.rel_error = std::numeric_limits<double>::infinity();
    if (ref_norm == 0 || test_norm == 0) c.cosine = 0;
    c.within = false;
    c.problem = absl::StrFormat("%d of %d elements non-finite on one side only (first: %g vs %g)",
                                non_finite_mismatches, c.elements, test.GetAsDouble(first_bad),
                                ref.GetAsDouble(first_bad));
  } else if (c.max_abs_error > limit) {
    c.within = false;
    c.problem =
        absl::StrFormat("max abs error %.3g > atol + rtol * range = %.3g", c.max_abs_error, limit);
  }
}

void CompareExact(const Tensor& ref, const Tensor& test, ValueComparison& c) {
  int64_t mismatches = 0, first_bad = -1;
  for (int64_t i = 0; i < c.elements; ++i) {
    const int64_t e = ref.GetAsInt64(i), a = test.GetAsInt64(i);
    c.range = std::max(c.range, std::fabs(static_cast<double>(e)));
    if (a != e) {
      ++mismatches;
      if (first_bad < 0) first_bad = i;
      c.max_abs_error = std::max(c.max_abs_error, std::fabs(static_cast<double>(a - e)));
    }
  }
  if (mismatches > 0) {
    c.within = false;
    c.cosine = 0;
    c.rel_error = c.range > 0 ? c.max_abs_error / c.range : std::numeric_limits<double>::infinity();
    c.problem = absl::StrFormat("%d of %d elements differ (first: %d vs %d)", mismatches,
                                c.elements, test.GetAsInt64(first_bad), ref.GetAsInt64(first_bad));
  }
}

std::optional<WeightIssue> CheckWeight(const std::string& name, const std::string& source,
                                       const Tensor& t, double max_relative_loss) {
  if (t.type() != DataType::kFloat && t.type() != DataType::kDouble) return std::nullopt;
  const int64_t n = t.numel();
  double largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double w = t.GetAsDouble(i);
    if (std::isfinite(w)) largest = std::max(largest, std::fabs(w));
  }
  WeightIssue issue;
  issue.name = name;
  issue.source = source;
  issue.elements = n;
  double worst_overflow = 0, worst_loss = 0;
  double loss_example = 0, loss_example_fp16 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double w = t.GetAsDouble(i);
    if (!std::isfinite(w) || w == 0) continue;
    const double magnitude = std::fabs(w);
    const double h = RoundToHalf(static_cast<float>(w));
    if (magnitude > kHalfMax) {
      ++issue.overflow;
      if (magnitude > worst_overflow) {
        worst_overflow = magnitude;
        issue.example = w;
        issue.example_fp16 = h;
      }
      continue;
    }
    if (magnitude >= kHalfMinNormal || magnitude < largest * kHalfRelativeUlp) continue;
    const double loss = std::fabs(h - w) / magnitude;
    if (h != 0 && loss <= max_relative_loss) continue;
    ++issue.underflow;
    if (loss > worst_loss) {
      worst_loss = loss;
      loss_example = w;
      loss_example_fp16 = h;
    }
  }
  if (issue.overflow == 0 && issue.underflow == 0) return std::nullopt;
  if (issue.overflow > 0) {
    issue.problem = absl::StrFormat("%d of %d elements over 65504 (%g becomes %g)", issue.overflow,
                                    n, issue.example, issue.example_fp16);
  } else {
    issue.example = loss_example;
    issue.example_fp16 = loss_example_fp16;
  }
  if (issue.underflow > 0) {
    if (!issue.problem.empty()) issue.problem += "; ";
    absl::StrAppend(&issue.problem,
                    absl::StrFormat("%d of %d elements below fp16's range (%g becomes %g)",
                                    issue.underflow, n, loss_example, loss_example_fp16));
  }
  return issue;
}

// Whether the test model holds the reference's weight `name` in float16: stored so, or cast.
bool HeldAsFloat16(const Graph& test_graph, const std::string& name) {
  const Value* v = test_graph.FindValue(name);
  if (v == nullptr) return false;
  if (v->is_tensor() && v->elem_type() == DataType::kFloat16) return true;
  for (const Use& use : v->uses()) {
    if (use.node->op_type() == "Cast" &&
        use.node->GetInt("to", 0) == static_cast<int64_t>(DataType::kFloat16)) {
      return true;
    }
  }
  return false;
}

// The values the nodes of bodies computed in one run, by name: one tensor per run of the body
// (a branch taken, an iteration), in order, up to a budget of bytes.
class BodyValues {
 public:
  void Record(const Value& v, const Tensor& t) {
    if (v.owner() == nullptr || v.owner()->owner_node() == nullptr) return;
    if (bytes_ + t.nbytes() > kBudget) {
      full_ = true;
      return;
    }
    bytes_ += t.nbytes();
    runs_[v.name()].push_back(t.Clone());  // the session reuses its buffers
  }
  // How often the body `g` ran: the most runs any value of its nodes has.
  size_t Runs(const Graph& g) const {
    size_t most = 0;
    for (const Node* n : g.nodes()) {
      for (const Value* v : n->outputs()) {
        if (auto it = v == nullptr ? runs_.end() : runs_.find(v->name()); it != runs_.end()) {
          most = std::max(most, it->second.size());
        }
      }
    }
    return most;
  }
  // The values of `g`'s nodes in its run `k`.
  TensorMap Run(const Graph& g, size_t k) const {
    TensorMap values;
    for (const Node* n : g.nodes()) {
      for (const Value* v : n->outputs()) {
        if (auto it = v == nullptr ? runs_.end() : runs_.find(v->name());
            it != runs_.end() && k < it->second.size()) {
          values.emplace(v->name(), it->second[k]);
        }
      }
    }
    return values;
  }
  bool full() const { return full_; }

 private:
  static constexpr size_t kBudget = size_t{1} << 30;
  absl::flat_hash_map<std::string, std::vector<Tensor>> runs_;
  size_t bytes_ = 0;
  bool full_ = false;
};

absl::StatusOr<Session*> StartSession(const CompareSide& side, std::unique_ptr<Session>& holder,
                                      BodyValues& bodies) {
  SessionOptions options = side.options;
  options.capture = true;
  options.on_value = [&bodies, outer = side.options.on_value](const Value& v, const Tensor& t) {
    bodies.Record(v, t);
    if (outer) outer(v, t);
  };
  absl::StatusOr<std::unique_ptr<Session>> session = CreateSession(*side.model, options);
  if (!session.ok()) {
    return absl::Status(session.status().code(),
                        absl::StrCat(side.label, ": ", session.status().message()));
  }
  holder = std::move(*session);
  return holder.get();
}

absl::Status RunSide(const CompareSide& side, Session& session, const TensorMap& inputs) {
  TensorMap feeds;
  for (const Value* v : side.model->graph().inputs()) {
    if (v->is_initializer()) continue;
    auto it = inputs.find(v->name());
    if (it == inputs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(side.label, ": no value for input '", v->name(), "'"));
    }
    feeds[v->name()] = v->is_tensor() ? ConvertFeed(it->second, v->elem_type()) : it->second;
  }
  absl::StatusOr<std::vector<Tensor>> outputs = session.Run(feeds);
  if (!outputs.ok()) {
    return absl::Status(outputs.status().code(),
                        absl::StrCat(side.label, ": ", outputs.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseSideSpec(std::string_view spec, SessionOptions& options) {
  const size_t colon = spec.find(':');
  const std::string_view backend = spec.substr(0, colon);
  if (backend != "cpu" && backend != "opencl") {
    return absl::InvalidArgumentError(
        absl::StrCat("'", std::string(spec), "': the backend is cpu or opencl"));
  }
  options.backend = std::string(backend);
  options.precision = Precision::kFp32;
  options.islands_ignored = false;
  if (colon == std::string_view::npos) return absl::OkStatus();
  // fp16-all: fp16 storage of every float tensor, the model's fp32 islands (Casts to float)
  // ignored, as OpenVINO's GPU plugin and ncnn on Vulkan run a model; the cpu emulates it.
  const std::string_view text = spec.substr(colon + 1);
  const bool fp16_all = text == "fp16-all";
  absl::StatusOr<Precision> precision = ParsePrecision(fp16_all ? "fp16-storage" : text);
  if (!precision.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", std::string(spec), "': the precision is fp32, fp16-storage, fp16-all or fp16"));
  }
  if (fp16_all && backend != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("'", std::string(spec), "': fp16-all runs on the cpu backend only"));
  }
  options.precision = *precision;
  options.islands_ignored = fp16_all;
  return absl::OkStatus();
}

ValueComparison CompareValue(const std::string& name, const Tensor& ref, const Tensor& test,
                             const Tolerance& tolerance) {
  ValueComparison c;
  c.name = name;
  c.ref_type = DescribeTensor(ref);
  c.test_type = DescribeTensor(test);
  c.elements = ref.numel();
  const bool ref_float = IsFloatingPoint(ref.type());
  const bool test_float = IsFloatingPoint(test.type());
  if (ref.dims() != test.dims()) {
    c.within = false;
    c.problem = absl::StrCat("shape ", c.test_type, " vs ", c.ref_type);
  } else if (ref_float != test_float ||
             ((ref.type() == DataType::kString) != (test.type() == DataType::kString))) {
    c.within = false;
    c.problem = absl::StrCat("type ", c.test_type, " vs ", c.ref_type);
  } else if (ref.type() == DataType::kString) {
    if (ref.strings() != test.strings()) {
      c.within = false;
      c.problem = "strings differ";
    }
  } else if (ref_float) {
    CompareFloats(ref, test, tolerance, c);
  } else {
    CompareExact(ref, test, c);
  }
  if (!c.within && c.problem.empty()) c.problem = "differs";
  if (!c.within && (ref.dims() != test.dims() || ref_float != test_float)) {
    c.cosine = 0;
    c.max_abs_error = c.rel_error = std::numeric_limits<double>::infinity();
  }
  return c;
}

namespace {

// Values known to be out of tolerance (true), or within it, by name; computed from such values
// without being comparable themselves counts as what came in.
using Diverged = absl::flat_hash_map<std::string, bool>;

// CompareCaptures over `graph`, with what is known of the values it reads from outside
// (`diverged`, which it extends); `order` gets the node of each row.
LayerReport CompareGraph(const Graph& ref_graph, const TensorMap& ref, const TensorMap& test,
                         const Tolerance& tolerance, Diverged& diverged,
                         std::vector<const Node*>& order) {
  LayerReport report;
  report.tolerance = tolerance;
  auto compare = [&](const std::string& name) -> std::optional<ValueComparison> {
    auto r = ref.find(name);
    auto t = test.find(name);
    if (r == ref.end() || t == test.end()) return std::nullopt;
    ValueComparison c = CompareValue(name, r->second, t->second, tolerance);
    ++report.compared_values;
    if (!c.within) ++report.diverged_values;
    diverged[name] = !c.within;
    return c;
  };
  for (const Value* v : ref_graph.inputs()) {
    if (v->is_initializer()) continue;
    if (std::optional<ValueComparison> c = compare(v->name())) report.graph_inputs.push_back(*c);
  }
  int index = 0;
  for (const Node* node : ref_graph.nodes()) {
    // Constants are weights: checked apart, never the start of a divergence.
    if (node->op_type() == "Constant" && node->domain().empty()) continue;
    NodeComparison row;
    row.index = index++;
    row.name = node->name();
    row.op_type = node->op_type();
    row.description = node->Describe();
    for (const Value* in : node->inputs()) {
      if (in == nullptr) continue;
      auto it = diverged.find(in->name());
      if (it != diverged.end() && it->second) {
        row.inputs_diverged = true;
        row.diverged_inputs.push_back(in->name());
      }
    }
    bool any_compared = false, any_diverged = false;
    for (const Value* out : node->outputs()) {
      if (out == nullptr) continue;
      std::optional<ValueComparison> c = compare(out->name());
      if (!c.has_value()) {
        diverged[out->name()] = row.inputs_diverged;  // carries what came in
        continue;
      }
      any_compared = true;
      any_diverged = any_diverged || !c->within;
      row.max_abs_error = std::max(row.max_abs_error, c->max_abs_error);
      row.rel_error = std::max(row.rel_error, c->rel_error);
      row.cosine = std::min(row.cosine, c->cosine);
      row.ref_non_finite += c->ref_non_finite;
      row.test_non_finite += c->test_non_finite;
      row.outputs.push_back(std::move(*c));
    }
    row.state = !any_compared ? NodeState::kNotCompared
                              : (any_diverged ? NodeState::kDiverged : NodeState::kWithin);
    if (row.state == NodeState::kDiverged && !row.inputs_diverged && report.first_divergence < 0) {
      report.first_divergence = static_cast<int>(report.nodes.size());
    }
    report.nodes.push_back(std::move(row));
    order.push_back(node);
  }
  return report;
}

// From the node where `report` (of `graph`) finds the first divergence, while it holds a body
// that ran on both sides: the first run of a body (the branch taken, the iteration) where a
// node starts a divergence, appended to `inside`, and on into that node's bodies.
void DescendIntoBodies(const LayerReport& report, const std::vector<const Node*>& order,
                       const Diverged& diverged, const BodyValues& ref, const BodyValues& test,
                       const Tolerance& tolerance, std::vector<BodyDivergence>& inside) {
  if (report.first_divergence < 0) return;
  const Node& holder = *order[static_cast<size_t>(report.first_divergence)];
  for (const Subgraph& body : holder.subgraphs()) {
    if (body.graph == nullptr) continue;
    const size_t runs = std::min(ref.Runs(*body.graph), test.Runs(*body.graph));
    for (size_t k = 0; k < runs; ++k) {
      Diverged known = diverged;
      std::vector<const Node*> body_order;
      LayerReport run = CompareGraph(*body.graph, ref.Run(*body.graph, k), test.Run(*body.graph, k),
                                     tolerance, known, body_order);
      if (run.first_divergence < 0) {
        // Values that diverge with no node starting it (from outside the recorded values):
        // the later runs would only inherit it.
        if (!run.all_within()) return;
        continue;
      }
      inside.push_back({holder.Describe(), body.attribute,
                        holder.op_type() == "If" ? -1 : static_cast<int>(k),
                        run.nodes[static_cast<size_t>(run.first_divergence)]});
      DescendIntoBodies(run, body_order, known, ref, test, tolerance, inside);
      return;
    }
  }
}

}  // namespace

LayerReport CompareCaptures(const Graph& ref_graph, const TensorMap& ref, const TensorMap& test,
                            const Tolerance& tolerance) {
  Diverged diverged;
  std::vector<const Node*> order;
  return CompareGraph(ref_graph, ref, test, tolerance, diverged, order);
}

const NodeComparison* FirstDivergingNode(const LayerReport& report) {
  if (!report.inside.empty()) return &report.inside.back().node;
  return report.first_divergence < 0 ? nullptr : &report.nodes[report.first_divergence];
}

std::string FirstDivergenceText(const LayerReport& report) {
  if (report.first_divergence < 0) return "";
  std::string text = report.nodes[report.first_divergence].description;
  for (const BodyDivergence& step : report.inside) {
    absl::StrAppend(&text, " → ", step.attribute, ": ", step.node.description);
    if (step.iteration >= 0) absl::StrAppend(&text, " (iteration ", step.iteration, ")");
  }
  return text;
}

std::vector<WeightIssue> FindUnrepresentableWeights(const Model& model, double max_relative_loss) {
  std::vector<WeightIssue> issues;
  const Graph& graph = model.graph();
  for (const Value* v : graph.initializers()) {
    if (auto issue = CheckWeight(v->name(), "initializer", v->tensor(), max_relative_loss)) {
      issues.push_back(std::move(*issue));
    }
  }
  for (const Node* node : graph.nodes()) {
    if (node->op_type() != "Constant" || !node->domain().empty()) continue;
    if (node->output(0) == nullptr) continue;
    absl::StatusOr<Tensor> value = ConstantNodeValue(*node);
    if (!value.ok()) continue;
    if (auto issue =
            CheckWeight(node->output(0)->name(), node->Describe(), *value, max_relative_loss)) {
      issues.push_back(std::move(*issue));
    }
  }
  return issues;
}

absl::StatusOr<LayerReport> CompareLayers(const CompareSide& ref, const CompareSide& test,
                                          const TensorMap& inputs, const Tolerance& tolerance) {
  if (ref.model == nullptr || test.model == nullptr) {
    return absl::InvalidArgumentError("both sides need a model");
  }
  std::unique_ptr<Session> ref_holder, test_holder;
  BodyValues ref_bodies, test_bodies;
  OVFIX_ASSIGN_OR_RETURN(Session * ref_session, StartSession(ref, ref_holder, ref_bodies));
  OVFIX_ASSIGN_OR_RETURN(Session * test_session, StartSession(test, test_holder, test_bodies));
  OVFIX_RETURN_IF_ERROR(RunSide(ref, *ref_session, inputs));
  OVFIX_RETURN_IF_ERROR(RunSide(test, *test_session, inputs));

  Diverged diverged;
  std::vector<const Node*> order;
  LayerReport report = CompareGraph(ref.model->graph(), ref_session->captured(),
                                    test_session->captured(), tolerance, diverged, order);
  DescendIntoBodies(report, order, diverged, ref_bodies, test_bodies, tolerance, report.inside);
  if (ref_bodies.full() || test_bodies.full()) {
    report.notes.push_back(
        "the values computed in bodies passed 1 GiB: later runs of bodies were not compared");
  }
  report.ref_label = ref.label;
  report.test_label = test.label;
  for (const Value* v : ref.model->graph().outputs()) {
    const TensorMap& r = ref_session->captured();
    const TensorMap& t = test_session->captured();
    if (auto it = r.find(v->name()); it != r.end())
      report.ref_outputs.emplace_back(v->name(), it->second);
    if (auto it = t.find(v->name()); it != t.end())
      report.test_outputs.emplace_back(v->name(), it->second);
  }
  for (const std::string& note : ref_session->notes()) {
    report.notes.push_back(absl::StrCat(ref.label, ": ", note));
  }
  for (const std::string& note : test_session->notes()) {
    report.notes.push_back(absl::StrCat(test.label, ": ", note));
  }
  for (const auto& [label, session] :
       {std::pair{&ref.label, ref_session}, std::pair{&test.label, test_session}}) {
    const auto placement = opencl::DevicePlacementOf(*session);
    if (placement && !placement->cpu.empty()) {
      report.cpu_fallbacks.push_back(absl::StrCat(*label, ": ", placement->Summary()));
    }
  }
  if (test.options.precision != Precision::kFp32) {
    report.weights = FindUnrepresentableWeights(*test.model);
  } else if (ref.model != test.model) {
    for (WeightIssue& issue : FindUnrepresentableWeights(*ref.model)) {
      if (HeldAsFloat16(test.model->graph(), issue.name)) report.weights.push_back(issue);
    }
  }
  return report;
}

Tensor ConvertFeed(const Tensor& feed, DataType wanted) {
  const bool float_and_half = (feed.type() == DataType::kFloat && wanted == DataType::kFloat16) ||
                              (feed.type() == DataType::kFloat16 && wanted == DataType::kFloat);
  return float_and_half ? ConvertTensor(feed, wanted) : feed;
}

namespace {

bool GraphHasFloat16Values(const Graph& graph) {
  // bfloat16 too: a 16-bit float model is judged as one.
  auto is_half = [](const Value* v) {
    return v != nullptr && v->is_tensor() &&
           (v->elem_type() == DataType::kFloat16 || v->elem_type() == DataType::kBfloat16);
  };
  for (const Value* v : graph.inputs()) {
    if (is_half(v)) return true;
  }
  for (const Value* v : graph.initializers()) {
    if (is_half(v)) return true;
  }
  for (const Node* node : graph.nodes()) {
    if (node->op_type() == "Cast" &&
        (node->GetInt("to", 0) == static_cast<int64_t>(DataType::kFloat16) ||
         node->GetInt("to", 0) == static_cast<int64_t>(DataType::kBfloat16))) {
      return true;
    }
    for (const Value* v : node->outputs()) {
      if (is_half(v)) return true;
    }
    // A conversion that left a model's main level in float32 may compute in float16 in a
    // loop body (silero_vad).
    for (const Subgraph& body : node->subgraphs()) {
      if (body.graph != nullptr && GraphHasFloat16Values(*body.graph)) return true;
    }
  }
  return false;
}

}  // namespace

bool HasFloat16Values(const Model& model) { return GraphHasFloat16Values(model.graph()); }

}  // namespace ovfix::exec
