// fp16 conversions of the five test model classes (tests/support/fp16_models.h), fed real
// photographs:
//  - BatchNormalization is folded into the Conv/ConvTranspose/Gemm before it on every
//    target, and onnxruntime gives the folded model the original's outputs;
//  - a weight outside fp16's range is fixed at its source: the detector's BatchNormalization
//    variance of 9.79e7 folds away, a constant chain through out-of-range values folds, and
//    a constant that cannot be folded keeps only the node reading it in fp32;
//  - acceptance: gpu-fp16 keeps at most the magnitude policy's fp32 share plus 5 points
//    (of float nodes and of multiply-adds), at most 10 % where that policy keeps nothing,
//    wherever the policy meets the criterion, 15 % elsewhere, and meets the criterion.
#include "tests/support/fp16_models.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/accuracy.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/support/precision_share.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;
using test_models::Fp16TestModel;

fs::path TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("ovfix_fp16_models_", ::getpid(), "_", name);
  fs::create_directories(dir);
  return dir;
}

// The photograph written where --input can read it.
std::string WriteInput(const Fp16TestModel& m, const fs::path& dir) {
  const std::string path = (dir / "input_0.pb").string();
  EXPECT_TRUE(WriteTensorFile(path, m.input, m.input_name).ok());
  return path;
}

int CountOp(const Model& model, const std::string& op) {
  int n = 0;
  for (const Node* node : model.graph().nodes()) n += node->op_type() == op;
  return n;
}

// ---- onnxruntime as the independent reference ----

std::string OrtModules() {
  if (std::system("node --version > /dev/null 2>&1") != 0) return "";
  const char* env = std::getenv("OVFIX_ORT_MODULES");
  const std::string modules =
      env != nullptr ? env : (fs::path(OVFIX_BINARY).parent_path() / "ort/node_modules").string();
  return fs::exists(fs::path(modules) / "onnxruntime-node") ? modules : "";
}

std::vector<Tensor> RunOrt(const std::string& modules, const std::string& model,
                           const std::vector<std::string>& inputs, const fs::path& out) {
  const std::string command = "NODE_PATH='" + modules + "' node '" OVFIX_SHARED_DIR +
                              std::string("/tools/ort/run.js' '") + model + "' '" + out.string() +
                              "' '" + absl::StrJoin(inputs, "' '") +
                              "' --opt-level disabled > /dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<Tensor> outputs;
  for (int k = 0;; ++k) {
    const fs::path file = out / absl::StrCat("output_", k, ".pb");
    if (!fs::exists(file)) break;
    absl::StatusOr<Tensor> t = ReadTensorFile(file.string());
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) outputs.push_back(*std::move(t));
  }
  return outputs;
}

// onnxruntime's outputs of `converted` against its outputs of `original`, each within
// `tolerance` of the output's range.
void ExpectSameOrtOutputs(Model& original, Model& converted, const std::vector<std::string>& input,
                          const fs::path& dir, double tolerance) {
  const std::string modules = OrtModules();
  if (modules.empty()) GTEST_SKIP() << "node or onnxruntime-node not installed";
  ASSERT_TRUE(SaveModel(original, (dir / "original.onnx").string()).ok());
  ASSERT_TRUE(SaveModel(converted, (dir / "converted.onnx").string()).ok());
  const std::vector<Tensor> expected =
      RunOrt(modules, (dir / "original.onnx").string(), input, dir / "ort_original");
  const std::vector<Tensor> actual =
      RunOrt(modules, (dir / "converted.onnx").string(), input, dir / "ort_converted");
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(exec::RelativeError(actual[i], expected[i]), tolerance) << "output " << i;
  }
}

// ---- BatchNormalization folding ----

class BatchNormFolding : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchNormFolding, DetectorHasNoBatchNormLeftAndKeepsOnnxruntimeOutputs) {
  absl::StatusOr<Fp16TestModel> m = test_models::OcrDetector();
  ASSERT_TRUE(m.ok()) << m.status();
  const int norms = CountOp(*m->model, "BatchNormalization");
  ASSERT_EQ(norms, 22);
  auto original = CopyModel(*m->model);
  ASSERT_TRUE(original.ok());
  const fs::path dir = TempDir("bn_" + GetParam());
  PipelineOptions options;
  options.convert.target = GetParam();
  options.convert.input_files = {{m->input_name, WriteInput(*m, dir)}};
  auto report = ConvertModel(*m->model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  EXPECT_EQ(CountOp(*m->model, "BatchNormalization"), 0);
  int folds = 0;
  for (const rules::RewriteRecord& r : report->rewrites)
    folds += r.rule == "fold_batch_normalization";
  EXPECT_EQ(folds, norms);
  if (GetParam() != "gpu-fp16" && GetParam() != "ncnn-vulkan") {
    // End to end through 30 layers and a steep sigmoid: within the tolerance ovfix holds fp32
    // conversions to end to end (1e-4 of the range); each fold alone is held to 1e-5.
    ExpectSameOrtOutputs(**original, *m->model, {options.convert.input_files.begin()->second}, dir,
                         1e-4);
  } else {
    // The fp16 file loads and runs in onnxruntime, fed the photograph in the type it
    // declares, within the end-to-end tolerance the report holds it to.
    const std::string modules = OrtModules();
    if (modules.empty()) GTEST_SKIP() << "node or onnxruntime-node not installed";
    std::string converted_input = options.convert.input_files.begin()->second;
    if (m->model->graph().inputs()[0]->elem_type() == DataType::kFloat16) {
      Tensor half(DataType::kFloat16, m->input.dims());
      for (int64_t i = 0; i < half.numel(); ++i) {
        half.data<uint16_t>()[i] = FloatToHalfBits(m->input.data<float>()[i]);
      }
      converted_input = (dir / "input_half.pb").string();
      ASSERT_TRUE(WriteTensorFile(converted_input, half, m->input_name).ok());
    }
    ASSERT_TRUE(SaveModel(**original, (dir / "original.onnx").string()).ok());
    ASSERT_TRUE(SaveModel(*m->model, (dir / "converted.onnx").string()).ok());
    const std::vector<Tensor> expected =
        RunOrt(modules, (dir / "original.onnx").string(),
               {options.convert.input_files.begin()->second}, dir / "ort_original");
    const std::vector<Tensor> actual = RunOrt(modules, (dir / "converted.onnx").string(),
                                              {converted_input}, dir / "ort_converted");
    ASSERT_EQ(expected.size(), 1u);
    ASSERT_EQ(actual.size(), 1u);
    Tensor widened = actual[0];
    if (actual[0].type() == DataType::kFloat16) {
      widened = Tensor(DataType::kFloat, actual[0].dims());
      Float16TensorToFloats(actual[0], widened.data<float>());
    }
    EXPECT_LE(exec::RelativeError(widened, expected[0]), report->end_to_end_tolerance);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Targets, BatchNormFolding,
                         ::testing::Values("generic", "tensorrt", "openvino-gpu", "ncnn-vulkan",
                                           "gpu-fp16"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// Gemm with transB and beta, a grouped ConvTranspose and a Conv without bias, each followed
// by a BatchNormalization with unround statistics.
TEST(BatchNormFolding, GemmGroupedConvTransposeAndBiaslessConvMatchOnnxruntime) {
  auto model = ParseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,5,5] x, float[3,6] a) => (float[1,4,10,10] y, float[3,2] z)
  <float[4,2,2,2] wt = {0.3, -0.2, 0.1, 0.5, -0.4, 0.2, 0.1, 0.3, -0.1, 0.2, 0.1, -0.3, 0.4,
                        0.2, -0.2, 0.1, 0.3, 0.2, -0.1, 0.4, 0.2, 0.1, -0.3, 0.2, 0.3, 0.1,
                        -0.2, 0.2, 0.1, 0.3, -0.2, 0.1},
   float[4,4,1,1] wc = {0.5, -0.25, 0.75, 0.1, -0.3, 0.2, 0.6, -0.4, 0.2, 0.2, -0.1, 0.9,
                        0.3, -0.7, 0.4, 0.05},
   float[4] s1 = {0.9, 1.1, 0.7, 1.3}, float[4] b1 = {0.1, -0.2, 0.05, 0.3},
   float[4] m1 = {0.21, -0.13, 0.4, 0.02}, float[4] v1 = {0.5, 2.5, 97900000.0, 0.031},
   float[4] s2 = {1.2, 0.8, 1.0, 0.6}, float[4] b2 = {0.0, 0.1, -0.1, 0.2},
   float[4] m2 = {0.3, -0.1, 0.2, 0.0}, float[4] v2 = {1.7, 0.2, 0.9, 3.1},
   float[2,6] wg = {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, -0.1, 0.3, 0.2, -0.5, 0.4},
   float[2] cg = {0.25, -0.5}, float[2] s3 = {1.5, 0.5}, float[2] b3 = {0.2, -0.3},
   float[2] m3 = {0.1, 0.4}, float[2] v3 = {0.8, 1.9}> {
  t = ConvTranspose <group = 2, kernel_shape = [2, 2], strides = [2, 2]> (x, wt)
  tn = BatchNormalization <epsilon = 0.001> (t, s1, b1, m1, v1)
  c = Conv (tn, wc)
  y = BatchNormalization (c, s2, b2, m2, v2)
  gm = Gemm <transB = 1, beta = 0.5, alpha = 1.5> (a, wg, cg)
  z = BatchNormalization (gm, s3, b3, m3, v3)
}
)");
  ASSERT_TRUE(model.ok()) << model.status();
  auto original = CopyModel(**model);
  ASSERT_TRUE(original.ok());
  const fs::path dir = TempDir("bn_text");
  Tensor x(DataType::kFloat, {1, 4, 5, 5}), a(DataType::kFloat, {3, 6});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = ((i * 37 % 101) - 50) / 25.0f;
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = ((i * 13 % 29) - 14) / 7.0f;
  const std::string xin = (dir / "x.pb").string(), ain = (dir / "a.pb").string();
  ASSERT_TRUE(WriteTensorFile(xin, x, "x").ok());
  ASSERT_TRUE(WriteTensorFile(ain, a, "a").ok());
  PipelineOptions options;
  options.convert.input_files = {{"x", xin}, {"a", ain}};
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  EXPECT_EQ(CountOp(**model, "BatchNormalization"), 0);
  ExpectSameOrtOutputs(**original, **model, {xin, ain}, dir, 1e-5);
  fs::remove_all(dir);
}

// ---- weights outside fp16's range ----

PipelineOptions Fp16Options(const std::string& input_name, const std::string& input) {
  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.input_files = {{input_name, input}};
  options.repair = false;  // what the structure decides, before any repair
  return options;
}

std::vector<std::string> IslandsWhose(const ConversionReport& report, const std::string& text) {
  std::vector<std::string> nodes;
  for (const rules::IslandNode& i : report.islands) {
    if (i.reason.find(text) != std::string::npos) nodes.push_back(i.node + ": " + i.reason);
  }
  return nodes;
}

TEST(Fp16Weights, DetectorsHugeVarianceFoldsAwayInsteadOfAnIsland) {
  for (bool fold : {true, false}) {
    absl::StatusOr<Fp16TestModel> m = test_models::OcrDetector();
    ASSERT_TRUE(m.ok()) << m.status();
    const fs::path dir = TempDir(absl::StrCat("variance_", fold));
    PipelineOptions options = Fp16Options(m->input_name, WriteInput(*m, dir));
    if (!fold) options.convert.disabled = {"fold_batch_normalization"};
    auto report = ConvertModel(*m->model, options);
    ASSERT_TRUE(report.ok()) << report.status();
    const std::vector<std::string> kept = IslandsWhose(*report, "exceeds fp16's max");
    if (fold) {
      EXPECT_TRUE(kept.empty()) << absl::StrJoin(kept, "\n");
    } else {  // the same model without the fold: the BatchNormalization reads 9.79e7
      EXPECT_EQ(kept.size(), 1u) << absl::StrJoin(kept, "\n");
    }
    fs::remove_all(dir);
  }
}

// A conv net whose Clip bounds (+-1e10) fp16 cannot hold and nothing can fold: that Clip,
// and only it, stays in fp32.
TEST(Fp16Weights, UnfoldableConstantKeepsOnlyItsReaderInFp32) {
  auto model = ParseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,6,6] x) => (float[1,2,6,6] y)
  <float[2,2,3,3] w = {0.3, -0.2, 0.1, 0.5, -0.4, 0.2, 0.1, 0.3, -0.1, 0.2, 0.1, -0.3, 0.4,
                       0.2, -0.2, 0.1, 0.3, 0.2, -0.1, 0.4, 0.2, 0.1, -0.3, 0.2, 0.3, 0.1,
                       -0.2, 0.2, 0.1, 0.3, -0.2, 0.1, 0.4, -0.1, 0.2, 0.1},
   float[2] b = {0.1, -0.1}, float lo = {-1e10}, float hi = {1e10}> {
  c1 = Conv <pads = [1, 1, 1, 1]> (x, w, b)
  r1 = Relu(c1)
  k = Clip(r1, lo, hi)
  c2 = Conv <pads = [1, 1, 1, 1]> (k, w, b)
  y = Relu(c2)
}
)");
  ASSERT_TRUE(model.ok()) << model.status();
  const fs::path dir = TempDir("clip");
  Tensor x(DataType::kFloat, {1, 2, 6, 6});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = ((i * 7 % 19) - 9) / 4.0f;
  const std::string input = (dir / "x.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, x, "x").ok());
  // The policy's island, as the policy leaves it: on these inputs the certificate gives the
  // Clip back (its bounds become inf in fp16, and it passes every value on).
  PipelineOptions options = Fp16Options("x", input);
  options.convert.certify = false;
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->islands.size(), 1u);
  EXPECT_EQ(report->islands[0].op_type, "Clip");
  EXPECT_NE(report->islands[0].reason.find("exceeds fp16's max"), std::string::npos);
  const test_models::PrecisionShare share = test_models::CountPrecision(**model);
  EXPECT_EQ(share.fp32_nodes, 1);
  EXPECT_EQ(share.fp16_nodes, 4);
  // Each Conv: 2x6x6 outputs, each a sum of 2x3x3 products; the Clip computes none.
  EXPECT_EQ(share.fp16_macs, 2 * (2 * 6 * 6) * (2 * 3 * 3));
  EXPECT_EQ(share.fp32_macs, 0);
  fs::remove_all(dir);
}

// A normalization written out in arithmetic whose statistics pass through values fp16
// cannot hold (a variance of 9.79e7): the constant chain folds to an in-range scale and
// nothing is kept in fp32.
TEST(Fp16Weights, ConstantChainThroughOutOfRangeValuesFolds) {
  auto model = ParseModelText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x) => (float[1,2,4,4] y)
  <float[1,2,1,1] var = {97900000.0, 0.5}, float[1,2,1,1] mean = {3.0, -0.5},
   float[1,2,1,1] gamma = {2000.0, 0.8}, float eps = {0.00001}> {
  ve = Add(var, eps)
  sd = Sqrt(ve)
  scale = Div(gamma, sd)
  centred = Sub(x, mean)
  y = Mul(centred, scale)
}
)");
  ASSERT_TRUE(model.ok()) << model.status();
  const fs::path dir = TempDir("chain");
  Tensor x(DataType::kFloat, {1, 2, 4, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = ((i * 5 % 11) - 5) / 2.0f;
  const std::string input = (dir / "x.pb").string();
  ASSERT_TRUE(WriteTensorFile(input, x, "x").ok());
  auto report = ConvertModel(**model, Fp16Options("x", input));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->islands.empty()) << SummaryTable(*report);
  EXPECT_EQ(CountOp(**model, "Sqrt"), 0);
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  fs::remove_all(dir);
}

// ---- acceptance: the fp32 share against the magnitude policy ----

// Whether an end-to-end result meets its criterion: `meets()` where the comparison has
// criteria, else the worst element within the tolerance.
template <typename Result>
bool Meets(const Result& r, double tolerance) {
  if constexpr (requires { r.meets(); }) {
    return r.meets();
  } else {
    return r.max_error <= tolerance;
  }
}

struct Outcome {
  bool ok = false, meets = false;
  test_models::PrecisionShare share;
  double error = 0;
  int model_runs = 0;
  std::string summary;
};

Outcome Convert(const Fp16TestModel& m, const std::string& input, bool magnitude_policy) {
  Outcome o;
  auto model = CopyModel(*m.model);
  if (!model.ok()) return o;
  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.input_files = {{m.input_name, input}};
  for (const std::string& spec : m.accuracy) {
    if (!AddAccuracyOption(spec, options.accuracy).ok()) return o;
  }
  if (magnitude_policy) {  // ModelOpt AutoCast's default, measured as it comes
    options.convert.fp16_islands = rules::ConvertOptions::Fp16Islands::kMagnitude;
    options.convert.fp16_magnitude_threshold = 512;
    // AutoCast converts the graph as it is: no softmax shifted by its row's max first.
    options.convert.disabled.push_back("fp16_safe_softmax");
    options.set_by_user = {"fp16_islands", "fp16_magnitude_threshold"};
    options.repair = false;
  }
  auto report = ConvertModel(**model, options);
  if (!report.ok() || !report->end_to_end) return o;
  o.ok = true;
  o.meets = Meets(*report->end_to_end, report->end_to_end_tolerance);
  o.error = report->end_to_end->max_error;
  o.model_runs = report->model_runs;
  o.share = test_models::CountPrecision(**model);
  o.summary = SummaryTable(*report);
  return o;
}

class Fp16ShareBound : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp16ShareBound, AtMostTheMagnitudePolicysShareAndMeetsTheCriterion) {
  absl::StatusOr<Fp16TestModel> m = test_models::Fp16TestModelNamed(GetParam());
  ASSERT_TRUE(m.ok()) << m.status();
  const fs::path dir = TempDir("share_" + m->name);
  const std::string input = WriteInput(*m, dir);
  const Outcome ours = Convert(*m, input, false);
  const Outcome policy = Convert(*m, input, true);
  ASSERT_TRUE(ours.ok && policy.ok);
  const auto bound = [&](double policy_share) {
    if (!policy.meets) return 0.15;
    return policy_share == 0 ? 0.10 : policy_share + 0.05;
  };
  const std::string figures = absl::StrCat(
      m->name, ": ovfix ", ours.share.fp32_nodes, "/",
      ours.share.fp16_nodes + ours.share.fp32_nodes, " nodes fp32 (", 100 * ours.share.NodeShare(),
      " %), ", 100 * ours.share.MacShare(), " % of multiply-adds, error ", ours.error, ", ",
      ours.model_runs, " runs; policy ", 100 * policy.share.NodeShare(), " % / ",
      100 * policy.share.MacShare(), " %, error ", policy.error,
      policy.meets ? " (meets)" : " (does not meet)", "\n", ours.summary);
  EXPECT_TRUE(ours.meets) << figures;
  EXPECT_LE(ours.share.NodeShare(), bound(policy.share.NodeShare())) << figures;
  EXPECT_LE(ours.share.MacShare(), bound(policy.share.MacShare())) << figures;
  std::printf("%s\n", figures.c_str());
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Models, Fp16ShareBound,
                         ::testing::Values("ocr_detector", "ctc_recognizer", "classifier",
                                           "residual_mlp", "segmentation"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace ovfix::converter
