// The Rewriter: every graph change made by a rule or a pass goes through it. It records each
// change in an undo log, so a rewrite that fails validation is rolled back exactly, and keeps
// what users rely on: graph inputs and outputs keep their names, dead nodes and initializers
// are removed at commit, and the graph stays topologically sorted.
//
// Edits may be made in any graph of the model: the main graph or an If/Loop/Scan body, at any
// depth. A body's nodes may read values of enclosing graphs (their use lists record those
// reads), new values get names unique across the whole model, and a commit removes what
// became dead and re-sorts only where the transaction touched, so a commit costs what the
// rewrite changed, not the size of the graph.
//
// Use: Begin("rule_name", matched_nodes); ...edits...; then Commit() or Rollback().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "ir/model.h"
#include "rules/shape_facts.h"

namespace ovfix::rules {

struct RewriteRecord {
  std::string rule;                  // rule or pass name
  std::vector<std::string> matched;  // Describe() of the nodes the rewrite started from
  std::vector<std::string> created;  // Describe() of the nodes it added
  int removed = 0;                   // nodes it took out
  // It made values, constants or attributes, or changed declared types: shape inference has
  // something to add. Rewiring to existing values and removing nodes leave types as they
  // were (a validated rewrite keeps the values it rewires).
  bool new_types = false;
  double max_error = -1;  // measured by validation; -1 when not validated
  bool rolled_back = false;
  std::string note;  // why it was rolled back, or a pass's remark
  // Values the matched nodes read or wrote whose shapes only the reference run showed
  // (rules/shape_facts.h): the rewrite relied on observed shapes.
  std::vector<std::string> observed_shapes;
};

class Rewriter;

// Sees every transaction end; validation observes the rewriter this way (it keeps
// activations in step with the graph).
class RewriteObserver {
 public:
  virtual ~RewriteObserver() = default;
  virtual void OnBegin(const Rewriter& rewriter) {}
  // Before a commit makes the changes final: the transaction's created and modified nodes
  // are still listed.
  virtual void OnCommitting(const Rewriter& rewriter) {}
  virtual void OnCommitted(const Rewriter& rewriter) {}
  virtual void OnRolledBack(const Rewriter& rewriter) {}
};

class Rewriter {
 public:
  explicit Rewriter(Model& model) : model_(model) {}
  ~Rewriter();
  Rewriter(const Rewriter&) = delete;
  Rewriter& operator=(const Rewriter&) = delete;

  Model& model() { return model_; }
  // Shape facts a run observed; each record then names the observed values its match used.
  void set_shape_facts(const ShapeFacts* facts) { facts_ = facts; }
  const ShapeFacts* shape_facts() const { return facts_; }
  Graph& graph() { return model_.graph(); }

  // A name no graph of the model uses (`base` itself when free). Every value and constant
  // the Rewriter creates is named through it, so a value made in one body never collides
  // with or shadows a value of another graph.
  std::string UniqueName(std::string_view base);
  bool NameTaken(std::string_view name);
  // `observer` (not owned) sees the transactions from now on; null stops it.
  void set_observer(RewriteObserver* observer) { observer_ = observer; }
  RewriteObserver* observer() const { return observer_; }

  // Opens a transaction. Edits outside a transaction are not allowed.
  void Begin(std::string_view rule, const std::vector<Node*>& matched = {});

  // ---- edits (each recorded) ----
  Node* CreateNode(Graph& g, std::string_view op_type, const std::vector<Value*>& inputs,
                   const std::vector<std::string>& output_names, Node* before,
                   std::string_view name = "", std::string_view domain = "");
  Value* CreateInitializer(Graph& g, std::string_view name, Tensor t);
  void SetInput(Node* node, size_t index, Value* v);
  void SetAttribute(Node* node, onnx::AttributeProto attribute);
  void RemoveAttribute(Node* node, std::string_view name);
  // Replaces a constant's data (e.g. reshaping it in place); the value keeps its name.
  void SetInitializer(Value* v, Tensor t);
  void SetType(Value* v, const onnx::TypeProto& type);
  // Why replacing `from` by `to` would rename a graph input or output: `from` is an output of
  // its graph (the main graph or a body) and `to` cannot take its name, being a graph input or
  // output itself, an initializer, or a value of another graph. "" when it would not. Rules
  // refuse such a rewrite (explain shows this reason); ReplaceAllUsesWith, for native
  // passes, carries the name with an Identity instead.
  static std::string GraphInterfaceConflict(const Value* from, const Value* to);
  // Every use of `from` reads `to`. If `from` is a graph output, `to` takes its place and
  // its name (the old value is renamed), so the model's outputs keep their names.
  void ReplaceAllUsesWith(Value* from, Value* to);
  // Takes a node out (kept until commit for rollback and validation).
  void EraseNode(Node* node);
  // Asks the commit to remove `v` (an initializer, or a node's output), and what only it
  // reads, when nothing reads it by then. A commit looks only where the rewrite changed
  // something; this points it at what was already unread.
  void ConsiderDead(Value* v) { lost_use_.push_back(v); }
  // Declares that the open rewrite computes the same tensors as before (the contract of a
  // declarative rule): its record then asks for shape inference only where a node it created
  // or changed has an output whose type is not fully known and static, or holds a body.
  void TypesPreserved();

  // ---- transaction end ----
  // Keeps the changes: removes nodes and initializers that became dead, re-sorts the graph
  // if needed, and appends the record. Returns the record for the validator to fill.
  RewriteRecord& Commit();
  // Undoes every change since Begin, in reverse order, and records the rollback.
  void Rollback(std::string reason);

  // The nodes the last commit removed (erased by the rewrite or left dead by it). They are
  // destroyed: the pointers only identify them (e.g. to drop them from a worklist).
  const std::vector<const Node*>& last_removed() const { return last_removed_; }
  // The nodes the last commit created or changed that are still there: where a rule may
  // now match that did not before.
  const std::vector<Node*>& last_touched() const { return last_touched_; }

  // During a transaction: the nodes erased (detached) and created so far.
  const std::vector<Node*>& erased_nodes() const { return erased_view_; }
  const std::vector<Node*>& created_nodes() const { return created_; }
  // During a transaction: nodes that were there before and now compute differently (an
  // input, an attribute, or the data or type of a value they read changed), and graph
  // outputs that now read another value, as (position, the value it read before).
  const std::vector<Node*>& modified_nodes() const { return modified_; }
  const std::vector<std::pair<size_t, Value*>>& replaced_outputs() const {
    return replaced_outputs_;
  }
  // During a transaction: which value replaced which. Each node input that SetInput (or
  // ReplaceAllUsesWith) pointed at another value is listed once, with the value it read when
  // the transaction began (or null: a created node's input, set after its creation); it
  // reads `node->input(input)` now, which may be `before` again.
  struct Rewiring {
    Node* node;
    size_t input;
    Value* before;
  };
  const std::vector<Rewiring>& rewirings() const { return rewirings_; }
  // During a transaction: whether a modified node changed beyond reading other values (an
  // attribute, or the data or type of a value it reads). A modified node that did not
  // computes what it computed before when its new inputs hold the same data as the old.
  bool ChangedBeyondInputs(const Node* node) const { return changed_beyond_inputs_.contains(node); }

  // Deletes every value left without producer or readers that is waiting for a batch (the
  // destructor does too): call before reading the model as a whole (checks, saving).
  void DeleteDanglingValues();

  const std::vector<RewriteRecord>& records() const { return records_; }
  std::vector<RewriteRecord>& records() { return records_; }

 private:
  void Record(std::function<void()> undo) { undo_.push_back(std::move(undo)); }
  // Forgets the open transaction's bookkeeping (its undo steps, created and modified nodes).
  void EndTransaction();
  // `beyond_inputs`: the change is more than an input reading another value.
  void MarkModified(Node* node, bool beyond_inputs);
  void MarkUsersModified(const Value* v);
  // Commit's cleanup: removes nodes and initializers left dead by the transaction, starting
  // from the values that lost a use, and re-sorts the graphs where an edit broke the order.
  void RemoveDead();
  void SortWhereNeeded();
  // Values left without producer or readers are deleted in batches, one pass over a graph's
  // values per batch (a batch is an eighth of the graph, or everything in small graphs).
  void DeleteDangling(Graph& g, size_t count, bool now = false);
  // Forgets what is cached about graphs going away with `node` (its bodies).
  void ForgetBodiesOf(const Node& node);
  const std::vector<Graph*>& Graphs();

  Model& model_;
  const ShapeFacts* facts_ = nullptr;
  RewriteObserver* observer_ = nullptr;
  bool open_ = false;
  RewriteRecord current_;
  std::vector<std::function<void()>> undo_;
  std::vector<std::unique_ptr<Node>> detached_;  // erased nodes, owned until commit
  std::vector<Node*> erased_view_;
  std::vector<Node*> created_;
  std::vector<Node*> modified_;
  absl::flat_hash_set<const Node*> modified_set_;  // created_ and modified_, for dedupe
  std::vector<std::pair<size_t, Value*>> replaced_outputs_;
  std::vector<Rewiring> rewirings_;
  absl::flat_hash_set<std::pair<const Node*, size_t>> rewired_;  // rewirings_, for dedupe
  absl::flat_hash_set<const Node*> changed_beyond_inputs_;
  std::vector<Value*> lost_use_;  // values that lost a use (may have become dead)
  std::vector<Value*> created_values_;
  std::vector<const Node*> last_removed_;
  std::vector<Node*> last_touched_;
  std::vector<Graph*> graphs_;  // every graph of the model, when graphs_known_
  bool graphs_known_ = false;
  int64_t name_counter_ = 0;
  absl::flat_hash_map<Graph*, size_t> dangling_;  // values waiting for a batch, per graph
  std::vector<RewriteRecord> records_;
};

}  // namespace ovfix::rules
