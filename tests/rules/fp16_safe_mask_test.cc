// fp16_safe_mask: an additive attention mask built from float32's extremes (finfo.min, -inf)
// is bounded to -4096 where fp16 computes it (openvino-gpu, ncnn-vulkan; gpu-fp16), and then
//  - the rewritten graph holds no constant beyond fp16's range and the mask constant is -4096;
//  - in fp32 it computes the original's outputs (masked keys get weight 0 either way), in
//    ovfix's CPU executor and in onnxruntime;
//  - with every float tensor in fp16 its outputs are finite and within fp16's rounding of the
//    fp32 original, where the original's `0 * -inf` makes them NaN;
// while a constant beyond fp16 that does not only build a mask (a MatMul weight, a Clip bound,
// finfo.min also used by a Max) is left alone.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/model_run.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "exec/compare.h"
#include "gtest/gtest.h"
#include "ir/constant.h"
#include "ir/float16.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"
#include "ir/text_form.h"
#include "rules/conversion_options.h"
#include "tests/support/conversion_facts.h"
#include "tests/support/ort_peer.h"
#include "tests/support/tensor_checks.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;

constexpr char kPass[] = "fp16_safe_mask";

// Hugging Face's BERT export: scores + (1 - mask) * finfo(float32).min, two padded keys.
constexpr char kHuggingFaceMask[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  m (float[1, 2, 4, 6] scores, int64[1, 6] mask, float[1, 2, 6, 3] v) => (float[1, 2, 4, 3] y)
    <float one = {1}, float finfo_min = {-3.4028235e38}, int64[2] axes = {1, 2}> {
    mask_f = Cast <to = 1> (mask)
    inverted = Sub(one, mask_f)
    bias = Mul(inverted, finfo_min)
    extended = Unsqueeze(bias, axes)
    masked = Add(scores, extended)
    probs = Softmax <axis = -1> (masked)
    y = MatMul(probs, v)
  })";

// masked_fill as an additive bias: Where(keep, 0, -inf) (the -inf is set after parsing: the
// text form has no literal for it); the Softmax's output is the graph's.
constexpr char kWhereMask[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  m (float[1, 2, 4, 6] scores, bool[1, 1, 1, 6] keep) => (float[1, 2, 4, 6] probs)
    <float zero = {0}, float minus_inf = {-1}> {
    bias = Where(keep, zero, minus_inf)
    masked = Add(scores, bias)
    probs = Softmax <axis = -1> (masked)
  })";

// Attention-23 with the mask as its attn_mask, expanded to [batch, 1, q, keys] as exporters
// write it.
constexpr char kAttentionMask[] = R"(
  <ir_version: 10, opset_import: ["" : 23]>
  m (float[1, 2, 4, 8] q, float[1, 2, 6, 8] k, float[1, 2, 6, 8] v, int64[1, 6] mask)
    => (float[1, 2, 4, 8] y)
    <float one = {1}, float finfo_min = {-3.4028235e38}, int64[2] axes = {1, 2},
     int64[4] shape = {1, 1, 4, 6}> {
    mask_f = Cast <to = 1> (mask)
    inverted = Sub(one, mask_f)
    bias = Mul(inverted, finfo_min)
    extended = Unsqueeze(bias, axes)
    full = Expand(extended, shape)
    y = Attention(q, k, v, full)
  })";

// Constants beyond fp16 that build no mask: a MatMul weight, Clip bounds before a Softmax, and
// finfo.min read by a mask and by a Max (OPT's clamp of the scores).
constexpr char kNotMasks[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  m (float[1, 2, 4, 6] scores, float[1, 6] mask, float[1, 6] x)
    => (float[1, 2, 4, 6] clipped_probs, float[1, 2, 4, 6] probs, float[1, 3] z)
    <float[6, 3] w = {1e5, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1},
     float low = {-1e30}, float high = {1e30}, float one = {1},
     float finfo_min = {-3.4028235e38}, int64[2] axes = {1, 2}> {
    z = MatMul(x, w)
    clipped = Clip(scores, low, high)
    clipped_probs = Softmax <axis = -1> (clipped)
    inverted = Sub(one, mask)
    bias = Mul(inverted, finfo_min)
    extended = Unsqueeze(bias, axes)
    masked = Add(scores, extended)
    floored = Max(masked, finfo_min)
    probs = Softmax <axis = -1> (floored)
  })";

fs::path ScratchDir(const std::string& name) { return test_support::ScratchDir("fp16_mask", name); }

Tensor AsFloat(const Tensor& t) { return ConvertTensor(t, DataType::kFloat); }

using test_support::AllFinite;

std::unique_ptr<Model> Parse(const char* text) {
  auto model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  Value* minus_inf = (*model)->graph().FindValue("minus_inf");
  if (minus_inf != nullptr) {
    minus_inf->set_tensor(Tensor::FromVector<float>(DataType::kFloat, {}, {-INFINITY}));
  }
  return *std::move(model);
}

// Inputs by name: scores and q/k/v of a few units, keys 4 and 5 padded out.
exec::TensorMap Feeds(const Graph& g) {
  exec::TensorMap feeds;
  for (const Value* input : g.inputs()) {
    if (input->is_initializer()) continue;
    std::vector<int64_t> dims;
    for (const auto& d : input->type().tensor_type().shape().dim()) dims.push_back(d.dim_value());
    const std::string& name = input->name();
    if (name == "mask" && input->elem_type() == DataType::kInt64) {
      feeds[name] = Tensor::FromVector<int64_t>(DataType::kInt64, dims, {1, 1, 1, 1, 0, 0});
    } else if (name == "keep") {
      feeds[name] = Tensor::FromVector<uint8_t>(DataType::kBool, dims, {1, 1, 1, 1, 0, 0});
    } else if (name == "mask") {
      feeds[name] = Tensor::FromVector<float>(DataType::kFloat, dims, {1, 1, 1, 1, 0, 0});
    } else {
      Tensor t = Tensor::Uninitialized(DataType::kFloat, dims);
      const float scale = name == "scores" ? 3.0f : 0.8f;
      for (int64_t i = 0; i < t.numel(); ++i) {
        t.data<float>()[i] = scale * std::sin(1.3f * i + name.size());
      }
      feeds[name] = t;
    }
  }
  return feeds;
}

// Writes `feeds` as the conversion's input files, in the graph's input order.
std::vector<std::string> WriteFeeds(const Graph& g, const exec::TensorMap& feeds,
                                    const fs::path& dir, PipelineOptions& options) {
  std::vector<std::string> files;
  for (const Value* input : g.inputs()) {
    const std::string file = (dir / absl::StrCat("input_", files.size(), ".pb")).string();
    EXPECT_TRUE(WriteTensorFile(file, feeds.at(input->name()), input->name()).ok());
    options.convert.input_files[input->name()] = file;
    files.push_back(file);
  }
  return files;
}

// Every float value the model's constants hold.
std::vector<double> ConstantFloats(const Model& model) {
  std::vector<double> values;
  auto add = [&](const Tensor& t) {
    if (t.type() != DataType::kFloat && t.type() != DataType::kFloat16) return;
    for (int64_t i = 0; i < t.numel(); ++i) values.push_back(t.GetAsDouble(i));
  };
  for (const Value* v : model.graph().initializers()) add(v->tensor());
  for (const Node* n : model.graph().nodes()) {
    if (n->op_type() != "Constant") continue;
    if (auto t = ConstantNodeValue(*n); t.ok()) add(*t);
  }
  return values;
}

struct Case {
  const char* name;
  const char* text;
  const char* target;
  bool original_fp16_loses_outputs;  // with every float in fp16, the original gives NaN
};

class Fp16SafeMask : public ::testing::TestWithParam<Case> {};

TEST_P(Fp16SafeMask, MaskBoundedKeepsFp32OutputsAndStaysFiniteInFp16) {
  const Case& c = GetParam();
  const fs::path dir = ScratchDir(absl::StrCat(c.name, "_", c.target));
  std::unique_ptr<Model> model = Parse(c.text);
  ASSERT_NE(model, nullptr);
  const exec::TensorMap feeds = Feeds(model->graph());
  const std::string original = (dir / "original.onnx").string();
  ASSERT_TRUE(SaveModel(*model, original).ok());
  PipelineOptions options;
  options.convert.target = c.target;
  const std::vector<std::string> input_files = WriteFeeds(model->graph(), feeds, dir, options);

  auto reference = RunAsTyped(*model, feeds);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_TRUE(AllFinite((*reference)[0]));
  auto original_fp16 = RunEveryFloatInFp16(*model, feeds);
  ASSERT_TRUE(original_fp16.ok()) << original_fp16.status();
  if (c.original_fp16_loses_outputs) {
    EXPECT_FALSE(AllFinite((*original_fp16)[0])) << "the mask does not break fp16: no test";
  }

  auto report = ConvertModel(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  EXPECT_EQ(test_support::CommittedRewrites(*report, kPass), 1) << SummaryTable(*report);
  EXPECT_TRUE(report->fp16_overflows.empty()) << SummaryTable(*report);

  // The rewritten graph: the mask constant is -4096 and nothing beyond fp16 is left.
  const std::vector<double> constants = ConstantFloats(*model);
  bool bounded = false;
  for (double v : constants) {
    EXPECT_LE(std::abs(v), 65504) << "a constant beyond fp16 is left";
    bounded |= v == -4096;
  }
  EXPECT_TRUE(bounded) << "no constant of -4096";
  int softmax_or_attention = 0;
  for (const Node* n : model->graph().nodes()) {
    softmax_or_attention += n->op_type() == "Softmax" || n->op_type() == "Attention";
  }
  EXPECT_EQ(softmax_or_attention, 1);

  // As typed: the fp32 original's outputs (exactly, where the model stays fp32).
  const bool fp32_model = std::string(c.target) == "openvino-gpu";
  auto as_typed = RunAsTyped(*model, MatchInputTypes(model->graph(), feeds));
  ASSERT_TRUE(as_typed.ok()) << as_typed.status();
  EXPECT_TRUE(AllFinite((*as_typed)[0]));
  EXPECT_LE(exec::RelativeError(AsFloat((*as_typed)[0]), (*reference)[0]),
            fp32_model ? 1e-6 : 1e-2);

  // Every float tensor in fp16, as openvino-gpu and ncnn-vulkan run it: finite, and within
  // fp16's rounding of the fp32 original.
  auto converted_fp16 = RunEveryFloatInFp16(*model, feeds);
  ASSERT_TRUE(converted_fp16.ok()) << converted_fp16.status();
  const Tensor fp16 = AsFloat((*converted_fp16)[0]);
  EXPECT_TRUE(AllFinite(fp16));
  EXPECT_LE(exec::RelativeError(fp16, (*reference)[0]), 1e-2);

  // onnxruntime runs the written file and computes the original's outputs.
  const std::string converted = (dir / "converted.onnx").string();
  ASSERT_TRUE(SaveModel(*model, converted).ok());
  OVFIX_REQUIRE_ORT(modules);
  const auto expected = testing_support::RunOrt(modules, original, input_files, dir / "ort_orig");
  const auto actual = testing_support::RunOrt(
      modules, converted, testing_support::AsDeclared(converted, input_files, dir),
      dir / "ort_converted");
  ASSERT_EQ(expected.size(), 1u);
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_LE(exec::RelativeError(AsFloat(actual[0]), expected[0]), fp32_model ? 1e-6 : 1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, Fp16SafeMask,
    ::testing::Values(Case{"hugging_face", kHuggingFaceMask, "openvino-gpu", true},
                      Case{"hugging_face", kHuggingFaceMask, "ncnn-vulkan", true},
                      Case{"hugging_face", kHuggingFaceMask, "gpu-fp16", true},
                      Case{"where_minus_inf", kWhereMask, "openvino-gpu", false},
                      Case{"attention_23", kAttentionMask, "openvino-gpu", true},
                      Case{"attention_23", kAttentionMask, "ncnn-vulkan", true}),
    [](const auto& info) {
      std::string name = absl::StrCat(info.param.name, "_", info.param.target);
      for (char& ch : name) ch = ch == '-' ? '_' : ch;
      return name;
    });

// --mask-bound sets the magnitude (an option the pass declares and reads by name): the mask
// constant becomes -1024, the outputs stay those of the fp32 original, and in fp16 finite.
TEST(Fp16SafeMask, MaskBoundOptionSetsTheMagnitude) {
  const fs::path dir = ScratchDir("mask_bound");
  std::unique_ptr<Model> model = Parse(kHuggingFaceMask);
  ASSERT_NE(model, nullptr);
  const exec::TensorMap feeds = Feeds(model->graph());
  auto reference = RunAsTyped(*model, feeds);
  ASSERT_TRUE(reference.ok()) << reference.status();
  PipelineOptions options;
  options.convert.target = "openvino-gpu";
  ASSERT_TRUE(rules::SetOption("mask_bound", "1024", options.convert).ok());
  options.set_by_user.insert("mask_bound");
  WriteFeeds(model->graph(), feeds, dir, options);
  auto report = ConvertModel(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(test_support::CommittedRewrites(*report, kPass), 1) << SummaryTable(*report);
  bool bounded = false;
  for (double v : ConstantFloats(*model)) {
    EXPECT_LE(std::abs(v), 65504);
    EXPECT_NE(v, -4096) << "the default bound, not the option's";
    bounded |= v == -1024;
  }
  EXPECT_TRUE(bounded) << "no constant of -1024";
  auto fp16 = RunEveryFloatInFp16(*model, feeds);
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  EXPECT_TRUE(AllFinite((*fp16)[0]));
  EXPECT_LE(exec::RelativeError(AsFloat((*fp16)[0]), (*reference)[0]), 1e-2);
  // Below what masks in fp16 (exp(-17.3) is its smallest weight), or beyond room for two
  // masks added: refused by the table's entry.
  rules::ConvertOptions refused;
  absl::Status low = rules::SetOption("mask_bound", "8", refused);
  EXPECT_EQ(low.message(), "expected a number from 32 to 32768, got '8'");
  EXPECT_FALSE(rules::SetOption("mask_bound", "40000", refused).ok());
}

TEST(Fp16SafeMask, ConstantsThatBuildNoMaskAreLeftAlone) {
  const fs::path dir = ScratchDir("not_masks");
  std::unique_ptr<Model> model = Parse(kNotMasks);
  ASSERT_NE(model, nullptr);
  const exec::TensorMap feeds = Feeds(model->graph());
  PipelineOptions options;
  options.convert.target = "openvino-gpu";
  WriteFeeds(model->graph(), feeds, dir, options);
  auto report = ConvertModel(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(test_support::CommittedRewrites(*report, kPass), 0) << SummaryTable(*report);
  const std::vector<double> constants = ConstantFloats(*model);
  for (double kept : {1e5, -1e30, 1e30, static_cast<double>(-3.4028235e38f)}) {
    EXPECT_NE(std::find(constants.begin(), constants.end(), static_cast<double>(float(kept))),
              constants.end())
        << kept << " was changed";
  }
  EXPECT_EQ(std::find(constants.begin(), constants.end(), -4096.0), constants.end());
}

// gpu-fp16 honours islands: bounded, the mask chain and the Add of the scores need none (the
// Softmax keeps its own).
TEST(Fp16SafeMask, Gpufp16KeepsOnlyTheSoftmaxInFp32) {
  std::unique_ptr<Model> model = Parse(kHuggingFaceMask);
  ASSERT_NE(model, nullptr);
  PipelineOptions options;
  options.convert.target = "gpu-fp16";
  // The islands the policy decides (on these feeds the certificate gives the Softmax back).
  options.convert.certify = false;
  WriteFeeds(model->graph(), Feeds(model->graph()), ScratchDir("gpu_fp16_islands"), options);
  auto report = ConvertModel(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(test_support::CommittedRewrites(*report, kPass), 1) << SummaryTable(*report);
  std::vector<std::string> ops;
  for (const rules::IslandNode& i : report->islands) ops.push_back(i.op_type);
  EXPECT_EQ(absl::StrJoin(ops, ", "), "Softmax");
}

// A user's rule that bounds the mask constant itself (the values it replaces change by the
// whole range) is judged by the criteria on the model's outputs, which it keeps: committed,
// where the 1e-5 tolerance on its own values rolled it back. With the built-in bound switched
// off, it is also what makes openvino-gpu's all-fp16 run finite.
const rules::RewriteRecord* UserRuleRecord(const ConversionReport& report) {
  for (const rules::RewriteRecord& r : report.rewrites) {
    if (r.rule == "bound_finfo_min") return &r;
  }
  return nullptr;
}

void WriteBoundRule(const fs::path& file, const char* bound) {
  std::ofstream(file) << "# x * finfo.min -> x * " << bound << R"(
rule bound_finfo_min
  match   (x, c) => (y) { y = Mul(x, c) }
  where   is_constant(c) && scalar_value(c) < -1e30
  let     b = )" << bound
                      << R"(
  replace (x, b) => (y) { y = Mul(x, b) }
)";
}

TEST(Fp16SafeMask, UserRuleBoundingTheMaskIsJudgedByTheOutputs) {
  for (const char* target : {"generic", "openvino-gpu"}) {
    SCOPED_TRACE(target);
    const fs::path dir = ScratchDir(absl::StrCat("user_rule_", target));
    std::unique_ptr<Model> model = Parse(kHuggingFaceMask);
    ASSERT_NE(model, nullptr);
    const exec::TensorMap feeds = Feeds(model->graph());
    const std::string original = (dir / "original.onnx").string();
    ASSERT_TRUE(SaveModel(*model, original).ok());
    auto reference = RunAsTyped(*model, feeds);
    ASSERT_TRUE(reference.ok()) << reference.status();
    PipelineOptions options;
    options.convert.target = target;
    options.convert.disabled = {kPass};
    WriteBoundRule(dir / "bound.rules", "-10000.0");
    options.rule_files = {(dir / "bound.rules").string()};
    const std::vector<std::string> input_files = WriteFeeds(model->graph(), feeds, dir, options);

    auto report = ConvertModel(*model, options);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
    const rules::RewriteRecord* record = UserRuleRecord(*report);
    ASSERT_NE(record, nullptr) << SummaryTable(*report);
    EXPECT_FALSE(record->rolled_back) << record->note;
    EXPECT_GT(record->max_error, 0.5) << "the rule's own values change: no test";
    EXPECT_NE(record->note.find("the outputs meet the criteria (output 'y': score "),
              std::string::npos)
        << record->note;
    const std::vector<double> constants = ConstantFloats(*model);
    EXPECT_NE(std::find(constants.begin(), constants.end(), -1e4), constants.end());
    for (double v : constants) EXPECT_LE(std::abs(v), 65504);

    // Every float in fp16, as openvino-gpu runs it: finite now, and close to the original.
    auto converted_fp16 = RunEveryFloatInFp16(*model, feeds);
    ASSERT_TRUE(converted_fp16.ok()) << converted_fp16.status();
    EXPECT_TRUE(AllFinite(AsFloat((*converted_fp16)[0])));
    EXPECT_LE(exec::RelativeError(AsFloat((*converted_fp16)[0]), (*reference)[0]), 1e-2);

    const std::string converted = (dir / "converted.onnx").string();
    ASSERT_TRUE(SaveModel(*model, converted).ok());
    OVFIX_REQUIRE_ORT(modules);
    const auto expected = testing_support::RunOrt(modules, original, input_files, dir / "ort_o");
    const auto actual = testing_support::RunOrt(
        modules, converted, testing_support::AsDeclared(converted, input_files, dir),
        dir / "ort_c");
    ASSERT_EQ(actual.size(), 1u);
    EXPECT_LE(exec::RelativeError(AsFloat(actual[0]), expected[0]),
              std::string(target) == "generic" ? 1e-6 : 1e-2);
  }
}

// A user's rule whose rewrite changes the outputs beyond the criteria is rolled back, and the
// reason names the output and the criteria it missed.
TEST(Fp16SafeMask, UserRuleThatChangesTheOutputsIsRolledBackNamingTheCriteria) {
  const fs::path dir = ScratchDir("user_rule_unmasks");
  std::unique_ptr<Model> model = Parse(kHuggingFaceMask);
  ASSERT_NE(model, nullptr);
  PipelineOptions options;
  options.convert.target = "generic";
  WriteBoundRule(dir / "unmask.rules", "-1.0");  // masks nothing: the padded keys get weight
  options.rule_files = {(dir / "unmask.rules").string()};
  WriteFeeds(model->graph(), Feeds(model->graph()), dir, options);
  auto report = ConvertModel(*model, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << SummaryTable(*report);
  const rules::RewriteRecord* record = UserRuleRecord(*report);
  ASSERT_NE(record, nullptr) << SummaryTable(*report);
  EXPECT_TRUE(record->rolled_back);
  EXPECT_NE(record->note.find("changed outputs beyond the criteria: output 'y': score "),
            std::string::npos)
      << record->note;
  EXPECT_NE(record->note.find(" of max:"), std::string::npos) << record->note;
  const std::vector<double> constants = ConstantFloats(*model);
  EXPECT_EQ(std::find(constants.begin(), constants.end(), -1.0), constants.end());
}

}  // namespace
}  // namespace ovfix::converter
