// --precision fp16 on a target that does not list the fp16 conversion: `--target tensorrt
// --precision fp16` writes one model with TensorRT's legal forms (equal-rank element-wise
// inputs) AND fp16 tensors with fp32 islands, validated like gpu-fp16, and onnxruntime runs
// the file it wrote to within fp16's tolerance of the shared model's expected outputs
// (output_K.pb, onnxruntime fp32). Skipped without ../shared; the onnxruntime part skips
// without node/onnxruntime-node (tests/support/ort_peer.h).
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/tensor.h"
#include "ir/tensor_proto.h"
#include "rules/conversion_options.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/ort_peer.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

std::string ModelDir(const std::string& name) {
  return std::string(OVFIX_SHARED_DIR) + "/models/" + name;
}

class TensorrtFp16 : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorrtFp16, EqualRanksAndFp16WithIslandsThatOnnxruntimeRuns) {
  const std::string name = GetParam();
  const std::string dir = ModelDir(name);
  if (!fs::exists(dir + "/model.onnx")) GTEST_SKIP() << "no " << name << " in ../shared";
  const fs::path scratch =
      fs::temp_directory_path() / absl::StrCat("ovfix_trt_fp16_", ::getpid(), "_", name);
  fs::create_directories(scratch);
  const std::string output = (scratch / "model.onnx").string();

  // fp32 inputs and outputs (Casts inside), as the test data and TensorRT users have them.
  const PipelineOptions options =
      test_support::TensorRtConversion(dir + "/model.onnx", output, dir, "fp16");
  auto model = LoadModel(options.input_path);
  ASSERT_TRUE(model.ok()) << model.status();
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->outputs_match) << SummaryTable(*report);
  ASSERT_TRUE(report->written);

  auto written = LoadModel(output);
  ASSERT_TRUE(written.ok()) << written.status();
  const test_support::WrittenPrecision w =
      test_support::CountWrittenPrecision(**written, DataType::kFloat16);
  const int elementwise = w.elementwise, fp16_values = w.half_values,
            casts_to_float = w.casts_to_float;
  EXPECT_GT(elementwise, 0);
  EXPECT_GT(fp16_values, 0) << "no float16 tensor: the precision phase did not run";
  // hand_softmax's Exp overflows fp16: the softmax is shifted by its row's largest logit
  // (fp16_safe_softmax) and then needs no fp32 island; fp32 outputs still come from Casts.
  if (name == "hand_softmax") {
    int shifted = 0;
    for (const rules::RewriteRecord& r : report->rewrites) {
      shifted += r.rule == "fp16_safe_softmax" && !r.rolled_back;
    }
    EXPECT_EQ(shifted, 1) << SummaryTable(*report);
    EXPECT_TRUE(report->islands.empty()) << SummaryTable(*report);
    EXPECT_GT(casts_to_float, 0);
  }
  bool steps_has_fp16 = false;
  for (const StepReport& s : report->steps)
    steps_has_fp16 = steps_has_fp16 || s.name == "fp16_islands";
  EXPECT_TRUE(steps_has_fp16);

  // onnxruntime runs the written file on the test inputs, within fp16's tolerance of the
  // expected outputs.
  OVFIX_REQUIRE_ORT(modules);
  std::vector<std::string> inputs;
  for (int k = 0; fs::exists(absl::StrCat(dir, "/test_data_set_0/input_", k, ".pb")); ++k) {
    inputs.push_back(absl::StrCat(dir, "/test_data_set_0/input_", k, ".pb"));
  }
  const std::vector<Tensor> actual =
      testing_support::RunOrt(modules, output, inputs, scratch / "ort");
  ASSERT_FALSE(actual.empty());
  for (size_t k = 0; k < actual.size(); ++k) {
    absl::StatusOr<Tensor> expected =
        ReadTensorFile(absl::StrCat(dir, "/test_data_set_0/output_", k, ".pb"));
    ASSERT_TRUE(expected.ok()) << expected.status();
    Tensor got = actual[k];
    if (got.type() == DataType::kFloat16) {
      Tensor widened(DataType::kFloat, got.dims());
      Float16TensorToFloats(got, widened.data<float>());
      got = widened;
    }
    EXPECT_LE(exec::RelativeError(got, *expected), 0.02) << name << " output " << k;
  }
  fs::remove_all(scratch);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, TensorrtFp16,
                         ::testing::Values("trt_broadcast", "hand_softmax"));

}  // namespace
}  // namespace ovfix::converter
