#include "exec/opencl/control_flow.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/control_flow.h"
#include "exec/cpu/control_flow.h"
#include "ir/status_macros.h"

namespace ovfix::exec::opencl {
namespace {

// How exec/control_flow.h moves this session's values: decisions read one element back to the
// host; slices and stacked scan outputs of device values are copies on the device.
class DeviceControlFlow : public control_flow::ContextBackend<ControlContext> {
 public:
  using Value = ClValue;
  using ContextBackend::ContextBackend;

  ClValue& input(size_t i) const { return *ctx_.inputs[i]; }
  absl::StatusOr<std::vector<ClValue>> RunGraph(std::string_view attribute, const Graph&,
                                                std::vector<ClValue> args) {
    return ctx_.run_body(attribute, std::move(args));
  }
  static bool IsTensor(const ClValue&) { return true; }
  static DataType Type(const ClValue& v) { return v.type; }
  static const std::vector<int64_t>& Dims(const ClValue& v) { return v.dims; }
  static std::string Describe(const ClValue& v) {
    return absl::StrCat(std::string(DataTypeName(v.type)), "[", absl::StrJoin(v.dims, ","), "]");
  }
  absl::StatusOr<const Tensor*> Host(ClValue& v) const {
    OVFIX_RETURN_IF_ERROR(EnsureHost(ctx_.rt, v));
    return &*v.host;
  }
  ClValue FromHost(Tensor t) const { return ctx_.host_value(std::move(t)); }

  // A device value is cut on the device along axis 0; otherwise (a host-only value, shape
  // arithmetic, or another axis) on the host.
  absl::StatusOr<ClValue> Take(ClValue& v, int64_t axis, int64_t index) const {
    if (axis != 0 || !v.device) {
      OVFIX_ASSIGN_OR_RETURN(const Tensor* host, Host(v));
      absl::StatusOr<Tensor> part = TakeAlongAxis(*host, axis, index);
      if (!part.ok()) return Error(part.status().message());
      return FromHost(std::move(*part));
    }
    ClValue out;
    out.type = v.type;
    out.half = v.half;
    out.dims.assign(v.dims.begin() + 1, v.dims.end());
    const size_t bytes = out.device_bytes();
    OVFIX_ASSIGN_OR_RETURN(out.device, ctx_.rt.AllocateShared(bytes));
    OVFIX_RETURN_IF_ERROR(ctx_.rt.Copy(*v.device, index * bytes, *out.device, 0, bytes));
    return out;
  }

  // Axis 0 of device values is a series of copies on the device; other axes, or parts only on
  // the host, are stacked on the host.
  absl::StatusOr<ClValue> Stack(std::vector<ClValue>& parts, int64_t axis) const {
    for (const ClValue& p : parts) {
      if (p.type != parts[0].type || p.dims != parts[0].dims || p.half != parts[0].half) {
        return Error("scan output parts differ in type or shape");
      }
    }
    const bool on_device = std::all_of(parts.begin(), parts.end(),
                                       [](const ClValue& p) { return p.device != nullptr; });
    if (axis != 0 || !on_device) {
      std::vector<Tensor> host;
      for (ClValue& p : parts) {
        OVFIX_ASSIGN_OR_RETURN(const Tensor* t, Host(p));
        host.push_back(*t);
      }
      absl::StatusOr<Tensor> stacked = StackOnNewAxis(host, axis);
      if (!stacked.ok()) return Error("scan output: ", stacked.status().message());
      return FromHost(std::move(*stacked));
    }
    ClValue out;
    out.type = parts[0].type;
    out.half = parts[0].half;
    out.dims = parts[0].dims;
    out.dims.insert(out.dims.begin(), static_cast<int64_t>(parts.size()));
    const size_t part_bytes = parts[0].device_bytes();
    OVFIX_ASSIGN_OR_RETURN(out.device, ctx_.rt.AllocateShared(out.device_bytes()));
    for (size_t i = 0; i < parts.size(); ++i) {
      OVFIX_RETURN_IF_ERROR(
          ctx_.rt.Copy(*parts[i].device, 0, *out.device, i * part_bytes, part_bytes));
    }
    return out;
  }
};

}  // namespace

bool IsControlFlowOp(std::string_view op_type) {
  return op_type == "If" || op_type == "Loop" || op_type == "Scan";
}

absl::Status RunControlFlow(ControlContext& ctx) {
  const std::string& op = ctx.node.op_type();
  DeviceControlFlow backend(ctx);
  if (op == "If") return control_flow::RunIf(backend);
  if (op == "Loop") return control_flow::RunLoop(backend);
  if (op == "Scan") {
    if (ctx.opset < 9) return absl::UnimplementedError("Scan-8 runs on the CPU");
    return control_flow::RunScan(backend);
  }
  return absl::UnimplementedError(absl::StrCat(op, " has no opencl control-flow runner"));
}

}  // namespace ovfix::exec::opencl
