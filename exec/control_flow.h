// If, Loop and Scan, once for every backend. The semantics (which branch, how many trips,
// which slice each iteration gets, how scan outputs are stacked) are written here; a backend
// says how its values look and move through a `Backend` class with:
//   using Value;                                      what a slot holds (RuntimeValue, ClValue)
//   const Node& node(); int opset();
//   size_t num_inputs(); bool has_input(i); Value& input(i) (may be const);
//   std::vector<Value>& outputs();                    one per node output
//   absl::Status Error(args...);                      "<node>: args..." (InvalidArgument)
//   StatusOr<vector<Value>> RunGraph(attribute, graph, args);   runs a body
//   bool IsTensor(v); DataType Type(v); const std::vector<int64_t>& Dims(v);
//   std::string Describe(v);                          "float[2,3]", "sequence(3)"
//   StatusOr<const Tensor*> Host(v);                  v read on the host (one-element reads)
//   Value FromHost(Tensor);                           a host tensor as a value of the backend
//   StatusOr<Value> Take(v, axis, index);             element `index` along `axis`, axis removed
//   StatusOr<Value> Stack(vector<Value>& parts, axis);  equal parts on a new axis (never empty)
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/node.h"
#include "ir/status_macros.h"
#include "ir/tensor.h"
#include "ir/value.h"

namespace ovfix::exec::control_flow {

// The part of a Backend that only forwards to the session's kernel context (a `Context` with
// node, opset, inputs, outputs, has_input and Error): backends derive from it and add input(i)
// and how their values move.
template <typename Context>
class ContextBackend {
 public:
  explicit ContextBackend(Context& ctx) : ctx_(ctx) {}

  const Node& node() const { return ctx_.node; }
  int opset() const { return ctx_.opset; }
  size_t num_inputs() const { return ctx_.inputs.size(); }
  bool has_input(size_t i) const { return ctx_.has_input(i); }
  auto& outputs() { return ctx_.outputs; }
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return ctx_.Error(args...);
  }

 protected:
  Context& ctx_;
};

// A one-element value read as true or false.
template <typename Backend, typename V>
absl::StatusOr<bool> ReadCondition(Backend& b, V& v, const char* what) {
  if (!b.IsTensor(v) || Tensor::NumElements(b.Dims(v)) != 1 || b.Type(v) == DataType::kString) {
    return b.Error(what, " must be a one-element tensor, got ", b.Describe(v));
  }
  OVFIX_ASSIGN_OR_RETURN(const Tensor* t, b.Host(v));
  return t->GetAsDouble(0) != 0.0;
}

// Runs the subgraph of GRAPH attribute `attribute`, checking its argument and result counts.
template <typename Backend>
absl::StatusOr<std::vector<typename Backend::Value>> RunBody(
    Backend& b, std::string_view attribute, std::vector<typename Backend::Value> args) {
  const Graph* body = b.node().GetSubgraph(attribute);
  if (body == nullptr) return b.Error("missing ", std::string(attribute));
  if (args.size() != body->inputs().size()) {
    return b.Error("subgraph '", body->name(), "' takes ", body->inputs().size(), " inputs, given ",
                   args.size());
  }
  OVFIX_ASSIGN_OR_RETURN(std::vector<typename Backend::Value> out,
                         b.RunGraph(attribute, *body, std::move(args)));
  if (out.size() != body->outputs().size()) {
    return b.Error("subgraph '", body->name(), "' returned ", out.size(), " values");
  }
  return out;
}

// What a scan output with no iterations is: [0, declared dims...] of the declared type
// (float when undeclared).
inline Tensor EmptyScanOutput(const Value* declared) {
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

// Stacks the per-iteration parts of a scan output on `axis`.
template <typename Backend>
absl::StatusOr<typename Backend::Value> StackScanOutput(Backend& b,
                                                        std::vector<typename Backend::Value>& parts,
                                                        const Value* declared, int64_t axis) {
  if (parts.empty()) return b.FromHost(EmptyScanOutput(declared));
  return b.Stack(parts, axis);
}

template <typename Backend>
absl::Status RunIf(Backend& b) {
  if (!b.has_input(0)) return b.Error("If needs a condition");
  OVFIX_ASSIGN_OR_RETURN(bool cond, ReadCondition(b, b.input(0), "condition"));
  const char* branch = cond ? "then_branch" : "else_branch";
  OVFIX_ASSIGN_OR_RETURN(std::vector<typename Backend::Value> out, RunBody(b, branch, {}));
  std::vector<typename Backend::Value>& outputs = b.outputs();
  if (out.size() < outputs.size()) {
    return b.Error(branch, " returns ", out.size(), " values, the node has ", outputs.size(),
                   " outputs");
  }
  for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = std::move(out[i]);
  return absl::OkStatus();
}

template <typename Backend>
absl::Status RunLoop(Backend& b) {
  using V = typename Backend::Value;
  const Graph* body = b.node().GetSubgraph("body");
  if (body == nullptr) return b.Error("missing body");
  if (b.num_inputs() < 2) return b.Error("Loop needs inputs M and cond (may be empty)");
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (b.has_input(0)) {
    auto& m = b.input(0);
    if (!b.IsTensor(m) || Tensor::NumElements(b.Dims(m)) != 1 || b.Type(m) == DataType::kString) {
      return b.Error("M must be a one-element tensor");
    }
    OVFIX_ASSIGN_OR_RETURN(const Tensor* t, b.Host(m));
    max_trips = t->GetAsInt64(0);
  }
  const bool use_cond = b.has_input(1);
  bool cond = true;
  if (use_cond) {
    OVFIX_ASSIGN_OR_RETURN(bool c, ReadCondition(b, b.input(1), "cond"));
    cond = c;
  }
  const size_t carried_count = b.num_inputs() - 2;
  if (body->inputs().size() != carried_count + 2) {
    return b.Error("body takes ", body->inputs().size(), " inputs, expected ", carried_count + 2);
  }
  if (body->outputs().size() < carried_count + 1) {
    return b.Error("body returns ", body->outputs().size(), " values, expected at least ",
                   carried_count + 1);
  }
  const size_t scan_count = body->outputs().size() - 1 - carried_count;
  std::vector<V> carried(carried_count);
  for (size_t i = 0; i < carried_count; ++i) {
    if (!b.has_input(i + 2)) return b.Error("loop-carried input ", i, " is missing");
    carried[i] = b.input(i + 2);
  }
  std::vector<std::vector<V>> scans(scan_count);
  for (int64_t trip = 0; trip < max_trips && cond; ++trip) {
    std::vector<V> args;
    args.reserve(carried_count + 2);
    args.push_back(b.FromHost(Tensor::FromVector<int64_t>(DataType::kInt64, {}, {trip})));
    args.push_back(
        b.FromHost(Tensor::FromVector<uint8_t>(DataType::kBool, {}, {static_cast<uint8_t>(cond)})));
    for (V& v : carried) args.push_back(std::move(v));
    OVFIX_ASSIGN_OR_RETURN(std::vector<V> out, RunBody(b, "body", std::move(args)));
    if (use_cond) {
      OVFIX_ASSIGN_OR_RETURN(bool c, ReadCondition(b, out[0], "body condition output"));
      cond = c;
    }
    for (size_t i = 0; i < carried_count; ++i) carried[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < scan_count; ++k) {
      V& v = out[1 + carried_count + k];
      if (!b.IsTensor(v)) return b.Error("scan output ", k, " is not a tensor");
      scans[k].push_back(std::move(v));
    }
  }
  std::vector<V>& outputs = b.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i < carried_count) {
      outputs[i] = std::move(carried[i]);
    } else if (i - carried_count < scan_count) {
      const size_t k = i - carried_count;
      OVFIX_ASSIGN_OR_RETURN(
          outputs[i], StackScanOutput(b, scans[k], body->outputs()[1 + carried_count + k], 0));
    }
  }
  return absl::OkStatus();
}

struct ScanSpec {
  size_t state_count = 0, scan_in_count = 0, scan_out_count = 0;
  std::vector<int64_t> in_directions, out_directions, in_axes, out_axes;
};

// One Scan over inputs without a batch axis: returns the final states, then the scan outputs.
template <typename Backend>
absl::StatusOr<std::vector<typename Backend::Value>> ScanOnce(
    Backend& b, const Graph& body, const ScanSpec& spec,
    std::vector<typename Backend::Value> states, std::vector<typename Backend::Value> scan_inputs) {
  using V = typename Backend::Value;
  int64_t length = -1;
  std::vector<int64_t> axes(spec.scan_in_count);
  for (size_t j = 0; j < spec.scan_in_count; ++j) {
    const std::vector<int64_t>& dims = b.Dims(scan_inputs[j]);
    const int64_t rank = static_cast<int64_t>(dims.size());
    int64_t axis = spec.in_axes[j];
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return b.Error("scan_input_axes out of range");
    axes[j] = axis;
    if (length >= 0 && dims[axis] != length) {
      return b.Error("scan inputs have different lengths");
    }
    length = dims[axis];
  }
  if (length < 0) length = 0;
  std::vector<std::vector<V>> scans(spec.scan_out_count);
  for (int64_t step = 0; step < length; ++step) {
    std::vector<V> args = std::move(states);
    args.reserve(spec.state_count + spec.scan_in_count);
    for (size_t j = 0; j < spec.scan_in_count; ++j) {
      const int64_t index = spec.in_directions[j] == 1 ? length - 1 - step : step;
      OVFIX_ASSIGN_OR_RETURN(V slice, b.Take(scan_inputs[j], axes[j], index));
      args.push_back(std::move(slice));
    }
    OVFIX_ASSIGN_OR_RETURN(std::vector<V> out, RunBody(b, "body", std::move(args)));
    for (size_t i = 0; i < out.size(); ++i) {
      if (!b.IsTensor(out[i])) return b.Error("Scan body output ", i, " is not a tensor");
    }
    states.assign(std::make_move_iterator(out.begin()),
                  std::make_move_iterator(out.begin() + spec.state_count));
    for (size_t k = 0; k < spec.scan_out_count; ++k) {
      scans[k].push_back(std::move(out[spec.state_count + k]));
    }
  }
  std::vector<V> result = std::move(states);
  for (size_t k = 0; k < spec.scan_out_count; ++k) {
    if (spec.out_directions[k] == 1) std::reverse(scans[k].begin(), scans[k].end());
    int64_t axis = spec.out_axes[k];
    const Value* declared = body.outputs()[spec.state_count + k];
    const int64_t part_rank =
        scans[k].empty() ? -1 : static_cast<int64_t>(b.Dims(scans[k][0]).size());
    if (axis < 0) axis += (part_rank >= 0 ? part_rank : std::max<int64_t>(declared->rank(), 0)) + 1;
    if (axis < 0 || (part_rank >= 0 && axis > part_rank)) {
      return b.Error("scan_output_axes out of range");
    }
    OVFIX_ASSIGN_OR_RETURN(V t, StackScanOutput(b, scans[k], declared, axis));
    result.push_back(std::move(t));
  }
  return result;
}

template <typename Backend>
absl::StatusOr<std::vector<int64_t>> ListAttribute(const Backend& b, const char* name,
                                                   size_t size) {
  std::vector<int64_t> v = b.node().GetInts(name, std::vector<int64_t>(size, 0));
  if (v.size() != size) return b.Error(name, " must have ", size, " entries");
  return v;
}

// Scan at opset 9 and later; at opset 8 every input has a leading batch axis (each batch entry
// is one scan) after a leading sequence_lens input.
template <typename Backend>
absl::Status RunScan(Backend& b) {
  using V = typename Backend::Value;
  const Graph* body = b.node().GetSubgraph("body");
  if (body == nullptr) return b.Error("missing body");
  const bool batched = b.opset() < 9;
  const size_t first = batched ? 1 : 0;
  const int64_t scan_in_count = b.node().GetInt("num_scan_inputs", -1);
  if (scan_in_count < 0 || b.num_inputs() < first + scan_in_count) {
    return b.Error("num_scan_inputs is missing or larger than the input count");
  }
  ScanSpec spec;
  spec.scan_in_count = scan_in_count;
  spec.state_count = b.num_inputs() - first - scan_in_count;
  if (body->inputs().size() != spec.state_count + spec.scan_in_count ||
      body->outputs().size() < spec.state_count) {
    return b.Error("body signature does not match the node's inputs");
  }
  spec.scan_out_count = body->outputs().size() - spec.state_count;
  OVFIX_ASSIGN_OR_RETURN(
      spec.in_directions,
      ListAttribute(b, batched ? "directions" : "scan_input_directions", spec.scan_in_count));
  if (batched) {
    spec.in_axes.assign(spec.scan_in_count, 0);
    spec.out_axes.assign(spec.scan_out_count, 0);
    spec.out_directions.assign(spec.scan_out_count, 0);
  } else {
    OVFIX_ASSIGN_OR_RETURN(spec.out_directions,
                           ListAttribute(b, "scan_output_directions", spec.scan_out_count));
    OVFIX_ASSIGN_OR_RETURN(spec.in_axes, ListAttribute(b, "scan_input_axes", spec.scan_in_count));
    OVFIX_ASSIGN_OR_RETURN(spec.out_axes,
                           ListAttribute(b, "scan_output_axes", spec.scan_out_count));
  }
  std::vector<V> inputs;
  for (size_t i = first; i < b.num_inputs(); ++i) {
    if (!b.has_input(i)) return b.Error("input ", i, " is missing");
    if (!b.IsTensor(b.input(i))) {
      return b.Error("input ", i, " must be a tensor, got ", b.Describe(b.input(i)));
    }
    inputs.push_back(b.input(i));
  }
  std::vector<V>& outputs = b.outputs();
  if (!batched) {
    std::vector<V> states(inputs.begin(), inputs.begin() + spec.state_count);
    std::vector<V> scans(inputs.begin() + spec.state_count, inputs.end());
    OVFIX_ASSIGN_OR_RETURN(std::vector<V> out,
                           ScanOnce(b, *body, spec, std::move(states), std::move(scans)));
    for (size_t i = 0; i < outputs.size() && i < out.size(); ++i) outputs[i] = std::move(out[i]);
    return absl::OkStatus();
  }
  if (inputs.empty() || b.Dims(inputs[0]).empty()) return b.Error("inputs need a batch axis");
  const int64_t batch = b.Dims(inputs[0])[0];
  for (const V& v : inputs) {
    if (b.Dims(v).empty() || b.Dims(v)[0] != batch) return b.Error("inputs differ in batch size");
  }
  if (b.has_input(0)) {
    if (!b.IsTensor(b.input(0))) {
      return b.Error("input 0 must be a tensor, got ", b.Describe(b.input(0)));
    }
    OVFIX_ASSIGN_OR_RETURN(const Tensor* lens, b.Host(b.input(0)));
    const std::vector<int64_t>* first_scan =
        spec.scan_in_count > 0 ? &b.Dims(inputs[spec.state_count]) : nullptr;
    const int64_t full = first_scan != nullptr && first_scan->size() > 1 ? (*first_scan)[1] : 0;
    for (int64_t i = 0; i < lens->numel(); ++i) {
      if (lens->GetAsInt64(i) != full) {
        return b.Error("sequence_lens shorter than the scan inputs are not supported");
      }
    }
  }
  std::vector<std::vector<V>> per_output(spec.state_count + spec.scan_out_count);
  for (int64_t n = 0; n < batch; ++n) {
    std::vector<V> slices;
    for (V& v : inputs) {
      OVFIX_ASSIGN_OR_RETURN(V slice, b.Take(v, 0, n));
      slices.push_back(std::move(slice));
    }
    std::vector<V> states(std::make_move_iterator(slices.begin()),
                          std::make_move_iterator(slices.begin() + spec.state_count));
    std::vector<V> scans(std::make_move_iterator(slices.begin() + spec.state_count),
                         std::make_move_iterator(slices.end()));
    OVFIX_ASSIGN_OR_RETURN(std::vector<V> out,
                           ScanOnce(b, *body, spec, std::move(states), std::move(scans)));
    for (size_t i = 0; i < out.size(); ++i) per_output[i].push_back(std::move(out[i]));
  }
  for (size_t i = 0; i < outputs.size() && i < per_output.size(); ++i) {
    OVFIX_ASSIGN_OR_RETURN(outputs[i], StackScanOutput(b, per_output[i], nullptr, 0));
  }
  return absl::OkStatus();
}

}  // namespace ovfix::exec::control_flow
