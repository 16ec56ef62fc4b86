// The bfloat16 island policy on hand-worked cases: a long sum of values near 1 (where a
// bfloat16 accumulator stops growing at 256) and the variance of values near 1000 with a
// standard deviation of 1 (where rounding x to bfloat16, spaced 4 apart there, loses all of
// x - mean). The converted model is run on the cpu executor and compared with sums in double.
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "converter/node_evaluator.h"
#include "converter/pipeline.h"
#include "converter/report.h"
#include "converter/validation.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"
#include "rules/passes/bf16_island_rules.h"
#include "rules/passes/fp16_islands.h"
#include "tests/support/bfloat16_reference.h"
#include "tests/support/model_text.h"

namespace ovfix::rules {
namespace {

using test_support::RoundToBfloat16;

std::unique_ptr<Model> Parse(const char* text) { return test_support::ParseAndInferShapes(text); }

// Converts `m` to bfloat16 (the fp16_islands pass with precision bf16, validated against a
// reference run on `inputs`) and returns the islands by op type.
std::map<std::string, std::string> ConvertToBf16(Model& m, const exec::TensorMap& inputs) {
  ConvertOptions options;
  options.precision = ConvertOptions::Precision::kBf16;
  options.keep_io_types = false;  // the tests read the types the graph's values compute in
  auto validator = converter::ReferenceValidator::Create(m, inputs);
  EXPECT_TRUE(validator.ok()) << validator.status();
  Rewriter rewriter(m);
  rewriter.set_observer(validator->get());
  converter::CpuNodeEvaluator evaluator;
  PassContext ctx{m, rewriter, options, validator->get()};
  ctx.evaluator = &evaluator;
  Fp16IslandsPass pass;
  auto committed = pass.Run(ctx);
  EXPECT_TRUE(committed.ok()) << committed.status();
  std::map<std::string, std::string> islands;
  for (const IslandNode& i : pass.islands()) islands[i.op_type] = i.reason;
  EXPECT_TRUE(converter::CheckModel(m).ok()) << converter::CheckModel(m);
  return islands;
}

float RunScalar(const Model& m, const exec::TensorMap& inputs) {
  auto session = exec::CreateSession(m, {});
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return NAN;
  exec::TensorMap typed;
  for (const Value* v : m.graph().inputs()) {
    const Tensor& t = inputs.at(v->name());
    typed[v->name()] = v->elem_type() == t.type() ? t : ConvertTensor(t, v->elem_type());
  }
  auto out = (*session)->Run(typed);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return NAN;
  return ConvertTensor((*out)[0], DataType::kFloat).data<float>()[0];
}

bool ComputesBfloat16(const Model& m) {
  for (const Node* n : m.graph().nodes()) {
    for (const Value* o : n->outputs()) {
      if (o->elem_type() == DataType::kBfloat16) return true;
    }
  }
  return false;
}

// 4096 values in [0.75, 1.25): their sum is about 4096.
TEST(Bf16Islands, LongSumStaysFp32) {
  auto m = Parse(R"(
    m (float[1, 4096] x) => (float[1] s) <int64[1] axes = {1}> {
      scaled = Mul(x, x)
      s = ReduceSum<keepdims = 0>(scaled, axes)
    })");
  std::vector<float> x(4096);
  double exact = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.75f + 0.5f * static_cast<float>((i * 37) % 4096) / 4096;
    exact += double{x[i]} * x[i];
  }
  // Hand-worked: a bfloat16 accumulator (each partial sum rounded) stalls once the spacing of
  // bfloat16 at the sum (2 from 256 on, 32 from 4096 on) exceeds twice the terms.
  float bf16_sum = 0;
  for (float v : x) bf16_sum = RoundToBfloat16(bf16_sum + RoundToBfloat16(v * v));
  EXPECT_LT(bf16_sum, 0.25 * exact) << "bfloat16 accumulation was expected to drift";

  exec::TensorMap inputs;
  inputs["x"] = Tensor::FromVector<float>(DataType::kFloat, {1, 4096}, x);
  const std::map<std::string, std::string> islands = ConvertToBf16(*m, inputs);
  ASSERT_TRUE(islands.contains("ReduceSum"));
  EXPECT_NE(islands.at("ReduceSum").find("long sum"), std::string::npos);
  EXPECT_NE(islands.at("ReduceSum").find("4096"), std::string::npos);
  EXPECT_FALSE(islands.contains("Mul"));  // the squares stay bfloat16: 2^-9 each, not summed
  EXPECT_TRUE(ComputesBfloat16(*m));
  // Squares rounded to bfloat16 (relative error <= 2^-9 each), summed in fp32.
  const float got = RunScalar(*m, inputs);
  EXPECT_NEAR(got, exact, exact * 0x1.0p-8);
}

TEST(Bf16Islands, ShortSumStaysBfloat16) {
  auto m = Parse(R"(
    m (float[64, 8] x) => (float[64] s) <int64[1] axes = {1}> {
      y = Relu(x)
      s = ReduceSum<keepdims = 0>(y, axes)
    })");
  exec::TensorMap inputs;
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * static_cast<float>(i));
  inputs["x"] = Tensor::FromVector<float>(DataType::kFloat, {64, 8}, x);
  const std::map<std::string, std::string> islands = ConvertToBf16(*m, inputs);
  EXPECT_FALSE(islands.contains("ReduceSum")) << islands.at("ReduceSum");
  EXPECT_EQ(m->graph().FindValue("s")->elem_type(), DataType::kBfloat16);
}

// Variance of 4096 values near 1000 with standard deviation about 1: mean, x - mean, the
// squares and their mean (a decomposed norm's statistics).
TEST(Bf16Islands, VarianceOfLargeValuesStaysFp32) {
  auto m = Parse(R"(
    m (float[1, 4096] x) => (float[1, 1] var) {
      mean = ReduceMean<axes = [1], keepdims = 1>(x)
      d = Sub(x, mean)
      sq = Mul(d, d)
      var = ReduceMean<axes = [1], keepdims = 1>(sq)
    })");
  std::vector<float> x(4096);
  double mean = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 1000.0f + 1.41421356f * std::sin(0.7f * static_cast<float>(i));
    mean += x[i];
  }
  mean /= 4096;
  double var = 0, var_of_rounded = 0, mean_of_rounded = 0;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= 4096;
  ASSERT_NEAR(var, 1.0, 0.05);
  // Hand-worked: bfloat16 spaces values in [512, 1024) 4 apart, so every x (1000 +- 1.42)
  // rounds to 1000: even computed exactly from there, the variance is 0.
  for (float v : x) mean_of_rounded += RoundToBfloat16(v);
  mean_of_rounded /= 4096;
  for (float v : x) {
    const double r = RoundToBfloat16(v);
    var_of_rounded += (r - mean_of_rounded) * (r - mean_of_rounded);
  }
  var_of_rounded /= 4096;
  EXPECT_LT(var_of_rounded, 0.01 * var) << var_of_rounded;

  exec::TensorMap inputs;
  inputs["x"] = Tensor::FromVector<float>(DataType::kFloat, {1, 4096}, x);
  const std::map<std::string, std::string> islands = ConvertToBf16(*m, inputs);
  ASSERT_TRUE(islands.contains("Sub"));
  EXPECT_NE(islands.at("Sub").find("centering"), std::string::npos) << islands.at("Sub");
  ASSERT_TRUE(islands.contains("ReduceMean"));
  ASSERT_TRUE(islands.contains("Mul"));
  // x is read by fp32 islands only: it stays a float input, never rounded.
  EXPECT_EQ(m->graph().FindValue("x")->elem_type(), DataType::kFloat);
  const float got = RunScalar(*m, inputs);
  EXPECT_NEAR(got, var, 0.01 * var);
}

// An input seen by calibration to cancel (Add of two variables into a much smaller result)
// stays fp32; without calibration data nothing is known and it stays bfloat16.
TEST(Bf16Islands, CalibratedCancellation) {
  auto m = Parse(R"(
    m (float[1, 16] a, float[1, 16] b) => (float[1, 16] y) {
      s = Sub(a, b)
      y = Relu(s)
    })");
  std::vector<float> a(16), b(16);
  for (int i = 0; i < 16; ++i) {
    a[i] = 500.0f + static_cast<float>(i);
    b[i] = a[i] - 0.25f * static_cast<float>(i % 5);
  }
  exec::TensorMap inputs;
  inputs["a"] = Tensor::FromVector<float>(DataType::kFloat, {1, 16}, a);
  inputs["b"] = Tensor::FromVector<float>(DataType::kFloat, {1, 16}, b);
  const std::map<std::string, std::string> islands = ConvertToBf16(*m, inputs);
  ASSERT_TRUE(islands.contains("Sub"));
  EXPECT_NE(islands.at("Sub").find("cancellation"), std::string::npos) << islands.at("Sub");
  EXPECT_FALSE(islands.contains("Relu"));
}

// Conv has no bfloat16 in onnx's schemas up to opset 17: it stays fp32, and says why.
TEST(Bf16Islands, OpsWithoutBfloat16InTheSpecStayFp32) {
  auto m = Parse(R"(
    m (float[1, 2, 6, 6] x) => (float[1, 3, 4, 4] y) {
      w = Constant<value = float[3, 2, 3, 3] {
        1, 0, 0, 0, 1, 0, 0, 0, 1,  0, 1, 0, 1, 0, 1, 0, 1, 0,
        1, 1, 1, 0, 0, 0, 0, 0, 0,  0, 0, 0, 1, 1, 1, 0, 0, 0,
        0.5, 0, 0, 0, 0.5, 0, 0, 0, 0.5,  0, 0, 0, 0, 0, 0, 1, 1, 1}>()
      c = Conv(x, w)
      y = Relu(c)
    })");
  IslandOptions o;
  o.opset = 17;
  auto islands = DecideBf16Islands(m->graph(), o);
  ASSERT_TRUE(islands.ok()) << islands.status();
  bool conv = false;
  for (const auto& [n, why] : *islands) {
    if (n->op_type() == "Conv") {
      conv = true;
      EXPECT_NE(why.find("no bfloat16 in the ONNX spec"), std::string::npos) << why;
    }
    EXPECT_NE(n->op_type(), "Relu");
  }
  EXPECT_TRUE(conv);
}

// A window whose output type its output_datatype attribute sets stays fp32 (retyping its
// output to bfloat16 would contradict the attribute; onnx's checker refuses it).
TEST(Bf16Islands, OutputsTypedByAnAttributeStayFp32) {
  auto m = Parse(R"(
    m (int64 n, float[10] x) => (float[10] y) {
      w = HannWindow<output_datatype = 1>(n)
      y = Mul(w, x)
    })");
  IslandOptions o;
  o.opset = 17;
  auto islands = DecideBf16Islands(m->graph(), o);
  ASSERT_TRUE(islands.ok()) << islands.status();
  bool window = false;
  for (const auto& [n, why] : *islands) {
    if (n->op_type() == "HannWindow") {
      window = true;
      EXPECT_NE(why.find("attribute"), std::string::npos) << why;
    }
  }
  EXPECT_TRUE(window);
}

// (x + 1000) - 1000 with constants: no rule sees a cancellation between two variables, so the
// policy leaves both in bfloat16, where x + 1000 is spaced 4 apart and x is lost. The
// end-to-end check fails and the repair keeps what it needs in fp32, as it does for fp16.
TEST(Bf16Islands, RepairKeepsWhatThePolicyMissed) {
  auto m = Parse(R"(
    m (float[1, 256] x) => (float[1, 256] y) {
      k = Constant<value = float[1] {1000}>()
      shifted = Add(x, k)
      back = Sub(shifted, k)
      y = Relu(back)
    })");
  converter::PipelineOptions o;
  o.convert.target = "gpu-bf16";
  auto report = converter::ConvertModel(*m, o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->outputs_match) << converter::SummaryTable(*report);
  ASSERT_TRUE(report->repair.has_value());
  EXPECT_FALSE(report->repair->kept.empty());
  ASSERT_TRUE(report->end_to_end.has_value());
  EXPECT_LT(report->end_to_end->max_error, 0.02);
  bool add_fp32 = false;
  for (const Node* n : m->graph().nodes()) {
    if (n->op_type() == "Add") add_fp32 = n->output(0)->elem_type() == DataType::kFloat;
  }
  EXPECT_TRUE(add_fp32);
}

// The TensorRT hints name each fp32 node of the written model; nodes without a name (the text
// form gives none) get one, kept in the file, so that the hint matches a layer.
TEST(Bf16Islands, LayerHintsNameUnnamedFp32Nodes) {
  auto m = Parse(R"(
    m (float[4, 64] x) => (float[4, 64] y) {
      mean = ReduceMean<axes = [1], keepdims = 1>(x)
      d = Sub(x, mean)
      y = Relu(d)
    })");
  converter::PipelineOptions o;
  o.convert.target = "gpu-bf16";
  // The policy's islands (on random inputs the certificate gives them back to bf16).
  o.convert.certify = false;
  const std::string out = ::testing::TempDir() + "/bf16_hints.onnx";
  o.output_path = out;
  o.write_output = true;
  auto report = converter::ConvertModel(*m, o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->written);
  auto written = LoadModel(out);
  ASSERT_TRUE(written.ok()) << written.status();
  std::string want_precisions = "--layerPrecisions=", want_types = "--layerOutputTypes=";
  int fp32 = 0;
  for (const Node* n : (*written)->graph().nodes()) {
    if (n->op_type() == "Cast" || n->output(0)->elem_type() != DataType::kFloat) continue;
    ASSERT_FALSE(n->name().empty()) << n->op_type();
    const std::string sep = fp32++ > 0 ? "," : "";
    want_precisions += sep + n->name() + ":fp32";
    want_types += sep + n->name() + ":fp32";
  }
  EXPECT_EQ(fp32, 2);  // ReduceMean and the Sub that centres x
  EXPECT_EQ(report->layer_precisions, want_precisions);
  EXPECT_EQ(report->layer_output_types, want_types);
}

}  // namespace
}  // namespace ovfix::rules
