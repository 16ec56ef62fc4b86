// Declared types checked on load: what onnx 1.12's inference would crash on is refused, what
// exporters write (If branch outputs declared `type {}`) is read.
#include "ir/type_check.h"

#include <fstream>
#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"

namespace ovfix {
namespace {

onnx::ModelProto ShapeOfInput(const std::function<void(onnx::TypeProto&)>& input_type) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(15);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Shape");
  n->add_input("x");
  n->add_output("y");
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  input_type(*x->mutable_type());
  onnx::ValueInfoProto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  return m;
}

std::string LoadError(onnx::ModelProto m) {
  absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(m), "", "m.onnx");
  return model.ok() ? "" : std::string(model.status().message());
}

TEST(TypeCheck, MalformedInputTypesAreRefusedNamingTheValue) {
  EXPECT_EQ(LoadError(ShapeOfInput([](onnx::TypeProto&) {})),
            "m.onnx: input 'x' of graph 'g': an empty type (neither tensor, sequence, map nor "
            "optional)");
  EXPECT_EQ(LoadError(ShapeOfInput([](onnx::TypeProto& t) { t.mutable_tensor_type(); })),
            "m.onnx: input 'x' of graph 'g': a tensor type without an element type");
  EXPECT_EQ(LoadError(ShapeOfInput([](onnx::TypeProto& t) { t.mutable_sequence_type(); })),
            "m.onnx: input 'x' of graph 'g': a sequence type without an element type");
  EXPECT_EQ(LoadError(ShapeOfInput(
                [](onnx::TypeProto& t) { t.mutable_tensor_type()->set_elem_type(99); })),
            "m.onnx: input 'x' of graph 'g': unknown element type 99");
  EXPECT_EQ(LoadError(ShapeOfInput([](onnx::TypeProto& t) {
              t.mutable_tensor_type()->set_elem_type(1);
              t.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(-5);
            })),
            "m.onnx: input 'x' of graph 'g': negative dim -5");
  EXPECT_EQ(LoadError(ShapeOfInput([](onnx::TypeProto& t) {
              t.mutable_map_type()->set_key_type(onnx::TensorProto::FLOAT);
              t.mutable_map_type()->mutable_value_type()->mutable_tensor_type()->set_elem_type(1);
            })),
            "m.onnx: input 'x' of graph 'g': a map key type 1 that is neither an integer type "
            "nor string");
  // The newest element types are whole types.
  EXPECT_EQ(LoadError(ShapeOfInput(
                [](onnx::TypeProto& t) { t.mutable_tensor_type()->set_elem_type(26); })),
            "");
}

// A main-graph input without any type: a file or an API ModelProto is refused (the IR requires
// the type; onnx 1.12's inference crashed on it, found by the load_model fuzzer), and onnx's
// inference is not run on a model of the text form that has one.
TEST(TypeCheck, AMainInputWithoutATypeIsRefusedAndNeverInferred) {
  onnx::ModelProto m = ShapeOfInput([](onnx::TypeProto&) {});
  m.mutable_graph()->mutable_input(0)->clear_type();
  EXPECT_EQ(RequireInputTypes(m.graph()).message(), "input 'x' of graph 'g': no type");
  const std::string path = ::testing::TempDir() + "/no_type.onnx";
  {
    std::ofstream out(path, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&out));
  }
  absl::StatusOr<std::unique_ptr<Model>> loaded = LoadModel(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(), path + ": input 'x' of graph 'g': no type");
  absl::StatusOr<std::unique_ptr<Model>> lenient = ModelFromProto(std::move(m), "", "text");
  ASSERT_TRUE(lenient.ok()) << lenient.status();
  EXPECT_TRUE(InferShapes(**lenient).ok());
  EXPECT_EQ((*lenient)->graph().FindValue("x")->elem_type(), DataType::kUndefined);
}

// A graph input that is also a graph output declared without a type keeps the input's type
// through a load and a save (the load_model fuzzer found it lost, and the saved file refused).
TEST(TypeCheck, AnInputPassedThroughToAnUntypedOutputKeepsItsType) {
  onnx::ModelProto m = ShapeOfInput(
      [](onnx::TypeProto& t) { t.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT); });
  onnx::ValueInfoProto* passed = m.mutable_graph()->add_output();
  passed->set_name("x");
  absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(m), "", "m.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  const onnx::ModelProto saved = ModelToProto(**model);
  ASSERT_EQ(saved.graph().input_size(), 1);
  EXPECT_EQ(saved.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_TRUE(RequireInputTypes(saved.graph()).ok());
}

// The same with the output declaring a type that names no element type (`elem_type: 0`, or
// `type {}`): the input's type stays (the load_model fuzzer found the saved input untyped).
TEST(TypeCheck, AnInputPassedThroughToAnOutputOfUnknownTypeKeepsItsType) {
  for (const bool empty_kind : {false, true}) {
    onnx::ModelProto m = ShapeOfInput([](onnx::TypeProto& t) {
      t.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    });
    onnx::ValueInfoProto* passed = m.mutable_graph()->add_output();
    passed->set_name("x");
    if (empty_kind) {
      passed->mutable_type();
    } else {
      passed->mutable_type()->mutable_tensor_type()->set_elem_type(0);
    }
    absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(m), "", "m.onnx");
    ASSERT_TRUE(model.ok()) << model.status();
    const onnx::ModelProto saved = ModelToProto(**model);
    ASSERT_EQ(saved.graph().input_size(), 1);
    EXPECT_EQ(saved.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT)
        << empty_kind;
    EXPECT_TRUE(RequireInputTypes(saved.graph()).ok()) << empty_kind;
  }
}

TEST(TypeCheck, AnEmptyTypeOnABranchOutputIsRead) {
  // If(c) with branches whose outputs declare `type {}`, as silero VAD's exporter wrote them.
  onnx::ModelProto m = ShapeOfInput(
      [](onnx::TypeProto& t) { t.mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL); });
  onnx::GraphProto* g = m.mutable_graph();
  g->mutable_node(0)->set_output(0, "shape");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("If");
  n->add_input("c");
  n->add_output("y");
  onnx::ValueInfoProto* c = g->add_input();
  c->set_name("c");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = a->mutable_g();
    body->set_name(branch);
    onnx::NodeProto* identity = body->add_node();
    identity->set_op_type("Identity");
    identity->add_input("shape");
    identity->add_output(std::string(branch) + "_out");
    onnx::ValueInfoProto* out = body->add_output();
    out->set_name(std::string(branch) + "_out");
    out->mutable_type();  // `type {}`
  }
  EXPECT_EQ(LoadError(m), "");
}

}  // namespace
}  // namespace ovfix
