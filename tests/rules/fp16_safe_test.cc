// fp16-safe rewrites for targets whose backend ignores fp32 islands (openvino-gpu,
// ncnn-vulkan): each sum-of-squares form overflows fp16 when every tensor is fp16, is
// rewritten with a power-of-two scale carried into its square root, and then
//  - onnxruntime gives the rewritten graph the original's outputs (within fp32 rounding);
//  - run with every float tensor in fp16 (fp16-storage, islands ignored) it stays finite and
//    within fp16 tolerance, where the original does not;
// and the shared gfpgan_modconv and a GFPGAN-style block (tests/support/gfpgan_style_model.h)
// converted for both targets run with every tensor in fp16 without inf or NaN in any output
// fp16 can represent, and run in onnxruntime as written.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "converter/model_run.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/fp16_overflow_models.h"
#include "tests/support/gfpgan_style_model.h"
#include "tests/support/ort_peer.h"
#include "tests/support/tensor_checks.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

fs::path ScratchDir(const std::string& name) { return test_support::ScratchDir("fp16_safe", name); }

// x[i] = 900 sin(i + 1): magnitudes up to 900, whose squares (8.1e5) and their sums are
// beyond fp16's 65504.
Tensor LargeInput(std::vector<int64_t> dims) {
  Tensor t = Tensor::Uninitialized(DataType::kFloat, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 900.0f * std::sin(i + 1.0f);
  return t;
}

Tensor AsFloat(const Tensor& t) { return ConvertTensor(t, DataType::kFloat); }

using test_support::AllFinite;

struct Form {
  const char* name;
  const char* text;
  const char* pass = "fp16_safe_sum_of_squares";  // the rewrite expected
  // Whether a stored value overflows: ReduceL2's output (~1800) does not, only the sum it
  // accumulates inside, which fp16-storage computes in fp32 (a backend accumulating in fp16
  // does not).
  bool stored_value_overflows = true;
};

// Each form of a sum of squares under a square root that the pass rescales.
const Form kForms[] = {
    {"pixel_norm", R"(
      <ir_version: 8, opset_import: ["" : 17]>
      m (float[1, 8, 4, 4] x) => (float[1, 8, 4, 4] y) {
        two = Constant <value = float {2}> ()
        eps = Constant <value = float {1e-8}> ()
        sq = Pow(x, two)
        ms = ReduceMean <axes = [1], keepdims = 1> (sq)
        v = Add(ms, eps)
        n = Sqrt(v)
        y = Div(x, n)
      })"},
    {"demodulation", R"(
      <ir_version: 8, opset_import: ["" : 17]>
      m (float[1, 8, 4, 4] x) => (float[1, 8, 4, 4] y) {
        axes = Constant <value = int64[3] {1, 2, 3}> ()
        eps = Constant <value = float {1e-8}> ()
        half = Constant <value = float {-0.5}> ()
        sq = Mul(x, x)
        s = ReduceSum <keepdims = 1> (sq, axes)
        v = Add(s, eps)
        d = Pow(v, half)
        y = Mul(x, d)
      })"},
    {"layer_norm_variance", R"(
      <ir_version: 8, opset_import: ["" : 17]>
      m (float[1, 8, 4, 4] x) => (float[1, 8, 4, 4] y) {
        two = Constant <value = float {2}> ()
        eps = Constant <value = float {1e-5}> ()
        mean = ReduceMean <axes = [-1], keepdims = 1> (x)
        c = Sub(x, mean)
        sq = Pow(c, two)
        var = ReduceMean <axes = [-1], keepdims = 1> (sq)
        v = Add(var, eps)
        sd = Sqrt(v)
        y = Div(c, sd)
      })"},
    {"l2_norm", R"(
      <ir_version: 8, opset_import: ["" : 17]>
      m (float[1, 8, 4, 4] x) => (float[1, 8, 4, 4] y) {
        n = ReduceL2 <axes = [1], keepdims = 1> (x)
        y = Div(x, n)
      })",
     "fp16_safe_sum_of_squares", false},
    {"hand_written_softmax", testing::kHandWrittenSoftmax, "fp16_safe_softmax"},
    {"conv_leaky_relu_instance_norm", R"(
      <ir_version: 8, opset_import: ["" : 17]>
      m (float[1, 8, 4, 4] x) => (float[1, 4, 4, 4] y) {
        w = Constant <value = float[4, 8, 1, 1] {10, -11, 12, -13, 14, -15, 16, -17, 18, -19, 20, -21, 22, -23, 24, -25, 26, -27, 28, -29, 30, -31, 32, -33, 34, -35, 36, -37, 38, -39, 40, -41}> ()
        b = Constant <value = float[4] {100, -200, 300, -400}> ()
        c = Conv(x, w, b)
        r = LeakyRelu <alpha = 0.2> (c)
        gamma = Constant <value = float[4] {1, 0.5, 2, 1.5}> ()
        beta = Constant <value = float[4] {0, 0.1, -0.1, 0.2}> ()
        y = InstanceNormalization <epsilon = 1e-5> (r, gamma, beta)
      })",
     "fp16_safe_linear_scale"},
    {"rms_sum_square", R"(
      <ir_version: 8, opset_import: ["" : 17]>
      m (float[1, 8, 4, 4] x) => (float[1, 8, 4, 4] y) {
        s = ReduceSumSquare <axes = [2, 3], keepdims = 1> (x)
        n = Sqrt(s)
        y = Div(x, n)
      })"},
};

class Fp16SafeForm : public ::testing::TestWithParam<Form> {};

TEST_P(Fp16SafeForm, RescaledSumKeepsOnnxruntimeOutputsAndStaysFiniteInFp16) {
  const Form& form = GetParam();
  const fs::path dir = ScratchDir(form.name);
  auto model = ParseModelText(form.text);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string original = (dir / "original.onnx").string();
  ASSERT_TRUE(SaveModel(**model, original).ok());
  const std::string input = (dir / "input_0.pb").string();
  const Tensor x = LargeInput({1, 8, 4, 4});
  ASSERT_TRUE(WriteTensorFile(input, x, "x").ok());

  // The original, every tensor in fp16: the sum of squares is inf, the output lost.
  auto original_fp16 = RunEveryFloatInFp16(**model, {{"x", x}});
  ASSERT_TRUE(original_fp16.ok()) << original_fp16.status();
  auto reference = RunAsTyped(**model, {{"x", x}});
  ASSERT_TRUE(reference.ok()) << reference.status();
  if (form.stored_value_overflows) {
    EXPECT_FALSE(AllFinite((*original_fp16)[0]) &&
                 exec::RelativeError((*original_fp16)[0], (*reference)[0]) < 0.1)
        << "the form does not overflow fp16: the test would prove nothing";
  }

  PipelineOptions options;
  options.convert.target = "openvino-gpu";
  options.convert.input_files = {{"x", input}};
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  EXPECT_EQ(test_support::CommittedRewrites(*report, form.pass), 1) << SummaryTable(*report);
  EXPECT_TRUE(report->fp16_overflows.empty()) << SummaryTable(*report);
  const std::string converted = (dir / "converted.onnx").string();
  ASSERT_TRUE(SaveModel(**model, converted).ok());

  // Every tensor in fp16: finite and within fp16's rounding of the fp32 original.
  auto converted_fp16 = RunEveryFloatInFp16(**model, {{"x", x}});
  ASSERT_TRUE(converted_fp16.ok()) << converted_fp16.status();
  EXPECT_TRUE(AllFinite((*converted_fp16)[0]));
  EXPECT_LE(exec::RelativeError((*converted_fp16)[0], (*reference)[0]), 1e-2);

  // onnxruntime: the rewritten graph computes the original's outputs in fp32.
  OVFIX_REQUIRE_ORT(modules);
  const auto expected = testing_support::RunOrt(modules, original, {input}, dir / "ort_original");
  const auto actual = testing_support::RunOrt(modules, converted, {input}, dir / "ort_converted");
  ASSERT_EQ(expected.size(), 1u);
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_LE(exec::RelativeError(actual[0], expected[0]), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Forms, Fp16SafeForm, ::testing::ValuesIn(kForms),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Fp16Safe, SumOfSquaresWithoutSquareRootIsReportedNotRewritten) {
  const fs::path dir = ScratchDir("energy");
  auto model = ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    m (float[1, 8, 4, 4] x) => (float[1, 1, 1, 1] energy) {
      axes = Constant <value = int64[3] {1, 2, 3}> ()
      sq = Mul(x, x)
      energy = ReduceSum <keepdims = 1> (sq, axes)
    })");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string input = (dir / "input_0.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, LargeInput({1, 8, 4, 4}), "x").ok());
  PipelineOptions options;
  options.convert.target = "openvino-gpu";
  options.convert.input_files = {{"x", input}};
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(test_support::CommittedRewrites(*report, "fp16_safe_sum_of_squares"), 0);
  ASSERT_TRUE(report->end_to_end.has_value());
  ASSERT_EQ(report->end_to_end->outputs.size(), 1u);
  // energy is ~1e7: no fp16 graph can hold it, so it is reported and not judged.
  EXPECT_TRUE(report->end_to_end->outputs[0].beyond_fp16);
  EXPECT_TRUE(report->outputs_match);
  bool listed_energy = false, listed_square = false;
  for (const Fp16Overflow& o : report->fp16_overflows) {
    listed_energy |= o.value == "energy" && o.op == "ReduceSum" && o.largest > 1e6 &&
                     o.why.find("graph output") != std::string::npos;
    listed_square |= o.value == "sq" && o.op == "Mul" && o.largest > 65504;
  }
  EXPECT_TRUE(listed_energy && listed_square) << SummaryTable(*report);
}

// A sum of squares no square root reads: the report names the reader that blocks the scale.
TEST(Fp16Safe, SumOfSquaresOverflowNamesTheReaderThatCannotTakeTheScale) {
  const fs::path dir = ScratchDir("energy_reader");
  auto model = ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    m (float[1, 8, 4, 4] x) => (float[1, 8, 4, 4] y) {
      axes = Constant <value = int64[3] {1, 2, 3}> ()
      sq = Mul(x, x)
      s = ReduceSum <keepdims = 1> (sq, axes)
      d = Div(x, s)
      y = Relu(d)
    })");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string input = (dir / "input_0.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, LargeInput({1, 8, 4, 4}), "x").ok());
  PipelineOptions options;
  options.convert.target = "openvino-gpu";
  options.convert.input_files = {{"x", input}};
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  bool named = false;
  for (const Fp16Overflow& o : report->fp16_overflows) {
    if (o.value == "s") {
      named = o.why.find("none of its readers does (Div 'd')") != std::string::npos;
    }
  }
  EXPECT_TRUE(named) << SummaryTable(*report);
}

// One diagnosis: NaN in the all-fp16 run where no value exceeds fp16's range in fp32 (x and
// 2x underflow to 0, and 0 / 0 is NaN) is traced to the node that makes it, and the report
// does not call it fp16's rounding.
TEST(Fp16Safe, NonFiniteOutputsAreTracedToTheNodeThatMakesThem) {
  const fs::path dir = ScratchDir("underflow");
  auto model = ParseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    m (float[1, 16] x) => (float[1, 16] y) {
      two = Constant <value = float[1] {2}> ()
      s = Mul(x, two)
      q = Div(x, s)
      y = Relu(q)
    })");
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1e-8f * (1 + static_cast<float>(i) / 16);
  const std::string input = (dir / "input_0.pb").string();
  ASSERT_TRUE(
      WriteTensorFile(input, Tensor::FromVector<float>(DataType::kFloat, {1, 16}, x), "x").ok());
  PipelineOptions options;
  options.convert.target = "openvino-gpu";
  options.convert.input_files = {{"x", input}};
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->outputs_match);
  EXPECT_TRUE(report->fp16_overflows.empty());
  ASSERT_TRUE(report->first_non_finite.has_value()) << SummaryTable(*report);
  EXPECT_EQ(report->first_non_finite->op, "Div");
  EXPECT_EQ(report->first_non_finite->value, "q");
  EXPECT_TRUE(report->first_non_finite->nan);
  EXPECT_EQ(report->first_non_finite->non_finite, 16);
  const std::string summary = SummaryTable(*report);
  EXPECT_NE(summary.find("first NaN/inf with every float tensor in fp16: "), std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("fp16's rounding"), std::string::npos) << summary;
}

// The validation of such targets: in a model that declares float16, fp16-storage keeps the
// float32 islands in fp32 (as a backend that honours them does) unless islands are ignored.
TEST(Fp16Safe, EveryFloatInFp16RoundsTheIslandsOfAFloat16Model) {
  auto model = ParseModelText(testing::kFloat16ModelWithIsland);
  ASSERT_TRUE(model.ok()) << model.status();
  // x = 100: up = 1e5 in the fp32 island, inf once rounded to fp16.
  const exec::TensorMap feeds = {
      {"x", Tensor::FromVector<float>(DataType::kFloat, {4}, {100, 100, -100, 1})}};
  exec::SessionOptions honoured;
  honoured.precision = exec::Precision::kFp16Storage;
  auto session = exec::CreateSession(**model, honoured);
  ASSERT_TRUE(session.ok()) << session.status();
  auto as_typed = (*session)->Run(MatchInputTypes((*model)->graph(), feeds));
  ASSERT_TRUE(as_typed.ok()) << as_typed.status();
  EXPECT_TRUE(AllFinite((*as_typed)[0]));
  EXPECT_FLOAT_EQ(AsFloat((*as_typed)[0]).data<float>()[0], 100);
  auto every = RunEveryFloatInFp16(**model, feeds);
  ASSERT_TRUE(every.ok()) << every.status();
  const Tensor y = AsFloat((*every)[0]);
  EXPECT_TRUE(std::isinf(y.data<float>()[0]) && std::isinf(y.data<float>()[2]));
  EXPECT_FLOAT_EQ(y.data<float>()[3], 1);  // 1000 fits fp16
}

// ---- whole models, both targets ----

struct Case {
  std::string target;
  bool shared;          // gfpgan_modconv from ../shared, else the GFPGAN-style block
  bool energy = false;  // the block with an energy output sharing the pixel norm's square
};

class Fp16SafeModel : public ::testing::TestWithParam<Case> {};

TEST_P(Fp16SafeModel, EveryTensorInFp16HasNoInfWhereFp16CanHoldTheOutput) {
  const Case& c = GetParam();
  const fs::path dir = ScratchDir(
      absl::StrCat(c.target, c.shared ? "_modconv" : (c.energy ? "_block_energy" : "_block")));
  std::unique_ptr<Model> model;
  exec::TensorMap feeds;
  std::vector<std::string> input_files;
  PipelineOptions options;
  options.convert.target = c.target;
  if (c.shared) {
    const std::string folder = std::string(OVFIX_SHARED_DIR) + "/models/gfpgan_modconv";
    if (!fs::exists(folder)) GTEST_SKIP() << folder << " missing";
    auto loaded = LoadModel(folder + "/model.onnx");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    model = *std::move(loaded);
    options.calibration_data = {folder};
    const char* names[] = {"x", "style"};
    for (int k = 0; k < 2; ++k) {
      const std::string file = folder + absl::StrCat("/test_data_set_0/input_", k, ".pb");
      auto t = ReadTensorFile(file);
      ASSERT_TRUE(t.ok()) << t.status();
      feeds[names[k]] = *t;
      input_files.push_back(file);
    }
  } else {
    auto m = test_models::GfpganStyleBlock(c.energy);
    ASSERT_TRUE(m.ok()) << m.status();
    model = std::move(m->model);
    feeds[m->input_name] = m->input;
    const std::string file = (dir / "input_0.pb").string();
    ASSERT_TRUE(WriteTensorFile(file, m->input, m->input_name).ok());
    input_files.push_back(file);
    options.convert.input_files = {{m->input_name, file}};
  }
  auto reference = RunAsTyped(*model, feeds);
  ASSERT_TRUE(reference.ok()) << reference.status();
  auto original_fp16 = RunEveryFloatInFp16(*model, feeds);
  ASSERT_TRUE(original_fp16.ok()) << original_fp16.status();
  const std::string original = (dir / "original.onnx").string();
  ASSERT_TRUE(SaveModel(*model, original).ok());

  options.output_path = (dir / "converted.onnx").string();
  options.write_output = true;
  auto report = ConvertModel(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  ASSERT_TRUE(report->written) << SummaryTable(*report);
  EXPECT_TRUE(report->islands_ignored);
  auto written = LoadModel(options.output_path);
  ASSERT_TRUE(written.ok()) << written.status();
  auto fp16 = RunEveryFloatInFp16(**written, feeds);
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  ASSERT_EQ(fp16->size(), reference->size());
  for (size_t i = 0; i < fp16->size(); ++i) {
    const Tensor& want = (*reference)[i];
    bool representable = true;
    for (int64_t k = 0; k < want.numel(); ++k)
      representable &= std::abs(want.GetAsDouble(k)) <= 65504;
    const Tensor got = AsFloat((*fp16)[i]);
    if (!representable) {
      // gfpgan_modconv's energy (4.8e7): reported as beyond fp16, with the reason.
      bool listed = false;
      for (const Fp16Overflow& o : report->fp16_overflows) {
        listed |= o.value == (*written)->graph().outputs()[i]->name();
      }
      EXPECT_TRUE(listed) << SummaryTable(*report);
      continue;
    }
    EXPECT_TRUE(AllFinite(got)) << "output " << i;
    EXPECT_LE(exec::RelativeError(got, want), 0.01) << "output " << i;
  }
  if (!c.shared) {
    // The block's pixel norm and demodulation overflow as written, and are rescaled.
    EXPECT_FALSE(AllFinite((*original_fp16)[0]) &&
                 exec::RelativeError((*original_fp16)[0], (*reference)[0]) < 0.1);
    // With the energy output beside it, the pixel norm takes the scale all the same (its
    // own scaled square); what still overflows is the energy and the square it sums.
    EXPECT_EQ(test_support::CommittedRewrites(*report, "fp16_safe_sum_of_squares"), 2)
        << SummaryTable(*report);
    if (c.energy) {
      EXPECT_FALSE(report->fp16_overflows.empty());
      for (const Fp16Overflow& o : report->fp16_overflows) {
        EXPECT_NE(o.why.find("graph output"), std::string::npos) << o.value << ": " << o.why;
      }
    } else {
      EXPECT_TRUE(report->fp16_overflows.empty()) << SummaryTable(*report);
    }
  }

  // onnxruntime runs the written file on the inputs in the types it declares.
  OVFIX_REQUIRE_ORT(modules);
  const auto expected = testing_support::RunOrt(modules, original, input_files, dir / "ort_orig");
  const auto actual = testing_support::RunOrt(
      modules, options.output_path,
      testing_support::AsDeclared(options.output_path, input_files, dir), dir / "ort_written");
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(exec::RelativeError(AsFloat(actual[i]), expected[i]), 0.01) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, Fp16SafeModel,
                         ::testing::Values(Case{"ncnn-vulkan", true}, Case{"openvino-gpu", true},
                                           Case{"ncnn-vulkan", false}, Case{"openvino-gpu", false},
                                           Case{"ncnn-vulkan", false, true},
                                           Case{"openvino-gpu", false, true}),
                         [](const auto& info) {
                           std::string name =
                               info.param.target + (info.param.shared ? "_gfpgan_modconv"
                                                    : info.param.energy
                                                        ? "_gfpgan_style_block_with_energy"
                                                        : "_gfpgan_style_block");
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

}  // namespace
}  // namespace ovfix::converter
