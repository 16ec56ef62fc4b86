// --island-precision bf16 (converter/repair.h IslandsToBf16): on a backend with bfloat16
// kernels, the islands an fp16 conversion keeps are tried in bfloat16 and computed in it where
// the criteria hold, fp32 only where they do not. Two models of the classes that need islands,
// as PyTorch exports them, fed photographs:
//   - a style-transfer encoder (fast-neural-style's convention: raw 0-255 pixels) whose Gram
//     matrices, F F^T / (C H W), sum 4096 products of features in the hundreds: 1e8, inf in
//     fp16; bfloat16 has float's range and its rounding (2^-9) is far inside max:0.02.
//   - a ViT block whose MLP writes "massive activations" (a few channels of the down
//     projection in the 1e5s, as trained transformers have) into the residual stream before a
//     LayerNormalization, and whose biased queries and keys give attention scores of 1e5 (an
//     attention sink): inf in fp16, held by bfloat16 (the softmax differences are hundreds).
// And one island bfloat16 cannot hold: raw sensor readings near 1010 centered by the first
// layer, where bfloat16's spacing (8) is larger than the signal: it stays fp32.
// Checked on the written file, independently of ovfix's runs: onnxruntime with the file's
// float16 and bfloat16 values rounded where it stores them (fp16_storage_emulation.h) meets the
// criteria against the original in onnxruntime; the bf16 file has fewer fp32 multiply-adds than
// the conversion with fp32 islands; TensorRT's layer hints pin the bf16 nodes; a target without
// bfloat16 kernels refuses the option.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/model_builder.h"
#include "converter/accuracy.h"
#include "converter/pipeline.h"
#include "converter/precision_cost.h"
#include "converter/report.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "rules/conversion_options.h"
#include "rules/light_proto.h"
#include "tests/cli/cli_util.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/fp16_models.h"
#include "tests/support/fp16_storage_emulation.h"
#include "tests/support/ort_peer.h"

namespace ovfix {
namespace {

namespace fs = std::filesystem;
using bench::ModelBuilder;
using converter::ConversionReport;
using converter::IslandVerdict;

// The photograph `file` as raw pixel values (0-255), NCHW, `size` x `size`.
Tensor RawPixels(const std::string& file, int64_t size) {
  absl::StatusOr<Tensor> t = test_models::ResizedPhoto(file, size);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : Tensor(DataType::kFloat, {1, 3, size, size});
}

// The Gram matrix of a [1, C, H, W] feature map as fast-neural-style computes it and the
// exporter writes it: Reshape, Transpose, MatMul, Div by C*H*W.
std::string Gram(ModelBuilder& b, const std::string& f, int64_t c, int64_t hw) {
  const std::string flat = b.Op("Reshape", {f, b.Int64s({1, c, hw})});
  const std::string t = b.Op("Transpose", {flat}, {ModelBuilder::Ints("perm", {0, 2, 1})});
  return b.Op("Div", {b.Op("MatMul", {flat, t}), b.Fill({1}, static_cast<float>(c * hw))});
}

// A VGG-like encoder on raw pixels with Gram matrices of two layers (style) and the last
// feature map (content).
struct TestModel {
  std::unique_ptr<Model> model;
  std::string input_name;
  Tensor input;
  std::string criterion;
};

TestModel StyleEncoder() {
  ModelBuilder b(17, 41);
  TestModel m;
  m.input_name = b.Input("image", {1, 3, 64, 64});
  const std::string f1 = b.Op("Relu", {b.Conv(m.input_name, 3, 16, 3)});       // 64x64
  const std::string f2 = b.Op("Relu", {b.Conv(f1, 16, 32, 3, /*stride=*/2)});  // 32x32
  const std::string f3 = b.Op("Relu", {b.Conv(f2, 32, 32, 3)});                // 32x32
  b.Output(Gram(b, f1, 16, 64 * 64));
  b.Output(Gram(b, f3, 32, 32 * 32));
  b.Output(f3);
  onnx::ModelProto proto = b.model();
  absl::StatusOr<std::unique_ptr<Model>> model =
      ModelFromProto(std::move(proto), "", "style_encoder");
  EXPECT_TRUE(model.ok()) << model.status();
  if (model.ok()) m.model = *std::move(model);
  m.input = RawPixels("chelsea_96.pb", 64);
  m.criterion = "max:0.02";
  return m;
}

// y = x W + bias, x [1, tokens, in].
std::string Linear(ModelBuilder& b, const std::string& x, int64_t in, int64_t out, float gain,
                   const std::string& bias) {
  const std::string w = b.Weight({in, out}, gain * std::sqrt(3.0f / static_cast<float>(in)));
  return b.Op("Add", {b.Op("MatMul", {x, w}), bias});
}

std::string LayerNorm(ModelBuilder& b, const std::string& x, int64_t width) {
  return b.Op("LayerNormalization", {x, b.Fill({width}, 1.0f), b.Fill({width}, 0.0f)},
              {ModelBuilder::Int("axis", -1), ModelBuilder::Float("epsilon", 1e-5f)});
}

// A bias of `n` values, `value` in the first `big` of them and small ones elsewhere.
std::string Bias(ModelBuilder& b, int64_t n, int64_t big, float value) {
  std::vector<float> v(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) v[i] = i < big ? value : 0.02f * static_cast<float>(i % 5 - 2);
  return b.Floats(v);
}

// 64 tokens (8x8 patches of 4x4x3 of a 32x32 photograph) of width 64: patch embedding,
// attention with biased queries and keys (scores around 1e5), an MLP whose down projection
// writes massive activations into two channels, the final LayerNormalization and a head.
TestModel VitBlock() {
  ModelBuilder b(17, 43);
  TestModel m;
  constexpr int64_t kTokens = 64, kWidth = 64, kPatch = 48;
  m.input_name = b.Input("patches", {1, kTokens, kPatch});
  std::string x = Linear(b, m.input_name, kPatch, kWidth, 1.0f, b.Weight({kWidth}, 0.1f));
  // Attention, one head, scores / sqrt(64) as Hugging Face's eager attention exports it.
  const std::string h = LayerNorm(b, x, kWidth);
  const std::string q = Linear(b, h, kWidth, kWidth, 1.0f, Bias(b, kWidth, kWidth, 40.0f));
  const std::string k = Linear(b, h, kWidth, kWidth, 1.0f, Bias(b, kWidth, kWidth, 40.0f));
  const std::string v = Linear(b, h, kWidth, kWidth, 1.0f, b.Weight({kWidth}, 0.1f));
  const std::string kt = b.Op("Transpose", {k}, {ModelBuilder::Ints("perm", {0, 2, 1})});
  const std::string scores = b.Op("Div", {b.Op("MatMul", {q, kt}), b.Fill({1}, 8.0f)});
  const std::string p = b.Op("Softmax", {scores}, {ModelBuilder::Int("axis", -1)});
  const std::string attn =
      Linear(b, b.Op("MatMul", {p, v}), kWidth, kWidth, 1.0f, b.Weight({kWidth}, 0.1f));
  x = b.Op("Add", {x, attn});
  // The MLP: its down projection's bias puts two channels near 1.2e5.
  const std::string up =
      Linear(b, LayerNorm(b, x, kWidth), kWidth, 4 * kWidth, 1.0f, b.Weight({4 * kWidth}, 0.1f));
  const std::string down =
      Linear(b, b.Op("Relu", {up}), 4 * kWidth, kWidth, 1.0f, Bias(b, kWidth, 2, 1.2e5f));
  x = b.Op("Add", {x, down});
  const std::string head =
      Linear(b, LayerNorm(b, x, kWidth), kWidth, 16, 1.0f, b.Weight({16}, 0.1f));
  b.Output(head);
  onnx::ModelProto proto = b.model();
  absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(proto), "", "vit_block");
  EXPECT_TRUE(model.ok()) << model.status();
  if (model.ok()) m.model = *std::move(model);
  // Patches of the normalized photograph, 4x4x3 each, row by row.
  absl::StatusOr<Tensor> photo = test_models::ReadPhoto("coffee_64.pb");
  EXPECT_TRUE(photo.ok()) << photo.status();
  m.input = Tensor(DataType::kFloat, {1, kTokens, kPatch});
  if (photo.ok()) {
    const int64_t ph = photo->dim(0), pw = photo->dim(1);
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t i = 0; i < kPatch; ++i) {
        const int64_t y = (t / 8) * 4 + (i / 12), xx = (t % 8) * 4 + (i / 3) % 4, c = i % 3;
        const float pixel =
            photo->data<uint8_t>()[((y * ph / 32) * pw + xx * pw / 32) * 3 + c] / 255.0f;
        m.input.data<float>()[t * kPatch + i] = (pixel - 0.45f) / 0.25f;
      }
    }
  }
  m.criterion = "max:0.02";
  return m;
}

struct Converted {
  fs::path dir;
  std::string original, written, input;
  ConversionReport report;
};

// `convert ORIGINAL OUT --target tensorrt --precision fp16 --island-precision PRECISION
// --accuracy CRITERION --input NAME=FILE`, the file written.
Converted Convert(const std::string& name, TestModel& m, const std::string& island_precision) {
  Converted c;
  c.dir = test_support::ScratchDir("island_precision", name + "_" + island_precision);
  c.original = (c.dir / "original.onnx").string();
  EXPECT_TRUE(SaveModel(*m.model, c.original).ok());
  c.input = (c.dir / "input.pb").string();
  EXPECT_TRUE(WriteTensorFile(c.input, m.input, m.input_name).ok());
  c.written = (c.dir / "written.onnx").string();
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(c.original);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return c;
  converter::PipelineOptions o;
  o.input_path = c.original;
  o.output_path = c.written;
  o.write_output = true;
  o.convert.target = "tensorrt";
  o.convert.input_files[m.input_name] = c.input;
  EXPECT_TRUE(rules::SetOption("precision", "fp16", o.convert).ok());
  EXPECT_TRUE(rules::SetOption("island_precision", island_precision, o.convert).ok());
  o.set_by_user = {"precision", "island_precision"};
  EXPECT_TRUE(converter::AddAccuracyOption(m.criterion, o.accuracy).ok());
  absl::StatusOr<ConversionReport> report = converter::ConvertModel(**model, o);
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) c.report = *std::move(report);
  return c;
}

// The worst output error of the written file in onnxruntime, its float16 and bfloat16 values
// rounded where it stores them, against the original in onnxruntime (relative to each
// output's range).
double OrtError(const std::string& modules, const Converted& c) {
  const std::string emulated = (c.dir / "emulated.onnx").string();
  testing_support::EmulateFp16Storage(c.written, emulated);
  const auto expected = testing_support::RunOrt(modules, c.original, {c.input}, c.dir / "o");
  const auto actual = testing_support::RunOrt(modules, emulated, {c.input}, c.dir / "e");
  return testing_support::WorstOutputError(actual, expected);
}

converter::PrecisionCost WrittenCost(const std::string& file) {
  absl::StatusOr<std::unique_ptr<Model>> m = LoadModel(file);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return {};
  EXPECT_TRUE(rules::InferShapesLight(**m).ok());
  return converter::MeasurePrecisionCost(**m, 0);
}

// What both models must show: the criteria met in onnxruntime on the written file, some
// islands in bf16, fewer fp32 multiply-adds than with fp32 islands, bf16 nodes pinned.
void ExpectBf16Islands(const std::string& name, TestModel& m, int want_fp32_units) {
  OVFIX_REQUIRE_ORT(modules);
  const Converted fp32 = Convert(name, m, "fp32");
  const Converted bf16 = Convert(name, m, "bf16");
  ASSERT_TRUE(fp32.report.outputs_match) << converter::SummaryTable(fp32.report);
  ASSERT_TRUE(bf16.report.outputs_match) << converter::SummaryTable(bf16.report);
  const std::string summary = converter::SummaryTable(bf16.report);
  ASSERT_TRUE(bf16.report.bf16_islands.has_value()) << summary;
  EXPECT_FALSE(fp32.report.bf16_islands.has_value());
  const converter::IslandCertificate& tried = *bf16.report.bf16_islands;
  EXPECT_EQ(tried.tried_as, "bf16");
  EXPECT_GE(tried.given_back, 1) << summary;
  EXPECT_EQ(tried.needed + tried.kept_back, want_fp32_units) << summary;

  // The written files, counted on their bytes: bf16 nodes where the fp32 conversion had fp32
  // ones, and fewer fp32 multiply-adds.
  const converter::PrecisionCost with_fp32 = WrittenCost(fp32.written);
  const converter::PrecisionCost with_bf16 = WrittenCost(bf16.written);
  EXPECT_EQ(with_fp32.bf16_nodes, 0);
  EXPECT_GT(with_bf16.bf16_nodes, 0) << summary;
  EXPECT_GT(with_bf16.fp16_nodes, 0) << summary;
  EXPECT_GT(with_fp32.fp32_multiply_adds, 0) << summary;
  EXPECT_LT(with_bf16.fp32_multiply_adds, with_fp32.fp32_multiply_adds) << summary;
  EXPECT_GT(with_bf16.bf16_multiply_adds, 0) << summary;
  EXPECT_NE(converter::PrecisionCostLine(with_bf16).find("; bf16: "), std::string::npos);

  // onnxruntime, rounding where the file stores fp16 and bf16, meets the criterion.
  EXPECT_LE(OrtError(modules, bf16), 0.02) << summary;

  // TensorRT's hints pin the bf16 islands as bf16, the fp32 ones as fp32.
  EXPECT_NE(bf16.report.layer_precisions.find(":bf16"), std::string::npos)
      << bf16.report.layer_precisions;
  const std::string json = converter::ReportToJson(bf16.report);
  EXPECT_NE(json.find("\"bf16_islands\""), std::string::npos);
  EXPECT_NE(json.find("\"computes_in\":\"bf16\""), std::string::npos);
  fs::remove_all(fp32.dir);
  fs::remove_all(bf16.dir);
}

TEST(IslandPrecision, StyleEncoderGramsComputeInBf16) {
  TestModel m = StyleEncoder();
  ASSERT_NE(m.model, nullptr);
  ExpectBf16Islands("style_encoder", m, /*want_fp32_units=*/0);

  // The command line says it, and explain lists the islands in bf16 with their units.
  const fs::path dir = test_support::ScratchDir("island_precision", "style_encoder_cli");
  const std::string original = (dir / "original.onnx").string();
  const std::string input = (dir / "input.pb").string();
  ASSERT_TRUE(SaveModel(*m.model, original).ok());
  ASSERT_TRUE(WriteTensorFile(input, m.input, m.input_name).ok());
  const std::string options =
      absl::StrCat(" --target tensorrt --precision fp16 --island-precision bf16 --accuracy ",
                   m.criterion, " --input ", m.input_name, "=", input);
  auto r = testing::RunOvfix(
      absl::StrCat("convert ", original, " ", (dir / "out.onnx").string(), options));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("islands in bf16: 2 unit(s) tried, 2 in bf16, 0 fp32 needed"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("; bf16: 2 node(s)"), std::string::npos) << r.out;
  r = testing::RunOvfix(absl::StrCat("explain fp16_islands ", original, options));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": bf16: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  in bf16: MatMul"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(IslandPrecision, VitAttentionScoresAndMassiveActivationsInBf16) {
  TestModel m = VitBlock();
  ASSERT_NE(m.model, nullptr);
  ExpectBf16Islands("vit_block", m, /*want_fp32_units=*/0);
}

// Raw barometric readings in hPa (1008-1012, from a photograph's pixel values) standardized
// as the model's first layer does, (x - 1010) / 1, then an MLP: fp16's spacing at 1010 is 0.5,
// half a standardized unit, so the repair keeps the centering in fp32; bfloat16's spacing there
// is 8, worse still: that island must stay fp32.
TestModel SensorMlp() {
  ModelBuilder b(17, 47);
  TestModel m;
  m.input_name = b.Input("readings", {1, 64});
  const std::string z =
      b.Op("Div", {b.Op("Sub", {m.input_name, b.Fill({64}, 1010.0f)}), b.Fill({64}, 1.0f)});
  const std::string h = b.Op("Relu", {Linear(b, b.Op("Unsqueeze", {z, b.Int64s({0})}), 64, 32,
                                             std::sqrt(2.0f), b.Weight({32}, 0.1f))});
  b.Output(Linear(b, h, 32, 4, 1.0f, b.Weight({4}, 0.1f)));
  onnx::ModelProto proto = b.model();
  absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(proto), "", "sensor_mlp");
  EXPECT_TRUE(model.ok()) << model.status();
  if (model.ok()) m.model = *std::move(model);
  absl::StatusOr<Tensor> photo = test_models::ReadPhoto("astronaut_16.pb");
  EXPECT_TRUE(photo.ok()) << photo.status();
  m.input = Tensor(DataType::kFloat, {1, 64});
  for (int64_t i = 0; photo.ok() && i < 64; ++i) {
    m.input.data<float>()[i] = 1008.0f + photo->data<uint8_t>()[i * 3] * (4.0f / 255.0f);
  }
  m.criterion = "max:0.02";
  return m;
}

TEST(IslandPrecision, CenteringThatBf16CannotHoldStaysFp32) {
  OVFIX_REQUIRE_ORT(modules);
  TestModel m = SensorMlp();
  ASSERT_NE(m.model, nullptr);
  const Converted c = Convert("sensor_mlp", m, "bf16");
  const std::string summary = converter::SummaryTable(c.report);
  ASSERT_TRUE(c.report.outputs_match) << summary;
  ASSERT_TRUE(c.report.bf16_islands.has_value()) << summary;
  const converter::IslandCertificate& tried = *c.report.bf16_islands;
  EXPECT_EQ(tried.given_back, 0) << summary;
  ASSERT_GE(tried.needed, 1) << summary;
  bool centering = false;
  for (const converter::CertifiedIsland& i : tried.islands) {
    if (i.verdict != IslandVerdict::kNeeded) continue;
    EXPECT_GT(i.score, 1) << summary;
    for (const std::string& n : i.nodes) centering = centering || absl::StartsWith(n, "Sub");
  }
  EXPECT_TRUE(centering) << summary;
  // Nothing of the file computes in bf16, and it meets the criterion in onnxruntime.
  const converter::PrecisionCost cost = WrittenCost(c.written);
  EXPECT_EQ(cost.bf16_nodes, 0) << summary;
  EXPECT_GT(cost.fp32_nodes, 0) << summary;
  EXPECT_LE(OrtError(modules, c), 0.02) << summary;
  fs::remove_all(c.dir);
}

TEST(IslandPrecision, RefusedOnATargetWithoutBf16Kernels) {
  TestModel m = StyleEncoder();
  ASSERT_NE(m.model, nullptr);
  const fs::path dir = test_support::ScratchDir("island_precision", "refused");
  const std::string original = (dir / "original.onnx").string();
  ASSERT_TRUE(SaveModel(*m.model, original).ok());
  testing::CommandResult r =
      testing::RunOvfix(absl::StrCat("convert ", original, " ", (dir / "out.onnx").string(),
                                     " --target gpu-fp16 --island-precision bf16"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("has no bfloat16 kernels"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tensorrt"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.onnx"));
  // On a target that takes it, without an fp16 conversion it does nothing, and says so.
  r = testing::RunOvfix(absl::StrCat("convert ", original, " ", (dir / "out.onnx").string(),
                                     " --target tensorrt --island-precision bf16"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("warning: --island-precision bf16 has no effect: the conversion is fp32"),
            std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix
