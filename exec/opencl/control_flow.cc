#include "exec/opencl/control_flow.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "exec/cpu/control_flow.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

ClValue HostScalar(ControlContext& ctx, Tensor t) { return ctx.host_value(std::move(t)); }

// A one-element value read on the host: the only transfer a control decision needs.
absl::StatusOr<bool> ReadCondition(ControlContext& ctx, ClValue& v, const char* what) {
  if (v.numel() != 1 || v.type == DataType::kString) {
    return ctx.Error(what, " must be a one-element tensor");
  }
  OVFIX_RETURN_IF_ERROR(EnsureHost(ctx.rt, v));
  return v.host->GetAsDouble(0) != 0.0;
}

absl::StatusOr<std::vector<ClValue>> RunBody(ControlContext& ctx, std::string_view attribute,
                                             std::vector<ClValue> args) {
  const Graph* body = ctx.node.GetSubgraph(attribute);
  if (body == nullptr) return ctx.Error("missing ", std::string(attribute));
  if (args.size() != body->inputs().size()) {
    return ctx.Error("subgraph '", body->name(), "' takes ", body->inputs().size(),
                     " inputs, given ", args.size());
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<ClValue> out, ctx.run_body(attribute, std::move(args)));
  if (out.size() != body->outputs().size()) {
    return ctx.Error("subgraph '", body->name(), "' returned ", out.size(), " values");
  }
  return out;
}

// Element `index` of `v` along axis 0 (that axis removed). A device value is cut on the
// device; a host-only one (shape arithmetic) on the host.
absl::StatusOr<ClValue> TakeFirstAxis(ControlContext& ctx, ClValue& v, int64_t index) {
  std::vector<int64_t> dims(v.dims.begin() + 1, v.dims.end());
  if (!v.device) {
    absl::StatusOr<Tensor> part = TakeAlongAxis(*v.host, 0, index);
    if (!part.ok()) return ctx.Error(part.status().message());
    return ctx.host_value(std::move(*part));
  }
  ClValue out;
  out.type = v.type;
  out.half = v.half;
  out.dims = std::move(dims);
  const size_t bytes = out.device_bytes();
  OVFIX_ASSIGN_OR_RETURN(out.device, ctx.rt.AllocateShared(bytes));
  OVFIX_RETURN_IF_ERROR(ctx.rt.Copy(*v.device, index * bytes, *out.device, 0, bytes));
  return out;
}

// Stacks equal-shaped parts on a new axis. Axis 0 of device values is a series of copies on
// the device; other axes, or parts only on the host, are stacked on the host.
absl::StatusOr<ClValue> Stack(ControlContext& ctx, std::vector<ClValue>& parts, int64_t axis,
                              const Value* declared) {
  if (parts.empty()) {
    DataType type = declared != nullptr ? declared->elem_type() : DataType::kUndefined;
    if (type == DataType::kUndefined) type = DataType::kFloat;
    std::vector<int64_t> dims = {0};
    if (declared != nullptr) {
      if (std::optional<std::vector<int64_t>> s = declared->static_shape()) {
        dims.insert(dims.end(), s->begin(), s->end());
      }
    }
    return ctx.host_value(Tensor(type, dims));
  }
  for (const ClValue& p : parts) {
    if (p.type != parts[0].type || p.dims != parts[0].dims || p.half != parts[0].half) {
      return ctx.Error("scan output parts differ in type or shape");
    }
  }
  const bool on_device =
      std::all_of(parts.begin(), parts.end(), [](const ClValue& p) { return p.device != nullptr; });
  if (axis != 0 || !on_device) {
    std::vector<Tensor> host;
    for (ClValue& p : parts) {
      OVFIX_RETURN_IF_ERROR(EnsureHost(ctx.rt, p));
      host.push_back(*p.host);
    }
    absl::StatusOr<Tensor> stacked = StackOnNewAxis(host, axis);
    if (!stacked.ok()) return ctx.Error("scan output: ", stacked.status().message());
    return ctx.host_value(std::move(*stacked));
  }
  ClValue out;
  out.type = parts[0].type;
  out.half = parts[0].half;
  out.dims = parts[0].dims;
  out.dims.insert(out.dims.begin(), static_cast<int64_t>(parts.size()));
  const size_t part_bytes = parts[0].device_bytes();
  OVFIX_ASSIGN_OR_RETURN(out.device, ctx.rt.AllocateShared(out.device_bytes()));
  for (size_t i = 0; i < parts.size(); ++i) {
    if (auto s = ctx.rt.Copy(*parts[i].device, 0, *out.device, i * part_bytes, part_bytes);
        !s.ok()) {
      return s;
    }
  }
  return out;
}

absl::Status RunIf(ControlContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("If needs a condition");
  OVFIX_ASSIGN_OR_RETURN(bool cond, ReadCondition(ctx, *ctx.inputs[0], "condition"));
  const char* branch = cond ? "then_branch" : "else_branch";
  OVFIX_ASSIGN_OR_RETURN(std::vector<ClValue> out, RunBody(ctx, branch, {}));
  if (out.size() < ctx.outputs.size()) {
    return ctx.Error(branch, " returns ", out.size(), " values, the node has ", ctx.outputs.size(),
                     " outputs");
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) ctx.outputs[i] = std::move(out[i]);
  return absl::OkStatus();
}

absl::Status RunLoop(ControlContext& ctx) {
  const Graph* body = ctx.node.GetSubgraph("body");
  if (body == nullptr) return ctx.Error("missing body");
  if (ctx.inputs.size() < 2) return ctx.Error("Loop needs inputs M and cond (may be empty)");
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (ctx.has_input(0)) {
    ClValue& m = *ctx.inputs[0];
    if (m.numel() != 1 || m.type == DataType::kString) return ctx.Error("M must be one element");
    OVFIX_RETURN_IF_ERROR(EnsureHost(ctx.rt, m));
    max_trips = m.host->GetAsInt64(0);
  }
  const bool use_cond = ctx.has_input(1);
  bool cond = true;
  if (use_cond) {
    OVFIX_ASSIGN_OR_RETURN(bool c, ReadCondition(ctx, *ctx.inputs[1], "cond"));
    cond = c;
  }
  const size_t carried_count = ctx.inputs.size() - 2;
  if (body->inputs().size() != carried_count + 2 || body->outputs().size() < carried_count + 1) {
    return ctx.Error("body signature does not match the node's ", carried_count,
                     " loop-carried values");
  }
  const size_t scan_count = body->outputs().size() - 1 - carried_count;
  std::vector<ClValue> carried(carried_count);
  for (size_t i = 0; i < carried_count; ++i) {
    if (!ctx.has_input(i + 2)) return ctx.Error("loop-carried input ", i, " is missing");
    carried[i] = *ctx.inputs[i + 2];
  }
  std::vector<std::vector<ClValue>> scans(scan_count);
  for (int64_t trip = 0; trip < max_trips && cond; ++trip) {
    std::vector<ClValue> args;
    args.reserve(carried_count + 2);
    args.push_back(HostScalar(ctx, Tensor::FromVector<int64_t>(DataType::kInt64, {}, {trip})));
    args.push_back(HostScalar(ctx, Tensor::FromVector<uint8_t>(DataType::kBool, {}, {1})));
    for (ClValue& v : carried) args.push_back(std::move(v));
    OVFIX_ASSIGN_OR_RETURN(std::vector<ClValue> out, RunBody(ctx, "body", std::move(args)));
    if (use_cond) {
      OVFIX_ASSIGN_OR_RETURN(bool c, ReadCondition(ctx, out[0], "body condition output"));
      cond = c;
    }
    for (size_t i = 0; i < carried_count; ++i) carried[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < scan_count; ++k) {
      scans[k].push_back(std::move(out[1 + carried_count + k]));
    }
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (i < carried_count) {
      ctx.outputs[i] = std::move(carried[i]);
    } else if (i - carried_count < scan_count) {
      const size_t k = i - carried_count;
      OVFIX_ASSIGN_OR_RETURN(ClValue t,
                             Stack(ctx, scans[k], 0, body->outputs()[1 + carried_count + k]));
      ctx.outputs[i] = std::move(t);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ListAttribute(const ControlContext& ctx, const char* name,
                                                   size_t size) {
  std::vector<int64_t> v = ctx.node.GetInts(name, std::vector<int64_t>(size, 0));
  if (v.size() != size) return ctx.Error(name, " must have ", size, " entries");
  return v;
}

absl::Status RunScan(ControlContext& ctx) {
  if (ctx.opset < 9) return absl::UnimplementedError("Scan-8 runs on the CPU");
  const Graph* body = ctx.node.GetSubgraph("body");
  if (body == nullptr) return ctx.Error("missing body");
  const int64_t scan_in = ctx.node.GetInt("num_scan_inputs", -1);
  if (scan_in < 0 || ctx.inputs.size() < static_cast<size_t>(scan_in)) {
    return ctx.Error("num_scan_inputs is missing or larger than the input count");
  }
  const size_t state_count = ctx.inputs.size() - scan_in;
  if (body->inputs().size() != ctx.inputs.size() || body->outputs().size() < state_count) {
    return ctx.Error("body signature does not match the node's inputs");
  }
  const size_t scan_out = body->outputs().size() - state_count;
  absl::StatusOr<std::vector<int64_t>> in_dirs =
      ListAttribute(ctx, "scan_input_directions", scan_in);
  absl::StatusOr<std::vector<int64_t>> out_dirs =
      ListAttribute(ctx, "scan_output_directions", scan_out);
  absl::StatusOr<std::vector<int64_t>> in_axes = ListAttribute(ctx, "scan_input_axes", scan_in);
  absl::StatusOr<std::vector<int64_t>> out_axes = ListAttribute(ctx, "scan_output_axes", scan_out);
  for (const auto* v : {&in_dirs, &out_dirs, &in_axes, &out_axes}) {
    if (!v->ok()) return v->status();
  }
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
  }
  // Scan inputs along an axis other than 0 are cut on the host.
  int64_t length = -1;
  std::vector<ClValue> scan_values(scan_in);
  for (int64_t j = 0; j < scan_in; ++j) {
    ClValue& v = *ctx.inputs[state_count + j];
    int64_t axis = (*in_axes)[j];
    if (axis < 0) axis += static_cast<int64_t>(v.dims.size());
    if (axis < 0 || axis >= static_cast<int64_t>(v.dims.size())) {
      return ctx.Error("scan_input_axes out of range");
    }
    if (length >= 0 && v.dims[axis] != length) {
      return ctx.Error("scan inputs have different lengths");
    }
    length = v.dims[axis];
    scan_values[j] = v;
    if (axis != 0) {  // move the scanned axis first, on the host
      OVFIX_RETURN_IF_ERROR(EnsureHost(ctx.rt, scan_values[j]));
      std::vector<Tensor> parts;
      for (int64_t i = 0; i < length; ++i) {
        absl::StatusOr<Tensor> part = TakeAlongAxis(*scan_values[j].host, axis, i);
        if (!part.ok()) return ctx.Error(part.status().message());
        parts.push_back(std::move(*part));
      }
      absl::StatusOr<Tensor> moved = StackOnNewAxis(parts, 0);
      if (!moved.ok()) return ctx.Error(moved.status().message());
      scan_values[j] = ctx.host_value(std::move(*moved));
    }
  }
  if (length < 0) length = 0;
  std::vector<ClValue> states(state_count);
  for (size_t i = 0; i < state_count; ++i) states[i] = *ctx.inputs[i];
  std::vector<std::vector<ClValue>> scans(scan_out);
  for (int64_t step = 0; step < length; ++step) {
    std::vector<ClValue> args = std::move(states);
    for (int64_t j = 0; j < scan_in; ++j) {
      const int64_t index = (*in_dirs)[j] == 1 ? length - 1 - step : step;
      OVFIX_ASSIGN_OR_RETURN(ClValue slice, TakeFirstAxis(ctx, scan_values[j], index));
      args.push_back(std::move(slice));
    }
    OVFIX_ASSIGN_OR_RETURN(std::vector<ClValue> out, RunBody(ctx, "body", std::move(args)));
    states.assign(std::make_move_iterator(out.begin()),
                  std::make_move_iterator(out.begin() + state_count));
    for (size_t k = 0; k < scan_out; ++k) scans[k].push_back(std::move(out[state_count + k]));
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (i < state_count) {
      ctx.outputs[i] = std::move(states[i]);
      continue;
    }
    const size_t k = i - state_count;
    if (k >= scan_out) break;
    if ((*out_dirs)[k] == 1) std::reverse(scans[k].begin(), scans[k].end());
    const Value* declared = body->outputs()[state_count + k];
    int64_t axis = (*out_axes)[k];
    if (axis < 0) {
      const int64_t rank = scans[k].empty() ? std::max<int64_t>(declared->rank(), 0)
                                            : static_cast<int64_t>(scans[k][0].dims.size());
      axis += rank + 1;
    }
    if (axis < 0 || (!scans[k].empty() && axis > (int64_t)scans[k][0].dims.size())) {
      return ctx.Error("scan_output_axes out of range");
    }
    OVFIX_ASSIGN_OR_RETURN(ClValue t, Stack(ctx, scans[k], axis, declared));
    ctx.outputs[i] = std::move(t);
  }
  return absl::OkStatus();
}

}  // namespace

bool IsControlFlowOp(std::string_view op_type) {
  return op_type == "If" || op_type == "Loop" || op_type == "Scan";
}

absl::Status RunControlFlow(ControlContext& ctx) {
  const std::string& op = ctx.node.op_type();
  if (op == "If") return RunIf(ctx);
  if (op == "Loop") return RunLoop(ctx);
  if (op == "Scan") return RunScan(ctx);
  return absl::UnimplementedError(absl::StrCat(op, " has no opencl control-flow runner"));
}

}  // namespace ovfix::exec::opencl
