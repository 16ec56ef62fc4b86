#include "rules/rule_set.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/graph_walk.h"
#include "ir/status_macros.h"
#include "rules/embedded_files.h"
#include "rules/rule_apply.h"

namespace ovfix::rules {
namespace {

using RulePtr = std::shared_ptr<const Rule>;

std::string OpKey(std::string_view domain, std::string_view op_type) {
  return absl::StrCat(domain == "ai.onnx" ? "" : std::string(domain), "::", std::string(op_type));
}

class RuleSetPass : public Pass {
 public:
  RuleSetPass(std::string name, std::vector<RulePtr> rules, RuleSetOptions options)
      : name_(std::move(name)), rules_(std::move(rules)), options_(options) {
    // Higher benefit first; stable, so equal benefits keep file order.
    std::stable_sort(rules_.begin(), rules_.end(),
                     [](const RulePtr& a, const RulePtr& b) { return a->benefit > b->benefit; });
  }

  std::string name() const override { return name_; }
  std::string description() const override {
    return absl::StrCat("applies ", rules_.size(), " declarative rules to a fixed point");
  }
  absl::StatusOr<int> Run(PassContext& ctx) override;

 private:
  // One sweep over every graph of the model; returns the rewrites committed.
  // `budget` is what is left of the rewrites the whole pass may make; each commit takes one.
  int Sweep(PassContext& ctx, const std::map<std::string, std::vector<const Rule*>>& by_op,
            std::set<std::pair<std::string, std::string>>& rejected, size_t& budget);
  // One sweep over `g`; reports each node a rewrite removed.
  int SweepGraph(PassContext& ctx, Graph& g,
                 const std::map<std::string, std::vector<const Rule*>>& by_op,
                 std::set<std::pair<std::string, std::string>>& rejected,
                 const HelperContext& helpers, size_t& budget,
                 const std::function<void(const Node*)>& on_removed);

  std::string name_;
  std::vector<RulePtr> rules_;
  RuleSetOptions options_;
};

int RuleSetPass::Sweep(PassContext& ctx,
                       const std::map<std::string, std::vector<const Rule*>>& by_op,
                       std::set<std::pair<std::string, std::string>>& rejected, size_t& budget) {
  const HelperContext helpers{ctx.model, &ctx.options};
  // The main graph first, then each body of the graphs swept, so a rewrite never meets a
  // body whose holder it has already removed.
  std::vector<Graph*> graphs{&ctx.model.graph()};
  absl::flat_hash_set<const Node*> holders;  // nodes holding bodies still to sweep
  int committed = 0;
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (graphs[i] == nullptr) continue;  // its holder was removed by a rewrite
    Graph& g = *graphs[i];
    committed += SweepGraph(ctx, g, by_op, rejected, helpers, budget, [&](const Node* removed) {
      if (!holders.contains(removed)) return;
      for (size_t j = i + 1; j < graphs.size(); ++j) {
        if (graphs[j] != nullptr && graphs[j]->owner_node() == removed) graphs[j] = nullptr;
      }
    });
    for (Node* n : g.nodes()) {
      for (Subgraph& s : n->subgraphs()) {
        graphs.push_back(s.graph.get());
        holders.insert(n);
      }
    }
  }
  return committed;
}

int RuleSetPass::SweepGraph(PassContext& ctx, Graph& g,
                            const std::map<std::string, std::vector<const Rule*>>& by_op,
                            std::set<std::pair<std::string, std::string>>& rejected,
                            const HelperContext& helpers, size_t& budget,
                            const std::function<void(const Node*)>& on_removed) {
  // A worklist in graph order: after a rewrite, the nodes it made or changed and their
  // readers are visited next (a pattern looks back from its root, so a rewrite can only
  // enable matches rooted there). Each visit costs what the rules at that node cost, so a
  // sweep is linear in the graph, not quadratic as a rebuilt node list would be.
  std::deque<Node*> work;
  absl::flat_hash_set<const Node*> queued;
  for (Node* n : g.nodes()) {
    work.push_back(n);
    queued.insert(n);
  }
  int committed = 0;
  while (!work.empty() && budget > 0) {
    Node* node = work.front();
    work.pop_front();
    if (queued.erase(node) == 0) continue;  // removed, or visited since it was queued
    auto candidates = by_op.find(OpKey(node->domain(), node->op_type()));
    if (candidates == by_op.end()) continue;
    // Matches are named by the node's first output: it is stable across rewrites.
    const std::string anchor = node->output(0) != nullptr ? node->output(0)->name() : "";
    for (const Rule* rule : candidates->second) {
      if (rejected.count({rule->name, anchor})) continue;
      std::string why;
      auto match = MatchRule(*rule, node, helpers, why, /*explain=*/false);
      if (!match) continue;
      auto done = ApplyRule(*rule, *match, ctx);
      if (!done.ok()) ctx.log(absl::StrCat(rule->name, ": ", done.status().message()));
      if (!done.ok() || !*done) {
        rejected.insert({rule->name, anchor});
        continue;
      }
      ++committed;
      --budget;
      for (const Node* removed : ctx.rewriter.last_removed()) {
        queued.erase(removed);
        on_removed(removed);
      }
      std::vector<Node*> next;
      for (Node* touched : ctx.rewriter.last_touched()) {
        if (touched->owner() != &g) continue;
        next.push_back(touched);
        for (Value* out : touched->outputs()) {
          if (out == nullptr) continue;
          for (const Use& u : out->uses()) {
            if (u.node->owner() == &g) next.push_back(u.node);
          }
        }
      }
      std::sort(next.begin(), next.end(),
                [](const Node* a, const Node* b) { return a->order() > b->order(); });
      for (Node* n : next) {
        queued.insert(n);  // an older entry further on is skipped once this one is visited
        work.push_front(n);
      }
      break;
    }
  }
  return committed;
}

absl::StatusOr<int> RuleSetPass::Run(PassContext& ctx) {
  std::map<std::string, std::vector<const Rule*>> by_op;
  for (const RulePtr& rule : rules_) {
    if (IsDisabled(*rule, ctx.options.disabled)) continue;
    const TemplateNode& root = rule->pattern.root_node();
    by_op[OpKey(root.domain, root.op_type)].push_back(rule.get());
  }
  if (by_op.empty()) return 0;
  std::set<std::pair<std::string, std::string>> rejected;
  // A rule set whose rewrites keep matching their own results must still end, and with a
  // graph of about the size it started with: the bound is on the whole pass and counts the
  // nodes there were before it (a bound per sweep on the grown graph let a rule that adds
  // nodes grow it fivefold a sweep).
  size_t nodes = 0;
  for (const Graph* g : GraphsRecursive(ctx.model.graph())) nodes += g->num_nodes();
  const size_t allowed = 4 * nodes + 64;
  size_t budget = allowed;
  int total = 0;
  for (int iteration = 0; iteration < options_.max_iterations; ++iteration) {
    const int committed = Sweep(ctx, by_op, rejected, budget);
    total += committed;
    if (budget == 0) {
      ctx.log(absl::StrCat(name_, ": stopped after ", allowed, " rewrites (4 per node and 64)"));
      return total;
    }
    if (committed == 0) return total;
    // New values get types for the next sweep; what onnx cannot infer stays unknown.
    if (!options_.infer_shapes) continue;
    if (absl::Status s = InferTypes(ctx); !s.ok()) ctx.log(absl::StrCat(name_, ": ", s.message()));
  }
  ctx.log(absl::StrCat(name_, ": no fixed point after ", options_.max_iterations, " sweeps"));
  return total;
}

}  // namespace

namespace {

absl::StatusOr<std::vector<RuleFile>> ParseBuiltinRuleSets() {
  std::vector<RuleFile> out;
  for (const EmbeddedFile& file : EmbeddedFiles()) {
    const std::string path(file.path);
    if (!absl::StartsWith(path, "builtin/") || !absl::EndsWith(path, ".rules")) {
      continue;
    }
    OVFIX_ASSIGN_OR_RETURN(
        auto parsed, ParseRuleFile(absl::StrCat("rules/", std::string(file.path)), file.contents));
    out.push_back(std::move(parsed));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<RuleFile>> LoadBuiltinRuleSets() {
  // The built-in files are compiled in and their rules immutable: parsed once per process.
  static const absl::StatusOr<std::vector<RuleFile>>* const parsed =
      new absl::StatusOr<std::vector<RuleFile>>(ParseBuiltinRuleSets());
  return *parsed;
}

absl::StatusOr<RuleLibrary> RuleLibrary::Load(const std::vector<std::string>& user_files) {
  RuleLibrary library;
  OVFIX_ASSIGN_OR_RETURN(auto builtin, LoadBuiltinRuleSets());
  library.files_ = std::move(builtin);
  library.builtin_count_ = library.files_.size();
  std::map<std::string, const Rule*> names;
  for (const auto& file : library.files_) {
    for (const auto& rule : file.rules) names[rule->name] = rule.get();
  }
  for (const auto& path : user_files) {
    OVFIX_ASSIGN_OR_RETURN(auto parsed, ReadRuleFile(path));
    for (const auto& rule : parsed.rules) {
      auto [it, fresh] = names.emplace(rule->name, rule.get());
      if (!fresh) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", rule->line, ":1: rule '",
                                                       rule->name, "' is already defined in ",
                                                       it->second->file));
      }
    }
    library.files_.push_back(std::move(parsed));
  }
  return library;
}

std::vector<RulePtr> RuleLibrary::Select(std::string_view name) const {
  std::vector<RulePtr> out;
  for (const auto& file : files_) {
    for (const auto& rule : file.rules) {
      if (file.set == name || rule->family == name || rule->name == name) out.push_back(rule);
    }
  }
  return out;
}

std::vector<RulePtr> RuleLibrary::UserRules() const {
  std::vector<RulePtr> out;
  for (size_t i = builtin_count_; i < files_.size(); ++i) {
    out.insert(out.end(), files_[i].rules.begin(), files_[i].rules.end());
  }
  return out;
}

std::vector<RulePtr> RuleLibrary::AllRules() const {
  std::vector<RulePtr> out;
  for (const auto& file : files_) out.insert(out.end(), file.rules.begin(), file.rules.end());
  return out;
}

bool IsDisabled(const Rule& rule, const std::vector<std::string>& disabled) {
  for (const auto& d : disabled) {
    if (d == rule.name || d == rule.family || d == rule.set) return true;
  }
  return false;
}

std::unique_ptr<Pass> MakeRuleSetPass(std::string name, std::vector<RulePtr> rules,
                                      RuleSetOptions options) {
  return std::make_unique<RuleSetPass>(std::move(name), std::move(rules), options);
}

}  // namespace ovfix::rules
