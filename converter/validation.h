// Validation of rewrites with the CPU executor, observing the rewriter. One reference run of the
// original model captures every activation; each rewrite then runs the nodes it created or changed
// on the captured activations of their boundary values and compares the values they replaced. The
// activations follow the graph as it changes: values keep their names (and their Value objects),
// and the values a rewrite creates get the activations computed for them.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "converter/accuracy.h"
#include "converter/activation_store.h"
#include "exec/executor.h"
#include "ir/float16.h"
#include "ir/model.h"
#include "rules/pass.h"

namespace ovfix::converter {

// Runs `model` once in fp32 on `inputs` (as validation does: the graph as written, random ops
// seeded) and returns its outputs; `on_value` sees each value a node computes as it is computed
// (in its float form when the run holds float16 values as float: AsDeclared gives its own
// type). Nothing is kept beyond what `on_value` keeps: a run that held every activation to its
// end would hold all of them at once.
using ValueObserver = std::function<void(const Value& value, const Tensor& tensor)>;
absl::StatusOr<std::vector<Tensor>> RunObserving(const Model& model, const exec::TensorMap& inputs,
                                                 const ValueObserver& on_value);
// `t` as `v` declares it: a float16 value the run held as float goes back to float16.
Tensor AsDeclared(const Value& v, const Tensor& t);

struct OutputComparison {
  std::string name;
  double error = 0;    // RelativeError against the reference (stats.max)
  bool finite = true;  // every element of the converted model's output is finite
  // Everything measured (on the input set that scored worst), the criteria it was judged
  // by, and the worst measure over them relative to its bound: <= 1 meets them.
  OutputStatistics stats;
  Criteria criteria;
  double score = 0;
  bool meets = true;
  size_t set = 0;  // the input set `stats` and `score` are of
  // Checked with every float in fp16 (islands ignored): the original's output itself exceeds
  // fp16's range, so no graph can hold it there. Reported, not judged.
  bool beyond_fp16 = false;
};

// The shapes the reference runs saw of one value inside an If/Loop/Scan body (a body runs
// once per iteration or branch taken, in some sets and not in others).
struct SeenShape {
  std::vector<int64_t> dims;  // the first seen
  bool same_rank = true;      // every time it was computed, with this rank
  bool same_dims = true;      // ... and these dims
  int sets = 0;               // how many input sets computed it (at least once)
};

struct EndToEndResult {
  std::vector<OutputComparison> outputs;
  double max_error = 0;  // the largest `error`
  double score = 0;      // the worst output's score (over input sets, the worst set's)
  // Each input set's score (its worst judged output's), in the sets' order, as far as they
  // were compared.
  std::vector<double> set_scores;
  // The worst score over the outputs that are judged (not beyond_fp16).
  double JudgedScore() const {
    double worst = 0;
    for (const OutputComparison& c : outputs) {
      if (!c.beyond_fp16 && !(c.score <= worst)) worst = c.score;
    }
    return worst;
  }
  // Every output meets its criteria: no NaN or infinity the original does not have either.
  bool meets() const {
    if (!(JudgedScore() <= 1)) return false;
    for (const OutputComparison& c : outputs) {
      if (c.beyond_fp16) continue;
      if (c.stats.non_finite > 0 || !c.meets) return false;
    }
    return true;
  }
};

// Folds the comparison of another input set into `worst`: per output the set that scored
// worse, and the largest error; a calibration set is judged on its own, never averaged in.
void KeepWorst(EndToEndResult& worst, const EndToEndResult& other);

enum class CommitKind {
  kHeld,        // measured, within the fp32 tolerance
  kUnheld,      // measured, beyond it (a precision change)
  kUnmeasured,  // committed without validation
};

class ReferenceValidator : public rules::Validator {
 public:
  // Runs `model` (the original, before any pass) on `inputs` and keeps its activations.
  // The model must outlive the validator.
  static absl::StatusOr<std::unique_ptr<ReferenceValidator>> Create(Model& model,
                                                                    exec::TensorMap inputs);
  // With several input sets: the first validates each rewrite, calibration magnitudes are
  // the largest over all, and the end-to-end comparison reports the worst.
  static absl::StatusOr<std::unique_ptr<ReferenceValidator>> Create(
      Model& model, std::vector<exec::TensorMap> sets);
  ~ReferenceValidator() override;

  absl::StatusOr<double> Measure(rules::Rewriter& rewriter) override;
  bool last_changes_precision() const override { return last_changes_precision_; }
  // Runs the nodes Measure ran and every node downstream of them on the first input set, and
  // judges the outputs as the end-to-end comparison does (CriteriaFor).
  absl::StatusOr<rules::OutputsJudgement> JudgeOutputs(rules::Rewriter& rewriter) override;

  // Bookkeeping around the end of a transaction, as the rewriter's observer: before a
  // commit, mark or forget the activations downstream of the rewrite; after it, keep what
  // Measure computed; after a rollback, drop it.
  void OnBegin(const rules::Rewriter& rewriter) override;
  void OnCommitting(const rules::Rewriter& rewriter) override;
  void OnCommitted(const rules::Rewriter& rewriter) override;
  void OnRolledBack(const rules::Rewriter& rewriter) override;

  // The activation of a value of the current graph, computed on demand from its producers
  // when no rewrite has computed it yet.
  absl::StatusOr<Tensor> Activation(const Value* v) override;
  // Also of the float initializers the reference run read (measured as it read them).
  std::optional<MagnitudeRange> CapturedMagnitudes(const Value* v) const override;
  // What the reference runs saw of body values, by name: a body none of its values are
  // listed for ran in no input set.
  const absl::flat_hash_map<std::string, SeenShape>& body_shapes() const { return body_shapes_; }
  const exec::TensorMap& inputs() const { return inputs_; }
  const std::vector<exec::TensorMap>& sets() const { return sets_; }
  // The original model's outputs on set `k`, by output name.
  const std::vector<std::pair<std::string, Tensor>>& reference_outputs(size_t k) const {
    return set_outputs_.at(k);
  }
  // Whether the reference outputs are the float32 math of a model that computes in float16
  // (converter/float32_reference.h) rather than its own run: its outputs are then judged as
  // a precision change's.
  bool float32_reference() const { return float32_reference_; }
  // Full runs of a model made so far (reference runs, whole-graph runs, end-to-end runs).
  int model_runs() const { return model_runs_; }
  // Nodes run on captured activations so far (measuring rewrites, computing activations).
  int64_t nodes_run() const { return nodes_run_; }
  void count_model_runs(int n) { model_runs_ += n; }
  // The criteria each output is judged by: `spec`'s, else what `fallback` gives for the
  // output's number of elements. Until set: the worst element within 1e-4 of the range.
  using DefaultCriteria = std::function<Criteria(int64_t elements)>;
  void set_accuracy(AccuracySpec spec, DefaultCriteria fallback) {
    accuracy_ = std::move(spec);
    fallback_ = std::move(fallback);
  }
  Criteria CriteriaFor(const std::string& output, int64_t elements) const {
    const Criteria* given = accuracy_.Find(output);
    return given != nullptr ? *given : fallback_(elements);
  }
  // Compares `outputs` (of a model whose graph is `g`) with the original's on set `set`.
  absl::StatusOr<EndToEndResult> Compare(const Graph& g, const std::vector<Tensor>& outputs,
                                         size_t set) const;
  // For targets whose backend ignores fp32 islands: the end-to-end comparison runs the model
  // with every float tensor in fp16 (fp16-storage, Casts to float rounded too), and outputs
  // the original computes beyond fp16's range are reported (beyond_fp16), not judged.
  void set_islands_ignored(bool ignored) { islands_ignored_ = ignored; }
  bool islands_ignored() const { return islands_ignored_; }
  // Lets go of the activations of the rewrites (a later Activation() computes what it needs
  // again): the repair measures whole runs and keeps its own in the store.
  void ForgetActivations();
  // Where activations are kept (the repair keeps its fp32 run's there too).
  ActivationStore& store() { return store_; }
  // Runs `final_model` as `ovfix run` does on every input set and compares each output with
  // the original model's output of the same name: the worst error over the sets.
  absl::StatusOr<EndToEndResult> CompareEndToEnd(const Model& final_model);
  // For a conversion whose written file is run and measured anyway: a rewrite that changes
  // precision (Casts to float16 or bfloat16) is not run when it is measured; it commits
  // unmeasured and its error is that of the file's run (the pipeline fills it in), one full
  // run of the model fewer. The activations downstream of it are computed again when a later
  // rewrite begins (none may).
  void set_precision_measured_on_file(bool on) { precision_on_file_ = on; }
  // Indices into the rewriter's records of the rewrites whose error awaits the file's run.
  const std::vector<size_t>& measured_on_file() const { return measured_on_file_; }
  // Whether such a rewrite left values without an activation that no later rewrite has
  // needed yet (CompareFinalOutputs would compute them: a run of the model).
  bool recompute_pending() const { return recompute_pending_; }
  // The same comparison for the model being converted, without running it again: every
  // rewrite computed the values it changed, and the values downstream of rewrites that were
  // only checked to the tolerance are recomputed now, so the outputs are those a full run of
  // the model as it is now computes (up to the order of float sums, which depends on how
  // many threads a kernel used).
  absl::StatusOr<EndToEndResult> CompareFinalOutputs();

 private:
  ReferenceValidator(Model& model, exec::TensorMap inputs);
  // Computes the outputs of `nodes` (of the current graph) from the activations of the
  // values they read; results go to `out`.
  absl::Status RunNodes(const std::vector<Node*>& nodes,
                        absl::flat_hash_map<const Value*, Tensor>& out);
  // RunNodes for nodes with subgraphs: runs the whole graph as it is now.
  absl::Status RunWholeGraph(const std::vector<Node*>& nodes,
                             absl::flat_hash_map<const Value*, Tensor>& out);
  absl::Status Ensure(const std::vector<const Value*>& values);
  // During the reference run, as each value is computed: the magnitudes of the float weights
  // its node read that are not measured yet, while the node's read left them in cache (the
  // fp16 conversion's range check then need not read every weight again).
  void MeasureWeightsRead(const Value& computed);
  // The modified nodes of `changed` whose only change is reading other values of the same
  // declared type and shape (rules::Rewriter::rewirings): they may compute what they did.
  // Fills rewired_inputs_.
  std::vector<Node*> RewiredOnly(const rules::Rewriter& rewriter,
                                 const std::vector<Node*>& changed);
  // Whether `n` reads the same data bit for bit as before the rewrite: each rewired input
  // against the activation of the value it read, each other input against what Measure
  // computed for it (if it computed it). The values found the same go to same_data_.
  bool ReadsSameData(const Node* n);
  // The data of `v` now: computed by Measure, the initializer's, or its activation (computed
  // if it has none); nullopt when it cannot be had.
  std::optional<Tensor> KnownData(const Value* v);
  void ForgetDeadValues();
  // Computes the activations of the current graph's values that have none.
  void RecomputeMissing();
  void Forget(const Value* v);  // drops the activation and what was measured of it
  // Whether anything in `g` (its main level) is float16: outputs are then compared at
  // float16's resolution.
  static bool ComputesFloat16(const Graph& g);

  Model& model_;
  AccuracySpec accuracy_;
  DefaultCriteria fallback_ = [](int64_t) { return MaxErrorCriteria(1e-4); };
  exec::TensorMap inputs_;  // sets_[0]
  std::vector<exec::TensorMap> sets_;
  std::vector<std::vector<std::pair<std::string, Tensor>>> set_outputs_;
  int model_runs_ = 0;
  int64_t nodes_run_ = 0;
  bool float32_reference_ = false;
  ActivationStore store_;  // where activations_ and pending_ keep their tensors
  absl::flat_hash_map<const Value*, Tensor> activations_;
  absl::flat_hash_map<const Value*, MagnitudeRange> magnitudes_;  // of activations_ entries
  // Of the values bodies computed, by name (a body's values have no one activation), as the
  // reference run saw them: rewrites in bodies keep a value's name only with its content.
  absl::flat_hash_map<std::string, MagnitudeRange> body_magnitudes_;
  absl::flat_hash_map<std::string, SeenShape> body_shapes_;
  // Of the float initializers the first reference run read, with the bytes they held then: a
  // rewrite that gives a value other data makes its entry stale.
  struct WeightMagnitudes {
    std::weak_ptr<const Buffer> buffer;
    MagnitudeRange range;
  };
  absl::flat_hash_map<const Value*, WeightMagnitudes> weight_magnitudes_;
  absl::flat_hash_map<const Value*, Tensor> pending_;
  // Nodes of the measured rewrite that Measure did not run: they read the same data as
  // before (ReadsSameData), so their activations and those downstream stay as they are.
  absl::flat_hash_set<const Node*> unrun_;
  // The values ReadsSameData found holding the data they held before the rewrite.
  absl::flat_hash_set<const Value*> same_data_;
  // Of the measured rewrite's modified nodes: (input, value it read before) per rewired input.
  absl::flat_hash_map<const Node*, std::vector<std::pair<size_t, const Value*>>> rewired_inputs_;
  // Values whose activation was computed before a rewrite upstream of them (held to the
  // tolerance, so close, but not what the current graph computes exactly).
  absl::flat_hash_set<const Value*> stale_;
  bool last_changes_precision_ = false;
  bool islands_ignored_ = false;
  // Measured since the transaction began, and the error found (commit kind).
  bool measured_ = false;
  double last_error_ = 0;
  bool converted_boundary_ = false;  // RunNodes fed an activation in another float type
  bool precision_on_file_ = false;
  bool deferring_ = false;  // the open transaction's precision change awaits the file's run
  bool recompute_pending_ = false;
  std::vector<size_t> measured_on_file_;
};

}  // namespace ovfix::converter
