// The cpu session. Creating it compiles each graph (the main graph and every subgraph) into a
// Plan: one slot per value, one Step per node with its kernel already looked up, and the
// slots each step may release because nothing later reads them. Running a Plan is then a
// walk over its steps with no name lookups. Subgraphs read outer-scope values by copying
// them from the enclosing frame when their own frame starts (tensors share buffers).
#include <algorithm>
#include <chrono>
#include <new>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/concat_in_place.h"
#include "exec/cpu_session.h"
#include "exec/kernel.h"
#include "exec/opencl/opencl_session.h"
#include "exec/plan_builder.h"
#include "exec/plan_fusion.h"
#include "exec/qdq_fusion.h"
#include "ir/constant.h"
#include "ir/float16.h"
#include "ir/graph.h"
#include "ir/graph_walk.h"
#include "ir/model.h"
#include "ir/status_macros.h"

namespace ovfix::exec {

struct Step : StepSlots {
  const KernelDef* kernel = nullptr;
  ValueKernelFn value_kernel = nullptr;  // set for ops over sequences or with subgraphs
  std::vector<int> narrow;               // kept widened slots last read by this step
  std::vector<std::unique_ptr<Plan>> subgraphs;
  mutable std::shared_ptr<void> state;  // KernelContext::state
  // In a widened plan: the op only moves or selects values and every float input holds
  // float16 values, so its float16 outputs need no rounding.
  bool keeps_half_values = false;
  // The activation that alone read this step's output, fused into it (KernelContext).
  FusedActivation fused;
  // The constant bias an Add that alone read this step's output added (KernelContext).
  const Tensor* fused_bias = nullptr;
  // The BatchNormalization folded into this step (a Conv) that fed its input 0, which the
  // step now reads through it (KernelContext::input_affine).
  std::shared_ptr<const ChannelAffine> input_affine;
  // A Concat that may find its inputs laid out in one buffer already (ConcatAsView).
  bool concat_view = false;
  // Its index among the Concats of Plan::concat_placement; -1 when it is none of them.
  int placed_concat = -1;
};

struct Plan : PlanSlots {
  std::vector<std::pair<int, RuntimeValue>> constants;
  std::vector<Step> steps;
  // Widened float16 (SessionOptions::widen_float16): per slot, 1 when the slot's value is
  // float16 held as a float tensor of half-representable values. Empty when not widened.
  std::vector<uint8_t> widened;
  // Float elements of the largest float16 constant: the size of the first scratch buffer its
  // kernels' float copies go to, so that one buffer serves every weight.
  int64_t largest_float16_constant = 0;
  // Whether steps keep kernel state across runs (SessionOptions::kernel_state_budget).
  bool keep_kernel_state = true;
  // Whether a step lets go of its kernel state once it has run (SessionOptions::runs_once; the
  // main plan only: a body's steps run again within the run).
  bool release_kernel_state = false;
  // Where Concat inputs are made (SessionOptions::concat_in_place); learned as the plan runs,
  // hence mutable. Null when off or no Concat takes part.
  mutable std::unique_ptr<ConcatPlacement> concat_placement;
};

namespace {

void RoundInPlace(Tensor& t, ThreadPool* pool) {
  float* data = t.data<float>();
  ParallelFor(pool, t.numel(), 1 << 15,
              [data](int64_t begin, int64_t end) { RoundFloatsToHalf(data + begin, end - begin); });
}

Tensor RoundedCopy(const Tensor& t, ThreadPool* pool) {
  Tensor copy = t.Clone();
  RoundInPlace(copy, pool);
  return copy;
}

// What kernels would keep of the graph's weights (subgraphs included): packed float panels,
// so a float16 weight counts twice its bytes.
size_t KernelStateBytes(const Graph& g) {
  size_t total = 0;
  for (const Value* v : g.initializers()) {
    const Tensor& t = v->tensor();
    // Kernels keep float weights: a float16 weight takes twice its size, a quantized one that
    // a DequantizeLinear reads (IsRunConstant) four times or more.
    size_t bytes = t.type() == DataType::kFloat16 ? 2 * t.nbytes() : t.nbytes();
    for (const Use& u : v->uses()) {
      if (u.node->op_type() == "DequantizeLinear" && u.input_index == 0) {
        bytes = std::max(bytes, static_cast<size_t>(t.numel()) * sizeof(float));
      }
    }
    total += bytes;
  }
  for (const Node* n : g.nodes()) {
    for (const Subgraph& s : n->subgraphs()) total += KernelStateBytes(*s.graph);
  }
  return total;
}

// ---- compiling ----

// The cpu backend of PlanBuilder: cpu kernels, constants rounded in the fp16 precisions, and
// the plan widened, fused and given its releases once laid out.
class Compiler {
 public:
  using Plan = exec::Plan;
  using Step = exec::Step;

  Compiler(const Model& model, const SessionOptions& options, ThreadPool* pool)
      : model_(model),
        options_(options),
        pool_(pool),
        keep_kernel_state_(KernelStateBytes(model.graph()) <= options.kernel_state_budget) {}

  absl::Status AddConstant(Plan& plan, int slot, const Value& v) {
    const Tensor& t = v.tensor();
    const bool round = options_.RoundsFloat32() && t.type() == DataType::kFloat;
    if (t.type() == DataType::kFloat16) {
      plan.largest_float16_constant = std::max(plan.largest_float16_constant, t.numel());
    }
    plan.constants.emplace_back(slot, RuntimeValue(round ? RoundedCopy(t, pool_) : t));
    return absl::OkStatus();
  }

  absl::Status LookUp(const Node& node, const std::string& domain, Step& step) {
    step.kernel = FindKernel(domain, node.op_type(), step.opset);
    if (step.kernel == nullptr) return Unsupported(node, domain, step.opset);
    step.value_kernel = FindValueKernel(domain, node.op_type());
    return absl::OkStatus();
  }

  void Finish(Plan& plan, bool main) {
    plan.keep_kernel_state = keep_kernel_state_;
    plan.release_kernel_state = main && options_.runs_once;
    if (main && options_.widen_float16) Widen(plan);
    // Fused steps hide the value between them: not while every value is observed or
    // rounded.
    if (plan.widened.empty() && !options_.capture && !options_.on_value &&
        !options_.RoundsFloat32()) {
      PrecomputeConstantNodes(plan);
      FuseIntoProducers(plan);
      FuseIntoConsumers(plan);
      // Subgraph plans run many times per run (a Loop body), each in a frame of its own: only
      // the main plan places values, so that each of its buffers serves one run.
      if (main && options_.concat_in_place) PlaceConcatInputs(plan);
    }
    PlanReleases(plan, /*keep_all=*/main && options_.capture);
  }

 private:
  // Unimplemented: an op the executor has no kernel for (the API's callers tell it from a bad
  // model or input by the code).
  absl::Status Unsupported(const Node& node, const std::string& domain, int opset) {
    for (const onnx::FunctionProto& f : model_.extras().functions()) {
      if (f.name() == node.op_type() && f.domain() == node.domain()) {
        return absl::UnimplementedError(
            absl::StrCat(node.Describe(), ": calls the model-local function '", node.op_type(),
                         "' (domain '", node.domain(), "'), which the cpu executor does not run"));
      }
    }
    return absl::UnimplementedError(absl::StrCat(node.Describe(), ": no cpu kernel for ",
                                                 domain.empty() ? "ai.onnx" : domain,
                                                 "::", node.op_type(), " at opset ", opset));
  }

  // Float16 values held as float: each kernel then runs on float data directly instead of
  // converting its float16 inputs to float and its outputs back, and what it produces for a
  // float16 value is rounded to half in place. Constants stay float16: a kernel that reads
  // one gets a float copy in a reused scratch buffer (AsFloat). The numbers are those of the
  // float16 path
  // (kernels compute float16 in float either way). Only plans of plain tensor steps whose
  // every value has a known element type are widened: control flow and sequences move
  // values whose declared types a frame cannot see.
  void Widen(Plan& plan) {
    for (const Step& step : plan.steps) {
      if (step.value_kernel != nullptr || !step.subgraphs.empty()) return;
      // BitCast reads a float16's bits, which its float form does not have.
      if (step.node->op_type() == "BitCast") return;
    }
    std::vector<DataType> types(plan.num_slots, DataType::kUndefined);
    bool any_half = false;
    for (const auto& [v, slot] : plan.slot_of) {
      const DataType t = v->is_initializer() ? v->tensor().type()
                         : v->is_tensor()    ? v->elem_type()
                                             : DataType::kUndefined;
      if (t == DataType::kUndefined) return;
      types[slot] = t;
      any_half = any_half || t == DataType::kFloat16;
    }
    if (!any_half) return;
    plan.widened.assign(plan.num_slots, 0);
    for (int s = 0; s < plan.num_slots; ++s) plan.widened[s] = types[s] == DataType::kFloat16;
    // Ops whose outputs are some of their inputs' values (or zeros).
    static const absl::flat_hash_set<std::string_view> kMovesValues = {
        "Concat",  "Split",        "Transpose",    "Expand",          "Tile",     "Relu",
        "MaxPool", "Max",          "Min",          "Where",           "Neg",      "Abs",
        "Col2Im",  "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Compress", "Trilu"};
    for (Step& step : plan.steps) {
      const bool moves =
          step.kernel->float16 == Float16Mode::kNative ||
          (step.node->domain().empty() && kMovesValues.contains(step.node->op_type()));
      bool half_inputs = true;
      for (int s : step.inputs) {
        if (s >= 0 && types[s] == DataType::kFloat) half_inputs = false;
      }
      step.keeps_half_values = moves && half_inputs && step.node->op_type() != "Cast" &&
                               step.node->op_type() != "CastLike";
    }
  }

  // Constant nodes (exporters write every literal of a graph's shape arithmetic as one, a
  // thousand and more in a transformer) become constants of the plan: their values are made
  // once here instead of by a step on every run. A value that does not decode stays a step,
  // which reports the error when it runs.
  static void PrecomputeConstantNodes(Plan& plan) {
    std::vector<Step> kept;
    kept.reserve(plan.steps.size());
    for (Step& step : plan.steps) {
      const Node& node = *step.node;
      if ((node.domain().empty() || node.domain() == "ai.onnx") && node.op_type() == "Constant" &&
          node.num_inputs() == 0 && step.value_kernel == nullptr && step.outputs.size() == 1 &&
          step.outputs[0] >= 0 && node.FindAttribute("sparse_value") == nullptr) {
        absl::StatusOr<Tensor> value = ConstantNodeValue(node);
        if (value.ok()) {
          plan.constants.emplace_back(step.outputs[0], RuntimeValue(*std::move(value)));
          plan.constant_slots.push_back(step.outputs[0]);
          continue;
        }
      }
      kept.push_back(std::move(step));
    }
    plan.steps = std::move(kept);
  }

  // Each step's index, by its node.
  static absl::flat_hash_map<const Node*, size_t> StepIndex(const Plan& plan) {
    absl::flat_hash_map<const Node*, size_t> step_of;
    for (size_t i = 0; i < plan.steps.size(); ++i) step_of[plan.steps[i].node] = i;
    return step_of;
  }

  // The steps without those marked folded, in order.
  static void DropSteps(Plan& plan, const std::vector<bool>& folded) {
    std::vector<Step> kept;
    kept.reserve(plan.steps.size());
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      if (!folded[i]) kept.push_back(std::move(plan.steps[i]));
    }
    plan.steps = std::move(kept);
  }

  // What the plan folds into the step before it (exec/plan_fusion.h says which nodes: a bias
  // Add into a MatMul, a clamp or hard swish into a Conv or BatchNormalization) goes into that
  // step, which then makes the last folded node's output. Steps are in topological order, so
  // a step's producer has taken what came before it when it takes the step.
  static void FuseIntoProducers(Plan& plan) {
    const absl::flat_hash_map<const Node*, size_t> step_of = StepIndex(plan);
    std::vector<bool> folded(plan.steps.size(), false);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step& step = plan.steps[i];
      const std::optional<ProducerFusion> f = FusionIntoProducer(*step.node, step.opset);
      if (!f) continue;
      const auto source = step_of.find(f->producer);
      if (source == step_of.end()) continue;  // never: the producer is a step of this plan
      folded[i] = true;
      // The HardSigmoid of a hard swish: its Mul, later, completes it.
      if (f->last != step.node) continue;
      Step& into = plan.steps[source->second];
      if (f->kind == ProducerFusion::Kind::kBias) {
        into.fused_bias = f->bias;
      } else {
        into.fused = f->activation;
      }
      into.outputs[0] = step.outputs[0];
    }
    DropSteps(plan, folded);
  }

  // What the plan folds into the step after it (exec/plan_fusion.h: a BatchNormalization and
  // its clamp into the Conv that reads them): the consumer reads the BatchNormalization's
  // input through its scale and shift. Runs after FuseIntoProducers, whose steps make the
  // clamp's output.
  static void FuseIntoConsumers(Plan& plan) {
    const absl::flat_hash_map<const Node*, size_t> step_of = StepIndex(plan);
    std::vector<bool> folded(plan.steps.size(), false);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step& step = plan.steps[i];
      std::optional<ConsumerFusion> f = FusionIntoConsumer(*step.node, step.opset);
      if (!f) continue;
      const auto consumer = step_of.find(f->consumer);
      if (consumer == step_of.end()) continue;  // never: the Conv is a step of this plan
      Step& into = plan.steps[consumer->second];
      if (step.inputs.empty() || step.outputs.size() != 1 || into.inputs.empty() ||
          into.inputs[0] != step.outputs[0] || into.input_affine != nullptr) {
        continue;  // never: the predicate read the same graph
      }
      into.inputs[0] = step.inputs[0];
      into.input_affine = std::make_shared<const ChannelAffine>(std::move(f->affine));
      folded[i] = true;
    }
    DropSteps(plan, folded);
  }

  // Concat without copies (exec/concat_in_place.h): each value's home, the last Concat that
  // reads it once, when a plain tensor step makes it and the caller never sees it (no graph
  // input, output or constant).
  static void PlaceConcatInputs(Plan& plan) {
    std::vector<bool> made(plan.num_slots, false), kept(plan.num_slots, false);
    for (const Step& step : plan.steps) {
      const bool plain = step.value_kernel == nullptr && step.subgraphs.empty();
      for (int s : step.outputs) {
        if (s >= 0) made[s] = plain;
      }
    }
    for (const std::vector<int>* slots :
         {&plan.input_slots, &plan.output_slots, &plan.constant_slots}) {
      for (int s : *slots) kept[s] = true;
    }
    std::vector<ConcatPlacement::Concat> concats;
    std::vector<ConcatPlacement::Home> home(plan.num_slots);
    for (Step& step : plan.steps) {
      const Node& node = *step.node;
      if ((!node.domain().empty() && node.domain() != "ai.onnx") || node.op_type() != "Concat" ||
          step.value_kernel != nullptr || step.outputs.size() != 1 || step.outputs[0] < 0) {
        continue;
      }
      step.concat_view = true;
      const int index = static_cast<int>(concats.size());
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        const int s = step.inputs[i];
        if (s < 0 || kept[s] || !made[s] ||
            std::count(step.inputs.begin(), step.inputs.end(), s) != 1) {
          continue;
        }
        home[s] = {index, static_cast<int>(i)};
      }
      step.placed_concat = index;
      concats.push_back({step.inputs, step.outputs[0]});
    }
    if (concats.empty()) return;
    plan.concat_placement =
        std::make_unique<ConcatPlacement>(plan.num_slots, std::move(concats), std::move(home));
  }

  // Each slot is released by the step that reads it last (or that makes it, when nothing
  // reads it); graph outputs and constants stay, and so does everything with `keep_all`.
  // Widened values that stay are narrowed back to float16 there instead, so they are held
  // as float only while read.
  static void PlanReleases(Plan& plan, bool keep_all) {
    if (keep_all && plan.widened.empty()) return;
    const SlotLifetimes life = LifetimesOf(plan);
    for (int s = 0; s < plan.num_slots; ++s) {
      const int last = life.last_use[s];
      if (last < 0) continue;
      if (!life.kept[s] && !keep_all) {
        plan.steps[last].release.push_back(s);
      } else if (!plan.widened.empty() && plan.widened[s]) {
        plan.steps[last].narrow.push_back(s);
      }
    }
  }

  const Model& model_;
  const SessionOptions& options_;
  ThreadPool* pool_;
  const bool keep_kernel_state_;
};

// ---- running ----

class Runner {
 public:
  Runner(ThreadPool* pool, BufferRecycler* recycler, const SessionOptions& options)
      : pool_(pool),
        recycler_(recycler),
        round_(options.RoundsFloat32()),
        on_value_(options.on_value ? &options.on_value : nullptr),
        on_node_time_(options.on_node_time ? &options.on_node_time : nullptr),
        random_seed_(options.random_seed) {}

  static void InitFrame(const Plan& plan, std::vector<RuntimeValue>& frame,
                        const std::vector<RuntimeValue>* parent) {
    frame.assign(plan.num_slots, RuntimeValue());
    for (const auto& [slot, value] : plan.constants) frame[slot] = value;
    if (parent != nullptr) {
      for (const auto& [outer, own] : plan.captures) frame[own] = (*parent)[outer];
    }
  }

  // A widened float16 value as float16 again (exact).
  static RuntimeValue Narrowed(const RuntimeValue& v) {
    if (!v.is_tensor() || v.tensor.type() != DataType::kFloat) return v;
    return RuntimeValue(ConvertTensor(v.tensor, DataType::kFloat16));
  }

  int concat_views() const { return concat_views_; }
  int inputs_written_over() const { return inputs_written_over_; }

  absl::Status RunPlan(const Plan& plan, std::vector<RuntimeValue>& frame) {
    // The buffers of this run's Concat nests, made when their first value is (only the main
    // plan has any).
    if (plan.concat_placement != nullptr) roots_.assign(plan.num_slots, nullptr);
    for (const Step& step : plan.steps) {
      const auto start = on_node_time_ != nullptr ? std::chrono::steady_clock::now()
                                                  : std::chrono::steady_clock::time_point();
      absl::Status s = RunStep(plan, step, frame);
      if (!s.ok()) return s;
      if (on_node_time_ != nullptr) {
        (*on_node_time_)(*step.node, std::chrono::duration<double, std::milli>(
                                         std::chrono::steady_clock::now() - start)
                                         .count());
      }
      for (int slot : step.release) {
        if (frame[slot].is_tensor()) recycler_->Give(frame[slot].tensor);
        frame[slot] = RuntimeValue();
      }
      for (int slot : step.narrow) frame[slot] = Narrowed(frame[slot]);
      // Every value placed in a nest's buffer is made before its outermost Concat: the buffer
      // is held by the values in it from here.
      if (plan.concat_placement != nullptr) {
        for (int slot : step.outputs) {
          if (slot >= 0) roots_[slot] = nullptr;
        }
      }
    }
    if (plan.concat_placement != nullptr) plan.concat_placement->Commit();
    return absl::OkStatus();
  }

 private:
  // Kernels check the sizes they compute from attributes and input dims; an allocation that
  // still fails (a model asking for more memory than the machine has) is the node's error,
  // not the end of the process.
  absl::Status RunStep(const Plan& plan, const Step& step, std::vector<RuntimeValue>& frame) {
    try {
      return step.value_kernel != nullptr ? RunValueStep(step, frame)
                                          : RunTensorStep(plan, step, frame);
    } catch (const std::bad_alloc&) {
      return absl::InvalidArgumentError(absl::StrCat(
          step.node->Describe(), ": out of memory (its outputs need more than is free)"));
    }
  }

  absl::StatusOr<std::vector<RuntimeValue>> RunSubgraph(const Step& step, const Graph& graph,
                                                        const std::vector<RuntimeValue>& outer,
                                                        std::vector<RuntimeValue> args) {
    const Plan* plan = nullptr;
    for (const auto& p : step.subgraphs) {
      if (p->graph == &graph) plan = p.get();
    }
    if (plan == nullptr) {
      return absl::InternalError(absl::StrCat(step.node->Describe(), ": '", graph.name(),
                                              "' is not a subgraph of this node"));
    }
    if (args.size() != plan->input_slots.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(step.node->Describe(), ": subgraph '", graph.name(), "' takes ",
                       plan->input_slots.size(), " inputs, given ", args.size()));
    }
    std::vector<RuntimeValue> frame;
    InitFrame(*plan, frame, &outer);
    for (size_t i = 0; i < args.size(); ++i) frame[plan->input_slots[i]] = std::move(args[i]);
    OVFIX_RETURN_IF_ERROR(RunPlan(*plan, frame));
    std::vector<RuntimeValue> results;
    results.reserve(plan->output_slots.size());
    for (size_t i = 0; i < plan->output_slots.size(); ++i) {
      const RuntimeValue& v = frame[plan->output_slots[i]];
      if (!v.is_set()) {
        return absl::InvalidArgumentError(
            absl::StrCat(step.node->Describe(), ": subgraph '", graph.name(), "' output '",
                         plan->graph->outputs()[i]->name(), "' was not computed"));
      }
      results.push_back(v);
    }
    return results;
  }

  absl::Status MissingOutput(const Step& step, size_t i) {
    return absl::InvalidArgumentError(absl::StrCat(step.node->Describe(),
                                                   ": the kernel produced no output ", i, " (",
                                                   QuotedName(step.node->output(i)), ")"));
  }

  absl::Status RunValueStep(const Step& step, std::vector<RuntimeValue>& frame) {
    ValueContext ctx{*step.node, step.opset, {}, {}, {}};
    ctx.inputs.reserve(step.inputs.size());
    for (int s : step.inputs) ctx.inputs.push_back(s >= 0 ? &frame[s] : nullptr);
    ctx.outputs.resize(step.outputs.size());
    if (!step.subgraphs.empty()) {
      ctx.run_subgraph = [this, &step, &frame](const Graph& graph, std::vector<RuntimeValue> args) {
        return RunSubgraph(step, graph, frame, std::move(args));
      };
    }
    OVFIX_RETURN_IF_ERROR(step.value_kernel(ctx));
    // Value kernels only move tensors that were rounded when made: no rounding here.
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      if (!ctx.outputs[i].is_set()) return MissingOutput(step, i);
      if (on_value_ != nullptr && ctx.outputs[i].is_tensor()) {
        (*on_value_)(*step.node->output(i), ctx.outputs[i].tensor);
      }
      frame[step.outputs[i]] = std::move(ctx.outputs[i]);
    }
    return absl::OkStatus();
  }

  absl::Status RunTensorStep(const Plan& plan, const Step& step, std::vector<RuntimeValue>& frame) {
    const Node& node = *step.node;
    KernelContext ctx = KernelContext::For(node, step.opset);
    ctx.pool = pool_;
    ctx.state = plan.keep_kernel_state ? &step.state : nullptr;
    ctx.random_seed = random_seed_;
    ctx.recycler = recycler_;
    ctx.fused = step.fused;
    ctx.fused_bias = step.fused_bias;
    ctx.input_affine = step.input_affine.get();
    // The input and output lists of the last step, kept for this one: two allocations a node
    // less, which a graph of thousands of small nodes feels. A subgraph run inside this step
    // finds none spare and makes its own.
    ctx.inputs = std::move(spare_inputs_);
    ctx.outputs = std::move(spare_outputs_);
    struct GiveBack {
      KernelContext& ctx;
      Runner& runner;
      ~GiveBack() {
        ctx.inputs.clear();
        ctx.outputs.clear();
        runner.spare_inputs_ = std::move(ctx.inputs);
        runner.spare_outputs_ = std::move(ctx.outputs);
      }
    } give_back{ctx, *this};
    ctx.inputs.assign(step.inputs.size(), nullptr);
    bool has_half = false, has_float = false, has_bfloat16 = false;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] < 0) continue;
      RuntimeValue& v = frame[step.inputs[i]];
      if (!v.is_tensor()) {
        if (node.op_type() == "Identity" && step.outputs.size() == 1 && step.outputs[0] >= 0) {
          frame[step.outputs[0]] = v;  // Identity of a sequence or optional
          return absl::OkStatus();
        }
        return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": input ", i, " (",
                                                       QuotedName(node.input(i)), ") is ",
                                                       DescribeRuntimeValue(v), ", not a tensor"));
      }
      ctx.inputs[i] = &v.tensor;
      has_half = has_half || v.tensor.type() == DataType::kFloat16;
      has_float = has_float || v.tensor.type() == DataType::kFloat;
      has_bfloat16 = has_bfloat16 || v.tensor.type() == DataType::kBfloat16;
    }
    std::vector<Tensor> converted;
    // In a widened plan a type-generic kernel may see a float16 constant beside a widened
    // value (Pad's value, ScatterND's updates): both go as float.
    const bool as_float = has_half && (step.kernel->float16 == Float16Mode::kAsFloat ||
                                       (!plan.widened.empty() && has_float));
    // bfloat16 the same way, never widened: a kernel computing in float gets its bfloat16
    // inputs as float (exact) and its outputs are rounded back to bfloat16 (nearest even) where
    // the model types them bfloat16: bf16 storage, fp32 arithmetic and accumulation.
    const bool bfloat16_as_float =
        has_bfloat16 && !has_half && step.kernel->float16 == Float16Mode::kAsFloat;
    if (as_float || bfloat16_as_float) {
      converted.reserve(ctx.inputs.size());
      for (const Tensor*& in : ctx.inputs) {
        if (in != nullptr && in->type() == DataType::kFloat16 && as_float) {
          converted.push_back(AsFloat(*in, plan.largest_float16_constant));
          in = &converted.back();
        } else if (in != nullptr && in->type() == DataType::kBfloat16 && bfloat16_as_float) {
          converted.push_back(ConvertTensor(*in, DataType::kFloat));
          in = &converted.back();
        }
      }
    }
    ctx.outputs.resize(step.outputs.size());  // empty: cleared when given back
    if (step.concat_view && !as_float && !bfloat16_as_float) {
      if (std::optional<Tensor> view = ConcatAsView(node, step.opset, ctx.inputs)) {
        if (step.placed_concat >= 0) {
          plan.concat_placement->Record(step.placed_concat, node, step.opset, ctx.inputs, *view);
        }
        frame[step.outputs[0]] = RuntimeValue(*std::move(view));
        ++concat_views_;
        return absl::OkStatus();
      }
    }
    ctx.destinations = Destinations(plan, step);
    const Buffer* offered = nullptr;  // an input's buffer offered for output 0
    if (ctx.destinations == nullptr && !round_ && plan.widened.empty() && !as_float &&
        !bfloat16_as_float) {
      ctx.destinations = OverwrittenInput(step, frame);
      if (ctx.destinations != nullptr) offered = (*ctx.destinations)[0].get();
    }
    if (!step.subgraphs.empty()) {
      ctx.run_subgraph = [this, &step, &frame](
                             const Graph& graph,
                             std::vector<Tensor> args) -> absl::StatusOr<std::vector<Tensor>> {
        std::vector<RuntimeValue> values;
        for (Tensor& t : args) values.emplace_back(std::move(t));
        OVFIX_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out,
                               RunSubgraph(step, graph, frame, std::move(values)));
        std::vector<Tensor> tensors;
        for (RuntimeValue& v : out) {
          if (!v.is_tensor()) {
            return absl::InvalidArgumentError(absl::StrCat(
                step.node->Describe(), ": subgraph returned ", DescribeRuntimeValue(v)));
          }
          tensors.push_back(std::move(v.tensor));
        }
        return tensors;
      };
    }
    const absl::Status ran = step.kernel->fn(ctx);
    if (plan.release_kernel_state) step.state.reset();
    OVFIX_RETURN_IF_ERROR(ran);
    if (offered != nullptr && ctx.outputs[0].defined() &&
        ctx.outputs[0].buffer().get() == offered) {
      ++inputs_written_over_;
    }
    // The slices stay with the outputs made in them only: a slice held nowhere else lets its
    // buffer go back to the recycler once released (BufferRecycler::Give).
    destinations_.clear();
    // Not from float copies of half inputs: their sizes are not those the producers make.
    if (step.placed_concat >= 0 && !as_float && !bfloat16_as_float && ctx.outputs[0].defined()) {
      plan.concat_placement->Record(step.placed_concat, node, step.opset, ctx.inputs,
                                    ctx.outputs[0]);
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      Tensor& t = ctx.outputs[i];
      if (!t.defined()) return MissingOutput(step, i);
      if (!plan.widened.empty() && plan.widened[step.outputs[i]]) {
        if (t.type() == DataType::kFloat16) {
          t = ConvertTensor(t, DataType::kFloat);  // e.g. Cast to float16: exact
        } else if (t.type() == DataType::kFloat && !step.keeps_half_values &&
                   !SharesInputBuffer(t, ctx)) {
          RoundInPlace(t, pool_);
        }
      } else if (t.type() == DataType::kFloat) {
        if (as_float && node.output(i)->elem_type() != DataType::kFloat)
          t = ConvertTensor(t, DataType::kFloat16);
        if (bfloat16_as_float && node.output(i)->elem_type() != DataType::kFloat)
          t = ConvertTensor(t, DataType::kBfloat16);
        if (round_ && t.type() == DataType::kFloat && !SharesInputBuffer(t, ctx)) {
          RoundInPlace(t, pool_);
        }
      }
      if (on_value_ != nullptr) (*on_value_)(*node.output(i), t);
      frame[step.outputs[i]] = RuntimeValue(std::move(t));
    }
    return absl::OkStatus();
  }

  // A float copy of a float16 input for one kernel call, in a buffer reused across steps (a
  // new allocation would be fresh pages each time: weights are converted this way).
  Tensor AsFloat(const Tensor& half, int64_t size_hint) {
    const size_t bytes = static_cast<size_t>(half.numel()) * sizeof(float);
    std::shared_ptr<Buffer>* best = nullptr;
    for (std::shared_ptr<Buffer>& b : scratch_) {
      // Only buffers no tensor holds any more (a kernel may return a view of its input).
      if (b.use_count() == 1 && b->size() >= bytes &&
          (best == nullptr || b->size() < (*best)->size())) {
        best = &b;
      }
    }
    if (best == nullptr) {
      // Keep a few: the smallest free one makes room for a larger one.
      constexpr size_t kMaxScratch = 4;
      if (scratch_.size() >= kMaxScratch) {
        auto victim = scratch_.end();
        for (auto it = scratch_.begin(); it != scratch_.end(); ++it) {
          if (it->use_count() == 1 &&
              (victim == scratch_.end() || (*it)->size() < (*victim)->size())) {
            victim = it;
          }
        }
        if (victim != scratch_.end()) scratch_.erase(victim);
      }
      const size_t hint = static_cast<size_t>(size_hint) * sizeof(float);
      scratch_.push_back(Buffer::Allocate(scratch_.empty() ? std::max(bytes, hint) : bytes,
                                          /*zero=*/false));
      best = &scratch_.back();
    }
    Tensor out(DataType::kFloat, half.dims(), *best);
    Float16TensorToFloats(half, out.data<float>());  // a lazy weight stays unmade
    return out;
  }

  // Views of inputs (Reshape, Identity) hold rounded values already and must not be written.
  static bool SharesInputBuffer(const Tensor& t, const KernelContext& ctx) {
    if (t.buffer() == nullptr) return true;
    for (const Tensor* in : ctx.inputs) {
      if (in != nullptr && in->buffer() == t.buffer()) return true;
    }
    return false;
  }

  // Where the outputs of `step` go when the plan placed them in a Concat's output: slices of
  // this run's buffer of their nest (made here for the first of them). Null when none is.
  const std::vector<std::shared_ptr<Buffer>>* Destinations(const Plan& plan, const Step& step) {
    if (plan.concat_placement == nullptr || step.concat_view) return nullptr;
    const ConcatPlacement& placement = *plan.concat_placement;
    bool any = false;
    for (int slot : step.outputs) any = any || (slot >= 0 && placement.RangeOf(slot).root >= 0);
    if (!any) return nullptr;
    destinations_.assign(step.outputs.size(), nullptr);
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      const ConcatPlacement::Range& range = placement.RangeOf(step.outputs[i]);
      if (range.root < 0) continue;
      std::shared_ptr<Buffer>& root = roots_[range.root];
      if (root == nullptr) root = recycler_->Take(placement.RootBytes(range.root), /*zero=*/false);
      destinations_[i] = Buffer::Slice(root, range.offset, range.bytes);
    }
    return &destinations_;
  }

  // An input the kernel may write over (KernelDef::overwritable_input: a residual convolution's
  // residual) that this step reads last: its output is offered the residual's buffer (as
  // onnxruntime's NCHWc Conv writes over its Sum input), which it then reads and writes a line
  // at a time instead of reading one tensor and writing another (three ResNet bottlenecks at
  // 56x56, 256 -> 64 -> 256 channels, each node's time over 100 runs, five alternations: the
  // residual convolutions a median 6 % faster, the 1x1 convolutions that read their outputs
  // 5 %). Only a buffer that the value alone holds (no view, no slice of a Concat's output,
  // not another input of the step); the kernel takes it only where that gives the same bits
  // (exec/cpu/conv_nhwc.cc). Null when there is none.
  const std::vector<std::shared_ptr<Buffer>>* OverwrittenInput(const Step& step,
                                                               std::vector<RuntimeValue>& frame) {
    const int k = step.kernel->overwritable_input;
    if (k < 0 || static_cast<size_t>(k) >= step.inputs.size() || step.outputs.empty() ||
        step.outputs[0] < 0) {
      return nullptr;
    }
    const int slot = step.inputs[k];
    if (slot < 0 || std::count(step.inputs.begin(), step.inputs.end(), slot) != 1 ||
        std::find(step.release.begin(), step.release.end(), slot) == step.release.end() ||
        !frame[slot].is_tensor()) {
      return nullptr;
    }
    const std::shared_ptr<Buffer>& buffer = frame[slot].tensor.buffer();
    if (buffer == nullptr || buffer.use_count() != 1 || buffer->whole() != nullptr ||
        buffer->is_file_view() || buffer->owned_string() != nullptr) {
      return nullptr;
    }
    destinations_.assign(step.outputs.size(), nullptr);
    destinations_[0] = buffer;
    return &destinations_;
  }

  ThreadPool* pool_;
  BufferRecycler* recycler_;
  bool round_;
  const std::function<void(const Value&, const Tensor&)>* on_value_;
  const std::function<void(const Node&, double)>* on_node_time_;
  uint64_t random_seed_;
  std::vector<std::shared_ptr<Buffer>> scratch_;  // see AsFloat
  // Per slot of the main plan, the buffer of the Concat nest it is the outermost Concat of,
  // while this run makes the values in it (Destinations).
  std::vector<std::shared_ptr<Buffer>> roots_;
  std::vector<std::shared_ptr<Buffer>> destinations_;  // KernelContext::destinations
  int concat_views_ = 0;                               // CpuSession::concat_views
  int inputs_written_over_ = 0;                        // CpuSession::inputs_written_over
  // KernelContext::inputs and outputs of the last tensor step, cleared (see RunTensorStep).
  std::vector<const Tensor*> spare_inputs_;
  std::vector<Tensor> spare_outputs_;
};

absl::Status CheckInput(const Value& declared, const RuntimeValue& given) {
  const onnx::TypeProto& type = declared.type();
  const std::string name = QuotedName(&declared);
  if (type.has_optional_type()) return absl::OkStatus();
  if (type.has_sequence_type()) {
    if (given.is_sequence()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("input ", name, " must be a sequence, got ", DescribeRuntimeValue(given)));
  }
  if (!given.is_tensor()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", name, " must be a tensor, got ", DescribeRuntimeValue(given)));
  }
  const Tensor& t = given.tensor;
  const DataType want = declared.elem_type();
  if (want != DataType::kUndefined && want != t.type()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", name, " is ", DescribeTensor(t),
                                                   " but the graph declares ",
                                                   DescribeType(declared)));
  }
  if (std::optional<std::vector<Dim>> dims = declared.shape()) {
    bool fits = dims->size() == t.rank();
    for (size_t i = 0; fits && i < dims->size(); ++i) {
      fits = !(*dims)[i].known() || (*dims)[i].value == t.dim(i);
    }
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat("input ", name, " has shape ",
                                                     DescribeTensor(t), " but the graph declares ",
                                                     DescribeType(declared)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

CpuSession::CpuSession(const SessionOptions& options) : recycler_(options.recycled_bytes) {
  options_ = options;
}
CpuSession::~CpuSession() = default;

absl::StatusOr<std::unique_ptr<CpuSession>> CpuSession::Create(const Model& model,
                                                               const SessionOptions& options) {
  std::unique_ptr<CpuSession> session(new CpuSession(ResolvePrecision(model, options)));
  session->pool_ = std::make_unique<ThreadPool>(options.threads);
  session->plan_ = std::make_unique<Plan>();
  const SessionOptions& o = session->options_;
  if (o.fuse_qdq && o.precision == Precision::kFp32 && !o.capture && !o.on_value) {
    OVFIX_ASSIGN_OR_RETURN(session->fused_model_, FuseQdqConvsInCopy(model));
  }
  const Model& compiled = session->fused_model_ ? *session->fused_model_ : model;
  Compiler compiler(compiled, session->options_, session->pool_.get());
  PlanBuilder<Compiler> builder(compiled, compiler);
  OVFIX_RETURN_IF_ERROR(builder.Compile(compiled.graph(), nullptr, *session->plan_));
  return session;
}

absl::StatusOr<std::vector<RuntimeValue>> CpuSession::RunValues(const ValueMap& inputs) {
  const Plan& plan = *plan_;
  const Graph& graph = *plan.graph;
  // Outputs of earlier runs that the caller has let go of are this run's buffers. Those it
  // still holds are looked at again next time (a caller that assigns a run's outputs over the
  // last ones lets those go only after this run), a few runs' worth at most.
  std::vector<Tensor> still_held;
  for (Tensor& t : handed_out_) {
    if (t.buffer() != nullptr && t.buffer().use_count() > 1) {
      still_held.push_back(std::move(t));
    } else {
      recycler_.Give(t);
    }
  }
  const size_t keep = 2 * plan.output_slots.size();
  if (still_held.size() > keep) still_held.erase(still_held.begin(), still_held.end() - keep);
  handed_out_ = std::move(still_held);
  std::vector<RuntimeValue> frame;
  Runner::InitFrame(plan, frame, nullptr);
  absl::flat_hash_set<std::string> known;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value* v = graph.inputs()[i];
    known.insert(v->name());
    auto it = inputs.find(v->name());
    if (it == inputs.end()) {
      if (v->is_initializer()) continue;
      return absl::InvalidArgumentError(
          absl::StrCat("missing input ", QuotedName(v), " (", DescribeType(*v), ")"));
    }
    OVFIX_RETURN_IF_ERROR(CheckInput(*v, it->second));
    RuntimeValue value = it->second;
    if (options_.RoundsFloat32() && value.is_tensor() && value.tensor.type() == DataType::kFloat) {
      value.tensor = RoundedCopy(value.tensor, pool_.get());
    }
    if (!plan.widened.empty() && plan.widened[plan.input_slots[i]]) {
      value.tensor = ConvertTensor(value.tensor, DataType::kFloat);
    }
    frame[plan.input_slots[i]] = std::move(value);
  }
  for (const auto& [name, value] : inputs) {
    if (!known.contains(name)) {
      std::vector<std::string> names;
      for (const Value* v : graph.inputs()) {
        if (!v->is_initializer()) names.push_back(v->name());
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown input '", name, "' (the graph's inputs: ", absl::StrJoin(names, ", "), ")"));
    }
  }
  Runner runner(pool_.get(), &recycler_, options_);
  absl::Status status = runner.RunPlan(plan, frame);
  concat_views_ = runner.concat_views();
  inputs_written_over_ = runner.inputs_written_over();
  // Widened float16 values go back to float16 wherever they leave the session.
  auto narrowed = [&](int slot) -> RuntimeValue {
    if (plan.widened.empty() || !plan.widened[slot]) return frame[slot];
    return Runner::Narrowed(frame[slot]);
  };
  captured_.clear();
  if (options_.capture) {
    for (int s = 0; s < plan.num_slots; ++s) {
      if (frame[s].is_tensor()) captured_[plan.slot_names[s]] = narrowed(s).tensor;
    }
  }
  if (!status.ok()) return status;
  std::vector<RuntimeValue> outputs;
  for (size_t i = 0; i < plan.output_slots.size(); ++i) {
    if (!frame[plan.output_slots[i]].is_set()) {
      return absl::InternalError(
          absl::StrCat("graph output ", QuotedName(graph.outputs()[i]), " was not computed"));
    }
    outputs.push_back(narrowed(plan.output_slots[i]));
    if (outputs.back().is_tensor()) handed_out_.push_back(outputs.back().tensor);
  }
  return outputs;
}

absl::StatusOr<std::vector<Tensor>> CpuSession::Run(const TensorMap& inputs) {
  ValueMap values;
  for (const auto& [name, tensor] : inputs) values.emplace(name, RuntimeValue(tensor));
  OVFIX_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out, RunValues(values));
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].is_tensor()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output ", QuotedName(plan_->graph->outputs()[i]), " is ",
                       DescribeRuntimeValue(out[i]), "; use CpuSession::RunValues"));
    }
    tensors.push_back(std::move(out[i].tensor));
  }
  return tensors;
}

SessionOptions ResolvePrecision(const Model& model, SessionOptions options) {
  options.float32_as_typed = options.precision != Precision::kFp32 && !options.islands_ignored &&
                             DeclaresFloat16(model.graph());
  return options;
}

std::vector<std::string> Session::PrecisionNotes() const {
  if (!options_.float32_as_typed) return {};
  return {absl::StrCat(
      "the model declares float16 data: ", std::string(PrecisionName(options_.precision)),
      " applies to its float16 values; its float32 values stay float32")};
}

absl::StatusOr<Precision> ParsePrecision(std::string_view text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "fp16-storage") return Precision::kFp16Storage;
  if (text == "fp16") return Precision::kFp16;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", std::string(text), "' (fp32, fp16-storage or fp16)"));
}

std::string_view PrecisionName(Precision p) {
  static constexpr std::string_view kNames[] = {"fp32", "fp16-storage", "fp16"};
  return kNames[static_cast<size_t>(p)];
}

absl::StatusOr<std::unique_ptr<Session>> CreateSession(const Model& model,
                                                       const SessionOptions& options) {
  if (options.backend == "opencl") return opencl::CreateOpenclSession(model, options);
  if (options.backend != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown backend '", options.backend, "' (available: cpu, opencl)"));
  }
  OVFIX_ASSIGN_OR_RETURN(std::unique_ptr<CpuSession> session, CpuSession::Create(model, options));
  return std::unique_ptr<Session>(std::move(session));
}

}  // namespace ovfix::exec
