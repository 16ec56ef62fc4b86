// Models with two branches, converted on calibration inputs that take one of them, then run
// on inputs that take the other: the written file loads in onnxruntime and gives what
// onnxruntime gives for the original (and ovfix's executor agrees), for every target; the
// report names the body no calibration set ran; every element-wise input in every graph has
// a rank the file states (value_info), so a backend parser need not guess it.
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "converter/model_run.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/op_groups.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/support/fp16_storage_emulation.h"
#include "tests/support/ort_peer.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;
using testing_support::AsDeclared;
using testing_support::EmulateFp16Storage;
using testing_support::RunOrt;

struct Case {
  std::string target;
  int batch = 0;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.target;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return info.param.batch > 0 ? absl::StrCat(name, "_batch", info.param.batch) : name;
}

fs::path TempDir(const std::string& what) {
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("ovfix_ort_branches_", ::getpid(), "_", what);
  fs::create_directories(dir);
  return dir;
}

// Element-wise nodes (of every graph) with an input whose rank the written file leaves open.
std::vector<std::string> UnstatedRanks(const std::string& file) {
  absl::StatusOr<std::unique_ptr<Model>> written = LoadModel(file);
  EXPECT_TRUE(written.ok()) << written.status();
  std::vector<std::string> out;
  if (!written.ok()) return out;
  for (Graph* g : GraphsRecursive((*written)->graph())) {
    for (const Node* n : g->nodes()) {
      if (!InOpGroup("broadcasting", n->domain(), n->op_type())) continue;
      for (const Value* in : n->inputs()) {
        if (in != nullptr && in->rank() < 0) out.push_back(n->Describe());
      }
    }
  }
  return out;
}

void ExpectClose(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                 double tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].dims(), expected[i].dims()) << what << ", output " << i;
    const Tensor a = actual[i].type() == expected[i].type()
                         ? actual[i]
                         : ConvertTensor(actual[i], expected[i].type());  // float16 outputs
    EXPECT_LE(exec::RelativeError(a, expected[i]), tolerance) << what << ", output " << i;
  }
}

double Tolerance(const std::string& target) { return target == "gpu-fp16" ? 1e-2 : 1e-5; }

// A classifier head: logits, then a softmax; the branch taken when `sum` is true adds a
// keepdims ReduceSum of the logits to them first.
constexpr char kHead[] = R"(
<ir_version: 8, opset_import: ["" : 13]>
head (float[N, 4] x, bool sum) => (float[N, 3] y)
  <float[4, 3] w = {0.5, -0.25, 0.125, 1, -1, 0.75, 0.3, 0.2, -0.6, 0.1, 0.9, -0.4},
   int64[1] axis1 = {1}> {
  h = MatMul(x, w)
  y = If(sum) <then_branch = with_sum () => (float[N, 3] ts) {
                 s = ReduceSum<keepdims = 1>(h, axis1)
                 d = Add(h, s)
                 ts = Softmax<axis = 1>(d)
               },
               else_branch = plain () => (float[N, 3] te) { te = Softmax<axis = 1>(h) }>
}
)";

class OrtBranches : public ::testing::TestWithParam<Case> {};

TEST_P(OrtBranches, HeadCalibratedOnOneBranchRunsTheOther) {
  OVFIX_REQUIRE_ORT(modules);
  const Case& c = GetParam();
  const fs::path dir = TempDir(CaseName({c, 0}));
  auto model = ParseModelText(kHead);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string original = (dir / "original.onnx").string();
  ASSERT_TRUE(SaveModel(**model, original).ok());
  const int64_t n = c.batch > 0 ? c.batch : 2;
  Tensor x(DataType::kFloat, {n, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 2.5f;
  const std::string x_file = (dir / "x.pb").string();
  ASSERT_TRUE(WriteTensorFile(x_file, x, "x").ok());
  std::string sum_file[2];
  for (int taken : {0, 1}) {
    sum_file[taken] = (dir / absl::StrCat("sum_", taken, ".pb")).string();
    ASSERT_TRUE(WriteTensorFile(sum_file[taken],
                                Tensor::FromVector<uint8_t>(DataType::kBool, {}, {uint8_t(taken)}),
                                "sum")
                    .ok());
  }

  PipelineOptions options;
  options.convert.target = c.target;
  options.convert.batch = c.batch;
  options.convert.input_files = {{"x", x_file}, {"sum", sum_file[0]}};  // the plain branch
  auto report = ConvertModel(**model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  ASSERT_EQ(report->bodies_not_run.size(), 1u) << SummaryTable(*report);
  EXPECT_NE(report->bodies_not_run[0].body.find("then_branch"), std::string::npos)
      << report->bodies_not_run[0].body;
  const std::string converted = (dir / "converted.onnx").string();
  ASSERT_TRUE(SaveModel(**model, converted).ok());
  EXPECT_EQ(UnstatedRanks(converted), std::vector<std::string>{});

  for (int taken : {0, 1}) {
    const std::vector<std::string> inputs = {x_file, sum_file[taken]};
    const std::string what = absl::StrCat(c.target, ", sum = ", taken);
    const std::vector<Tensor> expected =
        RunOrt(modules, original, inputs, dir / absl::StrCat("ort_original_", taken));
    ASSERT_EQ(expected.size(), 1u) << what;
    ExpectClose(RunOrt(modules, converted, AsDeclared(converted, inputs, dir),
                       dir / absl::StrCat("ort_converted_", taken)),
                expected, Tolerance(c.target), "onnxruntime, " + what);
    auto written = LoadModel(converted);
    ASSERT_TRUE(written.ok()) << written.status();
    exec::TensorMap feeds = {{"x", x}, {"sum", *ReadTensorFile(sum_file[taken])}};
    auto ours = RunAsTyped(**written, MatchInputTypes((*written)->graph(), feeds), 0);
    ASSERT_TRUE(ours.ok()) << ours.status();
    ExpectClose(*ours, expected, Tolerance(c.target), "ovfix, " + what);
  }
  fs::remove_all(dir);
}

// silero VAD v5 (../shared/models/silero_vad): the If on `sr` holds the whole network, one
// branch per sample rate; its decoder holds Ifs on the number of frames. Calibrated on the
// 16 kHz test input. With the input's length fixed (512 samples), the 8 kHz branch's frame
// count is static and its squeeze branch dead: the file loads (it did not: onnxruntime
// inferred that dead Squeeze on 2 frames) and matches. With only the batch fixed, an 8 kHz
// input of 256 samples runs the branch no calibration set ran.
TEST_P(OrtBranches, SileroVadCalibratedAt16kHz) {
  const fs::path model_dir = fs::path(OVFIX_SHARED_DIR) / "models/silero_vad";
  if (!fs::exists(model_dir / "model.onnx")) GTEST_SKIP() << "no silero_vad in ../shared";
  OVFIX_REQUIRE_ORT(modules);
  const Case& c = GetParam();
  const fs::path dir = TempDir(absl::StrCat("silero_", CaseName({c, 0})));
  const std::string original = (model_dir / "model.onnx").string();
  const fs::path data = model_dir / "test_data_set_0";
  const std::vector<std::string> at16k = {(data / "input_0.pb").string(),
                                          (data / "input_1.pb").string(),
                                          (data / "input_2.pb").string()};
  // 8 kHz: the first 256 samples, a zero state.
  absl::StatusOr<Tensor> audio = ReadTensorFile(at16k[0]);
  ASSERT_TRUE(audio.ok()) << audio.status();
  Tensor samples(DataType::kFloat, {1, 256});
  std::copy_n(audio->data<float>(), 256, samples.data<float>());
  Tensor state(DataType::kFloat, {2, 1, 128});
  std::fill_n(state.data<float>(), state.numel(), 0.0f);
  const std::vector<std::string> at8k = {
      (dir / "input_0.pb").string(), (dir / "input_1.pb").string(), (dir / "input_2.pb").string()};
  ASSERT_TRUE(WriteTensorFile(at8k[0], samples, "input").ok());
  ASSERT_TRUE(WriteTensorFile(at8k[1], state, "state").ok());
  ASSERT_TRUE(
      WriteTensorFile(at8k[2], Tensor::FromVector<int64_t>(DataType::kInt64, {}, {8000}), "sr")
          .ok());

  for (bool fixed_length : {true, false}) {
    auto model = LoadModel(original);
    ASSERT_TRUE(model.ok()) << model.status();
    PipelineOptions options;
    options.convert.target = c.target;
    options.convert.batch = 1;
    if (fixed_length) options.convert.input_shapes = {{"input", {1, 512}}, {"state", {2, 1, 128}}};
    options.convert.input_files = {{"input", at16k[0]}, {"state", at16k[1]}, {"sr", at16k[2]}};
    const std::string what = absl::StrCat(c.target, fixed_length ? ", 512 samples" : ", batch 1");
    auto report = ConvertModel(**model, options);
    ASSERT_TRUE(report.ok()) << what << ": " << report.status();
    EXPECT_TRUE(report->outputs_match) << what << "\n" << SummaryTable(*report);
    bool else_listed = false;
    for (const BodyNotRun& b : report->bodies_not_run) else_listed |= b.body == "If_0.else_branch";
    EXPECT_TRUE(else_listed) << what << "\n" << SummaryTable(*report);
    const std::string converted = (dir / "converted.onnx").string();
    ASSERT_TRUE(SaveModel(**model, converted).ok());
    EXPECT_EQ(UnstatedRanks(converted), std::vector<std::string>{}) << what;
    for (const auto* inputs : {&at16k, &at8k}) {
      if (fixed_length && inputs == &at8k) continue;  // 256 samples: not an input it accepts
      const std::string run = absl::StrCat(what, inputs == &at8k ? ", 8 kHz" : ", 16 kHz");
      const std::vector<Tensor> expected = RunOrt(modules, original, *inputs, dir / "ort_original");
      ASSERT_EQ(expected.size(), 2u) << run;
      ExpectClose(
          RunOrt(modules, converted, AsDeclared(converted, *inputs, dir), dir / "ort_converted"),
          expected, Tolerance(c.target), "onnxruntime, " + run);
      if (c.target == std::string("gpu-fp16")) {
        // As a backend that stores float16 computes it, in the branches and their Ifs too.
        const std::string emulated = (dir / "converted_fp16_storage.onnx").string();
        EmulateFp16Storage(converted, emulated);
        ExpectClose(RunOrt(modules, emulated, *inputs, dir / "ort_emulated"), expected,
                    Tolerance(c.target), "onnxruntime, float16 storage emulated, " + run);
        fs::remove_all(dir / "ort_emulated");
      }
      fs::remove_all(dir / "ort_original");
      fs::remove_all(dir / "ort_converted");
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Targets, OrtBranches,
                         ::testing::Values(Case{"tensorrt", 0}, Case{"openvino-gpu", 1},
                                           Case{"gpu-fp16", 0}),
                         CaseName);

}  // namespace
}  // namespace ovfix::converter
