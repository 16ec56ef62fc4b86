#include "exec/opencl/opencl_session.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/kernel.h"
#include "exec/opencl/control_flow.h"
#include "exec/opencl/op_context.h"
#include "exec/opencl/opencl_runtime.h"
#include "exec/plan_builder.h"
#include "ir/float16.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

// Integer ops that are real computation, not shape arithmetic: they run on the device even
// when their inputs come from the host (a quantized model's uint8 graph input).
bool ComputesOnIntegers(std::string_view op_type) {
  return op_type == "ConvInteger" || op_type == "MatMulInteger" || op_type == "DequantizeLinear";
}

struct Plan;

struct Step : StepSlots {
  const OpDef* op = nullptr;       // null: CPU only
  const KernelDef* cpu = nullptr;  // null: OpenCL only
  bool control_flow = false;       // If/Loop/Scan: run by exec/opencl/control_flow.cc
  bool on_cpu = false;             // no OpenCL op, or the op declined this node
  bool noted = false;              // its CPU fallback is in placement_
  bool counted_host = false;       // counted in placement_.host
  std::shared_ptr<void> state;
  std::vector<std::unique_ptr<Plan>> subgraphs;  // in the order of node->subgraphs()
};

// One graph compiled to slots: the main graph, or a subgraph whose plan reads the values it
// captures from the enclosing frame.
struct Plan : PlanSlots {
  std::vector<std::pair<int, ClValue>> constants;
  std::vector<Step> steps;
};

using Frame = std::vector<ClValue>;

class OpenclSession : public Session {
 public:
  absl::Status Init(const Model& model, const SessionOptions& options) {
    options_ = ResolvePrecision(model, options);
    model_ = &model;
    OVFIX_ASSIGN_OR_RETURN(auto rt, Runtime::Create(options.device));
    rt_ = std::move(rt);
    if (options.precision == Precision::kFp16) OVFIX_RETURN_IF_ERROR(rt_->HalfArithmetic());
    PlanBuilder<OpenclSession> builder(model, *this);
    return builder.Compile(model.graph(), nullptr, main_);
  }

  absl::StatusOr<std::vector<Tensor>> Run(const TensorMap& inputs) override {
    captured_.clear();
    Frame values(main_.num_slots);
    OVFIX_RETURN_IF_ERROR(InitConstants(main_, values));
    const std::vector<Value*>& graph_inputs = main_.graph->inputs();
    for (size_t i = 0; i < graph_inputs.size(); ++i) {
      const Value* v = graph_inputs[i];
      auto it = inputs.find(v->name());
      if (it == inputs.end()) {
        if (v->is_initializer()) continue;
        return absl::InvalidArgumentError(absl::StrCat("missing input '", v->name(), "'"));
      }
      if (v->is_tensor() && it->second.type() != v->elem_type()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", v->name(), "' is ", std::string(DataTypeName(it->second.type())),
            ", the model wants ", std::string(DataTypeName(v->elem_type()))));
      }
      values[main_.input_slots[i]] = HostValue(it->second);
    }
    for (const auto& input : inputs) {
      // A named reference, not a structured binding: clang 14 (the fuzz build) cannot capture
      // those in a lambda.
      const std::string& name = input.first;
      if (std::none_of(graph_inputs.begin(), graph_inputs.end(),
                       [&](const Value* v) { return v->name() == name; })) {
        return absl::InvalidArgumentError(absl::StrCat("the model has no input '", name, "'"));
      }
    }
    if (options_.capture) {
      for (int s : main_.constant_slots) OVFIX_RETURN_IF_ERROR(Capture(main_, s, values[s]));
      for (int s : main_.input_slots) {
        if (values[s].type != DataType::kUndefined) {
          OVFIX_RETURN_IF_ERROR(Capture(main_, s, values[s]));
        }
      }
    }
    OVFIX_RETURN_IF_ERROR(RunSteps(main_, values, options_.capture));
    // Nothing stays queued after a run: kernels whose results no output reads (an empty
    // output's producers) still finish here, and report their errors to this run.
    OVFIX_RETURN_IF_ERROR(rt_->Finish());
    std::vector<Tensor> outputs;
    for (int s : main_.output_slots) {
      OVFIX_RETURN_IF_ERROR(EnsureHost(*rt_, values[s]));
      outputs.push_back(*values[s].host);
    }
    return outputs;
  }

  const TensorMap& captured() const override { return captured_; }
  std::vector<std::string> notes() const override {
    std::vector<std::string> out = {absl::StrCat("OpenCL device: ", rt_->device().name)};
    for (std::string& note : PrecisionNotes()) out.push_back(std::move(note));
    if (options_.precision == Precision::kFp16) {
      out.push_back(absl::StrCat("half arithmetic: ", rt_->half_arithmetic_source()));
    }
    const std::string fallbacks = Placement().Summary();
    if (!fallbacks.empty()) out.push_back(fallbacks);
    return out;
  }

  DevicePlacement Placement() const {
    DevicePlacement placement = placement_;
    placement.nodes = CountNodes(main_);
    return placement;
  }

 private:
  // ---- compiling (the backend of PlanBuilder) ----

  friend class PlanBuilder<OpenclSession>;
  using Plan = opencl::Plan;
  using Step = opencl::Step;

  absl::Status AddConstant(Plan& plan, int slot, const Value& v) {
    plan.constants.emplace_back(slot, HostValue(v.tensor()));
    return absl::OkStatus();
  }

  absl::Status LookUp(const Node& n, const std::string& domain, Step& step) {
    step.op = domain.empty() ? FindOp(n.op_type(), step.opset) : nullptr;
    step.cpu = FindKernel(domain, n.op_type(), step.opset);
    step.control_flow = domain.empty() && IsControlFlowOp(n.op_type());
    if (step.op == nullptr && step.cpu == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(n.Describe(), ": unsupported op ", n.op_type(),
                                                     " (opset ", step.opset, ")"));
    }
    if (step.op == nullptr && !step.control_flow) step.on_cpu = true;
    return absl::OkStatus();
  }

  // Frees each intermediate after its last use (never constants or outputs).
  void Finish(Plan& plan, bool /*main*/) {
    const SlotLifetimes life = LifetimesOf(plan);
    for (int s = 0; s < plan.num_slots; ++s) {
      if (life.last_use[s] >= 0 && !life.kept[s]) plan.steps[life.last_use[s]].release.push_back(s);
    }
  }

  static int CountNodes(const Plan& plan) {
    int count = static_cast<int>(plan.steps.size());
    for (const Step& step : plan.steps) {
      for (const auto& sub : step.subgraphs) count += CountNodes(*sub);
    }
    return count;
  }

  // ---- running ----

  bool StoresHalf(DataType t) const { return opencl::StoresHalf(options_, t); }

  // In fp16 precisions float host data is rounded to what half storage holds.
  Tensor Rounded(const Tensor& t) const {
    if (t.type() != DataType::kFloat || !options_.RoundsFloat32()) return t;
    Tensor r = t.Clone();
    RoundFloatsToHalf(r.data<float>(), r.numel());
    return r;
  }

  ClValue HostValue(const Tensor& t) const {
    ClValue c;
    c.type = t.type();
    c.dims = t.dims();
    c.half = StoresHalf(c.type);
    c.host = Rounded(t);
    return c;
  }

  absl::Status InitConstants(Plan& plan, Frame& values) {
    for (auto& [s, c] : plan.constants) {
      if (c.type != DataType::kString) {
        OVFIX_RETURN_IF_ERROR(EnsureDevice(*rt_, c));  // uploaded once, kept
      }
      values[s] = c;
    }
    return absl::OkStatus();
  }

  absl::Status Capture(const Plan& plan, int slot, ClValue& v) {
    OVFIX_RETURN_IF_ERROR(EnsureHost(*rt_, v));
    captured_[plan.slot_names[slot]] = *v.host;
    return absl::OkStatus();
  }

  absl::Status RunSteps(Plan& plan, Frame& values, bool capture) {
    for (Step& step : plan.steps) {
      OVFIX_RETURN_IF_ERROR(RunStep(step, values));
      if (capture) {
        for (int o : step.outputs) {
          if (o >= 0) {
            OVFIX_RETURN_IF_ERROR(Capture(plan, o, values[o]));
          }
        }
      }
      for (int r : step.release) values[r] = ClValue{};
    }
    return absl::OkStatus();
  }

  // Runs subgraph `index` of `step` on `args`, reading captured values from `outer`.
  absl::StatusOr<std::vector<ClValue>> RunSubgraph(Step& step, size_t index, Frame& outer,
                                                   std::vector<ClValue> args) {
    Plan& plan = *step.subgraphs[index];
    if (args.size() != plan.input_slots.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(step.node->Describe(), ": subgraph '", plan.graph->name(), "' takes ",
                       plan.input_slots.size(), " inputs, given ", args.size()));
    }
    Frame values(plan.num_slots);
    OVFIX_RETURN_IF_ERROR(InitConstants(plan, values));
    for (const auto& [from, own] : plan.captures) values[own] = outer[from];
    for (size_t i = 0; i < args.size(); ++i) values[plan.input_slots[i]] = std::move(args[i]);
    OVFIX_RETURN_IF_ERROR(RunSteps(plan, values, /*capture=*/false));
    std::vector<ClValue> out;
    for (int s : plan.output_slots) out.push_back(values[s]);
    return out;
  }

  absl::StatusOr<size_t> SubgraphIndex(const Step& step, std::string_view attribute) const {
    const std::vector<Subgraph>& subs = step.node->subgraphs();
    for (size_t i = 0; i < subs.size(); ++i) {
      if (subs[i].attribute == attribute) return i;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(step.node->Describe(), ": no subgraph ", std::string(attribute)));
  }

  absl::Status RunControlFlowStep(Step& step, Frame& values) {
    ControlContext ctx{*step.node, step.opset, *rt_, {}, {}, {}, {}};
    for (int s : step.inputs) ctx.inputs.push_back(s >= 0 ? &values[s] : nullptr);
    ctx.outputs.resize(step.outputs.size());
    ctx.run_body = [&](std::string_view attribute,
                       std::vector<ClValue> args) -> absl::StatusOr<std::vector<ClValue>> {
      OVFIX_ASSIGN_OR_RETURN(size_t index, SubgraphIndex(step, attribute));
      return RunSubgraph(step, index, values, std::move(args));
    };
    ctx.host_value = [this](Tensor t) { return HostValue(t); };
    OVFIX_RETURN_IF_ERROR(RunControlFlow(ctx));
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] >= 0) values[step.outputs[i]] = std::move(ctx.outputs[i]);
    }
    return absl::OkStatus();
  }

  absl::Status RunStep(Step& step, Frame& values) {
    if (step.control_flow && !step.on_cpu) {
      absl::Status s = RunControlFlowStep(step, values);
      if (!absl::IsUnimplemented(s) || step.cpu == nullptr) return s;
      step.on_cpu = true;
      NoteFallback(step, std::string(s.message()));
      return RunOnCpu(step, values);
    }
    // Integer values held on the host are shape arithmetic (Shape -> Gather -> Concat,
    // Constant, integer initializers, which also have a device copy): the CPU kernel computes
    // them where they are, no transfer.
    bool host_only = step.cpu != nullptr;
    for (int s : step.inputs) {
      if (s < 0) continue;
      const ClValue& v = values[s];
      if (!v.host || v.type == DataType::kFloat || v.type == DataType::kFloat16) host_only = false;
    }
    if (host_only && !ComputesOnIntegers(step.node->op_type())) {
      if (!step.counted_host && step.node->op_type() != "Constant") {
        step.counted_host = true;
        ++placement_.host;
      }
      return RunOnCpu(step, values);
    }
    if (!step.on_cpu) {
      OpContext ctx(*step.node, step.opset, *rt_, options_);
      for (int s : step.inputs) ctx.inputs.push_back(s >= 0 ? &values[s] : nullptr);
      ctx.outputs.resize(step.outputs.size());
      absl::Status s = step.op->fn(ctx);
      if (s.ok()) {
        for (size_t i = 0; i < step.outputs.size(); ++i) {
          if (step.outputs[i] >= 0) values[step.outputs[i]] = std::move(ctx.outputs[i]);
        }
        return absl::OkStatus();
      }
      if (!absl::IsUnimplemented(s) || step.cpu == nullptr) return s;
      step.on_cpu = true;
      NoteFallback(step, std::string(s.message()));
    }
    NoteFallback(step, "no OpenCL kernel");
    return RunOnCpu(step, values);
  }

  // Records the step's CPU fallback the first time it happens.
  void NoteFallback(Step& step, std::string reason) {
    if (step.noted) return;
    step.noted = true;
    placement_.cpu.push_back({step.node->Describe(), step.node->op_type(), std::move(reason)});
  }

  absl::Status RunOnCpu(Step& step, Frame& values) {
    KernelContext ctx = KernelContext::For(*step.node, step.opset);
    ctx.state = &step.state;
    std::vector<Tensor> converted;
    converted.reserve(step.inputs.size());
    bool has_half = false;
    for (int s : step.inputs) {
      if (s >= 0) {
        OVFIX_RETURN_IF_ERROR(EnsureHost(*rt_, values[s]));
        has_half = has_half || values[s].type == DataType::kFloat16;
      }
    }
    const bool as_float = has_half && step.cpu->float16 == Float16Mode::kAsFloat;
    for (int s : step.inputs) {
      if (s < 0) {
        ctx.inputs.push_back(nullptr);
      } else if (as_float && values[s].type == DataType::kFloat16) {
        converted.push_back(ConvertTensor(*values[s].host, DataType::kFloat));
        ctx.inputs.push_back(&converted.back());
      } else {
        ctx.inputs.push_back(&*values[s].host);
      }
    }
    if (!step.subgraphs.empty()) {
      // A control-flow node on its CPU kernel still runs its bodies in this session.
      ctx.run_subgraph = [&](const Graph& graph,
                             std::vector<Tensor> args) -> absl::StatusOr<std::vector<Tensor>> {
        size_t index = 0;
        while (index < step.subgraphs.size() && step.subgraphs[index]->graph != &graph) ++index;
        if (index == step.subgraphs.size()) {
          return absl::InternalError(absl::StrCat(step.node->Describe(), ": unknown subgraph"));
        }
        std::vector<ClValue> in;
        for (const Tensor& t : args) in.push_back(HostValue(t));
        OVFIX_ASSIGN_OR_RETURN(std::vector<ClValue> out,
                               RunSubgraph(step, index, values, std::move(in)));
        std::vector<Tensor> tensors;
        for (ClValue& v : out) {
          OVFIX_RETURN_IF_ERROR(EnsureHost(*rt_, v));
          tensors.push_back(*v.host);
        }
        return tensors;
      };
    }
    ctx.outputs.resize(step.outputs.size());
    OVFIX_RETURN_IF_ERROR(step.cpu->fn(ctx));
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      Tensor t = std::move(ctx.outputs[i]);
      if (!t.defined()) {
        return absl::InternalError(absl::StrCat(step.node->Describe(), ": output ", i, " missing"));
      }
      if (as_float && t.type() == DataType::kFloat &&
          step.node->output(i)->elem_type() != DataType::kFloat) {
        t = ConvertTensor(t, DataType::kFloat16);
      }
      values[step.outputs[i]] = HostValue(t);
    }
    return absl::OkStatus();
  }

  const Model* model_ = nullptr;
  std::unique_ptr<Runtime> rt_;
  Plan main_;
  DevicePlacement placement_;
  TensorMap captured_;
};

}  // namespace

std::string DevicePlacement::Summary() const {
  if (cpu.empty()) return "";
  // Op types in the order they first fell back, each with its count and reasons.
  std::vector<std::string> order;
  std::map<std::string, std::pair<int, std::vector<std::string>>> by_op;
  for (const CpuFallback& f : cpu) {
    auto [it, added] = by_op.try_emplace(f.op_type);
    if (added) order.push_back(f.op_type);
    ++it->second.first;
    std::vector<std::string>& reasons = it->second.second;
    if (std::find(reasons.begin(), reasons.end(), f.reason) == reasons.end()) {
      reasons.push_back(f.reason);
    }
  }
  std::vector<std::string> parts;
  for (const std::string& op : order) {
    const auto& [count, reasons] = by_op.at(op);
    std::vector<std::string> shown(reasons.begin(),
                                   reasons.begin() + std::min<size_t>(reasons.size(), 2));
    if (reasons.size() > shown.size()) shown.push_back("...");
    parts.push_back(absl::StrCat(op, count > 1 ? absl::StrCat(" x", count) : "", ": ",
                                 absl::StrJoin(shown, "; ")));
  }
  return absl::StrCat("runs on the CPU: ", cpu.size(), " of ", nodes, " nodes (",
                      absl::StrJoin(parts, ", "), ")");
}

std::optional<DevicePlacement> DevicePlacementOf(const Session& session) {
  const auto* opencl = dynamic_cast<const OpenclSession*>(&session);
  if (opencl == nullptr) return std::nullopt;
  return opencl->Placement();
}

absl::StatusOr<std::unique_ptr<Session>> CreateOpenclSession(const Model& model,
                                                             const SessionOptions& options) {
  auto session = std::make_unique<OpenclSession>();
  OVFIX_RETURN_IF_ERROR(session->Init(model, options));
  return std::unique_ptr<Session>(std::move(session));
}

}  // namespace ovfix::exec::opencl
