// Broken model files for the bad-input tests, written into a folder. Each entry names the
// problem and a word its error message must contain.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/model_io.h"
#include "ir/text_form.h"
#include "onnx/onnx_pb.h"

namespace ovfix::testing {

struct BadModel {
  std::string name;      // file name in the folder
  std::string expected;  // a phrase the one-line error must contain
};

inline void WriteBytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

inline onnx::ModelProto TinyModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  auto add_io = [](onnx::ValueInfoProto* vi, const char* name) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(1);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  add_io(g->add_input(), "x");
  add_io(g->add_output(), "y");
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  w->add_dims(4);
  w->set_raw_data(std::string(16, '\0'));
  return m;
}

// Writes every bad model into `dir` and returns the list.
inline std::vector<BadModel> WriteBadModels(const std::filesystem::path& dir) {
  std::vector<BadModel> out;
  auto save = [&](const std::string& name, const onnx::ModelProto& m, const std::string& expected) {
    WriteBytes(dir / name, m.SerializeAsString());
    out.push_back({name, expected});
  };
  out.push_back({"missing.onnx", "cannot open"});
  WriteBytes(dir / "empty.onnx", "");
  out.push_back({"empty.onnx", "empty file"});
  WriteBytes(dir / "not_onnx.onnx", "this is a text file, not a model\n");
  out.push_back({"not_onnx.onnx", "not an ONNX model"});
  const std::string good = TinyModel().SerializeAsString();
  WriteBytes(dir / "truncated.onnx", good.substr(0, good.size() * 2 / 3));
  out.push_back({"truncated.onnx", "truncated"});
  {
    auto m = TinyModel();
    m.mutable_graph()->mutable_node(0)->set_input(1, "nowhere");
    save("undefined_value.onnx", m, "undefined value 'nowhere'");
  }
  {
    auto m = TinyModel();
    auto* g = m.mutable_graph();
    // a = Relu(b); b = Relu(a): neither can run first.
    auto* n1 = g->add_node();
    n1->set_op_type("Relu");
    n1->add_input("b");
    n1->add_output("a");
    auto* n2 = g->add_node();
    n2->set_op_type("Relu");
    n2->add_input("a");
    n2->add_output("b");
    save("cycle.onnx", m, "cycle");
  }
  {
    auto m = TinyModel();
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type("Relu");
    n->add_input("x");
    n->add_output("y");
    save("duplicate_name.onnx", m, "duplicate value name 'y'");
  }
  auto external = [&](const std::string& name, const std::string& location, int64_t offset,
                      const std::string& expected) {
    auto m = TinyModel();
    auto* w = m.mutable_graph()->mutable_initializer(0);
    w->clear_raw_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = w->add_external_data();
    e->set_key("location");
    e->set_value(location);
    e = w->add_external_data();
    e->set_key("offset");
    e->set_value(std::to_string(offset));
    e = w->add_external_data();
    e->set_key("length");
    e->set_value("16");
    save(name, m, expected);
  };
  WriteBytes(dir / "weights.bin", std::string(20, '\0'));
  external("external_missing.onnx", "no_such_weights.bin", 0, "missing external data file");
  external("external_outside.onnx", "../weights.bin", 0, "outside the model's folder");
  external("external_absolute.onnx", (dir / "weights.bin").string(), 0, "absolute");
  external("external_range.onnx", "weights.bin", 8, "past the end");
  return out;
}

}  // namespace ovfix::testing
