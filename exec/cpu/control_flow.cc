// Constant and the ops that run subgraphs: If, Loop, Scan (opset 8 and 9+), SequenceMap.
// If/Loop/Scan/SequenceMap are value kernels (exec/cpu/control_flow.h) so sequences can be
// loop-carried; their kernel table entries adapt them to tensor-only KernelContexts.
#include "exec/cpu/control_flow.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_join.h"
#include "exec/kernel.h"
#include "ir/constant.h"
#include "ir/graph.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "ir/value.h"

namespace ovfix::exec {
namespace {

// ---- Constant ----

// A SparseTensorProto made dense: values scattered at linear or per-dim indices.
absl::StatusOr<Tensor> DenseFromSparse(const onnx::SparseTensorProto& sparse) {
  OVFIX_ASSIGN_OR_RETURN(Tensor values, TensorFromProto(sparse.values()));
  OVFIX_ASSIGN_OR_RETURN(Tensor indices, TensorFromProto(sparse.indices()));
  std::vector<int64_t> dims(sparse.dims().begin(), sparse.dims().end());
  if (values.type() == DataType::kString) {
    return absl::InvalidArgumentError("sparse string constants are not supported");
  }
  Tensor dense(values.type(), dims);
  const int64_t count = values.numel();
  const int64_t total = dense.numel();
  const size_t element = ElementSize(values.type());
  const bool per_dim = indices.rank() == 2;
  if ((!per_dim && indices.numel() != count) ||
      (per_dim && (indices.dim(0) != count || indices.dim(1) != (int64_t)dims.size()))) {
    return absl::InvalidArgumentError("sparse constant: indices do not match values");
  }
  for (int64_t i = 0; i < count; ++i) {
    int64_t linear = 0;
    if (per_dim) {
      for (size_t d = 0; d < dims.size(); ++d) {
        const int64_t index = indices.GetAsInt64(i * (int64_t)dims.size() + d);
        if (index < 0 || index >= dims[d]) {
          return absl::InvalidArgumentError("sparse constant: index out of range");
        }
        linear = linear * dims[d] + index;
      }
    } else {
      linear = indices.GetAsInt64(i);
    }
    if (linear < 0 || linear >= total) {
      return absl::InvalidArgumentError("sparse constant: index out of range");
    }
    std::memcpy(static_cast<std::byte*>(dense.raw()) + linear * element,
                static_cast<const std::byte*>(values.raw()) + i * element, element);
  }
  return dense;
}

absl::StatusOr<Tensor> DecodeConstant(const Node& node) {
  if (const onnx::AttributeProto* a = node.FindAttribute("sparse_value")) {
    return DenseFromSparse(a->sparse_tensor());
  }
  return ConstantNodeValue(node);
}

// The decoded attribute is kept in the node's state: Loop bodies run Constants many times.
absl::Status ConstantKernel(KernelContext& ctx) {
  if (ctx.outputs.empty()) return ctx.Error("Constant needs one output");
  if (ctx.state != nullptr && *ctx.state) {
    ctx.outputs[0] = *static_cast<const Tensor*>(ctx.state->get());
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> value = DecodeConstant(ctx.node);
  if (!value.ok()) return ctx.Error(value.status().message());
  ctx.outputs[0] = *value;
  if (ctx.state != nullptr) *ctx.state = std::make_shared<Tensor>(std::move(*value));
  return absl::OkStatus();
}

// ---- shared pieces ----

Tensor ScalarInt64(int64_t v) { return Tensor::FromVector<int64_t>(DataType::kInt64, {}, {v}); }
Tensor ScalarBool(bool v) {
  return Tensor::FromVector<uint8_t>(DataType::kBool, {}, {static_cast<uint8_t>(v)});
}

absl::StatusOr<bool> ReadCondition(const ValueContext& ctx, const RuntimeValue& v,
                                   const char* what) {
  if (!v.is_tensor() || v.tensor.numel() != 1 || v.tensor.type() == DataType::kString) {
    return ctx.Error(what, " must be a one-element tensor, got ", DescribeRuntimeValue(v));
  }
  return v.tensor.GetAsDouble(0) != 0.0;
}

// Checks a subgraph's result count and runs it.
absl::StatusOr<std::vector<RuntimeValue>> RunBody(const ValueContext& ctx, const Graph& body,
                                                  std::vector<RuntimeValue> args) {
  if (args.size() != body.inputs().size()) {
    return ctx.Error("subgraph '", body.name(), "' takes ", body.inputs().size(), " inputs, given ",
                     args.size());
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out, ctx.run_subgraph(body, std::move(args)));
  if (out.size() != body.outputs().size()) {
    return ctx.Error("subgraph '", body.name(), "' returned ", out.size(), " values");
  }
  return out;
}

// Stacks the per-iteration scan outputs; an empty list gives [0, declared dims...].
absl::StatusOr<Tensor> StackScanOutput(const ValueContext& ctx, const std::vector<Tensor>& parts,
                                       const Value* declared, int64_t axis) {
  if (parts.empty()) {
    DataType type = declared != nullptr ? declared->elem_type() : DataType::kUndefined;
    if (type == DataType::kUndefined) type = DataType::kFloat;
    std::vector<int64_t> dims = {0};
    if (declared != nullptr) {
      if (std::optional<std::vector<int64_t>> s = declared->static_shape()) {
        dims.insert(dims.end(), s->begin(), s->end());
      }
    }
    if (type == DataType::kString) return Tensor(dims, {});
    return Tensor(type, dims);
  }
  absl::StatusOr<Tensor> stacked = StackOnNewAxis(parts, axis);
  if (!stacked.ok()) return ctx.Error("scan output: ", stacked.status().message());
  return stacked;
}

// ---- If ----

absl::Status IfKernel(ValueContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("If needs a condition");
  OVFIX_ASSIGN_OR_RETURN(bool cond, ReadCondition(ctx, ctx.input(0), "condition"));
  const char* branch_name = cond ? "then_branch" : "else_branch";
  const Graph* branch = ctx.node.GetSubgraph(branch_name);
  if (branch == nullptr) return ctx.Error("missing ", branch_name);
  OVFIX_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out, RunBody(ctx, *branch, {}));
  if (out.size() < ctx.outputs.size()) {
    return ctx.Error(branch_name, " returns ", out.size(), " values, the node has ",
                     ctx.outputs.size(), " outputs");
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) ctx.outputs[i] = std::move(out[i]);
  return absl::OkStatus();
}

// ---- Loop ----

absl::Status LoopKernel(ValueContext& ctx) {
  const Graph* body = ctx.node.GetSubgraph("body");
  if (body == nullptr) return ctx.Error("missing body");
  if (ctx.inputs.size() < 2) return ctx.Error("Loop needs inputs M and cond (may be empty)");
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (ctx.has_input(0)) {
    const RuntimeValue& m = ctx.input(0);
    if (!m.is_tensor() || m.tensor.numel() != 1 || m.tensor.type() == DataType::kString) {
      return ctx.Error("M must be a one-element tensor");
    }
    max_trips = m.tensor.GetAsInt64(0);
  }
  const bool use_cond = ctx.has_input(1);
  bool cond = true;
  if (use_cond) {
    OVFIX_ASSIGN_OR_RETURN(bool c, ReadCondition(ctx, ctx.input(1), "cond"));
    cond = c;
  }
  const size_t carried_count = ctx.inputs.size() - 2;
  if (body->inputs().size() != carried_count + 2) {
    return ctx.Error("body takes ", body->inputs().size(), " inputs, expected ", carried_count + 2);
  }
  if (body->outputs().size() < carried_count + 1) {
    return ctx.Error("body returns ", body->outputs().size(), " values, expected at least ",
                     carried_count + 1);
  }
  const size_t scan_count = body->outputs().size() - 1 - carried_count;
  std::vector<RuntimeValue> carried(carried_count);
  for (size_t i = 0; i < carried_count; ++i) {
    if (!ctx.has_input(i + 2)) return ctx.Error("loop-carried input ", i, " is missing");
    carried[i] = ctx.input(i + 2);
  }
  std::vector<std::vector<Tensor>> scans(scan_count);
  for (int64_t trip = 0; trip < max_trips && cond; ++trip) {
    std::vector<RuntimeValue> args;
    args.reserve(carried_count + 2);
    args.emplace_back(ScalarInt64(trip));
    args.emplace_back(ScalarBool(cond));
    for (RuntimeValue& v : carried) args.push_back(std::move(v));
    OVFIX_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out, RunBody(ctx, *body, std::move(args)));
    if (use_cond) {
      OVFIX_ASSIGN_OR_RETURN(bool c, ReadCondition(ctx, out[0], "body condition output"));
      cond = c;
    }
    for (size_t i = 0; i < carried_count; ++i) carried[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < scan_count; ++k) {
      RuntimeValue& v = out[1 + carried_count + k];
      if (!v.is_tensor()) return ctx.Error("scan output ", k, " is not a tensor");
      scans[k].push_back(std::move(v.tensor));
    }
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (i < carried_count) {
      ctx.outputs[i] = std::move(carried[i]);
    } else if (i - carried_count < scan_count) {
      const size_t k = i - carried_count;
      OVFIX_ASSIGN_OR_RETURN(
          Tensor t, StackScanOutput(ctx, scans[k], body->outputs()[1 + carried_count + k], 0));
      ctx.outputs[i] = RuntimeValue(std::move(t));
    }
  }
  return absl::OkStatus();
}

// ---- Scan ----

struct ScanSpec {
  size_t state_count = 0, scan_in_count = 0, scan_out_count = 0;
  std::vector<int64_t> in_directions, out_directions, in_axes, out_axes;
};

// One Scan over inputs without a batch axis: returns final states then scan outputs.
absl::StatusOr<std::vector<Tensor>> ScanOnce(const ValueContext& ctx, const Graph& body,
                                             const ScanSpec& spec, std::vector<Tensor> states,
                                             const std::vector<const Tensor*>& scan_inputs) {
  int64_t length = -1;
  std::vector<int64_t> axes(spec.scan_in_count);
  for (size_t j = 0; j < spec.scan_in_count; ++j) {
    const Tensor& t = *scan_inputs[j];
    int64_t axis = spec.in_axes[j];
    if (axis < 0) axis += t.rank();
    if (axis < 0 || axis >= (int64_t)t.rank()) return ctx.Error("scan_input_axes out of range");
    axes[j] = axis;
    if (length >= 0 && t.dim(axis) != length) {
      return ctx.Error("scan inputs have different lengths");
    }
    length = t.dim(axis);
  }
  if (length < 0) length = 0;
  std::vector<std::vector<Tensor>> scans(spec.scan_out_count);
  for (int64_t step = 0; step < length; ++step) {
    std::vector<RuntimeValue> args;
    args.reserve(spec.state_count + spec.scan_in_count);
    for (Tensor& s : states) args.emplace_back(std::move(s));
    for (size_t j = 0; j < spec.scan_in_count; ++j) {
      const int64_t index = spec.in_directions[j] == 1 ? length - 1 - step : step;
      absl::StatusOr<Tensor> slice = TakeAlongAxis(*scan_inputs[j], axes[j], index);
      if (!slice.ok()) return ctx.Error(slice.status().message());
      args.emplace_back(std::move(*slice));
    }
    OVFIX_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out, RunBody(ctx, body, std::move(args)));
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].is_tensor()) return ctx.Error("Scan body output ", i, " is not a tensor");
    }
    for (size_t i = 0; i < spec.state_count; ++i) states[i] = std::move(out[i].tensor);
    for (size_t k = 0; k < spec.scan_out_count; ++k) {
      scans[k].push_back(std::move(out[spec.state_count + k].tensor));
    }
  }
  std::vector<Tensor> result = std::move(states);
  for (size_t k = 0; k < spec.scan_out_count; ++k) {
    if (spec.out_directions[k] == 1) std::reverse(scans[k].begin(), scans[k].end());
    int64_t axis = spec.out_axes[k];
    const Value* declared = body.outputs()[spec.state_count + k];
    if (axis < 0) {
      const int64_t rank = scans[k].empty() ? (declared->rank() < 0 ? 0 : declared->rank())
                                            : (int64_t)scans[k][0].rank();
      axis += rank + 1;
    }
    if (axis < 0 || (!scans[k].empty() && axis > (int64_t)scans[k][0].rank())) {
      return ctx.Error("scan_output_axes out of range");
    }
    OVFIX_ASSIGN_OR_RETURN(Tensor t, StackScanOutput(ctx, scans[k], declared, axis));
    result.push_back(std::move(t));
  }
  return result;
}

absl::StatusOr<std::vector<int64_t>> ListAttribute(const ValueContext& ctx, const char* name,
                                                   size_t size) {
  std::vector<int64_t> v = ctx.node.GetInts(name, std::vector<int64_t>(size, 0));
  if (v.size() != size) return ctx.Error(name, " must have ", size, " entries");
  return v;
}

absl::Status ScanKernel(ValueContext& ctx) {
  const Graph* body = ctx.node.GetSubgraph("body");
  if (body == nullptr) return ctx.Error("missing body");
  const bool batched = ctx.opset < 9;  // opset 8: leading sequence_lens input and batch axis
  const size_t first = batched ? 1 : 0;
  const int64_t scan_in_count = ctx.node.GetInt("num_scan_inputs", -1);
  if (scan_in_count < 0 || ctx.inputs.size() < first + scan_in_count) {
    return ctx.Error("num_scan_inputs is missing or larger than the input count");
  }
  ScanSpec spec;
  spec.scan_in_count = scan_in_count;
  spec.state_count = ctx.inputs.size() - first - scan_in_count;
  if (body->inputs().size() != spec.state_count + spec.scan_in_count ||
      body->outputs().size() < spec.state_count) {
    return ctx.Error("body signature does not match the node's inputs");
  }
  spec.scan_out_count = body->outputs().size() - spec.state_count;
  OVFIX_ASSIGN_OR_RETURN(
      spec.in_directions,
      ListAttribute(ctx, batched ? "directions" : "scan_input_directions", spec.scan_in_count));
  if (batched) {
    spec.in_axes.assign(spec.scan_in_count, 0);
    spec.out_axes.assign(spec.scan_out_count, 0);
    spec.out_directions.assign(spec.scan_out_count, 0);
  } else {
    OVFIX_ASSIGN_OR_RETURN(spec.out_directions,
                           ListAttribute(ctx, "scan_output_directions", spec.scan_out_count));
    OVFIX_ASSIGN_OR_RETURN(spec.in_axes, ListAttribute(ctx, "scan_input_axes", spec.scan_in_count));
    OVFIX_ASSIGN_OR_RETURN(spec.out_axes,
                           ListAttribute(ctx, "scan_output_axes", spec.scan_out_count));
  }
  std::vector<const Tensor*> inputs;
  for (size_t i = first; i < ctx.inputs.size(); ++i) {
    OVFIX_ASSIGN_OR_RETURN(const Tensor* t, ctx.TensorInput(i));
    inputs.push_back(t);
  }
  if (!batched) {
    std::vector<Tensor> states;
    for (size_t i = 0; i < spec.state_count; ++i) states.push_back(*inputs[i]);
    std::vector<const Tensor*> scans(inputs.begin() + spec.state_count, inputs.end());
    OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> out, ScanOnce(ctx, *body, spec, states, scans));
    for (size_t i = 0; i < ctx.outputs.size() && i < out.size(); ++i) {
      ctx.outputs[i] = RuntimeValue(std::move(out[i]));
    }
    return absl::OkStatus();
  }
  // Opset 8: every input has a leading batch axis; each batch entry is one scan.
  if (inputs.empty() || inputs[0]->rank() == 0) return ctx.Error("inputs need a batch axis");
  const int64_t batch = inputs[0]->dim(0);
  for (const Tensor* t : inputs) {
    if (t->rank() < 1 || t->dim(0) != batch) return ctx.Error("inputs differ in batch size");
  }
  if (ctx.has_input(0)) {
    OVFIX_ASSIGN_OR_RETURN(const Tensor* lens, ctx.TensorInput(0));
    const Tensor* first_scan = spec.scan_in_count > 0 ? inputs[spec.state_count] : nullptr;
    const int64_t full = first_scan != nullptr && first_scan->rank() > 1 ? first_scan->dim(1) : 0;
    for (int64_t b = 0; b < lens->numel(); ++b) {
      if (lens->GetAsInt64(b) != full) {
        return ctx.Error("sequence_lens shorter than the scan inputs are not supported");
      }
    }
  }
  std::vector<std::vector<Tensor>> per_output(spec.state_count + spec.scan_out_count);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> slices;
    for (const Tensor* t : inputs) {
      absl::StatusOr<Tensor> s = TakeAlongAxis(*t, 0, b);
      if (!s.ok()) return ctx.Error(s.status().message());
      slices.push_back(std::move(*s));
    }
    std::vector<Tensor> states(slices.begin(), slices.begin() + spec.state_count);
    std::vector<const Tensor*> scans;
    for (size_t j = spec.state_count; j < slices.size(); ++j) scans.push_back(&slices[j]);
    OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> out, ScanOnce(ctx, *body, spec, states, scans));
    for (size_t i = 0; i < out.size(); ++i) per_output[i].push_back(std::move(out[i]));
  }
  for (size_t i = 0; i < ctx.outputs.size() && i < per_output.size(); ++i) {
    OVFIX_ASSIGN_OR_RETURN(Tensor t, StackScanOutput(ctx, per_output[i], nullptr, 0));
    ctx.outputs[i] = RuntimeValue(std::move(t));
  }
  return absl::OkStatus();
}

// ---- SequenceMap ----

absl::Status SequenceMapKernel(ValueContext& ctx) {
  const Graph* body = ctx.node.GetSubgraph("body");
  if (body == nullptr) return ctx.Error("missing body");
  if (!ctx.has_input(0) || !ctx.input(0).is_sequence()) {
    return ctx.Error("input 0 must be a sequence");
  }
  const size_t length = ctx.input(0).sequence->size();
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
    if (ctx.input(i).is_sequence() && ctx.input(i).sequence->size() != length) {
      return ctx.Error("input sequences differ in length");
    }
  }
  std::vector<RuntimeValue::Sequence> results(ctx.outputs.size());
  for (size_t step = 0; step < length; ++step) {
    std::vector<RuntimeValue> args;
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      const RuntimeValue& in = ctx.input(i);
      args.push_back(in.is_sequence() ? RuntimeValue((*in.sequence)[step]) : in);
    }
    OVFIX_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out, RunBody(ctx, *body, std::move(args)));
    for (size_t k = 0; k < results.size() && k < out.size(); ++k) {
      if (!out[k].is_tensor()) return ctx.Error("body output ", k, " is not a tensor");
      results[k].push_back(std::move(out[k].tensor));
    }
  }
  for (size_t k = 0; k < results.size(); ++k) {
    ctx.outputs[k] = RuntimeValue::FromSequence(std::move(results[k]));
  }
  return absl::OkStatus();
}

absl::Status IfAdapter(KernelContext& ctx) { return RunValueKernelOnTensors(IfKernel, ctx); }
absl::Status LoopAdapter(KernelContext& ctx) { return RunValueKernelOnTensors(LoopKernel, ctx); }
absl::Status ScanAdapter(KernelContext& ctx) { return RunValueKernelOnTensors(ScanKernel, ctx); }
absl::Status SequenceOnlyKernel(KernelContext& ctx) {
  return ctx.Error("sequence and optional values need the cpu session's value path");
}

}  // namespace

std::string DescribeRuntimeValue(const RuntimeValue& v) {
  switch (v.kind) {
    case RuntimeValue::Kind::kTensor:
      return DescribeTensor(v.tensor);
    case RuntimeValue::Kind::kSequence:
      return absl::StrCat("sequence(", v.sequence->size(), ")");
    case RuntimeValue::Kind::kNone:
      return "none";
    default:
      return "unset";
  }
}

absl::StatusOr<const Tensor*> ValueContext::TensorInput(size_t i) const {
  if (!has_input(i)) return Error("input ", i, " is missing");
  if (!input(i).is_tensor()) {
    return Error("input ", i, " must be a tensor, got ", DescribeRuntimeValue(input(i)));
  }
  return &input(i).tensor;
}

ValueKernelFn FindValueKernel(std::string_view domain, std::string_view op_type) {
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  if (op_type == "If") return IfKernel;
  if (op_type == "Loop") return LoopKernel;
  if (op_type == "Scan") return ScanKernel;
  if (op_type == "SequenceMap") return SequenceMapKernel;
  for (const ValueKernelEntry& e : SequenceValueKernels()) {
    if (e.op_type == op_type) return e.fn;
  }
  return nullptr;
}

absl::Status RunValueKernelOnTensors(ValueKernelFn fn, KernelContext& ctx) {
  std::vector<RuntimeValue> inputs(ctx.inputs.size());
  ValueContext vctx{ctx.node, ctx.opset, {}, {}, {}};
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.inputs[i] != nullptr) inputs[i] = RuntimeValue(*ctx.inputs[i]);
    vctx.inputs.push_back(ctx.inputs[i] != nullptr ? &inputs[i] : nullptr);
  }
  vctx.outputs.resize(ctx.outputs.size());
  vctx.run_subgraph =
      [&ctx](const Graph& graph,
             std::vector<RuntimeValue> args) -> absl::StatusOr<std::vector<RuntimeValue>> {
    if (!ctx.run_subgraph) return ctx.Error("this executor cannot run subgraphs");
    std::vector<Tensor> tensors;
    for (RuntimeValue& v : args) {
      if (!v.is_tensor()) return ctx.Error("subgraph input is not a tensor");
      tensors.push_back(std::move(v.tensor));
    }
    OVFIX_ASSIGN_OR_RETURN(std::vector<Tensor> out, ctx.run_subgraph(graph, std::move(tensors)));
    std::vector<RuntimeValue> values;
    for (Tensor& t : out) values.emplace_back(std::move(t));
    return values;
  };
  OVFIX_RETURN_IF_ERROR(fn(vctx));
  for (size_t i = 0; i < vctx.outputs.size(); ++i) {
    if (vctx.outputs[i].is_set() && !vctx.outputs[i].is_tensor()) {
      return ctx.Error("output ", i, " is not a tensor");
    }
    ctx.outputs[i] = std::move(vctx.outputs[i].tensor);
  }
  return absl::OkStatus();
}

void AddControlFlowKernels(std::vector<KernelDef>& table) {
  constexpr Float16Mode kNative = Float16Mode::kNative;
  table.push_back({"", "Constant", 1, kLatestOpset, ConstantKernel, kNative});
  table.push_back({"", "If", 1, kLatestOpset, IfAdapter, kNative});
  table.push_back({"", "Loop", 1, kLatestOpset, LoopAdapter, kNative});
  table.push_back({"", "Scan", 8, kLatestOpset, ScanAdapter, kNative});
  table.push_back({"", "SequenceMap", 17, kLatestOpset, SequenceOnlyKernel, kNative});
  for (const ValueKernelEntry& e : SequenceValueKernels()) {
    table.push_back({"", e.op_type, e.since_version, kLatestOpset, SequenceOnlyKernel, kNative});
  }
}

}  // namespace ovfix::exec
