#include "exec/opencl/opencl_session.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "exec/kernel.h"
#include "exec/opencl/op_context.h"
#include "exec/opencl/opencl_runtime.h"
#include "ir/float16.h"

namespace ovfix::exec::opencl {
namespace {

struct Step {
  const Node* node;
  int opset;
  const OpDef* op;             // null: CPU only
  const KernelDef* cpu;        // null: OpenCL only
  std::vector<int> inputs, outputs;  // slots, -1 for omitted
  std::vector<int> release;    // slots whose last reader is this step
  bool on_cpu = false;         // no OpenCL op, or the op declined this node
  bool noted = false;          // its CPU fallback is in notes()
  std::shared_ptr<void> state;
};

class OpenclSession : public Session {
 public:
  absl::Status Init(const Model& model, const SessionOptions& options) {
    options_ = options;
    auto rt = Runtime::Create(options.device);
    if (!rt.ok()) return rt.status();
    rt_ = *std::move(rt);
    if (options.precision == Precision::kFp16 && !rt_->device().fp16) {
      return absl::InvalidArgumentError(absl::StrCat(
          "OpenCL device '", rt_->device().name,
          "' has no cl_khr_fp16 (half arithmetic); use the fp16-storage precision instead"));
    }
    graph_ = &model.graph();
    absl::flat_hash_map<const Value*, int> slot;
    auto slot_of = [&](const Value* v) {
      auto [it, inserted] = slot.emplace(v, static_cast<int>(slot.size()));
      if (inserted) names_.push_back(v->name());
      return it->second;
    };
    for (const Value* v : graph_->initializers()) {
      const int s = slot_of(v);
      ClValue c;
      c.type = v->tensor().type();
      c.dims = v->tensor().dims();
      c.half = StoresHalf(c.type);
      c.host = Rounded(v->tensor());
      constants_.emplace_back(s, std::move(c));
    }
    for (const Value* v : graph_->inputs()) {
      if (!v->is_initializer()) input_slots_.emplace_back(v, slot_of(v));
    }
    for (Node* n : graph_->nodes()) {
      if (!n->subgraphs().empty()) {
        return absl::UnimplementedError(absl::StrCat(
            n->Describe(), ": the opencl backend does not run control flow; use --backend cpu"));
      }
      Step step;
      step.node = n;
      const std::string& domain = n->domain();
      step.opset = static_cast<int>(model.OpsetVersion(domain));
      step.op = domain.empty() || domain == "ai.onnx" ? FindOp(n->op_type(), step.opset) : nullptr;
      step.cpu = FindKernel(domain, n->op_type(), step.opset);
      if (step.op == nullptr && step.cpu == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(n->Describe(), ": unsupported op ",
                                                       n->op_type(), " (opset ", step.opset, ")"));
      }
      if (step.op == nullptr) step.on_cpu = true;
      for (Value* v : n->inputs()) step.inputs.push_back(v ? slot_of(v) : -1);
      for (Value* v : n->outputs()) step.outputs.push_back(v ? slot_of(v) : -1);
      steps_.push_back(std::move(step));
    }
    for (const Value* v : graph_->outputs()) output_slots_.push_back(slot_of(v));
    num_slots_ = static_cast<int>(slot.size());
    // Free each intermediate after its last reader (never constants or outputs).
    std::vector<int> last(num_slots_, -1);
    for (size_t i = 0; i < steps_.size(); ++i) {
      for (int s : steps_[i].inputs) {
        if (s >= 0) last[s] = static_cast<int>(i);
      }
    }
    std::vector<bool> keep(num_slots_, false);
    for (const auto& [s, c] : constants_) keep[s] = true;
    for (int s : output_slots_) keep[s] = true;
    for (int s = 0; s < num_slots_; ++s) {
      if (last[s] >= 0 && !keep[s]) steps_[last[s]].release.push_back(s);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Tensor>> Run(const TensorMap& inputs) override {
    captured_.clear();
    std::vector<ClValue> values(num_slots_);
    for (auto& [s, c] : constants_) {
      if (auto st = EnsureDevice(*rt_, c); !st.ok()) return st;  // uploaded once, kept
      values[s] = c;
    }
    for (const auto& [v, s] : input_slots_) {
      auto it = inputs.find(v->name());
      if (it == inputs.end()) {
        return absl::InvalidArgumentError(absl::StrCat("missing input '", v->name(), "'"));
      }
      if (v->is_tensor() && it->second.type() != v->elem_type()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", v->name(), "' is ", std::string(DataTypeName(it->second.type())),
            ", the model wants ", std::string(DataTypeName(v->elem_type()))));
      }
      ClValue& c = values[s];
      c.type = it->second.type();
      c.dims = it->second.dims();
      c.half = StoresHalf(c.type);
      c.host = Rounded(it->second);
    }
    for (const auto& [name, t] : inputs) {
      if (std::none_of(input_slots_.begin(), input_slots_.end(),
                       [&](const auto& p) { return p.first->name() == name; })) {
        return absl::InvalidArgumentError(absl::StrCat("the model has no input '", name, "'"));
      }
    }
    if (options_.capture) {
      for (const auto& [s, c] : constants_) {
        if (auto st = Capture(s, values[s]); !st.ok()) return st;
      }
      for (const auto& [v, s] : input_slots_) {
        if (auto st = Capture(s, values[s]); !st.ok()) return st;
      }
    }
    for (Step& step : steps_) {
      if (auto s = RunStep(step, values); !s.ok()) return s;
      if (options_.capture) {
        for (int o : step.outputs) {
          if (o >= 0) {
            if (auto s = Capture(o, values[o]); !s.ok()) return s;
          }
        }
      }
      for (int r : step.release) values[r] = ClValue{};
    }
    std::vector<Tensor> outputs;
    for (int s : output_slots_) {
      if (auto st = EnsureHost(*rt_, values[s]); !st.ok()) return st;
      outputs.push_back(*values[s].host);
    }
    return outputs;
  }

  const TensorMap& captured() const override { return captured_; }
  std::vector<std::string> notes() const override {
    std::vector<std::string> out = {absl::StrCat("OpenCL device: ", rt_->device().name)};
    out.insert(out.end(), notes_.begin(), notes_.end());
    return out;
  }

 private:
  bool StoresHalf(DataType t) const {
    return t == DataType::kFloat16 ||
           (t == DataType::kFloat && options_.precision != Precision::kFp32);
  }

  // In fp16 precisions float host data is rounded to what half storage holds.
  Tensor Rounded(const Tensor& t) const {
    if (t.type() != DataType::kFloat || options_.precision == Precision::kFp32) return t;
    Tensor r = t.Clone();
    RoundFloatsToHalf(r.data<float>(), r.numel());
    return r;
  }

  absl::Status Capture(int slot, ClValue& v) {
    if (auto s = EnsureHost(*rt_, v); !s.ok()) return s;
    captured_[names_[slot]] = *v.host;
    return absl::OkStatus();
  }

  absl::Status RunStep(Step& step, std::vector<ClValue>& values) {
    // Integer values that only live on the host are shape arithmetic (Shape -> Gather ->
    // Concat, Constant): the CPU kernel computes them where they are, no transfer.
    bool host_only = step.cpu != nullptr;
    for (int s : step.inputs) {
      if (s < 0) continue;
      const ClValue& v = values[s];
      if (v.device || v.type == DataType::kFloat || v.type == DataType::kFloat16) host_only = false;
    }
    if (host_only) return RunOnCpu(step, values);
    if (!step.on_cpu) {
      OpContext ctx(*step.node, step.opset, *rt_, options_.precision);
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
      step.noted = true;
      notes_.push_back(absl::StrCat(step.node->Describe(), ": runs on the CPU (", s.message(), ")"));
    }
    if (!step.noted) {
      step.noted = true;
      notes_.push_back(absl::StrCat(step.node->Describe(), ": no OpenCL kernel, runs on the CPU"));
    }
    return RunOnCpu(step, values);
  }

  absl::Status RunOnCpu(Step& step, std::vector<ClValue>& values) {
    KernelContext ctx{*step.node, step.opset, {}, {}, nullptr, &step.state, {}};
    std::vector<Tensor> converted;
    converted.reserve(step.inputs.size());
    bool has_half = false;
    for (int s : step.inputs) {
      if (s >= 0) {
        if (auto st = EnsureHost(*rt_, values[s]); !st.ok()) return st;
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
    ctx.outputs.resize(step.outputs.size());
    if (auto s = step.cpu->fn(ctx); !s.ok()) return s;
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
      ClValue& out = values[step.outputs[i]];
      out = ClValue{};
      out.type = t.type();
      out.dims = t.dims();
      out.half = StoresHalf(out.type);
      out.host = Rounded(t);
    }
    return absl::OkStatus();
  }

  std::unique_ptr<Runtime> rt_;
  const Graph* graph_ = nullptr;
  int num_slots_ = 0;
  std::vector<std::string> names_;
  std::vector<std::pair<int, ClValue>> constants_;
  std::vector<std::pair<const Value*, int>> input_slots_;
  std::vector<int> output_slots_;
  std::vector<Step> steps_;
  std::vector<std::string> notes_;
  TensorMap captured_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> CreateOpenclSession(const Model& model,
                                                             const SessionOptions& options) {
  auto session = std::make_unique<OpenclSession>();
  if (auto s = session->Init(model, options); !s.ok()) return s;
  return std::unique_ptr<Session>(std::move(session));
}

}  // namespace ovfix::exec::opencl
