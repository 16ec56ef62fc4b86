// The error convert reports is the written file's for a large model too: a segmentation-style
// net at 1024 x 1024 with 12 sigmoid maps and 67 MB of float weights (past the 64 MB from which
// the pipeline's copies share weight buffers and fp16 weights are made lazily). Each output's
// reported statistics must be those of a run of the file written, on the same input, against
// the original, and nonzero: fp16 changes the maps.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "onnx/defs/attr_proto_util.h"
#include "tests/support/segmentation_parts.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSize = 1024, kMaps = 12, kHidden = 4096;

Tensor Weight(std::vector<int64_t> dims, float scale, uint32_t seed) {
  return test_support::LcgWeight(std::move(dims), scale, seed);
}

// image -> 1x1 Conv to 12 maps, plus a per-map bias from an MLP on the image's channel means
// (where the weights are: 3x4096, 4096x4096, 4096x12) -> Sigmoid -> Split into 12 outputs.
std::unique_ptr<Model> SegmentationModel() {
  auto model = std::make_unique<Model>();
  model->extras().set_ir_version(8);
  model->SetOpsetVersion("", 17);
  Graph& g = model->graph();
  g.set_name("segmentation");
  Value* image = g.CreateValue("image");
  image->set_elem_type(DataType::kFloat);
  image->set_shape(std::vector<int64_t>{1, 3, kSize, kSize});
  g.AddInput(image);
  auto node = [&](const char* op, std::vector<Value*> in, const std::string& out) {
    return g.AddNode(op, in, {out}, out)->output(0);
  };
  Value* conv = node("Conv",
                     {image, g.AddInitializer("conv_w", Weight({kMaps, 3, 1, 1}, 1.0f, 1)),
                      g.AddInitializer("conv_b", Weight({kMaps}, 0.1f, 2))},
                     "conv");
  Value* mean = node("Flatten", {node("GlobalAveragePool", {image}, "pooled")}, "mean");
  Value* h = node(
      "Relu", {node("MatMul", {mean, g.AddInitializer("w1", Weight({3, kHidden}, 0.5f, 3))}, "h1")},
      "r1");
  const float scale = std::sqrt(3.0f / kHidden);
  h = node(
      "Relu",
      {node("MatMul", {h, g.AddInitializer("w2", Weight({kHidden, kHidden}, scale, 4))}, "h2")},
      "r2");
  h = node("MatMul", {h, g.AddInitializer("w3", Weight({kHidden, kMaps}, scale, 5))}, "h3");
  Value* shape = g.AddInitializer(
      "bias_shape", Tensor::FromVector<int64_t>(DataType::kInt64, {4}, {1, kMaps, 1, 1}));
  Value* bias = node("Reshape", {h, shape}, "bias");
  Value* prob = node("Sigmoid", {node("Add", {conv, bias}, "logits")}, "prob");
  test_support::AddMaskOutputs(g, prob, kMaps, kSize);
  return model;
}

TEST(LargeModelReport, ReportedStatisticsAreThoseOfTheWrittenFile) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("ovfix_large_", ::getpid());
  fs::create_directories(dir);
  std::unique_ptr<Model> model = SegmentationModel();
  ASSERT_GT(WeightBytes(model->graph()), int64_t{64} << 20);
  // A smooth image (a photograph's statistics matter less here than its size).
  Tensor image(DataType::kFloat, {1, 3, kSize, kSize});
  for (int64_t i = 0; i < image.numel(); ++i) {
    const int64_t c = i / (kSize * kSize), y = i / kSize % kSize, x = i % kSize;
    image.data<float>()[i] =
        std::sin(0.013f * x + c) * std::cos(0.007f * y) * 2.0f + 0.001f * static_cast<float>(i % 7);
  }
  const std::string input = (dir / "image.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, image, "image").ok());
  const std::string original = (dir / "in.onnx").string();
  ASSERT_TRUE(SaveModel(*model, original).ok());

  converter::PipelineOptions o;
  o.convert.target = "gpu-fp16";
  o.input_sets = {{{"image", input}}};
  o.input_path = original;
  o.output_path = (dir / "out.onnx").string();
  o.write_output = true;
  auto report = converter::ConvertModel(*model, o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->written && report->end_to_end) << converter::SummaryTable(*report);

  auto run = [&](const std::string& path) {
    auto m = LoadModel(path);
    EXPECT_TRUE(m.ok()) << m.status();
    auto session = exec::CreateSession(**m, {});
    EXPECT_TRUE(session.ok()) << session.status();
    const Value* in = (*m)->graph().inputs()[0];
    auto out = (*session)->Run(
        {{"image",
          in->elem_type() == DataType::kFloat ? image : ConvertTensor(image, in->elem_type())}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<Tensor>{};
  };
  const std::vector<Tensor> expected = run(original);
  const std::vector<Tensor> actual = run(o.output_path);
  ASSERT_EQ(actual.size(), static_cast<size_t>(kMaps));
  ASSERT_EQ(report->end_to_end->outputs.size(), static_cast<size_t>(kMaps));
  for (int i = 0; i < kMaps; ++i) {
    const converter::OutputComparison& c = report->end_to_end->outputs[i];
    const double measured = exec::RelativeError(actual[i], expected[i], exec::kFloat16Resolution);
    EXPECT_EQ(c.error, measured) << c.name << "\n" << converter::SummaryTable(*report);
    EXPECT_GT(measured, 0) << c.name;
    // The mean, independently: the average |difference| over the original's range.
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    const Tensor a = ConvertTensor(actual[i], DataType::kFloat);
    for (int64_t k = 0; k < expected[i].numel(); ++k) {
      lo = std::min<double>(lo, expected[i].data<float>()[k]);
      hi = std::max<double>(hi, expected[i].data<float>()[k]);
    }
    for (int64_t k = 0; k < expected[i].numel(); ++k) {
      sum += std::abs(double{a.data<float>()[k]} - expected[i].data<float>()[k]);
    }
    const double range =
        std::max(hi - lo, exec::kFloat16Resolution * std::max(std::abs(lo), std::abs(hi)));
    EXPECT_NEAR(c.stats.mean, sum / expected[i].numel() / range, 1e-9) << c.name;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
