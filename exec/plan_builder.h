// Compiling a graph into a plan, once for every backend: one slot per value, one step per node
// in topological order with the node's opset resolved, its kernels looked up and checked
// (CheckNode), inputs and outputs as slots, and subgraphs compiled into plans of their own
// that read the outer-scope values they use by copying them from the enclosing frame when
// their frame starts (`captures`). What a step runs with and what happens once a plan is laid
// out (fusion, releases) is the backend's, through a `Backend` class with:
//   using Plan; using Step;   derived from PlanSlots and StepSlots; Step has
//                             std::vector<std::unique_ptr<Plan>> subgraphs
//   absl::Status AddConstant(Plan&, int slot, const Value& initializer);
//   absl::Status LookUp(const Node&, const std::string& domain, Step&);  kernels, or an error
//   void Finish(Plan&, bool main);   after the plan is laid out (slot_of is still filled)
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/model.h"
#include "ir/node.h"
#include "ir/node_check.h"
#include "ir/status_macros.h"
#include "ir/value.h"

namespace ovfix::exec {

// The slots of one compiled graph.
struct PlanSlots {
  const Graph* graph = nullptr;
  PlanSlots* parent = nullptr;  // the plan of the enclosing graph; null for the main graph
  int num_slots = 0;
  std::vector<std::string> slot_names;
  std::vector<int> input_slots;               // every graph input, in order
  std::vector<int> output_slots;              // every graph output, in order
  std::vector<std::pair<int, int>> captures;  // (enclosing frame slot, own slot)
  std::vector<int> constant_slots;            // initializers
  // Only while compiling.
  absl::flat_hash_map<const Value*, int> slot_of;
  std::vector<int>* capturing = nullptr;  // implicit inputs of the step whose subgraphs compile
};

// The slots one step reads and writes.
struct StepSlots {
  const Node* node = nullptr;
  int opset = 0;
  std::vector<int> inputs, outputs;  // slots; -1 for an omitted input/output
  std::vector<int> implicit_inputs;  // slots its subgraphs capture (read from outer scope)
  std::vector<int> release;          // slots this step reads last (set by the backend)
};

// Nodes as listed when that order is topological, else sorted (Kahn).
absl::StatusOr<std::vector<const Node*>> NodesInOrder(const Graph& graph);

// When each slot is last used: the step that reads it last (or that makes it, when nothing
// reads it), -1 for constants and slots no step uses; `kept` marks graph outputs and
// constants, which stay for the caller.
struct SlotLifetimes {
  std::vector<int> last_use;
  std::vector<bool> kept;
};
template <typename Plan>
SlotLifetimes LifetimesOf(const Plan& plan) {
  SlotLifetimes life{std::vector<int>(plan.num_slots, -1), std::vector<bool>(plan.num_slots)};
  for (int s : plan.output_slots) life.kept[s] = true;
  for (int s : plan.constant_slots) life.kept[s] = true;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    for (const std::vector<int>* slots : {&plan.steps[i].inputs, &plan.steps[i].implicit_inputs}) {
      for (int s : *slots) {
        if (s >= 0) life.last_use[s] = static_cast<int>(i);
      }
    }
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    for (int s : plan.steps[i].outputs) {
      if (s >= 0 && life.last_use[s] < static_cast<int>(i)) life.last_use[s] = static_cast<int>(i);
    }
  }
  for (int s : plan.constant_slots) life.last_use[s] = -1;
  return life;
}

inline std::string QuotedName(const Value* v) { return absl::StrCat("'", v->name(), "'"); }

template <typename Backend>
class PlanBuilder {
 public:
  using Plan = typename Backend::Plan;
  using Step = typename Backend::Step;

  PlanBuilder(const Model& model, Backend& backend) : model_(model), backend_(backend) {}

  absl::Status Compile(const Graph& graph, Plan* parent, Plan& plan) {
    plan.graph = &graph;
    plan.parent = parent;
    for (const Value* v : graph.inputs()) {
      if (plan.slot_of.contains(v))
        return absl::InvalidArgumentError(
            absl::StrCat("graph input ", QuotedName(v), " is listed twice"));
      plan.input_slots.push_back(NewSlot(plan, v));
    }
    for (const Value* v : graph.initializers()) {
      auto it = plan.slot_of.find(v);
      const int slot = it != plan.slot_of.end() ? it->second : NewSlot(plan, v);
      plan.constant_slots.push_back(slot);
      OVFIX_RETURN_IF_ERROR(backend_.AddConstant(plan, slot, *v));
    }
    OVFIX_ASSIGN_OR_RETURN(std::vector<const Node*> order, NodesInOrder(graph));
    for (const Node* node : order) {
      OVFIX_RETURN_IF_ERROR(CompileNode(*node, plan));
    }
    for (const Value* v : graph.outputs()) {
      OVFIX_ASSIGN_OR_RETURN(int slot, Resolve(plan, v));
      plan.output_slots.push_back(slot);
    }
    backend_.Finish(plan, parent == nullptr);
    plan.slot_of.clear();
    return absl::OkStatus();
  }

 private:
  static int NewSlot(PlanSlots& plan, const Value* v) {
    plan.slot_of[v] = plan.num_slots;
    plan.slot_names.push_back(v->name());
    return plan.num_slots++;
  }

  // The slot of `v` in `plan`, capturing it from the enclosing frames when it is theirs.
  static absl::StatusOr<int> Resolve(PlanSlots& plan, const Value* v) {
    if (auto it = plan.slot_of.find(v); it != plan.slot_of.end()) return it->second;
    if (v->owner() == plan.graph || plan.parent == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("value ", QuotedName(v), " is read before anything produces it (graph '",
                       plan.graph->name(), "')"));
    }
    PlanSlots& parent = *plan.parent;
    OVFIX_ASSIGN_OR_RETURN(int outer, Resolve(parent, v));
    if (parent.capturing != nullptr) parent.capturing->push_back(outer);
    const int own = NewSlot(plan, v);
    plan.captures.emplace_back(outer, own);
    return own;
  }

  absl::Status CompileNode(const Node& node, Plan& plan) {
    Step step;
    step.node = &node;
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    const int64_t opset = model_.OpsetVersion(domain);
    if (opset < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": the model imports no opset for domain '", domain, "'"));
    }
    step.opset = static_cast<int>(opset);
    OVFIX_RETURN_IF_ERROR(backend_.LookUp(node, domain, step));
    // Kernels read their inputs and attributes trusting what the schema promises.
    OVFIX_RETURN_IF_ERROR(CheckNode(node, step.opset));
    for (const Value* v : node.inputs()) {
      if (v == nullptr) {
        step.inputs.push_back(-1);
        continue;
      }
      absl::StatusOr<int> slot = Resolve(plan, v);
      if (!slot.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), ": ", slot.status().message()));
      }
      step.inputs.push_back(*slot);
    }
    plan.steps.push_back(std::move(step));
    plan.capturing = &plan.steps.back().implicit_inputs;
    for (const Subgraph& sub : node.subgraphs()) {
      auto sub_plan = std::make_unique<Plan>();
      OVFIX_RETURN_IF_ERROR(Compile(*sub.graph, &plan, *sub_plan));
      plan.steps.back().subgraphs.push_back(std::move(sub_plan));
    }
    plan.capturing = nullptr;
    for (const Value* v : node.outputs()) {
      if (v == nullptr) {
        plan.steps.back().outputs.push_back(-1);
        continue;
      }
      if (plan.slot_of.contains(v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), ": output ", QuotedName(v), " is already defined"));
      }
      plan.steps.back().outputs.push_back(NewSlot(plan, v));
    }
    return absl::OkStatus();
  }

  const Model& model_;
  Backend& backend_;
};

}  // namespace ovfix::exec
