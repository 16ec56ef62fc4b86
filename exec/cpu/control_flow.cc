// Constant and the ops that run subgraphs: If, Loop, Scan (opset 8 and 9+), SequenceMap.
// If/Loop/Scan/SequenceMap are value kernels (exec/cpu/control_flow.h) so sequences can be
// loop-carried; their kernel table entries adapt them to tensor-only KernelContexts.
#include "exec/cpu/control_flow.h"

#include <cstring>

#include "absl/strings/str_join.h"
#include "exec/control_flow.h"
#include "exec/cpu/native_kernels.h"
#include "exec/kernel.h"
#include "ir/constant.h"
#include "ir/graph.h"
#include "ir/narrow_types.h"
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
  // Whole-byte elements are copied as bytes, packed sub-byte ones (int4, uint4, float4e2m1,
  // int2, uint2: ElementSize 0) one at a time.
  const DataType type = values.type();
  const bool packed = IsPacked(type);
  const size_t element = ElementSize(type);
  if (!packed && element == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse constants of ", std::string(DataTypeName(type)), " are not supported"));
  }
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
    if (packed) {
      SetPackedElement(type, dense.raw(), linear, GetPackedElement(type, values.raw(), i));
      continue;
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

// ---- If, Loop, Scan ----

// How exec/control_flow.h moves this session's values: tensors (or sequences, for Loop's
// carried values) held on the host.
class CpuControlFlow : public control_flow::ContextBackend<ValueContext> {
 public:
  using Value = RuntimeValue;
  using ContextBackend::ContextBackend;

  const RuntimeValue& input(size_t i) const { return ctx_.input(i); }
  absl::StatusOr<std::vector<RuntimeValue>> RunGraph(std::string_view, const Graph& body,
                                                     std::vector<RuntimeValue> args) {
    return ctx_.run_subgraph(body, std::move(args));
  }
  static bool IsTensor(const RuntimeValue& v) { return v.is_tensor(); }
  static DataType Type(const RuntimeValue& v) { return v.tensor.type(); }
  static const std::vector<int64_t>& Dims(const RuntimeValue& v) { return v.tensor.dims(); }
  static std::string Describe(const RuntimeValue& v) { return DescribeRuntimeValue(v); }
  static absl::StatusOr<const Tensor*> Host(const RuntimeValue& v) { return &v.tensor; }
  static RuntimeValue FromHost(Tensor t) { return RuntimeValue(std::move(t)); }
  absl::StatusOr<RuntimeValue> Take(const RuntimeValue& v, int64_t axis, int64_t index) const {
    absl::StatusOr<Tensor> slice = TakeAlongAxis(v.tensor, axis, index);
    if (!slice.ok()) return Error(slice.status().message());
    return RuntimeValue(std::move(*slice));
  }
  absl::StatusOr<RuntimeValue> Stack(std::vector<RuntimeValue>& parts, int64_t axis) const {
    std::vector<Tensor> tensors;
    tensors.reserve(parts.size());
    for (RuntimeValue& p : parts) tensors.push_back(std::move(p.tensor));
    absl::StatusOr<Tensor> stacked = StackOnNewAxis(tensors, axis);
    if (!stacked.ok()) return Error("scan output: ", stacked.status().message());
    return RuntimeValue(std::move(*stacked));
  }
};

absl::Status IfKernel(ValueContext& ctx) {
  CpuControlFlow backend(ctx);
  return control_flow::RunIf(backend);
}

absl::Status LoopKernel(ValueContext& ctx) {
  CpuControlFlow backend(ctx);
  return control_flow::RunLoop(backend);
}

absl::Status ScanKernel(ValueContext& ctx) {
  CpuControlFlow backend(ctx);
  return control_flow::RunScan(backend);
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
  CpuControlFlow backend(ctx);
  for (size_t step = 0; step < length; ++step) {
    std::vector<RuntimeValue> args;
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      const RuntimeValue& in = ctx.input(i);
      args.push_back(in.is_sequence() ? RuntimeValue((*in.sequence)[step]) : in);
    }
    OVFIX_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out,
                           control_flow::RunBody(backend, "body", std::move(args)));
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
  AddNativeKernels(table, {{"Constant", 1, ConstantKernel},
                           {"If", 1, IfAdapter},
                           {"Loop", 1, LoopAdapter},
                           {"Scan", 8, ScanAdapter},
                           {"SequenceMap", 17, SequenceOnlyKernel}});
  constexpr Float16Mode kNative = Float16Mode::kNative;
  for (const ValueKernelEntry& e : SequenceValueKernels()) {
    table.push_back({"", e.op_type, e.since_version, kLatestOpset, SequenceOnlyKernel, kNative});
  }
}

}  // namespace ovfix::exec
