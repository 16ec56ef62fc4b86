// Models with one malformed node each, as ModelProtos (the IR refuses some of them only when
// its node checks run): the node check tests and the CLI's crash tests use the same ones.
#pragma once

#include <string>

#include "gtest/gtest.h"
#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"

namespace ovfix::testing {

inline onnx::ModelProto ParseModelProto(const char* text) {
  onnx::ModelProto model;
  onnx::OnnxParser parser(text);
  const auto status = parser.Parse(model);
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return model;
}

// A Constant int64[1] whose raw_data holds 1 byte, feeding Unsqueeze's axes.
inline onnx::ModelProto ShortConstantModel() {
  onnx::ModelProto proto = ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[3] x) => (float[1,3] y) {
      axes = Constant <value = int64[1] {0}> ()
      y = Unsqueeze(x, axes)
    })");
  onnx::TensorProto* value =
      proto.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_t();
  value->clear_int64_data();
  value->set_raw_data(std::string(1, '\0'));
  return proto;
}

// A Gather whose data input is "" (omitted), with int64[2] input `i`.
inline onnx::ModelProto GatherWithoutDataModel() {
  onnx::ModelProto proto = ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (int64[2] i) => (float[2] y) <float[3] d = {1.0, 2.0, 3.0}> {
      y = Gather(d, i)
    })");
  proto.mutable_graph()->mutable_node(0)->set_input(0, "");
  return proto;
}

}  // namespace ovfix::testing
