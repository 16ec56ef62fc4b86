// Outputs are preserved under an independent runtime too: a UNet-like net whose bilinear
// Resize sizes come from Shape chains (every coordinate transformation mode, odd sizes) is
// converted for each fp32 target, and onnxruntime with its graph run exactly as written
// (../shared/tools/ort/run.js --opt-level disabled) must give the converted model the outputs
// it gives the original (rel. 1e-5 of each output's range). Skipped where node or
// onnxruntime-node is not installed (tests/support/ort_peer.h), failed then under
// $OVFIX_REQUIRE_ORT (scripts/test.sh).
#include "tests/support/ort_peer.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;
using testing_support::RunOrt;

// Encoder (stride-2 convs on 37 -> 19 -> 10), decoder upsampling to each skip's size read
// by Shape -> Slice -> Concat, one Resize per coordinate transformation mode.
std::string UnetText() {
  std::string text = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,37,37] x) => (float[1,2,19,19] y0, float[1,2,19,19] y1, float[1,2,37,37] y2,
                         float[1,2,37,37] y3)
  <float[2,2,3,3] w = {0.3, -0.2, 0.1, 0.5, -0.4, 0.2, 0.1, 0.3, -0.1, 0.2, 0.1, -0.3, 0.4,
                       0.2, -0.2, 0.1, 0.3, 0.2, -0.1, 0.4, 0.2, 0.1, -0.3, 0.2, 0.3, 0.1,
                       -0.2, 0.2, 0.1, 0.3, -0.2, 0.1, 0.4, -0.1, 0.2, 0.1},
   float[2] b = {0.1, -0.1}, int64[1] i0 = {0}, int64[1] i2 = {2}, int64[1] i4 = {4}> {
  e1 = Conv<pads = [1, 1, 1, 1], strides = [2, 2]>(x, w, b)
  r1 = Relu(e1)
  e2 = Conv<pads = [1, 1, 1, 1], strides = [2, 2]>(r1, w, b)
  r2 = Relu(e2)
  s2 = Shape(r2)
  nc = Slice(s2, i0, i2)
  s1 = Shape(r1)
  hw1 = Slice(s1, i2, i4)
  to1 = Concat<axis = 0>(nc, hw1)
  sx = Shape(x)
  hwx = Slice(sx, i2, i4)
  tox = Concat<axis = 0>(nc, hwx)
)";
  const char* modes[] = {"pytorch_half_pixel", "half_pixel", "align_corners", "asymmetric"};
  for (int k = 0; k < 4; ++k) {
    const std::string target = k < 2 ? "to1" : "tox";
    const std::string skip = k < 2 ? "r1" : "x";
    absl::StrAppend(&text, "  u", k, " = Resize<mode = \"linear\", ",
                    "coordinate_transformation_mode = \"", modes[k], "\">(r2, , , ", target,
                    ")\n  y", k, " = Add(u", k, ", ", skip, ")\n");
  }
  absl::StrAppend(&text, "}\n");
  return text;
}

class OrtPeer : public ::testing::TestWithParam<std::string> {};

TEST_P(OrtPeer, ConvertedUnetKeepsOnnxruntimeOutputs) {
  OVFIX_REQUIRE_ORT(modules);
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("ovfix_ort_peer_", ::getpid(), "_", GetParam());
  fs::create_directories(dir);
  auto model = ParseModelText(UnetText());
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string original = (dir / "original.onnx").string();
  ASSERT_TRUE(SaveModel(**model, original).ok());
  Tensor x(DataType::kFloat, {1, 2, 37, 37});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = static_cast<float>((i * 37 % 101) - 50) / 25;
  }
  const std::string input = (dir / "input_0.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, x, "x").ok());

  PipelineOptions options;
  options.convert.target = GetParam();
  options.convert.input_files = {{"x", input}};
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  const std::string converted = (dir / "converted.onnx").string();
  ASSERT_TRUE(SaveModel(**model, converted).ok());

  const std::vector<Tensor> expected = RunOrt(modules, original, {input}, dir / "ort_original");
  const std::vector<Tensor> actual = RunOrt(modules, converted, {input}, dir / "ort_converted");
  ASSERT_EQ(expected.size(), 4u);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(exec::RelativeError(actual[i], expected[i]), 1e-5) << "output " << i;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Targets, OrtPeer, ::testing::Values("generic", "tensorrt", "openvino-gpu"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace ovfix::converter
