// --precision fp16 on a target that honours fp32 islands (gpu-fp16): a softmax written out by
// hand, Exp(x) / ReduceSum(Exp(x)), whose Exp overflows fp16 is rewritten to subtract the row's
// largest logit first (fp16_safe_softmax) before fp16_islands, and the island policy then
// leaves it in fp16: every exponential is at most 1 and the sum at most the row's length.
// Checked on a hand-worked case (softmax of {10, 11, 12}, exp(12) = 162755 beyond fp16) and
// against onnxruntime on a larger one.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "converter/model_run.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/fp16_overflow_models.h"
#include "tests/support/ort_peer.h"
#include "tests/support/softmax_island.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

fs::path ScratchDir(const std::string& name) {
  return test_support::ScratchDir("shifted_softmax", name);
}

Tensor AsFloat(const Tensor& t) { return ConvertTensor(t, DataType::kFloat); }

// The conversion rewrote the softmax once to subtract the row's max, and needs no fp32 island
// for it.
void ExpectShiftedWithoutAnIsland(const ConversionReport& report) {
  EXPECT_EQ(test_support::CommittedRewrites(report, "fp16_safe_softmax"), 1)
      << SummaryTable(report);
  EXPECT_TRUE(report.islands.empty()) << SummaryTable(report);
}

TEST(Fp16ShiftedSoftmax, HandWorkedSoftmaxStaysInFp16WithoutAnIsland) {
  const fs::path dir = ScratchDir("hand");
  auto model = ParseModelText(testing::kSoftmaxFloat);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string input = (dir / "input_0.pb").string();
  const std::vector<float> x(std::begin(testing::kSoftmaxInput), std::end(testing::kSoftmaxInput));
  ASSERT_TRUE(
      WriteTensorFile(input, Tensor::FromVector<float>(DataType::kFloat, {3}, x), "x").ok());
  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.input_files = {{"x", input}};
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  ExpectShiftedWithoutAnIsland(*report);
  EXPECT_EQ(static_cast<int>(test_support::Fp32NodeNames(**model).size()), 0);

  // The converted model (float16 throughout) gives the hand-worked softmax within fp16's
  // rounding.
  auto y = RunAsTyped(**model, {{"x", Tensor::FromVector<float>(DataType::kFloat, {3}, x)}});
  ASSERT_TRUE(y.ok()) << y.status();
  const Tensor got = AsFloat((*y)[0]);
  ASSERT_EQ(got.numel(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got.data<float>()[i], testing::kSoftmaxExpected[i], 2e-3);
  fs::remove_all(dir);
}

// Logits up to 45 over rows of 8 (exp(45) ~ 3.5e19): onnxruntime runs the fp16 file within
// the default criteria of its run of the original.
TEST(Fp16ShiftedSoftmax, OnnxruntimeRunsTheFp16FileWithinTheDefaultCriteria) {
  const fs::path dir = ScratchDir("ort");
  auto model = ParseModelText(testing::kHandWrittenSoftmax);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string original = (dir / "original.onnx").string();
  ASSERT_TRUE(SaveModel(**model, original).ok());
  Tensor x = Tensor::Uninitialized(DataType::kFloat, {1, 8, 4, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 900.0f * std::sin(i + 1.0f);
  const std::string input = (dir / "input_0.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, x, "x").ok());
  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.input_files = {{"x", input}};
  const std::string converted = (dir / "converted.onnx").string();
  options.output_path = converted;
  options.write_output = true;
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->outputs_match) << SummaryTable(*report);
  ExpectShiftedWithoutAnIsland(*report);

  OVFIX_REQUIRE_ORT(modules);
  const auto expected = testing_support::RunOrt(modules, original, {input}, dir / "ort_original");
  const auto actual = testing_support::RunOrt(modules, converted, {input}, dir / "ort_converted");
  ASSERT_EQ(expected.size(), 1u);
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_LE(exec::RelativeError(AsFloat(actual[0]), expected[0], exec::kFloat16Resolution), 0.01);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix::converter
