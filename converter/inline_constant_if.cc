#include "converter/inline_constant_if.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/constant.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"

namespace ovfix::converter {
namespace {

// If nodes with a constant condition, by their first output's name (names are unique across
// the model): the branch attribute they always take.
absl::flat_hash_map<std::string, std::string> ConstantIfs(Graph& root) {
  absl::flat_hash_map<std::string, std::string> taken;
  for (Graph* g : GraphsRecursive(root)) {
    for (const Node* n : g->nodes()) {
      if (n->op_type() != "If" || !n->domain().empty() || n->outputs().empty() ||
          n->output(0) == nullptr || !IsConstant(n->input(0))) {
        continue;
      }
      absl::StatusOr<Tensor> cond = ConstantValue(n->input(0));
      if (!cond.ok() || cond->numel() != 1) continue;
      taken[n->output(0)->name()] = cond->GetAsDouble(0) != 0 ? "then_branch" : "else_branch";
    }
  }
  return taken;
}

// Names `g` declares in its own scope (inputs, outputs, initializers, value_info).
absl::flat_hash_set<std::string> DeclaredNames(const onnx::GraphProto& g) {
  absl::flat_hash_set<std::string> names;
  for (const auto& v : g.input()) names.insert(v.name());
  for (const auto& v : g.output()) names.insert(v.name());
  for (const auto& v : g.value_info()) names.insert(v.name());
  for (const auto& t : g.initializer()) names.insert(t.name());
  return names;
}

int InlineInGraph(onnx::GraphProto& g, const absl::flat_hash_map<std::string, std::string>& taken);

// The nodes that replace `n` (an If taking `branch`) in `g`; `g` gets the branch's
// initializers and value_info.
std::vector<onnx::NodeProto> Inline(onnx::NodeProto& n, onnx::GraphProto& branch,
                                    onnx::GraphProto& g) {
  std::vector<onnx::NodeProto> nodes;
  absl::flat_hash_set<std::string> declared = DeclaredNames(g);
  for (auto& t : *branch.mutable_initializer()) {
    declared.insert(t.name());
    *g.add_initializer() = std::move(t);
  }
  for (auto& v : *branch.mutable_value_info()) {
    if (declared.insert(v.name()).second) *g.add_value_info() = std::move(v);
  }
  for (auto& bn : *branch.mutable_node()) nodes.push_back(std::move(bn));
  for (int k = 0; k < n.output_size() && k < branch.output_size(); ++k) {
    if (n.output(k).empty()) continue;
    onnx::NodeProto identity;
    identity.set_op_type("Identity");
    identity.set_name(absl::StrCat(n.name().empty() ? n.output(0) : n.name(), "/taken_branch_", k));
    identity.add_input(branch.output(k).name());
    identity.add_output(n.output(k));
    // The branch output's declared type, for a value the If's graph did not declare yet.
    if (declared.insert(branch.output(k).name()).second) {
      *g.add_value_info() = branch.output(k);
    }
    nodes.push_back(std::move(identity));
  }
  return nodes;
}

int InlineInGraph(onnx::GraphProto& g, const absl::flat_hash_map<std::string, std::string>& taken) {
  int count = 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
  // A worklist, front first: the nodes of an inlined branch are looked at in turn (an If
  // among them may take a constant from outside too).
  std::vector<onnx::NodeProto> pending(g.mutable_node()->begin(), g.mutable_node()->end());
  std::reverse(pending.begin(), pending.end());
  while (!pending.empty()) {
    onnx::NodeProto n = std::move(pending.back());
    pending.pop_back();
    auto it = n.op_type() == "If" && n.domain().empty() && n.output_size() > 0
                  ? taken.find(n.output(0))
                  : taken.end();
    onnx::AttributeProto* branch = nullptr;
    if (it != taken.end()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.name() == it->second && a.has_g()) branch = &a;
      }
    }
    if (branch == nullptr || branch->g().sparse_initializer_size() > 0) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) count += InlineInGraph(*a.mutable_g(), taken);
        for (auto& sub : *a.mutable_graphs()) count += InlineInGraph(sub, taken);
      }
      *out.Add() = std::move(n);
      continue;
    }
    ++count;
    std::vector<onnx::NodeProto> nodes = Inline(n, *branch->mutable_g(), g);
    for (auto r = nodes.rbegin(); r != nodes.rend(); ++r) pending.push_back(std::move(*r));
  }
  g.mutable_node()->Swap(&out);
  return count;
}

}  // namespace

absl::StatusOr<int> InlineConstantIfs(Model& model) {
  const absl::flat_hash_map<std::string, std::string> taken = ConstantIfs(model.graph());
  if (taken.empty()) return 0;
  onnx::ModelProto proto = ModelToProto(model);
  const int count = InlineInGraph(*proto.mutable_graph(), taken);
  if (count == 0) return 0;
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<Model> inlined,
                         ModelFromProto(std::move(proto), model.base_dir(), "the converted model"));
  model = std::move(*inlined);
  return count;
}

}  // namespace ovfix::converter
