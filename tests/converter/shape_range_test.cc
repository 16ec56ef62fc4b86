// --shape-range NAME=MIN:OPT:MAX: validation over the shapes a model will run at. The model
// here is one whose fp16 overflow appears only at the larger shape, as a global sum over H x W
// does (four times the terms at twice the resolution): features of a convolution summed over
// the picture, scaled by the nominal resolution's pixel count, and a classifier on them.
// Calibrated on a 16x16 photograph, the sum stays far below fp16's limit, so the island
// policy leaves it in fp16; at 512x512 it passes 65504 and the file's outputs go inf.
//  - Without --shape-range the report says the file was validated at 16x16 only, and
//    onnxruntime (float16 storage emulated) shows the file failing at 512x512 (the class of
//    model is right).
//  - With it, the conversion calibrates and validates at the three shapes (calibration data
//    brought to each), the report has a score per shape, and onnxruntime runs the written file
//    within the default criteria at 16, 64 and 512, the input dims still dynamic.
//  - On tensorrt the report gives trtexec's matching --minShapes/--optShapes/--maxShapes.
//  - Bringing an image to a shape resizes it bilinearly (a hand-worked case) and repeats or
//    cuts other dims.
#include "converter/shape_range.h"

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/fp16_models.h"
#include "tests/support/fp16_storage_emulation.h"
#include "tests/support/ort_peer.h"
#include "tests/support/tensor_checks.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

// The weights as text: `n` values of amplitude `a` along a sine.
std::string Values(int n, double a, double step, double phase) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(absl::StrCat(a * std::sin(step * i + phase)));
  return absl::StrJoin(v, ", ");
}

std::unique_ptr<Model> GlobalSumModel() {
  const std::string text =
      absl::StrCat(R"(
  <ir_version: 8, opset_import: ["" : 17]>
  m (float[1, 3, H, W] x) => (float[1, 8] pooled, float[1, 4] logits)
    <float[8, 3, 3, 3] w = {)",
                   Values(216, 0.15, 0.7, 1), R"(},
     float[8] b = {0.5, 0.6, 0.4, 0.5, 0.7, 0.5, 0.6, 0.5},
     int64[2] axes = {2, 3}, float inv = {0.00390625}, float[4, 8] fc = {)",
                   Values(32, 0.2, 1.3, 2), R"(}, float[4] fcb = {0, 0, 0, 0}> {
    feat = Conv <pads = [1, 1, 1, 1]> (x, w, b)
    act = Relu(feat)
    s = ReduceSum <keepdims = 0> (act, axes)
    pooled = Mul(s, inv)
    logits = Gemm <transB = 1> (pooled, fc, fcb)
  })");
  auto model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  return *std::move(model);
}

// A photograph of tests/data/photos as the model's input, NCHW in [-1, 1], brought to
// `size` x `size` by nearest pixels.
Tensor Photo(const std::string& file, int64_t size) {
  absl::StatusOr<Tensor> t = test_models::ResizedPhoto(file, size, 1 / 127.5f, -1.0f);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : Tensor(DataType::kFloat, {1, 3, size, size});
}

struct Converted {
  ConversionReport report;
  std::string original, converted;
  fs::path dir;
};

Converted Convert(const std::string& name, const std::string& target, bool ranged) {
  Converted out;
  out.dir = test_support::ScratchDir("shape_range", name);
  std::unique_ptr<Model> model = GlobalSumModel();
  EXPECT_NE(model, nullptr);
  if (model == nullptr) return out;
  out.original = (out.dir / "original.onnx").string();
  EXPECT_TRUE(SaveModel(*model, out.original).ok());
  const std::string calibration = (out.dir / "calibration.pb").string();
  EXPECT_TRUE(WriteTensorFile(calibration, Photo("astronaut_16.pb", 16), "x").ok());
  PipelineOptions options;
  options.convert.target = target;
  options.convert.input_files["x"] = calibration;
  if (ranged)
    options.convert.shape_ranges["x"] = {{1, 3, 16, 16}, {1, 3, 64, 64}, {1, 3, 512, 512}};
  auto report = ConvertModel(*model, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return out;
  out.report = *std::move(report);
  out.converted = (out.dir / "converted.onnx").string();
  EXPECT_TRUE(SaveModel(*model, out.converted).ok());
  return out;
}

// The written file against the original in onnxruntime at `size`, float16 storage emulated
// (tests/support/fp16_storage_emulation.h): the worst output's error relative to its range
// (inf where the file gives a non-finite value).
double OrtError(const std::string& modules, const Converted& c, int64_t size) {
  const std::string input = (c.dir / absl::StrCat("x_", size, ".pb")).string();
  EXPECT_TRUE(WriteTensorFile(input, Photo("chelsea_96.pb", size), "x").ok());
  const std::string emulated = (c.dir / "converted_fp16_storage.onnx").string();
  testing_support::EmulateFp16Storage(c.converted, emulated);
  const auto expected =
      testing_support::RunOrt(modules, c.original, {input}, c.dir / absl::StrCat("o", size));
  const auto actual =
      testing_support::RunOrt(modules, emulated, {input}, c.dir / absl::StrCat("c", size));
  EXPECT_EQ(expected.size(), 2u);
  return testing_support::WorstOutputError(actual, expected);
}

TEST(ShapeRange, WithoutARangeTheReportSaysWhichShapeWasValidated) {
  const Converted c = Convert("unranged", "gpu-fp16", false);
  EXPECT_TRUE(c.report.outputs_match) << SummaryTable(c.report);
  EXPECT_NE(c.report.shapes_note.find("validated at x=1x3x16x16 only"), std::string::npos)
      << c.report.shapes_note;
  EXPECT_NE(SummaryTable(c.report).find("--shape-range NAME=MIN:OPT:MAX"), std::string::npos);
  OVFIX_REQUIRE_ORT(modules);
  EXPECT_LE(OrtError(modules, c, 16), 0.01);
  // The class of model is right: what holds at 16x16 fails at 512x512.
  EXPECT_GT(OrtError(modules, c, 512), 0.1) << "the global sum does not overflow: no test";
}

TEST(ShapeRange, TheFileMeetsTheCriteriaAtEveryShapeOfTheRange) {
  const Converted c = Convert("ranged", "gpu-fp16", true);
  EXPECT_TRUE(c.report.outputs_match) << SummaryTable(c.report);
  ASSERT_EQ(c.report.set_labels.size(), 3u);
  EXPECT_EQ(c.report.set_labels[0], "opt x=1x3x64x64");
  EXPECT_EQ(c.report.set_labels[1], "min x=1x3x16x16");
  EXPECT_EQ(c.report.set_labels[2], "max x=1x3x512x512");
  ASSERT_TRUE(c.report.end_to_end.has_value());
  EXPECT_EQ(c.report.end_to_end->set_scores.size(), 3u);
  const std::string summary = SummaryTable(c.report);
  EXPECT_NE(summary.find("  set 2 (max x=1x3x512x512): score "), std::string::npos) << summary;
  EXPECT_TRUE(c.report.shapes_note.empty());
  // The sum is kept in fp32 for what the largest shape showed.
  bool sum_kept = false;
  for (const rules::IslandNode& i : c.report.islands) sum_kept |= i.op_type == "ReduceSum";
  EXPECT_TRUE(sum_kept) << summary;
  // The written file keeps its input's dims dynamic.
  auto written = LoadModel(c.converted);
  ASSERT_TRUE(written.ok()) << written.status();
  const auto& dims = (*written)->graph().inputs()[0]->type().tensor_type().shape().dim();
  ASSERT_EQ(dims.size(), 4);
  EXPECT_FALSE(dims[2].has_dim_value());
  EXPECT_FALSE(dims[3].has_dim_value());
  OVFIX_REQUIRE_ORT(modules);
  for (int64_t size : {16, 64, 512}) {
    SCOPED_TRACE(size);
    EXPECT_LE(OrtError(modules, c, size), 0.01);
  }
}

TEST(ShapeRange, TensorrtReportGivesTrtexecShapes) {
  const Converted c = Convert("tensorrt", "tensorrt", true);
  EXPECT_TRUE(c.report.outputs_match) << SummaryTable(c.report);
  EXPECT_EQ(c.report.trtexec_shapes,
            "--minShapes=x:1x3x16x16 --optShapes=x:1x3x64x64 --maxShapes=x:1x3x512x512");
  EXPECT_NE(SummaryTable(c.report).find("TensorRT profile (trtexec): --minShapes=x:1x3x16x16"),
            std::string::npos);
}

// Calibration coverage: two photographs normalized alike raise nothing; one left at 0..255
// beside a normalized one is named, since a set that unlike the others says little about
// the ranges the model will see.
TEST(ShapeRange, CalibrationSetsOfUnlikeRangesAreNamed) {
  const fs::path dir = test_support::ScratchDir("shape_range", "unlike");
  std::unique_ptr<Model> model = GlobalSumModel();
  ASSERT_NE(model, nullptr);
  Tensor raw = Photo("coffee_64.pb", 16);
  for (int64_t i = 0; i < raw.numel(); ++i)
    raw.data<float>()[i] = (raw.data<float>()[i] + 1) * 127.5f;
  const std::vector<std::pair<std::string, Tensor>> files = {
      {"astronaut.pb", Photo("astronaut_16.pb", 16)},
      {"chelsea.pb", Photo("chelsea_96.pb", 16)},
      {"coffee_raw.pb", raw}};
  for (const auto& [name, t] : files) {
    ASSERT_TRUE(WriteTensorFile((dir / name).string(), t, "x").ok());
  }
  auto convert = [&](const std::vector<std::string>& names) {
    std::unique_ptr<Model> m = GlobalSumModel();
    PipelineOptions options;
    options.convert.target = "generic";
    for (const std::string& name : names)
      options.input_sets.push_back({{"x", (dir / name).string()}});
    absl::StatusOr<ConversionReport> report = ConvertModel(*m, options);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? report->calibration : std::string();
  };
  const std::string alike = convert({"astronaut.pb", "chelsea.pb"});
  EXPECT_EQ(alike.find("differs widely"), std::string::npos) << alike;
  const std::string unlike = convert({"astronaut.pb", "coffee_raw.pb"});
  EXPECT_NE(unlike.find("input 'x' differs widely between sets: max |x| "), std::string::npos)
      << unlike;
  EXPECT_NE(unlike.find(" in set 1, "), std::string::npos) << unlike;
}

// A hand-worked case: 2x2 -> 4x4 with half-pixel centres. Output pixel i samples source
// coordinate (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped to [0, 1]: weights
// (0, 0.25, 0.75, 1) of the second pixel.
TEST(ShapeRange, ImagesAreResizedBilinearlyOtherDimsRepeatedOrCut) {
  const Tensor image = Tensor::FromVector<float>(DataType::kFloat, {1, 1, 2, 2}, {0, 4, 8, 12});
  absl::StatusOr<Tensor> up = BringToShape(image, {1, 1, 4, 4});
  ASSERT_TRUE(up.ok()) << up.status();
  const std::vector<float> row_weight = {0, 0.25, 0.75, 1};
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) {
      EXPECT_FLOAT_EQ(up->data<float>()[y * 4 + x], 8 * row_weight[y] + 4 * row_weight[x]);
    }
  }
  // A batch of 1 replicated to 2, ids repeated to a longer sequence and cut to a shorter one.
  absl::StatusOr<Tensor> batch = BringToShape(image, {2, 1, 2, 2});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->data<float>()[4], 0);
  EXPECT_EQ(batch->data<float>()[7], 12);
  const Tensor ids = Tensor::FromVector<int64_t>(DataType::kInt64, {1, 3}, {101, 7, 102});
  absl::StatusOr<Tensor> longer = BringToShape(ids, {1, 7});
  ASSERT_TRUE(longer.ok());
  EXPECT_EQ(
      std::vector<int64_t>(longer->values<int64_t>().begin(), longer->values<int64_t>().end()),
      (std::vector<int64_t>{101, 7, 102, 101, 7, 102, 101}));
  absl::StatusOr<Tensor> shorter = BringToShape(ids, {1, 2});
  ASSERT_TRUE(shorter.ok());
  EXPECT_EQ(shorter->data<int64_t>()[1], 7);
  EXPECT_FALSE(BringToShape(ids, {3}).ok());
}

}  // namespace
}  // namespace ovfix::converter
