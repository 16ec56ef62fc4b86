// A converted file keeps the original's input and output types by default, on every target
// and precision (issue: fp16 files declared float16 inputs, and a quantized model's outputs
// came out mixed: one float, one float16), so that onnxruntime runs it on the original's
// float32 input files; --no-keep-io-types is the way to float16 inputs and outputs.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"
#include "tests/support/ort_peer.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using testing::RunOvfix;

// A conv quantized the way onnxruntime's quantize_dynamic writes it (DynamicQuantizeLinear,
// ConvInteger, the scales multiplied back), a bias, and two outputs: the map and its sigmoid.
std::string QuantizedConvModel() {
  std::vector<int> weights;
  for (int i = 0; i < 4 * 3 * 3 * 3; ++i) weights.push_back((i * 37 + 11) % 256);
  return absl::StrCat(R"(<ir_version: 8, opset_import: ["" : 17]>
    q (float[1,3,16,16] x) => (float[1,4,16,16] y, float[1,4,16,16] p)
      <uint8[4,3,3,3] w = {)",
                      absl::StrJoin(weights, ", "), R"(}, uint8 wz = {128}, float ws = {0.004},
       float[4,1,1] b = {0.1, -0.2, 0.3, 0.05}> {
      xq, xs, xz = DynamicQuantizeLinear(x)
      acc = ConvInteger<pads = [1, 1, 1, 1]>(xq, w, xz, wz)
      accf = Cast<to = 1>(acc)
      scale = Mul(xs, ws)
      conv = Mul(accf, scale)
      y = Add(conv, b)
      p = Sigmoid(y)
    })");
}

struct Fixture {
  fs::path dir;
  std::string model, input;
};

Fixture Prepare(const std::string& name) {
  Fixture f;
  f.dir = fs::temp_directory_path() / absl::StrCat("ovfix_io_types_", name, "_", ::getpid());
  fs::remove_all(f.dir);
  fs::create_directories(f.dir);
  absl::StatusOr<std::unique_ptr<Model>> model = ParseModelText(QuantizedConvModel());
  EXPECT_TRUE(model.ok()) << model.status();
  f.model = (f.dir / "q.onnx").string();
  EXPECT_TRUE(SaveModel(**model, f.model).ok());
  std::vector<float> x(3 * 16 * 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.05f * static_cast<float>(i)) * 2.0f;
  f.input = (f.dir / "x.pb").string();
  EXPECT_TRUE(
      WriteTensorFile(f.input, Tensor::FromVector<float>(DataType::kFloat, {1, 3, 16, 16}, x), "x")
          .ok());
  return f;
}

std::vector<DataType> IoTypes(const std::string& file) {
  absl::StatusOr<std::unique_ptr<Model>> m = LoadModel(file);
  EXPECT_TRUE(m.ok()) << m.status();
  std::vector<DataType> types;
  if (!m.ok()) return types;
  for (const Value* v : (*m)->graph().inputs()) {
    if (!v->is_initializer()) types.push_back(v->elem_type());
  }
  for (const Value* v : (*m)->graph().outputs()) types.push_back(v->elem_type());
  return types;
}

TEST(IoTypes, EveryReducedPrecisionTargetKeepsTheOriginalsTypes) {
  OVFIX_REQUIRE_ORT(modules);
  const Fixture f = Prepare("keep");
  const std::vector<DataType> original = IoTypes(f.model);
  ASSERT_EQ(original,
            (std::vector<DataType>{DataType::kFloat, DataType::kFloat, DataType::kFloat}));
  const std::vector<Tensor> expected =
      testing_support::RunOrt(modules, f.model, {f.input}, f.dir / "expected");
  ASSERT_EQ(expected.size(), 2u);
  for (const std::string& target :
       {"--target gpu-fp16", "--target ncnn-vulkan", "--target openvino-gpu", "--target gpu-bf16",
        "--target tensorrt --precision fp16"}) {
    SCOPED_TRACE(target);
    const std::string out = (f.dir / "out.onnx").string();
    fs::remove(out);
    testing::CommandResult r = RunOvfix(absl::StrCat("convert ", f.model, " ", out, " ", target,
                                                     " --input x=", f.input, " --quiet"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(IoTypes(out), original);
    // onnxruntime's CPU provider has no bfloat16 Mul: the bf16 file is for GPUs.
    if (target == std::string("--target gpu-bf16")) continue;
    // onnxruntime takes the original's float32 input file as it is.
    const fs::path got_dir = f.dir / "got";
    fs::remove_all(got_dir);
    const std::vector<Tensor> got = testing_support::RunOrt(modules, out, {f.input}, got_dir);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].type(), DataType::kFloat);
      ASSERT_EQ(got[i].dims(), expected[i].dims());
      EXPECT_LE(exec::RelativeError(got[i], expected[i]), 0.02) << "output " << i;
    }
  }
  fs::remove_all(f.dir);
}

// Asked for, the file's float outputs are float16, and so are its float inputs unless only
// nodes that take float32 alone read them (DynamicQuantizeLinear here).
TEST(IoTypes, NoKeepIoTypesGivesFloat16InputsAndOutputs) {
  const Fixture f = Prepare("half");
  const std::string out = (f.dir / "out.onnx").string();
  testing::CommandResult r = RunOvfix(absl::StrCat(
      "convert ", f.model, " ", out, " --target gpu-fp16 --no-keep-io-types --input x=", f.input));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(IoTypes(out),
            (std::vector<DataType>{DataType::kFloat, DataType::kFloat16, DataType::kFloat16}));
  fs::remove_all(f.dir);
}

}  // namespace
}  // namespace ovfix
