#include "converter/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <queue>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "converter/conversion_time.h"
#include "converter/float32_reference.h"
#include "converter/model_run.h"
#include "converter/output_verdict.h"
#include "exec/compare.h"
#include "exec/kernel.h"
#include "exec/random_inputs.h"
#include "ir/float16.h"
#include "ir/graph_walk.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix::converter {

namespace {

bool IsFloat(DataType t) { return IsFloatingPoint(t); }

// What a validation run keeps of the buffers it lets go of, for its next tensors of the same
// size: the values it computes go to the store, and a net whose layers all differ in size would
// have its session keep nearly every buffer that the store copied to its file.
constexpr size_t kRecycledBytes = size_t{128} << 20;

// The range covering both: the larger largest, the smaller nonzero smallest.
MagnitudeRange Wider(const MagnitudeRange& a, const MagnitudeRange& b) {
  MagnitudeRange r;
  r.largest = std::max(a.largest, b.largest);
  r.smallest_nonzero = a.smallest_nonzero == 0   ? b.smallest_nonzero
                       : b.smallest_nonzero == 0 ? a.smallest_nonzero
                                                 : std::min(a.smallest_nonzero, b.smallest_nonzero);
  r.zero = a.zero || b.zero;
  r.nan = a.nan || b.nan;
  return r;
}

// A Cast to float16 or bfloat16: a conversion to lower precision.
bool CastsToFloat16(const Node* n) {
  if (n->op_type() != "Cast" || !n->domain().empty()) return false;
  const int64_t to = n->GetInt("to", 0);
  return to == static_cast<int64_t>(DataType::kFloat16) ||
         to == static_cast<int64_t>(DataType::kBfloat16);
}

// The nodes of the main graph `g` whose bodies hold nodes the rewrite created or changed.
// A body runs once per iteration or branch, so a change inside is measured on what its
// holder computes.
std::vector<Node*> HoldersOfNestedChanges(const rules::Rewriter& rewriter, const Graph& g) {
  std::vector<Node*> holders;
  for (const std::vector<Node*>* list :
       {&rewriter.created_nodes(), &rewriter.modified_nodes(), &rewriter.erased_nodes()}) {
    for (Node* n : *list) {
      if (n->owner() == &g) continue;
      Node* holder = n;
      while (holder != nullptr && holder->owner() != &g) holder = holder->owner()->owner_node();
      if (holder != nullptr && std::find(holders.begin(), holders.end(), holder) == holders.end()) {
        holders.push_back(holder);
      }
    }
  }
  return holders;
}

// The same data bit for bit: equal types, dims and bytes (NaNs with the same payload alike).
// A weight still to be made (a lazy buffer) is only the same as itself: reading it whole would
// keep it in memory.
bool SameData(const Tensor& a, const Tensor& b) {
  if (a.type() != b.type() || a.dims() != b.dims()) return false;
  if (a.type() == DataType::kString) return a.strings() == b.strings();
  if (a.buffer() == b.buffer()) return true;
  if (a.nbytes() == 0) return true;
  if (a.buffer() == nullptr || b.buffer() == nullptr || a.buffer()->is_pending() ||
      b.buffer()->is_pending()) {
    return false;
  }
  return std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Whether `now` may hold the data `before` held, by what the graph declares: a rewiring to a
// value of another element type or static shape changes what the node reads.
bool MayHoldSameData(const Value* before, const Value* now) {
  if (before == now) return true;
  if (before == nullptr || now == nullptr) return false;
  if (before->elem_type() == DataType::kUndefined || before->elem_type() != now->elem_type()) {
    return false;
  }
  const std::optional<std::vector<int64_t>> a = before->static_shape();
  const std::optional<std::vector<int64_t>> b = now->static_shape();
  return !a || !b || *a == *b;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunObserving(const Model& model, const exec::TensorMap& inputs,
                                                 const ValueObserver& on_value) {
  exec::SessionOptions options;
  options.on_value = on_value;
  options.random_seed = exec::kValidationSeed;
  options.fuse_qdq = false;  // every value of the graph as written is computed
  options.recycled_bytes = kRecycledBytes;
  options.runs_once = true;
  ScopedModelRun timed;
  absl::StatusOr<std::unique_ptr<exec::Session>> session = [&] {
    ScopedTimePart building(TimePart::kSessionBuilds);
    return exec::CreateSession(model, options);
  }();
  if (!session.ok()) return session.status();
  return (*session)->Run(MatchInputTypes(model.graph(), inputs));
}

Tensor AsDeclared(const Value& v, const Tensor& t) {
  if (t.type() == DataType::kFloat && v.elem_type() == DataType::kFloat16) {
    return ConvertTensor(t, DataType::kFloat16);
  }
  return t;
}

// ---- ReferenceValidator ----

ReferenceValidator::ReferenceValidator(Model& model, exec::TensorMap inputs)
    : model_(model), inputs_(std::move(inputs)) {}
ReferenceValidator::~ReferenceValidator() = default;

absl::StatusOr<std::unique_ptr<ReferenceValidator>> ReferenceValidator::Create(
    Model& model, exec::TensorMap inputs) {
  std::vector<exec::TensorMap> sets;
  sets.push_back(std::move(inputs));
  return Create(model, std::move(sets));
}

absl::StatusOr<std::unique_ptr<ReferenceValidator>> ReferenceValidator::Create(
    Model& model, std::vector<exec::TensorMap> sets) {
  if (sets.empty()) return absl::InvalidArgumentError("no inputs to validate with");
  std::unique_ptr<ReferenceValidator> v(new ReferenceValidator(model, sets.front()));
  v->sets_ = std::move(sets);
  const Graph& g = model.graph();
  // Magnitudes of float activations while they are in cache (the fp16 calibration reads
  // them), the largest over every set; by name here, since the run sees the graph's values
  // as const. The first set's activations are kept for the rewrites' validation.
  absl::flat_hash_map<std::string, MagnitudeRange> measured;
  for (size_t k = 0; k < v->sets_.size(); ++k) {
    absl::flat_hash_set<std::string> seen_in_set;
    absl::StatusOr<std::vector<Tensor>> outputs =
        RunObserving(model, v->sets_[k], [&](const Value& value, const Tensor& t) {
          if (value.owner() != &g) {
            auto [it, fresh] = v->body_shapes_.try_emplace(value.name(), SeenShape{t.dims()});
            SeenShape& seen = it->second;
            if (!fresh) {
              seen.same_rank = seen.same_rank && seen.dims.size() == t.dims().size();
              seen.same_dims = seen.same_dims && seen.dims == t.dims();
            }
            if (seen_in_set.insert(value.name()).second) ++seen.sets;
          } else if (k == 0) {
            // The store keeps it, in memory or in its file, as the run goes: the run itself
            // holds only the values still to be read.
            v->activations_[&value] = v->store_.Keep(AsDeclared(value, t));
          }
          if (k == 0) v->MeasureWeightsRead(value);
          if (t.type() != DataType::kFloat) return;
          const MagnitudeRange m = FloatMagnitudes(t.data<float>(), t.numel());
          auto [it, fresh] = measured.try_emplace(value.name(), m);
          if (!fresh) it->second = Wider(it->second, m);
        });
    ++v->model_runs_;
    if (!outputs.ok()) {
      return absl::Status(outputs.status().code(),
                          absl::StrCat("reference run: ", outputs.status().message()));
    }
    std::vector<std::pair<std::string, Tensor>> named;
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      if (i >= outputs->size()) {
        return absl::InternalError(
            absl::StrCat("reference run: output '", g.outputs()[i]->name(), "' was not computed"));
      }
      named.emplace_back(g.outputs()[i]->name(), (*outputs)[i]);
    }
    v->set_outputs_.push_back(std::move(named));
    if (k > 0) continue;
    // The graph's inputs as the run read them (converted to the types they declare).
    const exec::TensorMap fed = MatchInputTypes(g, v->sets_[0]);
    for (const Value* in : g.inputs()) {
      if (auto it = fed.find(in->name()); it != fed.end()) {
        v->activations_[in] = it->second;
      } else if (in->is_initializer()) {
        v->activations_[in] = in->tensor();
      }
    }
  }
  // A model that computes in float16 itself is judged against its float32 math (converter/
  // float32_reference.h); its own fp16 run stays the activations rewrites are checked on.
  if (DeclaresFloat16(g)) {
    absl::StatusOr<std::unique_ptr<Model>> widened = Float32Copy(model);
    std::vector<std::vector<std::pair<std::string, Tensor>>> float32_outputs;
    for (size_t k = 0; widened.ok() && k < v->sets_.size(); ++k) {
      absl::StatusOr<std::vector<Tensor>> outputs =
          RunAsTyped(**widened, v->sets_[k], exec::kValidationSeed);
      ++v->model_runs_;
      if (!outputs.ok() || outputs->size() != g.outputs().size()) break;
      std::vector<std::pair<std::string, Tensor>> named;
      for (size_t i = 0; i < outputs->size(); ++i) {
        named.emplace_back(g.outputs()[i]->name(), std::move((*outputs)[i]));
      }
      float32_outputs.push_back(std::move(named));
    }
    if (float32_outputs.size() == v->sets_.size()) {
      v->set_outputs_ = std::move(float32_outputs);
      v->float32_reference_ = true;
    }
  }
  for (const auto& [value, tensor] : v->activations_) {
    if (auto it = measured.find(value->name()); it != measured.end()) {
      v->magnitudes_[value] = it->second;
      measured.erase(it);
    }
  }
  // The rest were computed in bodies: the largest over every iteration and branch taken.
  v->body_magnitudes_ = std::move(measured);
  return v;
}

void ReferenceValidator::MeasureWeightsRead(const Value& computed) {
  const Node* producer = computed.producer();
  if (producer == nullptr) return;
  for (const Value* in : producer->inputs()) {
    if (in == nullptr || !in->is_initializer() || in->is_graph_input()) continue;
    const Tensor& t = in->tensor();
    if (t.type() != DataType::kFloat || t.buffer() == nullptr || t.buffer()->is_pending() ||
        weight_magnitudes_.contains(in)) {
      continue;
    }
    weight_magnitudes_.emplace(
        in, WeightMagnitudes{t.buffer(), FloatMagnitudes(t.data<float>(), t.numel())});
  }
}

absl::Status ReferenceValidator::Ensure(const std::vector<const Value*>& values) {
  const Graph& g = model_.graph();
  absl::flat_hash_set<Node*> needed;
  std::vector<const Value*> stack = values;
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (v == nullptr || activations_.contains(v)) continue;
    if (v->is_initializer() && !v->is_graph_input()) continue;
    if (v->is_graph_input()) {
      auto it = inputs_.find(v->name());
      if (it == inputs_.end()) {
        return absl::InternalError(absl::StrCat("no reference input for '", v->name(), "'"));
      }
      activations_[v] = it->second;
      continue;
    }
    Node* p = v->producer();
    if (p == nullptr || p->owner() != &g) {
      return absl::InternalError(
          absl::StrCat("no activation for '", v->name(), "' and no producer to compute it"));
    }
    if (!needed.insert(p).second) continue;
    for (const Value* in : p->inputs()) stack.push_back(in);
  }
  if (needed.empty()) return absl::OkStatus();
  std::vector<Node*> nodes(needed.begin(), needed.end());
  absl::flat_hash_map<const Value*, Tensor> computed;
  OVFIX_RETURN_IF_ERROR(RunNodes(nodes, computed));
  for (auto& [value, tensor] : computed) {
    magnitudes_.erase(value);
    activations_[value] = std::move(tensor);
  }
  return absl::OkStatus();
}

absl::Status ReferenceValidator::RunNodes(const std::vector<Node*>& nodes,
                                          absl::flat_hash_map<const Value*, Tensor>& out) {
  // Topological order within the set (a rewrite in progress need not be sorted yet),
  // ties broken by graph position so the order is deterministic.
  for (Node* n : nodes) {
    // A node with a subgraph reads values of this graph that no input names: run the graph.
    if (!n->subgraphs().empty()) return RunWholeGraph(nodes, out);
  }
  nodes_run_ += static_cast<int64_t>(nodes.size());
  absl::flat_hash_map<const Node*, int> pending_inputs;
  absl::flat_hash_set<const Value*> produced;
  for (Node* n : nodes) {
    for (const Value* o : n->outputs()) {
      if (o != nullptr) produced.insert(o);
    }
  }
  std::vector<const Value*> boundary;
  absl::flat_hash_set<const Value*> seen;
  for (Node* n : nodes) {
    int count = 0;
    for (const Value* in : n->inputs()) {
      if (in == nullptr) continue;
      if (produced.contains(in)) {
        ++count;
      } else if (seen.insert(in).second) {
        boundary.push_back(in);
      }
    }
    pending_inputs[n] = count;
  }
  OVFIX_RETURN_IF_ERROR(Ensure(boundary));

  auto later = [](const Node* a, const Node* b) { return a->order() > b->order(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  for (Node* n : nodes) {
    if (pending_inputs[n] == 0) ready.push(n);
  }
  std::vector<Node*> order;
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    order.push_back(n);
    for (const Value* o : n->outputs()) {
      if (o == nullptr) continue;
      for (const Use& u : o->uses()) {
        auto it = pending_inputs.find(u.node);
        if (it != pending_inputs.end() && --it->second == 0) ready.push(u.node);
      }
    }
  }
  if (order.size() != nodes.size()) {
    return absl::InternalError("the rewritten nodes form a cycle");
  }

  Model small;
  small.extras().set_ir_version(model_.extras().ir_version());
  *small.extras().mutable_opset_import() = model_.extras().opset_import();
  Graph& sg = small.graph();
  exec::TensorMap feed;
  int64_t elements = 0;
  for (const Value* b : boundary) {
    if (b->is_initializer() && !b->is_graph_input()) {
      sg.AddInitializer(b->name(), b->tensor());
      elements += b->tensor().numel();  // a product over a large weight is worth the threads
      continue;
    }
    Tensor t = activations_.at(b);
    if (IsFloat(b->elem_type()) && IsFloat(t.type()) && b->elem_type() != t.type()) {
      t = ConvertTensor(t, b->elem_type());
      converted_boundary_ = true;  // e.g. a graph input that became float16
    }
    if (exec::IsRunConstant(b)) {
      // Weights made from constants (dequantized, cast): constant here too, so that the nodes
      // run on the path the model's run took with them (packed weights, exec/cpu/conv.cc).
      elements += t.numel();
      sg.AddInitializer(b->name(), std::move(t));
      continue;
    }
    Value* in = sg.CreateValue(b->name());
    in->set_elem_type(t.type());
    in->set_shape(t.dims());
    sg.AddInput(in);
    elements += t.numel();
    feed.emplace(b->name(), std::move(t));
  }
  // Every value computed is taken as the run goes (on_value) and kept in the store; the
  // small graph's outputs are only the values none of its nodes reads, so that the session
  // lets go of the others once read (a precision rewrite runs most of the model at once).
  absl::flat_hash_set<const Value*> read_inside;
  for (Node* n : order) read_inside.insert(n->inputs().begin(), n->inputs().end());
  absl::flat_hash_map<const Value*, const Value*> original;  // of the small graph's values
  for (Node* n : order) {
    std::vector<Value*> ins;
    for (const Value* in : n->inputs()) ins.push_back(in ? sg.FindValue(in->name()) : nullptr);
    std::vector<std::string> out_names;
    for (const Value* o : n->outputs()) out_names.push_back(o ? o->name() : "");
    Node* copy = sg.AddNode(n->op_type(), ins, out_names, n->name(), n->domain());
    for (const onnx::AttributeProto& a : n->attributes()) copy->SetAttribute(a);
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      if (n->output(i) == nullptr) continue;
      *copy->output(i)->mutable_type() = n->output(i)->type();  // lets the session widen float16
      if (!read_inside.contains(n->output(i))) sg.AddOutput(copy->output(i));
      original[copy->output(i)] = n->output(i);
    }
  }
  exec::SessionOptions options;
  options.threads = elements > (1 << 16) ? 0 : 1;
  options.random_seed = exec::kValidationSeed;
  options.fuse_qdq = false;  // as the captured reference activations were computed
  options.recycled_bytes = kRecycledBytes;
  options.runs_once = true;
  options.on_value = [&](const Value& v, const Tensor& t) {
    if (auto it = original.find(&v); it != original.end()) {
      out[it->second] = store_.Keep(AsDeclared(v, t));
    }
  };
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<exec::Session> session,
                         exec::CreateSession(small, options));
  return session->Run(feed).status();
}

absl::Status ReferenceValidator::RunWholeGraph(const std::vector<Node*>& nodes,
                                               absl::flat_hash_map<const Value*, Tensor>& out) {
  absl::flat_hash_set<const Value*> wanted;
  for (Node* n : nodes) {
    for (const Value* o : n->outputs()) {
      if (o != nullptr) wanted.insert(o);
    }
  }
  absl::StatusOr<std::vector<Tensor>> run =
      RunObserving(model_, inputs_, [&](const Value& v, const Tensor& t) {
        if (wanted.contains(&v)) out[&v] = store_.Keep(AsDeclared(v, t));
      });
  ++model_runs_;
  if (!run.ok()) return run.status();
  for (const Value* o : wanted) {
    if (!out.contains(o)) {
      return absl::InternalError(absl::StrCat("'", o->name(), "' was not computed"));
    }
  }
  return absl::OkStatus();
}

std::vector<Node*> ReferenceValidator::RewiredOnly(const rules::Rewriter& rewriter,
                                                   const std::vector<Node*>& changed) {
  const Graph& g = model_.graph();
  const absl::flat_hash_set<const Node*> modified(rewriter.modified_nodes().begin(),
                                                  rewriter.modified_nodes().end());
  rewired_inputs_.clear();
  absl::flat_hash_set<const Node*> ineligible;
  for (const rules::Rewriter::Rewiring& r : rewriter.rewirings()) {
    if (!modified.contains(r.node)) continue;  // a created node (or one erased since)
    if (!MayHoldSameData(r.before, r.node->input(r.input))) ineligible.insert(r.node);
    rewired_inputs_[r.node].emplace_back(r.input, r.before);
  }
  std::vector<Node*> candidates;
  for (Node* n : changed) {
    if (!rewired_inputs_.contains(n) || ineligible.contains(n) || n->owner() != &g ||
        !n->subgraphs().empty() || rewriter.ChangedBeyondInputs(n)) {
      continue;
    }
    candidates.push_back(n);
  }
  return candidates;
}

std::optional<Tensor> ReferenceValidator::KnownData(const Value* v) {
  if (v == nullptr) return std::nullopt;
  if (auto it = pending_.find(v); it != pending_.end()) return it->second;
  if (v->is_initializer() && !v->is_graph_input()) return v->tensor();
  if (!Ensure({v}).ok()) return std::nullopt;
  auto it = activations_.find(v);
  if (it == activations_.end()) return std::nullopt;
  return it->second;
}

bool ReferenceValidator::ReadsSameData(const Node* n) {
  absl::flat_hash_map<size_t, const Value*> before;
  if (auto it = rewired_inputs_.find(n); it != rewired_inputs_.end()) {
    before.insert(it->second.begin(), it->second.end());
  }
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    const Value* now = n->input(i);
    auto it = before.find(i);
    if (it != before.end() && it->second != now) {
      // Rewired: the new value against the activation of the one it replaced (an erased
      // node's output keeps its activation until the commit).
      const std::optional<Tensor> is = KnownData(now);
      const Value* old = it->second;
      std::optional<Tensor> was;
      if (old->is_initializer() && !old->is_graph_input()) {
        was = old->tensor();
      } else if (auto a = activations_.find(old); a != activations_.end()) {
        was = a->second;
      }
      if (!is || !was || !SameData(*is, *was)) return false;
      same_data_.insert(now);
      continue;
    }
    // Read as before: changed only if a node run for this rewrite computed it anew.
    auto computed = pending_.find(now);
    if (computed == pending_.end()) continue;
    auto a = activations_.find(now);
    if (a == activations_.end() || !SameData(computed->second, a->second)) return false;
    same_data_.insert(now);
  }
  return true;
}

absl::StatusOr<double> ReferenceValidator::Measure(rules::Rewriter& rewriter) {
  measured_ = false;
  pending_.clear();
  unrun_.clear();
  same_data_.clear();
  last_changes_precision_ = false;
  const Graph& g = model_.graph();
  const absl::flat_hash_set<const Node*> erased(rewriter.erased_nodes().begin(),
                                                rewriter.erased_nodes().end());
  std::vector<Node*> changed;
  int casts_to_half = 0;
  for (Node* n : rewriter.created_nodes()) {
    changed.push_back(n);
    casts_to_half += CastsToFloat16(n) ? 1 : 0;
  }
  for (Node* n : rewriter.erased_nodes()) casts_to_half -= CastsToFloat16(n) ? 1 : 0;
  for (Node* n : rewriter.modified_nodes()) {
    if (!erased.contains(n)) changed.push_back(n);
  }
  const std::vector<Node*> holders = HoldersOfNestedChanges(rewriter, g);
  std::erase_if(changed, [&](const Node* n) { return n->owner() != &g; });
  for (Node* h : holders) {
    if (!erased.contains(h) && std::find(changed.begin(), changed.end(), h) == changed.end()) {
      changed.push_back(h);
    }
  }
  converted_boundary_ = false;
  if (precision_on_file_ && casts_to_half > 0) {
    // Measured on the file written, which is run whole anyway: running the changed nodes
    // now (for a precision pass, most of the model) would be a run of it more.
    deferring_ = true;
    last_changes_precision_ = true;
    return -1.0;
  }
  // A node the rewrite only rewired to values holding the same data bit for bit (a rule that
  // replaced its producer by an equivalent one) computes what it computed: it is not run, and
  // the equality is the measure of those values. Whether they are the same is known once the
  // rest has run; a node whose inputs turn out different is run with the rest, again.
  std::vector<Node*> unrun = RewiredOnly(rewriter, changed);
  for (;;) {
    unrun_ = absl::flat_hash_set<const Node*>(unrun.begin(), unrun.end());
    std::vector<Node*> run;
    for (Node* n : changed) {
      if (!unrun_.contains(n)) run.push_back(n);
    }
    pending_.clear();
    same_data_.clear();
    converted_boundary_ = false;
    if (!run.empty()) {
      OVFIX_RETURN_IF_ERROR(RunNodes(run, pending_));
    }
    const size_t before = unrun.size();
    std::erase_if(unrun, [&](const Node* n) { return !ReadsSameData(n); });
    if (unrun.size() == before) break;
  }
  last_changes_precision_ = casts_to_half > 0 || converted_boundary_;
  double error = 0;
  auto compare = [&](const Tensor& after, const Value* before_value) -> absl::Status {
    auto it = activations_.find(before_value);
    if (it == activations_.end()) {
      return absl::InternalError(
          absl::StrCat("no activation recorded for '", before_value->name(), "'"));
    }
    if (after.type() != it->second.type()) last_changes_precision_ = true;
    const bool half = last_changes_precision_ || after.type() == DataType::kFloat16 ||
                      it->second.type() == DataType::kFloat16 ||
                      after.type() == DataType::kBfloat16;
    error = std::max(error,
                     exec::RelativeError(after, it->second, half ? exec::kFloat16Resolution : 0));
    return absl::OkStatus();
  };
  // The values that replaced each other are those that leave the changed region: outputs of
  // nodes that were there before, read by unchanged nodes or by the graph's outputs. Values
  // inside the region may legitimately differ (a pair of nodes rewritten together).
  absl::flat_hash_set<const Node*> region;
  for (Node* n : changed) {
    if (!unrun_.contains(n)) region.insert(n);
  }
  std::vector<Node*> compared = holders;
  for (Node* n : rewriter.modified_nodes()) {
    if (n->owner() == &g) compared.push_back(n);
  }
  for (Node* n : compared) {
    if (erased.contains(n)) continue;
    for (const Value* o : n->outputs()) {
      if (o == nullptr) continue;
      bool leaves = o->is_graph_output();
      for (const Use& u : o->uses()) leaves = leaves || !region.contains(u.node);
      if (!leaves) continue;
      auto it = pending_.find(o);
      if (it == pending_.end()) continue;
      OVFIX_RETURN_IF_ERROR(compare(it->second, o));
    }
  }
  for (const auto& [position, before] : rewriter.replaced_outputs()) {
    // A body output replaced inside a body is measured on what its holder computes.
    if (position >= g.outputs().size() || before->owner() != &g) continue;
    const Value* now = g.outputs()[position];
    Tensor after;
    if (auto it = pending_.find(now); it != pending_.end()) {
      after = it->second;
    } else {
      OVFIX_ASSIGN_OR_RETURN(Tensor a, Activation(now));
      after = a;
    }
    OVFIX_RETURN_IF_ERROR(compare(after, before));
  }
  measured_ = true;
  last_error_ = error;
  return error;
}

absl::StatusOr<rules::OutputsJudgement> ReferenceValidator::JudgeOutputs(
    rules::Rewriter& rewriter) {
  const Graph& g = model_.graph();
  const absl::flat_hash_set<const Node*> erased(rewriter.erased_nodes().begin(),
                                                rewriter.erased_nodes().end());
  // The node of `g` that `n` is or sits in (a body's node is run by its holder).
  auto in_graph = [&](Node* n) {
    while (n != nullptr && n->owner() != &g) n = n->owner()->owner_node();
    return n;
  };
  std::vector<Node*> stack;
  for (Node* n : rewriter.created_nodes()) stack.push_back(in_graph(n));
  for (Node* n : rewriter.modified_nodes()) stack.push_back(in_graph(n));
  absl::flat_hash_set<const Node*> seen;
  std::vector<Node*> nodes;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n == nullptr || erased.contains(n) || !seen.insert(n).second) continue;
    nodes.push_back(n);
    for (const Value* o : n->outputs()) {
      if (o == nullptr) continue;
      for (const Use& u : o->uses()) stack.push_back(in_graph(u.node));
    }
  }
  absl::flat_hash_map<const Value*, Tensor> computed;
  OVFIX_RETURN_IF_ERROR(RunNodes(nodes, computed));
  std::vector<Tensor> outputs;
  for (const Value* o : g.outputs()) {
    if (auto it = computed.find(o); it != computed.end()) {
      outputs.push_back(it->second);
      continue;
    }
    OVFIX_ASSIGN_OR_RETURN(Tensor t, Activation(o));
    outputs.push_back(std::move(t));
  }
  OVFIX_ASSIGN_OR_RETURN(EndToEndResult result, Compare(g, outputs, 0));
  rules::OutputsJudgement judgement;
  judgement.meets = result.meets();
  // The worst output: NaN or infinity first, then by score (a NaN score counts as the worst).
  auto badness = [](const OutputComparison& c) {
    return std::pair(c.stats.non_finite > 0,
                     std::isnan(c.score) ? std::numeric_limits<double>::infinity() : c.score);
  };
  const OutputComparison* worst = nullptr;
  for (const OutputComparison& c : result.outputs) {
    if (!c.beyond_fp16 && (worst == nullptr || badness(*worst) < badness(c))) worst = &c;
  }
  if (worst != nullptr) {
    judgement.worst = absl::StrCat("output '", worst->name, "': score ", ScoreText(worst->score),
                                   " of ", CriteriaToString(worst->criteria));
    if (worst->stats.non_finite > 0) {
      absl::StrAppend(&judgement.worst, ", ", worst->stats.non_finite, " NaN or infinite");
    }
  }
  return judgement;
}

void ReferenceValidator::OnBegin(const rules::Rewriter& rewriter) {
  measured_ = false;
  deferring_ = false;
  unrun_.clear();
  same_data_.clear();
  // What a change measured on the file left without an activation is computed now that a
  // rewrite may read it, on the graph as it is before that rewrite changes it.
  if (recompute_pending_) {
    recompute_pending_ = false;
    RecomputeMissing();
  }
}

void ReferenceValidator::OnCommitting(const rules::Rewriter& rewriter) {
  const CommitKind kind = !measured_                 ? CommitKind::kUnmeasured
                          : last_error_ <= tolerance ? CommitKind::kHeld
                                                     : CommitKind::kUnheld;
  // What Measure computed for the changed nodes is exact. Values downstream of them were
  // computed from the values before the rewrite: within tolerance they are only marked
  // (recomputed before the end-to-end comparison), otherwise forgotten and recomputed now.
  absl::flat_hash_set<const Node*> changed(rewriter.created_nodes().begin(),
                                           rewriter.created_nodes().end());
  changed.insert(rewriter.modified_nodes().begin(), rewriter.modified_nodes().end());
  for (Node* holder : HoldersOfNestedChanges(rewriter, model_.graph())) changed.insert(holder);
  // Nodes Measure found reading the same data as before compute what they did: their values
  // keep their activations as they are, unless they also read a value downstream of the
  // change that Measure did not compare.
  const absl::flat_hash_set<const Node*> unchanged =
      kind == CommitKind::kUnmeasured ? absl::flat_hash_set<const Node*>() : unrun_;
  std::vector<const Value*> stack;
  for (const Node* n : changed) {
    if (unchanged.contains(n)) continue;
    for (const Value* o : n->outputs()) stack.push_back(o);
  }
  absl::flat_hash_set<const Value*> seen;
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (v == nullptr || !seen.insert(v).second) continue;
    const bool computed = kind != CommitKind::kUnmeasured && changed.contains(v->producer()) &&
                          !unchanged.contains(v->producer());
    if (computed) {
      stale_.erase(v);
    } else if (kind == CommitKind::kHeld) {
      stale_.insert(v);
    } else {
      Forget(v);
      pending_.erase(v);
    }
    for (const Use& u : v->uses()) {
      if (unchanged.contains(u.node) && same_data_.contains(v)) continue;
      for (const Value* o : u.node->outputs()) stack.push_back(o);
    }
  }
}

void ReferenceValidator::ForgetDeadValues() {
  const Graph& g = model_.graph();
  absl::flat_hash_set<const Value*> live(g.inputs().begin(), g.inputs().end());
  for (const Node* n : g.nodes()) {
    for (const Value* o : n->outputs()) live.insert(o);
  }
  absl::erase_if(activations_, [&](const auto& entry) { return !live.contains(entry.first); });
  absl::erase_if(magnitudes_, [&](const auto& entry) { return !live.contains(entry.first); });
  absl::erase_if(stale_, [&](const Value* v) { return !live.contains(v); });
}

void ReferenceValidator::Forget(const Value* v) {
  activations_.erase(v);
  magnitudes_.erase(v);
}

void ReferenceValidator::ForgetActivations() {
  activations_.clear();
  pending_.clear();
  stale_.clear();
}

std::optional<MagnitudeRange> ReferenceValidator::CapturedMagnitudes(const Value* v) const {
  if (v->is_initializer() && !v->is_graph_input()) {
    // Measured as the reference run read it, if the value still holds those bytes.
    auto it = weight_magnitudes_.find(v);
    if (it == weight_magnitudes_.end() || v->tensor().type() != DataType::kFloat ||
        it->second.buffer.lock() != v->tensor().buffer()) {
      return std::nullopt;
    }
    return it->second.range;
  }
  if (v->owner() != &model_.graph()) {
    auto it = body_magnitudes_.find(v->name());
    if (it == body_magnitudes_.end()) return std::nullopt;
    return it->second;
  }
  auto it = magnitudes_.find(v);
  if (it == magnitudes_.end()) return std::nullopt;
  return it->second;
}

void ReferenceValidator::OnCommitted(const rules::Rewriter& rewriter) {
  for (auto& [value, tensor] : pending_) {
    magnitudes_.erase(value);
    activations_[value] = std::move(tensor);
  }
  pending_.clear();
  unrun_.clear();
  same_data_.clear();
  ForgetDeadValues();
  if (deferring_) {
    // What it left without an activation is computed when a later rewrite begins, not now:
    // with no later rewrite, that run of the model is the one the file's run saves.
    measured_on_file_.push_back(rewriter.records().size() - 1);
    deferring_ = false;
    recompute_pending_ = true;
    return;
  }
  RecomputeMissing();
}

void ReferenceValidator::RecomputeMissing() {
  // Values left without an activation (after a commit that was not held to the tolerance)
  // are recomputed now, while their producers' inputs are known to be right.
  std::vector<const Value*> missing;
  for (const Node* n : model_.graph().nodes()) {
    for (const Value* o : n->outputs()) {
      if (o != nullptr && (o->has_uses() || o->is_graph_output()) && !activations_.contains(o)) {
        missing.push_back(o);
      }
    }
  }
  // A failure leaves the values without an activation: the next Activation() or Measure()
  // that needs them runs Ensure again and returns the error there, where it can be reported.
  if (!missing.empty() && !Ensure(missing).ok()) return;
}

void ReferenceValidator::OnRolledBack(const rules::Rewriter& rewriter) {
  deferring_ = false;
  pending_.clear();
  unrun_.clear();
  same_data_.clear();
  ForgetDeadValues();
}

absl::StatusOr<Tensor> ReferenceValidator::Activation(const Value* v) {
  OVFIX_RETURN_IF_ERROR(Ensure({v}));
  if (v->is_initializer() && !v->is_graph_input()) return v->tensor();
  return activations_.at(v);
}

absl::StatusOr<EndToEndResult> ReferenceValidator::CompareFinalOutputs() {
  for (const Value* v : stale_) Forget(v);
  stale_.clear();
  const Graph& g = model_.graph();
  std::vector<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  OVFIX_RETURN_IF_ERROR(Ensure(outputs));
  std::vector<Tensor> tensors;
  for (const Value* v : outputs) {
    OVFIX_ASSIGN_OR_RETURN(Tensor t, Activation(v));
    tensors.push_back(std::move(t));
  }
  return Compare(g, tensors, 0);
}

absl::StatusOr<EndToEndResult> ReferenceValidator::CompareEndToEnd(const Model& final_model) {
  EndToEndResult worst;
  for (size_t k = 0; k < sets_.size(); ++k) {
    absl::StatusOr<std::vector<Tensor>> outputs =
        islands_ignored_ ? RunEveryFloatInFp16(final_model, sets_[k], exec::kValidationSeed)
                         : RunAsTyped(final_model, sets_[k], exec::kValidationSeed);
    ++model_runs_;
    if (!outputs.ok()) return outputs.status();
    OVFIX_ASSIGN_OR_RETURN(EndToEndResult result, Compare(final_model.graph(), *outputs, k));
    if (k == 0) {
      worst = std::move(result);
    } else {
      KeepWorst(worst, result);
    }
  }
  return worst;
}

void KeepWorst(EndToEndResult& worst, const EndToEndResult& other) {
  for (size_t i = 0; i < worst.outputs.size() && i < other.outputs.size(); ++i) {
    OutputComparison& w = worst.outputs[i];
    const OutputComparison& o = other.outputs[i];
    const double error = std::max(w.error, o.error);
    const bool finite = w.finite && o.finite;
    if (o.score > w.score || std::isnan(o.score)) w = o;
    w.error = error;
    w.finite = finite;
  }
  worst.max_error = std::max(worst.max_error, other.max_error);
  worst.set_scores.insert(worst.set_scores.end(), other.set_scores.begin(), other.set_scores.end());
  worst.score = std::max(worst.score, other.score);
  if (std::isnan(other.score)) worst.score = other.score;
}

bool ReferenceValidator::ComputesFloat16(const Graph& g) {
  // bfloat16 counts too: any 16-bit float is measured against half precision's resolution.
  auto half = [](DataType t) { return t == DataType::kFloat16 || t == DataType::kBfloat16; };
  for (const Value* v : g.inputs()) {
    if (half(v->elem_type())) return true;
  }
  for (const Value* v : g.initializers()) {
    if (half(v->tensor().type())) return true;
  }
  for (const Node* n : g.nodes()) {
    for (const Value* o : n->outputs()) {
      if (o != nullptr && half(o->elem_type())) return true;
    }
  }
  return false;
}

absl::StatusOr<EndToEndResult> ReferenceValidator::Compare(const Graph& g,
                                                           const std::vector<Tensor>& outputs,
                                                           size_t set) const {
  const std::vector<std::pair<std::string, Tensor>>& reference = set_outputs_.at(set);
  EndToEndResult result;
  const double resolution = ResolutionFor(ComputesFloat16(g));
  for (size_t i = 0; i < g.outputs().size() && i < outputs.size(); ++i) {
    OutputComparison c;
    c.name = g.outputs()[i]->name();
    const Tensor& actual = outputs[i];
    auto ref = std::find_if(reference.begin(), reference.end(),
                            [&](const auto& r) { return r.first == c.name; });
    if (ref == reference.end()) {
      return absl::InternalError(
          absl::StrCat("output '", c.name, "' is not an output of the original model"));
    }
    c.criteria = CriteriaFor(c.name, ref->second.numel());
    c.stats = MeasureOutput(actual, ref->second, resolution, c.criteria, kReportedBeyondError);
    c.error = c.stats.max;
    c.score = CriteriaScore(c.criteria, c.stats);
    c.meets = c.score <= 1;
    c.set = set;
    if (islands_ignored_ && IsFloat(ref->second.type())) {
      const int64_t n = ref->second.numel();
      for (int64_t k = 0; k < n && !c.beyond_fp16; ++k) {
        c.beyond_fp16 = std::abs(ref->second.GetAsDouble(k)) > 65504.0;  // fp16's largest
      }
    }
    if (IsFloat(actual.type())) {
      const int64_t n = actual.numel();
      for (int64_t k = 0; k < n && c.finite; ++k) {
        c.finite = std::isfinite(actual.GetAsDouble(k));
      }
    }
    if (!c.beyond_fp16) result.score = std::max(result.score, c.score);
    if (!c.beyond_fp16) result.max_error = std::max(result.max_error, c.error);
    result.outputs.push_back(std::move(c));
  }
  result.set_scores = {result.score};
  return result;
}

}  // namespace ovfix::converter
