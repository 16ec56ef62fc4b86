// A small ModelProto builder for the benchmarks' generated models: nodes by op type with
// int, float and ints attributes, weights filled with seeded random values scaled so that
// activations stay in a sane range through deep stacks.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace ovfix::bench {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset, uint32_t seed = 1);

  // A float graph input of fixed shape.
  std::string Input(const std::string& name, const std::vector<int64_t>& dims);
  void Output(const std::string& value);

  // A float weight with values uniform in [-scale, scale].
  std::string Weight(const std::vector<int64_t>& dims, float scale);
  // A float weight of one repeated value (LayerNorm scales, constants of formulas).
  std::string Fill(const std::vector<int64_t>& dims, float value);
  std::string Floats(const std::vector<float>& values);
  std::string Int64s(const std::vector<int64_t>& values);
  // An initializer of `type` (onnx::TensorProto::INT8, UINT8 or INT32) holding `values`
  // (each in the type's range), raw little-endian bytes as exporters write them.
  std::string Integers(int type, const std::vector<int64_t>& dims,
                       const std::vector<int32_t>& values);
  // Uniform random float values in [-scale, scale] (what Weight stores), not added to the graph.
  std::vector<float> RandomValues(int64_t count, float scale);
  // A rank-0 int64 constant (the indices of an exporter's Gather on a shape).
  std::string Int64Scalar(int64_t value);

  struct Attr {
    std::string name;
    enum Kind { kInt, kFloat, kInts, kString } kind = kInt;
    int64_t i = 0;
    float f = 0;
    // Initialized so that the designated initializers below may leave them out.
    std::vector<int64_t> ints = {};
    std::string s = {};
  };
  static Attr Int(const std::string& name, int64_t v) {
    return {.name = name, .kind = Attr::kInt, .i = v};
  }
  static Attr Float(const std::string& name, float v) {
    return {.name = name, .kind = Attr::kFloat, .f = v};
  }
  static Attr Ints(const std::string& name, std::vector<int64_t> v) {
    return {.name = name, .kind = Attr::kInts, .ints = std::move(v)};
  }
  static Attr String(const std::string& name, std::string v) {
    return {.name = name, .kind = Attr::kString, .s = std::move(v)};
  }

  // Adds a node with one output and returns the output's name ("" inputs are omitted ones).
  std::string Op(const std::string& op_type, const std::vector<std::string>& inputs,
                 const std::vector<Attr>& attrs = {});

  // Adds a node with `outputs` outputs and returns their names.
  std::vector<std::string> OpWithOutputs(const std::string& op_type,
                                         const std::vector<std::string>& inputs, int outputs,
                                         const std::vector<Attr>& attrs = {});
  // The op type of the node that produces `value` ("" for inputs and initializers).
  std::string ProducerType(const std::string& value) const;

  // Conv with He-scaled random weights and a bias; pads keep the size for odd kernels.
  std::string Conv(const std::string& x, int64_t in_channels, int64_t out_channels, int64_t kernel,
                   int64_t stride = 1, int64_t group = 1);

  const onnx::ModelProto& model() const { return model_; }

  // From now on, int64 constants (Int64s, Int64Scalar) and scalar Fills are Constant nodes
  // instead of initializers, as PyTorch's exporter writes literals without constant folding.
  void set_constants_as_nodes(bool on) { constants_as_nodes_ = on; }

 private:
  std::string Fresh(const std::string& prefix);
  // With constants_as_nodes_, turns the last initializer into a Constant node making it.
  std::string Literal(std::string name);
  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  std::mt19937 random_;
  int next_ = 0;
  bool constants_as_nodes_ = false;
};

}  // namespace ovfix::bench
