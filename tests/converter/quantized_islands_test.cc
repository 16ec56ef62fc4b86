// fp16 conversion of quantized models, as onnxruntime's quantization tool writes them
// (bench/quantized_models.h: a UNet with DynamicQuantizeLinear + ConvInteger on every conv,
// and its static QDQ form), fed a photograph. fp16's rounding before a quantizer moves values
// across its rounding boundaries, so integer codes flip by a step and the next layers carry
// the steps on; the island policy keeps the float math that feeds a quantizer in fp32 up
// front, where the repair used to find it over 18 rounds and 20 model runs. So:
//  - the first conversion meets the default criteria: no repair, two model runs (and the
//    island certificate tries none of the quantizers' inputs);
//  - every float node with a float path to a quantizer is in fp32, said so by its reason;
//  - onnxruntime runs the written file within the default criteria of the original.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/quantized_models.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/tensor_proto.h"
#include "rules/passes/fp16_island_rules.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/fp16_models.h"
#include "tests/support/ort_peer.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSize = 64;

// The photograph of a cup (64 x 64, uint8 HWC) as the UNet's input: NCHW in [-1, 1].
Tensor CupPhoto() {
  absl::StatusOr<Tensor> photo = test_models::ReadPhoto("coffee_64.pb");
  EXPECT_TRUE(photo.ok()) << photo.status();
  Tensor t = Tensor::Uninitialized(DataType::kFloat, {1, 3, kSize, kSize});
  if (!photo.ok()) return t;
  const uint8_t* hwc = photo->data<uint8_t>();
  float* out = t.data<float>();
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < kSize * kSize; ++i) {
      out[c * kSize * kSize + i] = hwc[i * 3 + c] / 127.5f - 1.0f;
    }
  }
  return t;
}

// Whether a float value of `v` reaches a quantizer's input through float nodes.
bool FeedsQuantizer(const Value* v) {
  std::vector<const Value*> stack = {v};
  std::vector<const Value*> seen;
  while (!stack.empty()) {
    const Value* x = stack.back();
    stack.pop_back();
    if (x == nullptr || !rules::IsFloat32(x)) continue;
    if (std::find(seen.begin(), seen.end(), x) != seen.end()) continue;
    seen.push_back(x);
    for (const Use& u : x->uses()) {
      const std::string& op = u.node->op_type();
      if (op == "QuantizeLinear" || op == "DynamicQuantizeLinear") return true;
      for (const Value* o : u.node->outputs()) stack.push_back(o);
    }
  }
  return false;
}

struct Case {
  const char* name;
  onnx::ModelProto (*make)();
};

class QuantizedIslands : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizedIslands, FloatMathFeedingQuantizersStaysFp32AndTheFirstConversionHolds) {
  const Case& c = GetParam();
  const fs::path dir = test_support::ScratchDir("quantized_islands", c.name);
  const std::string original = (dir / "original.onnx").string();
  const onnx::ModelProto proto = c.make();
  std::ofstream(original, std::ios::binary) << proto.SerializeAsString();
  const std::string input = (dir / "input_0.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, CupPhoto(), proto.graph().input(0).name()).ok());

  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(original);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(InferShapes(**model).ok());
  // Which nodes of the original feed a quantizer, by the name of their first output.
  std::vector<std::string> feeding;
  for (const Node* n : (**model).graph().nodes()) {
    const std::string& op = n->op_type();
    if (op == "QuantizeLinear" || op == "DynamicQuantizeLinear") continue;
    if (n->outputs().empty() || !rules::IsFloat32(n->output(0))) continue;
    if (FeedsQuantizer(n->output(0))) feeding.push_back(n->Describe());
  }
  ASSERT_GT(feeding.size(), 10u) << "no float math feeding quantizers: no test";

  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.input_files[proto.graph().input(0).name()] = input;
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  EXPECT_FALSE(report->repair.has_value()) << SummaryTable(*report);
  // The reference run and the file's; the island certificate's runs come on top (it tries the
  // islands other than the quantizers' inputs: on the QDQ net the head Conv, given back).
  const int certificate_runs = report->certificate ? report->certificate->model_runs : 0;
  EXPECT_LE(report->model_runs - certificate_runs, 2) << SummaryTable(*report);
  EXPECT_LE(certificate_runs, 3) << SummaryTable(*report);
  for (const std::string& node : feeding) {
    auto island = std::find_if(report->islands.begin(), report->islands.end(),
                               [&](const rules::IslandNode& i) { return i.node == node; });
    ASSERT_NE(island, report->islands.end()) << node << " is not kept in fp32";
    EXPECT_TRUE(absl::StartsWith(island->reason, "feeds ") ||
                absl::StrContains(island->reason, "float16"))
        << node << ": " << island->reason;
  }

  const std::string converted = (dir / "converted.onnx").string();
  ASSERT_TRUE(SaveModel(**model, converted).ok());
  OVFIX_REQUIRE_ORT(modules);
  const auto expected = testing_support::RunOrt(modules, original, {input}, dir / "ort_o");
  const auto actual = testing_support::RunOrt(modules, converted, {input}, dir / "ort_c");
  ASSERT_EQ(expected.size(), 1u);
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_EQ(actual[0].type(), DataType::kFloat) << "the output keeps its type";
  EXPECT_LE(exec::RelativeError(actual[0], expected[0]), 0.1);
}

INSTANTIATE_TEST_SUITE_P(
    OnnxruntimeQuantized, QuantizedIslands,
    ::testing::Values(Case{"dynamic", [] { return bench::DynamicQuantizedUnetModel(kSize); }},
                      Case{"qdq", [] { return bench::QdqUnetModel(kSize); }}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ovfix::converter
