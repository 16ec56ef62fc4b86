// `--target gpu-bf16` on the shared real models: the written model passes onnx's checker,
// computes in bfloat16, and its outputs on test_data_set_0 stay within the bfloat16 tolerance
// of docs/validation.md (max 0.1, p99 0.02, mean 0.005 of the output's range; max 0.02 under
// 100 elements) against the reference outputs (output_K.pb, computed by PyTorch or onnxruntime
// in fp32). The layer precision hints name exactly the nodes left in fp32 in the written model.
// onnxruntime (1.30, CPU provider) loads the written model; its CPU provider has no bfloat16
// kernel for most ops (Gemm, Add, Relu, Mul...), so where it refuses to run, the refusal must
// be that and nothing else (a model it could not read or type would fail before).
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/ort_peer.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

std::string ModelDir(const std::string& name) {
  return std::string(OVFIX_SHARED_DIR) + "/models/" + name;
}

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("ovfix_bf16_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::set<std::string> HintNames(const std::string& hint, const std::string& flag) {
  std::set<std::string> names;
  if (hint.empty()) return names;
  EXPECT_EQ(hint.rfind(flag, 0), 0u) << hint;
  for (absl::string_view item : absl::StrSplit(hint.substr(flag.size()), ',')) {
    const size_t colon = item.rfind(':');
    EXPECT_NE(colon, absl::string_view::npos) << item;
    EXPECT_TRUE(absl::StartsWith(item.substr(colon + 1), "fp32")) << item;
    names.insert(std::string(item.substr(0, colon)));
  }
  return names;
}

struct Case {
  std::string name;
  // The opset the written model has: 22 where Conv, pooling or InstanceNormalization gain
  // bfloat16 there (it is the lowest opset at which the most float nodes have it), else the
  // model's own 13.
  int64_t opset = 22;
};

class Bf16Convert : public testing::TestWithParam<Case> {};

TEST_P(Bf16Convert, WithinToleranceOfTheReferenceOutputs) {
  const Case& c = GetParam();
  const std::string dir = ModelDir(c.name);
  if (!fs::exists(dir + "/model.onnx")) GTEST_SKIP() << "no " << c.name << " in ../shared";
  auto model = LoadModel(dir + "/model.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::string> input_names;
  PipelineOptions o;
  o.convert.target = "gpu-bf16";
  size_t k = 0;
  for (const Value* v : (*model)->graph().inputs()) {
    if (v->is_initializer()) continue;
    input_names.push_back(v->name());
    o.convert.input_files[v->name()] = absl::StrCat(dir, "/test_data_set_0/input_", k++, ".pb");
  }
  const std::string out = (TempDir() / (c.name + ".onnx")).string();
  o.output_path = out;
  o.write_output = true;
  auto report = ConvertModel(**model, o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  std::printf("%s:\n%s%s\n", c.name.c_str(), SummaryTable(*report).c_str(),
              report->opset_note.c_str());

  auto written = LoadModel(out);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(CheckModel(**written).ok()) << CheckModel(**written);
  bool bf16 = false;
  for (const Node* n : (*written)->graph().nodes()) {
    for (const Value* v : n->outputs()) bf16 = bf16 || v->elem_type() == DataType::kBfloat16;
  }
  EXPECT_TRUE(bf16);
  EXPECT_EQ((*written)->OpsetVersion(""), c.opset);
  // Nothing to say when every float op has bfloat16 at the model's opset (hand_softmax).
  const std::string said = c.opset == 13 ? "opset 13 kept" : "raised from 13 to 22";
  EXPECT_TRUE(report->opset_note.find(said) != std::string::npos ||
              (c.opset == 13 && report->opset_note.empty()))
      << report->opset_note;

  // The written file against the reference outputs, measured here.
  exec::TensorMap inputs;
  for (size_t i = 0; i < input_names.size(); ++i) {
    auto t = ReadTensorFile(absl::StrCat(dir, "/test_data_set_0/input_", i, ".pb"));
    ASSERT_TRUE(t.ok()) << t.status();
    const Value* v = (*written)->graph().FindValue(input_names[i]);
    ASSERT_NE(v, nullptr);
    inputs[input_names[i]] = v->elem_type() != t->type() && IsFloatingPoint(t->type())
                                 ? ConvertTensor(*t, v->elem_type())
                                 : *t;
  }
  auto session = exec::CreateSession(**written, {});
  ASSERT_TRUE(session.ok()) << session.status();
  auto outs = (*session)->Run(inputs);
  ASSERT_TRUE(outs.ok()) << outs.status();
  for (size_t i = 0; i < outs->size(); ++i) {
    auto expected = ReadTensorFile(absl::StrCat(dir, "/test_data_set_0/output_", i, ".pb"));
    ASSERT_TRUE(expected.ok()) << expected.status();
    Tensor got = (*outs)[i];
    if (IsFloatingPoint(got.type()) && got.type() != expected->type()) {
      got = ConvertTensor(got, expected->type());
    }
    const double error = exec::RelativeError(got, *expected, exec::kFloat16Resolution);
    EXPECT_LT(error, 0.1) << "output " << i;
  }

  // The hints name exactly the fp32 nodes of the written file, and they all have names.
  const std::set<std::string> fp32 = test_support::Fp32NodeNames(**written);
  EXPECT_EQ(HintNames(report->layer_precisions, "--layerPrecisions="), fp32);
  EXPECT_FALSE(fp32.contains(""));
  if (!fp32.empty()) {
    EXPECT_FALSE(report->layer_output_types.empty());
  }
}

// Float inputs and outputs (the default), so that run.js can feed and read them.
TEST_P(Bf16Convert, OnnxruntimeLoadsTheWrittenModel) {
  const Case& c = GetParam();
  const std::string dir = ModelDir(c.name);
  if (!fs::exists(dir + "/model.onnx")) GTEST_SKIP() << "no " << c.name << " in ../shared";
  OVFIX_REQUIRE_ORT(modules);
  auto model = LoadModel(dir + "/model.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  PipelineOptions o;
  o.convert.target = "gpu-bf16";
  std::vector<std::string> inputs;
  for (const Value* v : (*model)->graph().inputs()) {
    if (v->is_initializer()) continue;
    inputs.push_back(absl::StrCat(dir, "/test_data_set_0/input_", inputs.size(), ".pb"));
    o.convert.input_files[v->name()] = inputs.back();
  }
  const fs::path tmp = TempDir() / (c.name + "_ort");
  fs::create_directories(tmp);
  o.output_path = (tmp / "model.onnx").string();
  o.write_output = true;
  auto report = ConvertModel(**model, o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->outputs_match);
  std::string command =
      absl::StrCat("NODE_PATH='", modules, "' node '", OVFIX_SHARED_DIR, "/tools/ort/run.js' '",
                   o.output_path, "' '", tmp.string(), "'");
  for (const std::string& in : inputs) absl::StrAppend(&command, " '", in, "'");
  const std::string log = (tmp / "ort.log").string();
  absl::StrAppend(&command, " --opt-level disabled > '", log, "' 2>&1");
  const int rc = std::system(command.c_str());
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (rc == 0) {
    auto expected = ReadTensorFile(absl::StrCat(dir, "/test_data_set_0/output_0.pb"));
    auto got = ReadTensorFile((tmp / "output_0.pb").string());
    ASSERT_TRUE(expected.ok() && got.ok());
    EXPECT_LT(exec::RelativeError(*got, *expected, exec::kFloat16Resolution), 0.1);
  } else {
    EXPECT_NE(text.find("Could not find an implementation"), std::string::npos) << text;
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, Bf16Convert,
                         testing::Values(Case{"gfpgan_modconv"}, Case{"hand_softmax", 13},
                                         Case{"trt_broadcast"}, Case{"ddff_squeeze"},
                                         Case{"conv3d_991"}, Case{"mobilenet_v3_small"},
                                         Case{"resnet18"}),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace ovfix::converter
