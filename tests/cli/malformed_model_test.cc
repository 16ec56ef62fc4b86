// Malformed nodes and absurd sizes through the binary, as a user meets them: every command
// refuses them with exit code 2 and one stderr line that names the model, whatever the
// target and whether or not `convert` validates. None of them may crash the process.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_util.h"
#include "tests/ir/bad_input_fixtures.h"
#include "tests/ir/malformed_nodes.h"
#include "tests/ir/test_util.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ParseModelProto;
using testing::RunOvfix;

class MalformedModel : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::TempDir("malformed"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const onnx::ModelProto& model) {
    const fs::path path = dir_ / name;
    testing::WriteBytes(path, model.SerializeAsString());
    return path.string();
  }
  std::string Output() const { return (dir_ / "out.onnx").string(); }
  // A TensorProto file of zeros for `run --input`.
  std::string Zeros(const std::string& name, int data_type, std::vector<int64_t> dims) {
    onnx::TensorProto t;
    t.set_data_type(data_type);
    int64_t n = 1;
    for (int64_t d : dims) {
      t.add_dims(d);
      n *= d;
    }
    t.set_raw_data(std::string(n * (data_type == onnx::TensorProto::INT64 ? 8 : 4), '\0'));
    const fs::path path = dir_ / (name + ".pb");
    testing::WriteBytes(path, t.SerializeAsString());
    return path.string();
  }

  // Runs `args` and checks the promise: exit code 2, one line naming `model` and `problem`.
  testing::CommandResult Refused(const std::string& args, const std::string& model,
                                 const std::string& problem) {
    SCOPED_TRACE(args);
    testing::CommandResult r = RunOvfix(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(model));
    EXPECT_THAT(r.err, HasSubstr(problem));
    EXPECT_THAT(r.err, Not(HasSubstr("a bug in ovfix")));
    EXPECT_FALSE(fs::exists(Output()));
    return r;
  }

  // `convert` for a plain and an fp16 target, validated and not.
  void ConvertRefused(const std::string& model, const std::string& problem) {
    for (const char* target : {"generic", "gpu-fp16"}) {
      for (const char* validate : {"", " --no-validate"}) {
        Refused("convert " + model + " " + Output() + " --target " + target + validate, model,
                problem);
      }
    }
  }

  fs::path dir_;
};

// onnx's shape inference divides by the stride: the node check refuses it first.
TEST_F(MalformedModel, ZeroStrideIsRefusedBeforeShapeInference) {
  const std::string model = Write("stride0.onnx", ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,1,4,4] x, float[1,1,2,2] w) => (float[1,1,3,3] y) {
      y = Conv <strides = [0, 1]> (x, w)
    })"));
  ConvertRefused(model, "strides must be positive");
  Refused("explain explicit_broadcast " + model, model, "strides must be positive");
  Refused("run " + model + " --input x=" + Zeros("x", onnx::TensorProto::FLOAT, {1, 1, 4, 4}) +
              " --input w=" + Zeros("w", onnx::TensorProto::FLOAT, {1, 1, 2, 2}),
          model, "strides must be positive");
}

// A Constant whose raw_data does not fill its dims: decoding it anywhere (onnx's data
// propagation reads it for Unsqueeze's axes) would read past its bytes.
TEST_F(MalformedModel, ConstantWithTooFewBytesIsRefused) {
  const std::string model = Write("short_constant.onnx", testing::ShortConstantModel());
  ConvertRefused(model, "raw_data has 1 bytes, its dims need 8");
  Refused("explain explicit_broadcast " + model, model, "raw_data has 1 bytes");
}

// An empty name is an omitted input; Gather's data is not optional.
TEST_F(MalformedModel, MissingRequiredInputIsRefused) {
  const std::string model = Write("gather_no_data.onnx", testing::GatherWithoutDataModel());
  ConvertRefused(model, "input 0 is marked single but has an empty string");
  Refused("run " + model + " --input i=" + Zeros("i", onnx::TensorProto::INT64, {2}), model,
          "marked single");
}

// onnx's LayerNormalization inference writes the statistics' dims from the axis on, whether
// the input's rank is declared or inferred.
TEST_F(MalformedModel, AxisOutOfRangeIsRefusedBeforeShapeInference) {
  const std::string declared = Write("layer_norm_axis.onnx", ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x, float[3] s, float[3] b) => (float[2,3] y, float[2,1] m, float[2,1] v) {
      y, m, v = LayerNormalization <axis = -2147483648> (x, s, b)
    })"));
  ConvertRefused(declared, "axis -2147483648 is out of range for rank 2");
  const std::string inferred = Write("layer_norm_axis_inferred.onnx", ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x, float[3] s, float[3] b) => (y, m, v) {
      r = Relu(x)
      y, m, v = LayerNormalization <axis = -3> (r, s, b)
    })"));
  ConvertRefused(inferred, "axis -3 is out of range for rank 2");
}

// Validation makes random inputs of the declared dims: a size no machine has is refused
// before anything is allocated.
TEST_F(MalformedModel, HugeDeclaredDimIsRefusedBeforeAllocation) {
  for (const char* dim : {"1099511627776", "4294967296"}) {
    SCOPED_TRACE(dim);
    const std::string text = absl::StrCat(R"(
      <ir_version: 8, opset_import: ["" : 17]>
      g (float[)",
                                          dim, "] x) => (float[", dim, R"(] y) {
        y = Relu(x)
      })");
    const std::string model = Write("huge.onnx", ParseModelProto(text.c_str()));
    Refused("convert " + model + " " + Output(), model, "too large for random values");
  }
}

// Names come from the model: a line break or an escape sequence in one is shown escaped.
TEST_F(MalformedModel, ControlCharactersInNamesAreEscaped) {
  onnx::ModelProto proto = ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,1,4,4] x, float[1,1,2,2] w) => (float[1,1,3,3] y) {
      y = Conv <strides = [0, 1]> (x, w)
    })");
  proto.mutable_graph()->mutable_node(0)->set_name("conv\nnext line\x1b[31m");
  const std::string model = Write("names.onnx", proto);
  const testing::CommandResult r =
      Refused("convert " + model + " " + Output(), model, "strides must be positive");
  EXPECT_THAT(r.err, HasSubstr("conv\\nnext line\\x1b[31m"));
}

// A model that passes onnx's plain checker and runs, but contradicts strict shape inference
// (its output is declared float, Shape makes int64): the model is at fault, not ovfix, and
// the checker's several lines of text become one.
TEST_F(MalformedModel, InputThatFailsTheFullCheckIsNotCalledABug) {
  const std::string model = Write("declared_type.onnx", ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2] y) {
      y = Shape(x)
    })"));
  for (const char* validate : {"", " --no-validate"}) {
    Refused("convert " + model + " " + Output() + validate, model,
            "fails onnx's checker with full shape inference");
  }
}

// A model the CPU executor cannot run on random inputs: the message says which model.
TEST_F(MalformedModel, ValidationFailureNamesTheModel) {
  const std::string model = Write("reshape.onnx", ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[5] y) <int64[1] shape = {5}> {
      y = Reshape(x, shape)
    })"));
  const testing::CommandResult r =
      Refused("convert " + model + " " + Output(), model, "validation needs a run of the model");
  EXPECT_EQ(r.err.rfind("ovfix convert: " + model + ": ", 0), 0u) << r.err;
}

// A user rule whose replacement matches again and adds a node each time (found by the
// rule-file fuzzer: its rewrites grew the graph fivefold a sweep, to gigabytes). The bound on
// rewrites is the pass's, from the node count it started with; the rule here keeps the model
// equivalent (Relu(Relu(x)) = Relu(x)), so the conversion ends with a valid model.
TEST_F(MalformedModel, UserRuleThatFeedsItselfStopsAtABoundFromTheOriginalGraph) {
  const std::string model = Write("relu.onnx", ParseModelProto(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] y) {
      y = Relu(x)
    })"));
  const fs::path rules = dir_ / "grow.rules";
  testing::WriteBytes(rules, R"(# Relu(x) -> Relu(Relu(x))
rule grow
  match   (x) => (y) { y = Relu(x) }
  replace (x) => (y) { r = Relu(x)  y = Relu(r) }
)");
  const testing::CommandResult r = RunOvfix("convert " + model + " " + Output() +
                                            " --no-validate --verbose --rules " + rules.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("user_rules: stopped after 68 rewrites (4 per node and 64)"));
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(testing::Slurp(Output())));
  // One node to begin with, one more per rewrite.
  EXPECT_EQ(out.graph().node_size(), 69);
}

}  // namespace
}  // namespace ovfix
