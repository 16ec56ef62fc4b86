// onnxruntime's CPU provider runs a float16 node it has no float16 kernel for in float32,
// with Casts it inserts and, between such nodes, drops again: a float16 file's intermediate
// values are then float32, and an overflow to inf that a GPU backend storing float16 meets
// never happens. EmulateFp16Storage writes a float32 model that rounds where the file stores
// float16: every float16 value becomes float32 followed by an explicit Cast to float16 and
// back (kept, since the runs use no graph optimizations), every float16 weight and Constant
// float32 of the same values; in every graph, If/Loop/Scan bodies included. bfloat16 values
// (an fp16 file's bf16 islands, a bf16 file) are rounded the same way, through bfloat16, which
// onnxruntime's CPU provider casts to and from but computes nothing in. Run it in onnxruntime
// to see what a backend storing float16 (bfloat16) computes.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"

namespace ovfix::testing_support {

namespace fp16_storage {

inline onnx::AttributeProto CastTo(DataType to) {
  onnx::AttributeProto a;
  a.set_name("to");
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(static_cast<int64_t>(to));
  return a;
}

inline bool IsHalf(DataType t) { return t == DataType::kFloat16 || t == DataType::kBfloat16; }

// `v` of `g` (float16 or bfloat16 until now) becomes float32, and every reader, in `g` and its
// bodies, reads it rounded to that type; the pair of Casts goes before `before`.
inline void RoundAfter(Graph& g, Value* v, Node* before) {
  const DataType half = v->elem_type();
  v->set_elem_type(DataType::kFloat);
  const std::string name = v->name();
  Node* down = g.AddNode("Cast", {v}, {name + "_half_stored"}, name + "_store", "", before);
  down->SetAttribute(CastTo(half));
  down->output(0)->set_elem_type(half);
  Node* up =
      g.AddNode("Cast", {down->output(0)}, {name + "_half_read"}, name + "_read", "", before);
  up->SetAttribute(CastTo(DataType::kFloat));
  up->output(0)->set_elem_type(DataType::kFloat);
  g.ReplaceAllUsesWith(v, up->output(0));
  down->ReplaceInput(0, v);
}

inline void Emulate(Graph& g) {
  for (Value* v : g.initializers()) {
    if (IsHalf(v->tensor().type())) {
      v->set_tensor(ConvertTensor(v->tensor(), DataType::kFloat));
    }
  }
  const std::vector<Node*> nodes = g.NodeList();
  Node* first = nodes.empty() ? nullptr : nodes.front();
  for (Value* v : g.inputs()) {
    if (!v->is_initializer() && IsHalf(v->elem_type())) RoundAfter(g, v, first);
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    Node* n = nodes[k];
    for (Subgraph& s : n->subgraphs()) Emulate(*s.graph);
    if (n->op_type() == "Cast" && IsHalf(static_cast<DataType>(n->GetInt("to", 0)))) {
      n->SetAttribute(CastTo(DataType::kFloat));
    }
    // Constant and ConstantOfShape: a float16 value attribute holds float16 data whatever
    // the IR knows of the output's type.
    const onnx::AttributeProto* value_attribute = n->FindAttribute("value");
    if (value_attribute != nullptr && value_attribute->type() == onnx::AttributeProto::TENSOR &&
        (value_attribute->t().data_type() == onnx::TensorProto::FLOAT16 ||
         value_attribute->t().data_type() == onnx::TensorProto::BFLOAT16)) {
      absl::StatusOr<Tensor> value = n->GetTensor("value");
      ASSERT_TRUE(value.ok()) << value.status();
      onnx::AttributeProto a;
      a.set_name("value");
      a.set_type(onnx::AttributeProto::TENSOR);
      *a.mutable_t() = TensorToProto(ConvertTensor(*value, DataType::kFloat));
      n->SetAttribute(a);
    }
    if (IsHalf(static_cast<DataType>(n->GetInt("dtype", 0)))) {  // EyeLike...
      onnx::AttributeProto a = CastTo(DataType::kFloat);
      a.set_name("dtype");
      n->SetAttribute(a);
    }
    for (Value* o : n->outputs()) {
      if (o != nullptr && IsHalf(o->elem_type())) {
        RoundAfter(g, o, k + 1 < nodes.size() ? nodes[k + 1] : nullptr);
      }
    }
  }
  for (Value* v : g.outputs()) {
    if (IsHalf(v->elem_type())) v->set_elem_type(DataType::kFloat);
  }
}

}  // namespace fp16_storage

// The worst error relative to the range over the outputs of a run (float16 ones widened),
// infinite where an output holds NaN or inf: how far a float16 file's run is from the
// original's.
inline double WorstOutputError(const std::vector<Tensor>& actual,
                               const std::vector<Tensor>& expected) {
  EXPECT_EQ(actual.size(), expected.size());
  double worst = 0;
  for (size_t i = 0; i < expected.size() && i < actual.size(); ++i) {
    const Tensor a = ConvertTensor(actual[i], DataType::kFloat);
    for (int64_t k = 0; k < a.numel(); ++k) {
      if (!std::isfinite(a.data<float>()[k])) return INFINITY;
    }
    worst = std::max(worst, exec::RelativeError(a, expected[i]));
  }
  return worst;
}

inline void EmulateFp16Storage(const std::string& in, const std::string& out) {
  absl::StatusOr<std::unique_ptr<Model>> loaded = LoadModel(in);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  fp16_storage::Emulate((*loaded)->graph());
  ASSERT_TRUE(SaveModel(**loaded, out).ok());
}

}  // namespace ovfix::testing_support
