// The acceptance points of `ovfix convert` on the shared real models: fp16 with fp32 islands
// keeps overflowing outputs finite and close, tensorrt gets equal-rank element-wise inputs,
// openvino-gpu gets static shapes, the Conv3D lowering keeps outputs, every output passes
// onnx's checker with full shape inference, and converting twice gives identical bytes.
// Most run through the library API; a few go through the binary for its exit codes.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "converter/pipeline.h"
#include "converter/validation.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "tests/cli/cli_util.h"
#include "tests/support/offset_model.h"
#include "tests/support/tensor_checks.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

std::string ModelDir(const std::string& name) {
  return std::string(OVFIX_SHARED_DIR) + "/models/" + name;
}

#define REQUIRE_MODEL(name) \
  if (!fs::exists(ModelDir(name) + "/model.onnx")) GTEST_SKIP() << "no " << name << " in ../shared"

// The test inputs of test_data_set_0, by the model's input names.
exec::TensorMap TestInputs(const std::string& name, const Model& model) {
  exec::TensorMap inputs;
  size_t k = 0;
  for (const Value* v : model.graph().inputs()) {
    if (v->is_initializer()) continue;
    const std::string file = absl::StrCat(ModelDir(name), "/test_data_set_0/input_", k++, ".pb");
    absl::StatusOr<Tensor> t = ReadTensorFile(file);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) inputs.emplace(v->name(), *std::move(t));
  }
  return inputs;
}

std::map<std::string, std::string> TestInputFiles(const std::string& name, const Model& model) {
  std::map<std::string, std::string> files;
  size_t k = 0;
  for (const Value* v : model.graph().inputs()) {
    if (v->is_initializer()) continue;
    files[v->name()] = absl::StrCat(ModelDir(name), "/test_data_set_0/input_", k++, ".pb");
  }
  return files;
}

// Runs `model` as typed (float16 tensors stored as float16) or in fp16-storage mode; float16
// outputs come back as float. Inputs are converted to the float types the model declares.
std::vector<Tensor> RunModel(const Model& model, const exec::TensorMap& inputs,
                             exec::Precision precision = exec::Precision::kFp32,
                             bool widen_float16 = true) {
  exec::SessionOptions options;
  options.precision = precision;
  options.widen_float16 = widen_float16;
  auto session = exec::CreateSession(model, options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  exec::TensorMap typed;
  for (const Value* v : model.graph().inputs()) {
    auto it = inputs.find(v->name());
    if (it == inputs.end()) continue;
    typed[v->name()] = IsFloatingPoint(v->elem_type()) && v->elem_type() != it->second.type()
                           ? ConvertTensor(it->second, v->elem_type())
                           : it->second;
  }
  auto out = (*session)->Run(typed);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  for (Tensor& t : *out) {
    if (t.type() == DataType::kFloat16) t = ConvertTensor(t, DataType::kFloat);
  }
  return *std::move(out);
}

// The converted model's float16 run gives the same bits whether the session holds float16
// values as float (what validation and `ovfix run` use) or as float16 tensors.
void ExpectWideningChangesNoBit(const Model& model, const exec::TensorMap& inputs,
                                const std::vector<Tensor>& widened) {
  const std::vector<Tensor> plain = RunModel(model, inputs, exec::Precision::kFp32, false);
  ASSERT_EQ(plain.size(), widened.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(plain[i].dims(), widened[i].dims());
    EXPECT_EQ(std::memcmp(plain[i].raw(), widened[i].raw(), plain[i].nbytes()), 0)
        << "output " << i;
  }
}

using test_support::AllFinite;

struct Converted {
  std::unique_ptr<Model> original;
  std::unique_ptr<Model> model;
  ConversionReport report;
};

// Loads the shared model twice (one stays the reference) and converts one of them.
Converted Convert(const std::string& name, PipelineOptions options) {
  Converted c;
  const std::string path = ModelDir(name) + "/model.onnx";
  auto original = LoadModel(path);
  auto model = LoadModel(path);
  EXPECT_TRUE(original.ok() && model.ok());
  if (!original.ok() || !model.ok()) return c;
  c.original = *std::move(original);
  c.model = *std::move(model);
  if (options.convert.input_files.empty()) {
    options.convert.input_files = TestInputFiles(name, *c.original);
  }
  auto report = ConvertModel(*c.model, options);
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok()) c.report = *std::move(report);
  EXPECT_TRUE(c.report.outputs_match) << SummaryTable(c.report);
  std::printf("%s (%s):\n%s", name.c_str(), options.convert.target.c_str(),
              SummaryTable(c.report).c_str());
  return c;
}

PipelineOptions Target(const std::string& target) {
  PipelineOptions o;
  o.convert.target = target;
  return o;
}

int CountOps(const Model& m, std::string_view op) {
  int n = 0;
  for (const Node* node : m.graph().nodes()) n += node->op_type() == op ? 1 : 0;
  return n;
}

// ---- gpu-fp16: overflowing outputs stay finite ----

void ExpectFp16Fixes(const std::string& name, const std::string& output) {
  Converted c = Convert(name, Target("gpu-fp16"));
  ASSERT_NE(c.model, nullptr);
  const exec::TensorMap inputs = TestInputs(name, *c.original);
  const std::vector<Tensor> reference = RunModel(*c.original, inputs);
  const std::vector<Tensor> half = RunModel(*c.original, inputs, exec::Precision::kFp16Storage);
  const std::vector<Tensor> converted = RunModel(*c.model, inputs);
  ASSERT_EQ(reference.size(), converted.size());
  bool some_half_weights = false;
  for (const Value* v : c.model->graph().initializers()) {
    some_half_weights = some_half_weights || v->tensor().type() == DataType::kFloat16;
  }
  EXPECT_TRUE(some_half_weights) << "the model was not converted to float16";
  // Kept finite by an fp32 island, or by a rewrite that needs none (a hand-written softmax
  // shifted by its row's largest logit: fp16_safe_softmax).
  bool shifted = false;
  for (const rules::RewriteRecord& r : c.report.rewrites) {
    shifted = shifted || (r.rule == "fp16_safe_softmax" && !r.rolled_back);
  }
  EXPECT_TRUE(!c.report.islands.empty() || shifted);
  ExpectWideningChangesNoBit(*c.model, inputs, converted);
  for (size_t i = 0; i < reference.size(); ++i) {
    if (c.original->graph().outputs()[i]->name() != output) continue;
    EXPECT_FALSE(AllFinite(half[i])) << output << ": a plain fp16 run should overflow";
    ASSERT_TRUE(AllFinite(converted[i])) << output;
    EXPECT_LE(exec::RelativeError(converted[i], reference[i]), 1e-2) << output;
    return;
  }
  ADD_FAILURE() << "no output " << output;
}

TEST(ConvertAcceptance, GfpganEnergyStaysFiniteInGpuFp16) {
  REQUIRE_MODEL("gfpgan_modconv");
  ExpectFp16Fixes("gfpgan_modconv", "energy");
}

TEST(ConvertAcceptance, HandSoftmaxStaysFiniteInGpuFp16) {
  REQUIRE_MODEL("hand_softmax");
  ExpectFp16Fixes("hand_softmax", "probs");
}

void ExpectFp16Close(const std::string& name) {
  Converted c = Convert(name, Target("gpu-fp16"));
  ASSERT_NE(c.model, nullptr);
  const exec::TensorMap inputs = TestInputs(name, *c.original);
  const std::vector<Tensor> reference = RunModel(*c.original, inputs);
  const std::vector<Tensor> converted = RunModel(*c.model, inputs);
  ASSERT_EQ(reference.size(), converted.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_LE(exec::RelativeError(converted[i], reference[i]), 1e-2) << name << " output " << i;
  }
  // The file takes the original's float32 input (keep_io_types by default).
  EXPECT_EQ(c.model->graph().inputs()[0]->elem_type(), DataType::kFloat);
  ExpectWideningChangesNoBit(*c.model, inputs, converted);
}

TEST(ConvertAcceptance, Resnet18GpuFp16WithinOnePercentOfRange) {
  REQUIRE_MODEL("resnet18");
  ExpectFp16Close("resnet18");
}

TEST(ConvertAcceptance, MobilenetV3SmallGpuFp16WithinOnePercentOfRange) {
  REQUIRE_MODEL("mobilenet_v3_small");
  ExpectFp16Close("mobilenet_v3_small");
}

void ExpectOutputsEqual(const Converted& c, const std::string& name, double tolerance) {
  const exec::TensorMap inputs = TestInputs(name, *c.original);
  const std::vector<Tensor> reference = RunModel(*c.original, inputs);
  const std::vector<Tensor> converted = RunModel(*c.model, inputs);
  ASSERT_EQ(reference.size(), converted.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_LE(exec::RelativeError(converted[i], reference[i]), tolerance)
        << name << " output " << i;
  }
}

// ---- tensorrt: equal-rank element-wise inputs ----

TEST(ConvertAcceptance, TrtBroadcastGetsEqualRanks) {
  REQUIRE_MODEL("trt_broadcast");
  Converted c = Convert("trt_broadcast", Target("tensorrt"));
  ASSERT_NE(c.model, nullptr);
  static const std::set<std::string> kElementwise = {
      "Add",   "Sub",   "Mul",     "Div",         "Pow",     "Mod",
      "Where", "Equal", "Less",    "LessOrEqual", "Greater", "GreaterOrEqual",
      "And",   "Or",    "Xor",     "Max",         "Min",     "Sum",
      "Mean",  "PRelu", "BitShift"};
  int checked = 0;
  for (const Node* n : c.model->graph().nodes()) {
    if (!kElementwise.contains(n->op_type())) continue;
    ++checked;
    const int rank = n->output(0)->rank();
    for (const Value* in : n->inputs()) {
      EXPECT_EQ(in->rank(), rank) << n->Describe() << " input " << in->name();
    }
  }
  EXPECT_GE(checked, 6);
  ExpectOutputsEqual(c, "trt_broadcast", 1e-5);
}

// ---- openvino-gpu --batch 1: static shapes ----

TEST(ConvertAcceptance, DdffSqueezeGetsStaticShapesForOpenvino) {
  REQUIRE_MODEL("ddff_squeeze");
  PipelineOptions o = Target("openvino-gpu");
  o.convert.batch = 1;
  o.set_by_user.insert("batch");
  Converted c = Convert("ddff_squeeze", o);
  ASSERT_NE(c.model, nullptr);
  EXPECT_EQ(CountOps(*c.model, "Shape"), 0);
  for (const Node* n : c.model->graph().nodes()) {
    if (n->op_type() == "Squeeze") {
      EXPECT_TRUE(n->input(1) != nullptr || n->HasAttribute("axes")) << n->Describe();
    }
    if (n->op_type() == "Reshape") {
      const Value* shape = n->input(1);
      ASSERT_TRUE(shape != nullptr && shape->is_initializer()) << n->Describe();
      for (int64_t i = 0; i < shape->tensor().numel(); ++i) {
        EXPECT_GT(shape->tensor().GetAsInt64(i), 0) << n->Describe();
      }
    }
  }
  ExpectOutputsEqual(c, "ddff_squeeze", 1e-5);
}

// ---- --lower-conv3d-unit-kernel ----

TEST(ConvertAcceptance, Conv3d991IsLoweredToConv2d) {
  REQUIRE_MODEL("conv3d_991");
  PipelineOptions o = Target("generic");
  o.convert.lower_conv3d_unit_kernel = true;
  o.set_by_user.insert("lower_conv3d_unit_kernel");
  Converted c = Convert("conv3d_991", o);
  ASSERT_NE(c.model, nullptr);
  int convs = 0;
  for (const Node* n : c.model->graph().nodes()) {
    if (n->op_type() != "Conv") continue;
    ++convs;
    EXPECT_NE(n->input(0)->rank(), 5) << n->Describe();
  }
  EXPECT_EQ(convs, 1);
  ExpectOutputsEqual(c, "conv3d_991", 1e-5);
}

// ---- every output: checker, determinism ----

struct Case {
  std::string model;
  std::string target;
  int64_t batch = -1;
  bool lower_conv3d = false;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> kCases = {
      {"gfpgan_modconv", "gpu-fp16"},      {"hand_softmax", "gpu-fp16"},
      {"trt_broadcast", "tensorrt"},       {"ddff_squeeze", "openvino-gpu", 1},
      {"conv3d_991", "generic", -1, true}, {"mobilenet_v3_small", "gpu-fp16"},
  };
  return kCases;
}

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("ovfix_convert_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// Converts and saves one case; returns the report's JSON.
std::string ConvertAndSave(const Case& c, const std::string& out) {
  auto model = LoadModel(ModelDir(c.model) + "/model.onnx");
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return "";
  PipelineOptions o = Target(c.target);
  o.convert.batch = c.batch;
  o.convert.lower_conv3d_unit_kernel = c.lower_conv3d;
  o.set_by_user = {"batch", "lower_conv3d_unit_kernel"};
  auto report = ConvertModel(**model, o);  // random reference inputs: the default
  EXPECT_TRUE(report.ok()) << c.model << ": " << report.status();
  if (!report.ok()) return "";
  EXPECT_TRUE(report->outputs_match) << c.model << "\n" << SummaryTable(*report);
  EXPECT_TRUE(SaveModel(**model, out).ok());
  return ReportToJson(*report);
}

TEST(ConvertAcceptance, OutputsPassTheCheckerAndRepeatByteForByte) {
  const fs::path dir = TempDir();
  for (const Case& c : Cases()) {
    if (!fs::exists(ModelDir(c.model) + "/model.onnx")) continue;
    const std::string a = (dir / (c.model + "_a.onnx")).string();
    const std::string b = (dir / (c.model + "_b.onnx")).string();
    const std::string json = ConvertAndSave(c, a);
    ConvertAndSave(c, b);
    EXPECT_EQ(testing::Slurp(a), testing::Slurp(b)) << c.model << ": not byte-identical";
    auto loaded = LoadModel(a);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_TRUE(CheckModel(**loaded).ok()) << c.model << ": " << CheckModel(**loaded);
    EXPECT_NE(json.find("\"rewrites\""), std::string::npos);
    EXPECT_NE(json.find("\"outputs_match\":true"), std::string::npos) << json;
    if (c.model == "gfpgan_modconv" || c.model == "hand_softmax") {
      EXPECT_NE(json.find("\"reason\""), std::string::npos) << "islands with reasons";
    }
  }
  fs::remove_all(dir);
}

// ---- the binary's exit codes ----

TEST(ConvertBinary, ExitCodes) {
  const fs::path dir = TempDir();
  const std::string out = (dir / "out.onnx").string();
  // 2: bad input.
  EXPECT_EQ(testing::RunOvfix(absl::StrCat("convert /nonexistent.onnx ", out)).exit_code, 2);
  const std::string gfpgan = ModelDir("gfpgan_modconv") + "/model.onnx";
  if (fs::exists(gfpgan)) {
    EXPECT_EQ(
        testing::RunOvfix(absl::StrCat("convert ", gfpgan, " ", out, " --target nope")).exit_code,
        2);
    EXPECT_EQ(
        testing::RunOvfix(absl::StrCat("convert ", gfpgan, " ", out, " --input-shape x=1xbad"))
            .exit_code,
        2);
    EXPECT_EQ(
        testing::RunOvfix(absl::StrCat("convert ", gfpgan, " ", out, " --disable no_such_rule"))
            .exit_code,
        2);
    EXPECT_FALSE(fs::exists(out));
    auto ok = testing::RunOvfix(
        absl::StrCat("convert ", gfpgan, " ", out, " --target gpu-fp16 --no-validate"));
    EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
    EXPECT_TRUE(fs::exists(out));
    fs::remove(out);
  }
  // 1: a model fp16 cannot represent (a large offset removed again: 1000.1 - 1000 in fp16
  // loses the fraction) and no repair, so the end-to-end comparison finds changed outputs;
  // nothing written.
  const std::string in =
      test_support::SaveModelText(dir / "offset.onnx", test_support::kOffsetModel);
  auto mismatch =
      testing::RunOvfix(absl::StrCat("convert ", in, " ", out, " --target gpu-fp16 --no-repair"));
  EXPECT_EQ(mismatch.exit_code, 1) << mismatch.out << mismatch.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix::converter
