// The error convert reports is the written file's also for a model that computes in float16
// already (an fp16 export with float32 inputs and outputs, as keep_io_types exporters write
// them): judged against its own fp16 run, every output read "max error 0" while the file,
// run beside the float32 math its test data came from, was 0.003 of the range off. The
// reference is the float32 network with the same weights, built here by hand. (onnxruntime's
// CPU provider is no peer here: it runs these float16 Convs in float32 between Casts, and its
// run of the unconverted fp16 file equals its run of the float32 network exactly.)
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
#include "ir/model.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "onnx/defs/attr_proto_util.h"
#include "tests/support/segmentation_parts.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSize = 64, kMaps = 4, kHidden = 16;

// Uniform in [-scale, scale) from a fixed linear congruential sequence, rounded to float16
// values so that the float32 and float16 networks hold the same weights.
Tensor Weight(std::vector<int64_t> dims, float scale, uint32_t seed) {
  const Tensor t = test_support::LcgWeight(std::move(dims), scale, seed);
  return ConvertTensor(ConvertTensor(t, DataType::kFloat16), DataType::kFloat);
}

// image -> Conv 3x3 -> Relu -> Conv 3x3 -> Sigmoid -> Split into kMaps outputs. With `half`
// the image is cast to float16 at the start, the weights are float16 and the maps are cast
// back to float32 before the Split.
std::unique_ptr<Model> SegmentationModel(bool half) {
  auto model = std::make_unique<Model>();
  model->extras().set_ir_version(8);
  model->SetOpsetVersion("", 17);
  Graph& g = model->graph();
  g.set_name(half ? "segmentation_fp16" : "segmentation");
  const DataType compute = half ? DataType::kFloat16 : DataType::kFloat;
  Value* image = g.CreateValue("image");
  image->set_elem_type(DataType::kFloat);
  image->set_shape(std::vector<int64_t>{1, 3, kSize, kSize});
  g.AddInput(image);
  auto node = [&](const char* op, std::vector<Value*> in, const std::string& out) {
    Node* n = g.AddNode(op, in, {out}, out);
    n->output(0)->set_elem_type(compute);
    return n;
  };
  auto weight = [&](const std::string& name, std::vector<int64_t> dims, float scale, int seed) {
    return g.AddInitializer(name, ConvertTensor(Weight(std::move(dims), scale, seed), compute));
  };
  auto cast = [&](Value* v, DataType to, const std::string& out) {
    Node* n = node("Cast", {v}, out);
    n->SetAttribute(onnx::MakeAttribute("to", static_cast<int64_t>(to)));
    n->output(0)->set_elem_type(to);
    return n->output(0);
  };
  auto conv = [&](Value* x, int64_t cin, int64_t cout, const std::string& name, int seed) {
    Node* n = node("Conv",
                   {x, weight(name + "_w", {cout, cin, 3, 3}, std::sqrt(6.0f / (9 * cin)), seed),
                    weight(name + "_b", {cout}, 0.1f, seed + 1)},
                   name);
    n->SetAttribute(onnx::MakeAttribute("pads", std::vector<int64_t>{1, 1, 1, 1}));
    return n->output(0);
  };
  Value* x = half ? cast(image, DataType::kFloat16, "image_fp16") : image;
  Value* h = node("Relu", {conv(x, 3, kHidden, "conv1", 1)}, "relu1")->output(0);
  Value* prob = node("Sigmoid", {conv(h, kHidden, kMaps, "conv2", 3)}, "prob")->output(0);
  if (half) prob = cast(prob, DataType::kFloat, "prob_fp32");
  test_support::AddMaskOutputs(g, prob, kMaps, kSize);
  return model;
}

std::vector<Tensor> RunOnCpu(const Model& m, const Tensor& image) {
  auto session = exec::CreateSession(m, {});
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  // As `ovfix run` feeds a file: the image in the float type the graph input declares.
  const DataType declared = m.graph().inputs()[0]->elem_type();
  auto out = (*session)->Run(
      {{"image", declared == DataType::kFloat ? image : ConvertTensor(image, declared)}});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

class Float16ModelReport : public ::testing::TestWithParam<std::string> {};

TEST_P(Float16ModelReport, ErrorIsTheFilesAgainstTheFloat32Network) {
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("ovfix_fp16_model_", GetParam(), ::getpid());
  fs::create_directories(dir);
  Tensor image(DataType::kFloat, {1, 3, kSize, kSize});
  for (int64_t i = 0; i < image.numel(); ++i) {
    const int64_t c = i / (kSize * kSize), y = i / kSize % kSize, x = i % kSize;
    image.data<float>()[i] = std::sin(0.21f * x + c) * std::cos(0.13f * y) * 2.0f;
  }
  const std::string input = (dir / "image.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, image, "image").ok());
  std::unique_ptr<Model> model = SegmentationModel(/*half=*/true);
  converter::PipelineOptions o;
  o.convert.target = GetParam();
  o.input_sets = {{{"image", input}}};
  o.output_path = (dir / "out.onnx").string();
  o.write_output = true;
  auto report = converter::ConvertModel(*model, o);
  ASSERT_TRUE(report.ok()) << report.status();
  // Nothing a user would call a change: the file computes as the original does.
  ASSERT_TRUE(report->written && report->end_to_end) << converter::SummaryTable(*report);
  auto written = LoadModel(o.output_path);
  ASSERT_TRUE(written.ok()) << written.status();
  const std::vector<Tensor> expected = RunOnCpu(*SegmentationModel(/*half=*/false), image);
  const std::vector<Tensor> actual = RunOnCpu(**written, image);
  ASSERT_EQ(expected.size(), static_cast<size_t>(kMaps));
  ASSERT_EQ(actual.size(), static_cast<size_t>(kMaps));
  ASSERT_EQ(report->end_to_end->outputs.size(), static_cast<size_t>(kMaps));
  for (int i = 0; i < kMaps; ++i) {
    const converter::OutputComparison& c = report->end_to_end->outputs[i];
    const double measured = exec::RelativeError(actual[i], expected[i], exec::kFloat16Resolution);
    EXPECT_GT(measured, 1e-4) << c.name;
    EXPECT_NEAR(c.error, measured, 1e-6) << c.name << "\n" << converter::SummaryTable(*report);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Targets, Float16ModelReport, ::testing::Values("gpu-fp16", "generic"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

}  // namespace
}  // namespace ovfix
