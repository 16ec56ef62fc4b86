// Helpers shared by the math kernel tests (math_test.cc, math_conv_test.cc): running one node
// through the kernel table, attributes, random data and comparison against naive results.
#pragma once

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "exec/thread_pool.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/status_macros.h"

namespace ovfix::exec::math_testing {

using Dims = std::vector<int64_t>;

inline ThreadPool& MathPool() {
  static ThreadPool pool(3);
  return pool;
}

// An attribute named `name` of `type`, its value left for the caller to set.
inline onnx::AttributeProto NamedAttr(const std::string& name,
                                      onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(type);
  return a;
}

inline onnx::AttributeProto IntsAttr(const std::string& name, const Dims& values) {
  onnx::AttributeProto a = NamedAttr(name, onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}
inline onnx::AttributeProto IntAttr(const std::string& name, int64_t value) {
  onnx::AttributeProto a = NamedAttr(name, onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}
inline onnx::AttributeProto FloatAttr(const std::string& name, float value) {
  onnx::AttributeProto a = NamedAttr(name, onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}
inline onnx::AttributeProto StringAttr(const std::string& name, const std::string& value) {
  onnx::AttributeProto a = NamedAttr(name, onnx::AttributeProto::STRING);
  a.set_s(value);
  return a;
}

inline onnx::AttributeProto StringsAttr(const std::string& name,
                                        const std::vector<std::string>& values) {
  onnx::AttributeProto a = NamedAttr(name, onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a.add_strings(v);
  return a;
}

inline onnx::AttributeProto FloatsAttr(const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto a = NamedAttr(name, onnx::AttributeProto::FLOATS);
  for (float v : values) a.add_floats(v);
  return a;
}

struct NodeRun {
  std::vector<bool> constant;  // inputs that become initializers
  std::shared_ptr<void>* state = nullptr;
  ThreadPool* pool = &MathPool();
  int num_outputs = 1;
  std::string name = "n";  // the node's name (errors name it)
  std::string domain;      // "" for the default ONNX domain
  // A fused activation as the session asks for it (KernelContext::fused).
  FusedActivation fused;
};

// Runs one node of `op` through the kernel table; an undefined Tensor is an omitted input.
inline absl::StatusOr<std::vector<Tensor>> RunNode(
    const std::string& op, int opset, const std::vector<Tensor>& inputs,
    const std::vector<onnx::AttributeProto>& attributes, const NodeRun& run = {}) {
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (!inputs[i].defined()) {
      values.push_back(nullptr);
    } else if (i < run.constant.size() && run.constant[i]) {
      values.push_back(graph.AddInitializer(name, inputs[i]));
    } else {
      values.push_back(graph.CreateValue(name));
    }
  }
  std::vector<std::string> outputs;
  for (int i = 0; i < run.num_outputs; ++i) outputs.push_back("out" + std::to_string(i));
  Node* node = graph.AddNode(op, values, outputs, run.name, run.domain);
  for (const auto& a : attributes) node->SetAttribute(a);
  const KernelDef* kernel = FindKernel(run.domain, op, opset);
  if (kernel == nullptr) return absl::NotFoundError(op + " has no kernel");
  KernelContext ctx = KernelContext::For(*node, opset);
  for (const Tensor& t : inputs) ctx.inputs.push_back(t.defined() ? &t : nullptr);
  ctx.outputs.resize(run.num_outputs);
  ctx.pool = run.pool;
  ctx.state = run.state;
  ctx.fused = run.fused;
  OVFIX_RETURN_IF_ERROR(kernel->fn(ctx));
  return ctx.outputs;
}

// RunNode with `num_outputs` outputs and the default NodeRun otherwise.
inline absl::StatusOr<std::vector<Tensor>> RunOp(
    const std::string& op, int opset, const std::vector<Tensor>& inputs,
    const std::vector<onnx::AttributeProto>& attributes = {}, int num_outputs = 1) {
  NodeRun run;
  run.num_outputs = num_outputs;
  return RunNode(op, opset, inputs, attributes, run);
}

inline std::vector<float> RandomFloats(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline Tensor FloatTensor(const Dims& dims, const std::vector<float>& v) {
  return Tensor::FromVector(DataType::kFloat, dims, v);
}

inline Tensor Int64s(Dims dims, const std::vector<int64_t>& v) {
  return Tensor::FromVector(DataType::kInt64, std::move(dims), v);
}

// Every element as a double, for gmock matchers.
inline std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

inline void ExpectNear(const Tensor& actual, const Dims& dims, const std::vector<double>& expected,
                       double tolerance, const std::string& what) {
  ASSERT_EQ(actual.dims(), dims) << what;
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size())) << what;
  int reported = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.GetAsDouble(i);
    // Written so that a NaN (or an element never written, left NaN) fails unless expected.
    const bool same = a == expected[i] || (std::isnan(a) && std::isnan(expected[i]));
    if (!same && !(std::fabs(a - expected[i]) <= tolerance * (1 + std::fabs(expected[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", expected " << expected[i];
      if (++reported == 5) return;
    }
  }
}

// Spatial dims padded to 3 with leading 1s.
inline Dims Pad3(const Dims& d, size_t rank, int64_t fill) {
  Dims out(3 - rank, fill);
  out.insert(out.end(), d.begin(), d.end());
  return out;
}

}  // namespace ovfix::exec::math_testing
