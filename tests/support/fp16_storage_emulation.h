// onnxruntime's CPU provider runs a float16 node it has no float16 kernel for in float32,
// with Casts it inserts and, between such nodes, drops again: a float16 file's intermediate
// values are then float32, and an overflow to inf that a GPU backend storing float16 meets
// never happens. EmulateFp16Storage writes a float32 model that rounds where the file stores
// float16: every float16 value becomes float32 followed by an explicit Cast to float16 and
// back (kept, since the runs use no graph optimizations), every float16 weight float32 of the
// same values. Run it in onnxruntime to see what a backend storing float16 computes.
// (The main graph only.)
#pragma once

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor.h"

namespace ovfix::testing_support {

inline void EmulateFp16Storage(const std::string& in, const std::string& out) {
  absl::StatusOr<std::unique_ptr<Model>> loaded = LoadModel(in);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Graph& g = (*loaded)->graph();
  auto cast = [](DataType to) {
    onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(static_cast<int64_t>(to));
    return a;
  };
  // `v` (float16 until now) becomes float32, and every reader reads it rounded to float16.
  auto round_after = [&](Value* v, Node* before) {
    v->set_elem_type(DataType::kFloat);
    const std::string name = v->name();
    Node* down = g.AddNode("Cast", {v}, {name + "_fp16_stored"}, name + "_store", "", before);
    down->SetAttribute(cast(DataType::kFloat16));
    down->output(0)->set_elem_type(DataType::kFloat16);
    Node* up =
        g.AddNode("Cast", {down->output(0)}, {name + "_fp16_read"}, name + "_read", "", before);
    up->SetAttribute(cast(DataType::kFloat));
    up->output(0)->set_elem_type(DataType::kFloat);
    g.ReplaceAllUsesWith(v, up->output(0));
    down->ReplaceInput(0, v);
  };
  for (Value* v : g.initializers()) {
    if (v->tensor().type() == DataType::kFloat16) {
      v->set_tensor(ConvertTensor(v->tensor(), DataType::kFloat));
    }
  }
  const std::vector<Node*> nodes = g.NodeList();
  Node* first = nodes.empty() ? nullptr : nodes.front();
  for (Value* v : g.inputs()) {
    if (!v->is_initializer() && v->elem_type() == DataType::kFloat16) round_after(v, first);
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    Node* n = nodes[k];
    Node* next = k + 1 < nodes.size() ? nodes[k + 1] : nullptr;
    if (n->op_type() == "Cast" && n->GetInt("to", 0) == static_cast<int64_t>(DataType::kFloat16)) {
      n->SetAttribute(cast(DataType::kFloat));
    }
    for (Value* o : n->outputs()) {
      if (o != nullptr && o->elem_type() == DataType::kFloat16) round_after(o, next);
    }
  }
  ASSERT_TRUE(SaveModel(**loaded, out).ok());
}

}  // namespace ovfix::testing_support
