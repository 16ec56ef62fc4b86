// Native passes, validation and targets on small graphs written in ONNX text: each pass does
// its rewrite, leaves what it must not touch alone, and keeps the outputs (checked by
// running the graph before and after on the CPU executor).
#include <cmath>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/node_evaluator.h"
#include "converter/pipeline.h"
#include "converter/target.h"
#include "converter/validation.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "ir/constant.h"
#include "ir/float16.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"
#include "rules/passes/constant_folding.h"
#include "rules/passes/dead_code_elimination.h"
#include "rules/passes/explicit_broadcast_full.h"
#include "rules/passes/fix_input_shapes.h"
#include "rules/passes/fp16_islands.h"
#include "rules/passes/lower_conv3d_unit_kernel.h"
#include "rules/passes/registry.h"
#include "tests/support/model_text.h"

namespace ovfix::rules {
namespace {

using converter::ApplyTargetOptions;
using converter::BuiltinTargets;
using converter::CheckModel;
using converter::CpuNodeEvaluator;
using converter::LoadTarget;
using converter::MakeReferenceInputs;
using converter::OutputComparison;
using converter::ParseTarget;
using converter::ReferenceValidator;
using converter::Target;
using exec::kFloat16Resolution;
using exec::RelativeError;

std::unique_ptr<Model> Parse(const char* text) { return test_support::ParseAndInferShapes(text); }

// Runs a pass with validation against a reference run of the model as it was.
// Options of a conversion whose file takes and gives float16 where the graph computes in it
// (--no-keep-io-types), for tests that look at the types of graph inputs and outputs.
ConvertOptions Fp16Io() {
  ConvertOptions o;
  o.keep_io_types = false;
  return o;
}

struct Harness {
  explicit Harness(Model& m, ConvertOptions o = {}) : model(m), options(std::move(o)) {
    auto inputs = MakeReferenceInputs(model, options);
    EXPECT_TRUE(inputs.ok()) << inputs.status();
    reference_inputs = *inputs;
    auto v = ReferenceValidator::Create(model, reference_inputs);
    EXPECT_TRUE(v.ok()) << v.status();
    validator = *std::move(v);
    rewriter.set_observer(validator.get());
  }
  absl::StatusOr<int> Run(Pass& pass) {
    PassContext ctx{model, rewriter, options, validator.get()};
    ctx.evaluator = &evaluator;
    return pass.Run(ctx);
  }
  absl::StatusOr<int> Run(FunctionPass::Function pass) {
    FunctionPass p("", "", pass);
    return Run(p);
  }
  // Largest end-to-end error against the original outputs.
  double EndToEnd() {
    auto e = validator->CompareEndToEnd(model);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? e->max_error : INFINITY;
  }
  Model& model;
  ConvertOptions options;
  exec::TensorMap reference_inputs;
  std::unique_ptr<ReferenceValidator> validator;
  Rewriter rewriter{model};
  CpuNodeEvaluator evaluator;
};

int Count(const Model& m, std::string_view op) {
  int n = 0;
  for (const Node* node : m.graph().nodes()) n += node->op_type() == op ? 1 : 0;
  return n;
}

// ---- validation ----

TEST(Validation, RelativeErrorIsRelativeToTheRange) {
  Tensor e = Tensor::FromVector<float>(DataType::kFloat, {3}, {0, 5, 10});
  Tensor a = Tensor::FromVector<float>(DataType::kFloat, {3}, {0, 5.1f, 10});
  EXPECT_NEAR(RelativeError(a, e), 0.01, 1e-6);
  Tensor inf = Tensor::FromVector<float>(DataType::kFloat, {3}, {0, INFINITY, 10});
  EXPECT_TRUE(std::isinf(RelativeError(inf, e)));
  Tensor one = Tensor::FromVector<float>(DataType::kFloat, {1}, {1e6f});
  Tensor close = Tensor::FromVector<float>(DataType::kFloat, {1}, {1.001e6f});
  EXPECT_NEAR(RelativeError(close, one), 1e-3, 1e-6);  // a scalar: relative to its value
  EXPECT_TRUE(std::isinf(RelativeError(Tensor(DataType::kFloat, {2}), e)));
}

TEST(Validation, RelativeErrorOfAnOutputThatHardlyVaries) {
  // A saturated tanh: the range (1e-6) is below what float16 can tell apart at 1.0.
  Tensor e = Tensor::FromVector<float>(DataType::kFloat, {3}, {0.999999f, 1.0f, 0.9999995f});
  Tensor a = Tensor::FromVector<float>(DataType::kFloat, {3}, {1.0f, 1.0f, 1.0f});
  EXPECT_GT(RelativeError(a, e), 0.5);  // against the range: everything changed
  const double half = RelativeError(a, e, kFloat16Resolution);
  EXPECT_NEAR(half, 1e-6 / kFloat16Resolution, 1e-4);  // against fp16's resolution at 1.0
  // An output that does vary is still measured against its range.
  Tensor wide = Tensor::FromVector<float>(DataType::kFloat, {3}, {0, 5, 10});
  Tensor off = Tensor::FromVector<float>(DataType::kFloat, {3}, {0, 5.1f, 10});
  EXPECT_NEAR(RelativeError(off, wide, kFloat16Resolution), 0.01, 1e-6);
}

TEST(Validation, FastHalfConversionIsBitExact) {
  // Every exponent, with mantissas that hit ties, subnormals, overflow and NaN.
  std::vector<uint32_t> bits;
  for (uint32_t e = 0; e < 256; ++e) {
    for (uint32_t m : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7fffffu, 0x400000u}) {
      bits.push_back((e << 23) | m);
      bits.push_back(0x80000000u | (e << 23) | m);
    }
  }
  uint32_t x = 12345;
  for (int i = 0; i < 100000; ++i) bits.push_back(x = x * 1664525u + 1013904223u);
  Tensor t(DataType::kFloat, {static_cast<int64_t>(bits.size())});
  std::memcpy(t.raw(), bits.data(), bits.size() * 4);
  const Tensor h = ConvertTensor(t, DataType::kFloat16);
  for (size_t i = 0; i < bits.size(); ++i) {
    float f;
    std::memcpy(&f, &bits[i], 4);
    const uint16_t want = FloatToHalfBits(f);
    const uint16_t got = h.data<uint16_t>()[i];
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfBitsToFloat(got))) << std::hex << bits[i];
    } else {
      ASSERT_EQ(got, want) << std::hex << bits[i];
    }
  }
}

TEST(Validation, RandomInputsAreDeterministicAndFollowTheBatch) {
  auto m = Parse(R"(m (float[N, 3] x) => (float[N, 3] y) { y = Relu(x) })");
  ConvertOptions o;
  o.batch = 4;
  auto a = MakeReferenceInputs(*m, o);
  auto b = MakeReferenceInputs(*m, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->at("x").dims(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(RelativeError(a->at("x"), b->at("x")), 0);
  o.input_files["nope"] = "/nonexistent.pb";
  EXPECT_FALSE(MakeReferenceInputs(*m, o).ok());
}

TEST(Validation, ARewriteThatChangesOutputsIsRolledBack) {
  auto m = Parse(R"(m (float[2, 3] x) => (float[2, 3] y) { a = Relu(x)  y = Abs(a) })");
  Harness h(*m);
  Graph& g = m->graph();
  Node* relu = g.FindValue("a")->producer();
  PassContext ctx{*m, h.rewriter, h.options, h.validator.get()};
  h.rewriter.Begin("wrong_rule", {relu});
  Node* neg = h.rewriter.CreateNode(g, "Neg", {g.FindValue("x")}, {"n"}, relu);
  h.rewriter.ReplaceAllUsesWith(relu->output(0), neg->output(0));
  h.rewriter.EraseNode(relu);
  EXPECT_FALSE(FinishRewrite(ctx));
  ASSERT_EQ(h.rewriter.records().size(), 1u);
  EXPECT_TRUE(h.rewriter.records()[0].rolled_back);
  EXPECT_NE(h.rewriter.records()[0].note.find("changed outputs"), std::string::npos);
  EXPECT_EQ(Count(*m, "Relu"), 1);
  // A rewrite that keeps the outputs commits with its error measured.
  h.rewriter.Begin("identity_of_relu", {relu});
  Node* id = h.rewriter.CreateNode(g, "Identity", {relu->output(0)}, {"i"}, nullptr);
  Node* abs = g.FindValue("y")->producer();
  h.rewriter.SetInput(abs, 0, id->output(0));
  EXPECT_TRUE(FinishRewrite(ctx));
  EXPECT_EQ(h.rewriter.records().back().max_error, 0);
  EXPECT_EQ(h.EndToEnd(), 0);
}

// A model whose Add reads a constant of lower rank (what explicit_broadcast rewrites) and
// feeds a MatMul: y = (x + c) @ w.
constexpr char kBiasThenMatMul[] = R"(
  m (float[2, 3] x) => (float[2, 2] y)
      <float[3] c = {0.5, -1.0, 2.0}, float[1, 3] c_same = {0.5, -1.0, 2.0},
       float[1, 3] c_other = {0.5, -1.0, 2.5},
       float[3, 2] w = {1.0, -2.0, 0.25, 3.0, -0.5, 1.5}> {
    a = Add(x, c)
    y = MatMul(a, w)
  }
)";

// y = (x + bias) @ w, computed here in double.
std::vector<double> BiasThenMatMul(const Tensor& x, const std::vector<double>& bias) {
  const double w[3][2] = {{1.0, -2.0}, {0.25, 3.0}, {-0.5, 1.5}};
  std::vector<double> y(4, 0.0);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 3; ++k) y[i * 2 + j] += (x.GetAsDouble(i * 3 + k) + bias[k]) * w[k][j];
    }
  }
  return y;
}

// Replaces a = Add(x, c) with Add(x, `constant`), as explicit_broadcast's rule does (a new
// node, and the MatMul rewired to its output), and finishes the rewrite.
bool ReplaceBias(Harness& h, const std::string& constant) {
  Graph& g = h.model.graph();
  Node* add = g.FindValue("a")->producer();
  PassContext ctx{h.model, h.rewriter, h.options, h.validator.get()};
  h.rewriter.Begin("replace_bias", {add});
  Node* made =
      h.rewriter.CreateNode(g, "Add", {g.FindValue("x"), g.FindValue(constant)}, {"a2"}, add);
  h.rewriter.SetType(made->output(0), add->output(0)->type());
  h.rewriter.ReplaceAllUsesWith(add->output(0), made->output(0));
  h.rewriter.EraseNode(add);
  return FinishRewrite(ctx);
}

TEST(Validation, ARewiringToTheSameDataIsMeasuredWithoutRunningItsReader) {
  auto m = Parse(kBiasThenMatMul);
  Harness h(*m);
  const int64_t before = h.validator->nodes_run();
  ASSERT_TRUE(ReplaceBias(h, "c_same"));
  // Only the new Add ran: the MatMul reads the same data bit for bit, that is the measure.
  EXPECT_EQ(h.validator->nodes_run() - before, 1);
  EXPECT_EQ(h.rewriter.records().back().max_error, 0);
  // The activations still follow the graph: the outputs as computed here.
  const std::vector<double> want = BiasThenMatMul(h.reference_inputs.at("x"), {0.5, -1.0, 2.0});
  auto final_outputs = h.validator->CompareFinalOutputs();
  ASSERT_TRUE(final_outputs.ok()) << final_outputs.status();
  EXPECT_EQ(final_outputs->max_error, 0);
  auto y = h.validator->Activation(m->graph().outputs()[0]);
  ASSERT_TRUE(y.ok()) << y.status();
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y->GetAsDouble(i), want[i], 1e-5) << i;
  EXPECT_EQ(h.EndToEnd(), 0);
}

TEST(Validation, ARewiringToOtherDataOfTheSameTypeIsStillMeasured) {
  auto m = Parse(kBiasThenMatMul);
  Harness h(*m);
  // The same type and shape, other data: the MatMul runs and its outputs are compared.
  EXPECT_FALSE(ReplaceBias(h, "c_other"));
  ASSERT_EQ(h.rewriter.records().size(), 1u);
  EXPECT_TRUE(h.rewriter.records()[0].rolled_back);
  const Tensor& x = h.reference_inputs.at("x");
  const std::vector<double> was = BiasThenMatMul(x, {0.5, -1.0, 2.0});
  const std::vector<double> now = BiasThenMatMul(x, {0.5, -1.0, 2.5});
  Tensor expected = Tensor::FromVector<float>(DataType::kFloat, {2, 2},
                                              std::vector<float>(was.begin(), was.end()));
  Tensor actual = Tensor::FromVector<float>(DataType::kFloat, {2, 2},
                                            std::vector<float>(now.begin(), now.end()));
  EXPECT_NEAR(h.rewriter.records()[0].max_error, RelativeError(actual, expected), 1e-5);
  EXPECT_GT(h.rewriter.records()[0].max_error, 0.01);
  EXPECT_EQ(h.EndToEnd(), 0);  // rolled back exactly
}

TEST(Validation, TheReferenceRunMeasuresTheWeightsItReads) {
  auto m = Parse(kBiasThenMatMul);
  Harness h(*m);
  Graph& g = m->graph();
  Value* w = g.FindValue("w");
  std::optional<MagnitudeRange> r = h.validator->CapturedMagnitudes(w);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->largest, 3.0f);
  EXPECT_EQ(r->smallest_nonzero, 0.25f);
  EXPECT_FALSE(r->zero);
  // New data in the weight: what was measured no longer holds.
  h.rewriter.Begin("new_weight");
  h.rewriter.SetInitializer(
      w, Tensor::FromVector<float>(DataType::kFloat, {3, 2}, {7, 0, 0, 0, 0, 0}));
  EXPECT_FALSE(h.validator->CapturedMagnitudes(w).has_value());
  h.rewriter.Rollback("testing");
  EXPECT_EQ(h.validator->CapturedMagnitudes(w)->largest, 3.0f);
}

// ---- fix_input_shapes ----

TEST(FixInputShapes, BatchFixesTheFirstDimAndShapesFollow) {
  auto m = Parse(R"(m (float[N, 3, H] x) => (float[N, 3, H] y) { y = Relu(x) })");
  ConvertOptions o;
  o.batch = 1;
  Harness h(*m, o);
  ASSERT_EQ(*h.Run(FixInputShapes), 1);
  const Value* x = m->graph().FindValue("x");
  EXPECT_EQ((*x->shape())[0].value, 1);
  EXPECT_EQ((*x->shape())[2].symbol, "H");  // only the batch dim is fixed
  EXPECT_EQ((*m->graph().outputs()[0]->shape())[0].value, 1);
}

TEST(FixInputShapes, InputShapeSetsEveryDimAndChecksTheModel) {
  auto m = Parse(R"(m (float[N, 3, H] x) => (float[N, 3, H] y) { y = Relu(x) })");
  ConvertOptions o;
  o.input_shapes["x"] = {2, 3, 5};
  Harness h(*m, o);
  ASSERT_EQ(*h.Run(FixInputShapes), 1);
  EXPECT_EQ(m->graph().FindValue("y")->static_shape(), (std::vector<int64_t>{2, 3, 5}));
  ConvertOptions wrong;
  wrong.input_shapes["x"] = {2, 4, 5};  // dim 1 is 3 in the model
  Rewriter rw(*m);
  PassContext ctx{*m, rw, wrong};
  EXPECT_FALSE(FixInputShapes(ctx).ok());
  ConvertOptions unknown;
  unknown.input_shapes["z"] = {1};
  PassContext ctx2{*m, rw, unknown};
  EXPECT_FALSE(FixInputShapes(ctx2).ok());
}

// ---- constant_folding ----

TEST(ConstantFolding, FoldsShapeChainsOnceShapesAreStatic) {
  auto m = Parse(R"(
    m (float[2, 3, 4] x) => (float[2, 12] y) {
      s = Shape(x)
      i0 = Constant <value = int64[1] {0}> ()
      d0 = Gather(s, i0)
      minus = Constant <value = int64[1] {-1}> ()
      shape = Concat <axis = 0> (d0, minus)
      y = Reshape(x, shape)
    })");
  Harness h(*m);
  ASSERT_GT(*h.Run(FoldConstants), 0);
  EXPECT_EQ(Count(*m, "Shape"), 0);
  EXPECT_EQ(Count(*m, "Concat"), 0);
  EXPECT_EQ(Count(*m, "Reshape"), 1);
  const Value* shape = m->graph().FindValue("shape");
  ASSERT_NE(shape, nullptr);  // the constant keeps the folded value's name
  ASSERT_TRUE(shape->is_initializer());
  EXPECT_EQ(shape->tensor().GetAsInt64(0), 2);
  EXPECT_EQ(h.EndToEnd(), 0);
}

TEST(ConstantFolding, RespectsTheSizeLimitAndLeavesDynamicShapes) {
  auto m = Parse(R"(
    m (float[N, 4] x) => (float[N, 4] y, int64[2] z) {
      dims = Constant <value = int64[2] {100, 100}> ()
      big = ConstantOfShape <value = float[1] {1}> (dims)
      z = Shape(x)
      r = ReduceSum <keepdims = 0> (big)
      y = Add(x, r)
    })");
  ConvertOptions o;
  o.fold_size_limit = 1000;  // the 10000-element ConstantOfShape stays
  Harness h(*m, o);
  ASSERT_TRUE(h.Run(FoldConstants).ok());
  EXPECT_EQ(Count(*m, "ConstantOfShape"), 1);
  EXPECT_EQ(Count(*m, "Shape"), 1);  // N is not known
  EXPECT_EQ(h.EndToEnd(), 0);
}

// ---- dead_code_elimination ----

TEST(DeadCodeElimination, RemovesUnreadChainsAndInitializers) {
  auto m = Parse(R"(
    m (float[2] x) => (float[2] y) {
      dead1 = Neg(x)
      dead2 = Abs(dead1)
      y = Relu(x)
    })");
  Graph& g = m->graph();
  g.AddInitializer("unused", Tensor(DataType::kFloat, {4}));
  Harness h(*m);
  ASSERT_EQ(*h.Run(EliminateDeadCode), 1);
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.FindValue("unused"), nullptr);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(*h.Run(EliminateDeadCode), 0);  // nothing left to do
}

// ---- lower_conv3d_unit_kernel ----

// A Conv3D on x[1, 2, 5, 6, 4] with weights w[3, 2, k0, k1, k2] (distinct values, so a
// wrong layout shows) and "same" pads.
std::unique_ptr<Model> Conv3dModel(const std::vector<int64_t>& k) {
  const std::string text =
      absl::StrCat("m (float[1, 2, 5, 6, 4] x, w, b) => (y) { y = Conv <kernel_shape = [", k[0],
                   ", ", k[1], ", ", k[2], "], pads = [", k[0] / 2, ", ", k[1] / 2, ", ", k[2] / 2,
                   ", ", k[0] / 2, ", ", k[1] / 2, ", ", k[2] / 2, "]> (x, w, b) }");
  auto m = ParseModelText(text);
  EXPECT_TRUE(m.ok()) << m.status() << text;
  if (!m.ok()) return nullptr;
  Graph& g = (*m)->graph();
  g.SetInputs({g.FindValue("x")});
  Tensor w(DataType::kFloat, {3, 2, k[0], k[1], k[2]});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = std::sin(0.37f * i);
  Node* conv = g.outputs()[0]->producer();
  conv->ReplaceInput(1, g.AddInitializer("weight", w));
  conv->ReplaceInput(2, g.AddInitializer("bias", Tensor::FromVector<float>(DataType::kFloat, {3},
                                                                           {0.1f, -0.2f, 0.3f})));
  g.DeleteDanglingValues();
  EXPECT_TRUE(InferShapes(**m).ok());
  return *std::move(m);
}

TEST(LowerConv3dUnitKernel, BecomesConv2dAndKeepsOutputs) {
  for (const std::vector<int64_t>& k :
       std::vector<std::vector<int64_t>>{{3, 3, 1}, {1, 3, 3}, {3, 1, 3}}) {
    auto m = Conv3dModel(k);
    ASSERT_NE(m, nullptr);
    ConvertOptions o;
    o.lower_conv3d_unit_kernel = true;
    Harness h(*m, o);
    ASSERT_EQ(*h.Run(LowerConv3dUnitKernel), 1) << k[0] << k[1] << k[2];
    ASSERT_TRUE(InferShapes(*m).ok());
    for (const Node* n : m->graph().nodes()) {
      if (n->op_type() == "Conv") {
        EXPECT_EQ(n->input(0)->rank(), 4);
      }
    }
    EXPECT_LE(h.EndToEnd(), 1e-5) << k[0] << k[1] << k[2];
    EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  }
}

TEST(LowerConv3dUnitKernel, LeavesOtherConvsAndNeedsTheOption) {
  auto m = Parse(R"(
    m (float[1, 1, 4, 4, 4] x, float[2, 1, 3, 3, 3] w) => (y) {
      y = Conv <pads = [1, 1, 1, 1, 1, 1]> (x, w)
    })");
  ConvertOptions o;
  o.lower_conv3d_unit_kernel = true;
  Rewriter rw(*m);
  PassContext ctx{*m, rw, o};
  EXPECT_EQ(*LowerConv3dUnitKernel(ctx), 0);  // no unit kernel dim (and w is not a constant)
  ConvertOptions off;
  PassContext ctx2{*m, rw, off};
  EXPECT_EQ(*LowerConv3dUnitKernel(ctx2), 0);
}

// ---- explicit_broadcast_full ----

TEST(ExplicitBroadcastFull, ExpandsToIdenticalShapes) {
  auto m = Parse(R"(
    m (float[1, 3, 4, 4] x, float[1, 1, 4, 4] mask) => (float[1, 3, 4, 4] y) {
      c = Constant <value = float[1, 3, 1, 1] {1, 2, 3}> ()
      a = Mul(x, c)
      y = Add(a, mask)
    })");
  ConvertOptions o;
  o.broadcast = ConvertOptions::Broadcast::kFull;
  Harness h(*m, o);
  // The Constant becomes an initializer, expanded in place.
  ASSERT_TRUE(h.Run(FoldConstants).ok());
  ASSERT_EQ(*h.Run(ExpandBroadcastsFull), 2);
  ASSERT_TRUE(InferShapes(*m).ok());
  for (const Node* n : m->graph().nodes()) {
    if (n->op_type() != "Add" && n->op_type() != "Mul") continue;
    for (const Value* in : n->inputs()) {
      EXPECT_EQ(in->static_shape(), (std::vector<int64_t>{1, 3, 4, 4})) << n->Describe();
    }
  }
  EXPECT_EQ(Count(*m, "Expand"), 1);  // only for the non-constant mask
  EXPECT_EQ(h.EndToEnd(), 0);
  EXPECT_TRUE(CheckModel(*m).ok());
}

TEST(ExplicitBroadcastFull, BroadcastTensorFollowsNumpy) {
  Tensor t = Tensor::FromVector<float>(DataType::kFloat, {2, 1}, {1, 2});
  Tensor b = BroadcastTensor(t, {3, 2, 3});
  ASSERT_EQ(b.numel(), 18);
  EXPECT_EQ(b.data<float>()[0], 1);
  EXPECT_EQ(b.data<float>()[2], 1);
  EXPECT_EQ(b.data<float>()[3], 2);
  EXPECT_EQ(b.data<float>()[17], 2);
}

// ---- fp16_islands ----

constexpr char kEnergyModel[] = R"(
  m (float[1, 4, 8] x) => (float[1, 4, 8] y, float[1, 1, 1] energy) {
    scale = Constant <value = float[1] {300}> ()
    big = Mul(x, scale)
    y = Relu(big)
    sq = Mul(big, big)
    energy = ReduceSum <keepdims = 1> (sq)
  })";

TEST(Fp16Islands, KeepsReductionsAndTheirGrowthInFp32) {
  auto m = Parse(kEnergyModel);
  Harness h(*m, Fp16Io());
  Fp16IslandsPass pass;
  ASSERT_EQ(*h.Run(pass), 1);
  std::set<std::string> island_ops;
  for (const IslandNode& i : pass.islands()) {
    island_ops.insert(i.op_type);
    EXPECT_FALSE(i.reason.empty());
  }
  EXPECT_TRUE(island_ops.contains("ReduceSum"));
  Graph& g = m->graph();
  // y stays fp16 (Relu is not an island); energy is computed and returned in fp32.
  EXPECT_EQ(g.FindValue("y")->elem_type(), DataType::kFloat16);
  EXPECT_EQ(g.FindValue("energy")->elem_type(), DataType::kFloat);
  EXPECT_EQ(g.FindValue("x")->elem_type(), DataType::kFloat16);
  EXPECT_GT(Count(*m, "Cast"), 0);
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  // Sum of 32 squares of values up to 300: far above 65504, finite and close in the model.
  auto e2e = h.validator->CompareEndToEnd(*m);
  ASSERT_TRUE(e2e.ok()) << e2e.status();
  for (const OutputComparison& c : e2e->outputs) {
    EXPECT_TRUE(c.finite) << c.name;
    EXPECT_LT(c.error, 1e-2) << c.name;
  }
}

TEST(Fp16Islands, KeepIoTypesAndKeepFp32Regex) {
  auto m = Parse(kEnergyModel);
  ConvertOptions o;
  o.keep_io_types = true;
  o.keep_fp32 = {"Relu"};
  Harness h(*m, o);
  Fp16IslandsPass pass;
  ASSERT_EQ(*h.Run(pass), 1);
  Graph& g = m->graph();
  EXPECT_EQ(g.FindValue("x")->elem_type(), DataType::kFloat);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->elem_type(), DataType::kFloat);
  bool relu_kept = false;
  for (const IslandNode& i : pass.islands()) {
    relu_kept = relu_kept || (i.op_type == "Relu" && i.reason.find("--keep-fp32") == 0);
  }
  EXPECT_TRUE(relu_kept);
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  EXPECT_LT(h.EndToEnd(), 1e-2);
}

// Runs fp16_islands on `m` (one rewrite expected) and returns the nodes it kept in fp32.
std::vector<IslandNode> RunIslands(Model& m) {
  Harness h(m);
  Fp16IslandsPass pass;
  const absl::StatusOr<int> rewrites = h.Run(pass);
  EXPECT_TRUE(rewrites.ok() && *rewrites == 1) << h.rewriter.records().back().note;
  return pass.islands();
}

// Why each node was kept in fp32, by its description (`&IslandNode::node`) or op type.
std::map<std::string, std::string> Reasons(const std::vector<IslandNode>& islands,
                                           std::string IslandNode::*key) {
  std::map<std::string, std::string> reasons;
  for (const IslandNode& i : islands) reasons[i.*key] = i.reason;
  return reasons;
}

TEST(Fp16Islands, CalibratedMagnitudesAndSmallEpsilons) {
  auto m = Parse(R"(
    m (float[1, 16] x) => (float[1, 16] y) {
      k = Constant <value = float[1] {20000}> ()
      eps = Constant <value = float[1] {1e-8}> ()
      big = Mul(x, k)
      r = Relu(big)
      shifted = Add(r, eps)
      s = Sqrt(shifted)
      y = Div(x, s)
    })");
  std::map<std::string, std::string> reasons = Reasons(RunIslands(*m), &IslandNode::op_type);
  EXPECT_NE(reasons["Mul"].find("observed"), std::string::npos) << reasons["Mul"];
  EXPECT_NE(reasons["Add"].find("small constant"), std::string::npos) << reasons["Add"];
  EXPECT_TRUE(reasons.contains("Sqrt"));
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
}

// Rotary embeddings: Cos of positions (up to 2047) times frequencies. In fp16 the angle near
// 2000 is spaced 1 apart and its cosine is noise; the angle and what computes it stay fp32.
TEST(Fp16Islands, AnglesOfSinAndCosStayFp32) {
  auto m = Parse(R"(
    m (float[2048, 8] x) => (float[2048, 8] y) {
      start = Constant <value = float {0}> ()
      limit = Constant <value = float {2048}> ()
      delta = Constant <value = float {1}> ()
      pos = Range(start, limit, delta)
      axes = Constant <value = int64[1] {1}> ()
      col = Unsqueeze(pos, axes)
      inv = Constant <value = float[1, 4] {1, 0.1, 0.01, 0.001}> ()
      freqs = Mul(col, inv)
      emb = Concat <axis = 1> (freqs, freqs)
      c = Cos(emb)
      y = Mul(x, c)
    })");
  Harness h(*m, Fp16Io());
  Fp16IslandsPass pass;
  ASSERT_EQ(*h.Run(pass), 1) << h.rewriter.records().back().note;
  std::map<std::string, std::string> reasons = Reasons(pass.islands(), &IslandNode::node);
  for (const std::string& node : {"Cos", "Concat", "Mul"}) {
    bool angle = false;
    for (const auto& [name, why] : reasons) {
      angle = angle || (name.find(node) != std::string::npos && why.find("angle of") == 0);
    }
    EXPECT_TRUE(angle) << node << " not kept for the angle";
  }
  EXPECT_EQ(m->graph().FindValue("y")->elem_type(), DataType::kFloat16);
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  EXPECT_LT(h.EndToEnd(), 1e-2);
}

// A MatMul adding into a residual stream with values near fp16's limit stays fp32 with its
// Add; one adding a constant bias is left to the general calibration rule.
TEST(Fp16Islands, ResidualMatMulNearTheLimitStaysFp32) {
  auto m = Parse(R"(
    m (float[1, 16] x) => (float[1, 16] y, float[1, 16] z) {
      w = Constant <value = float[16, 16] {
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300,
        300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300}> ()
      ones = Constant <value = float[1, 16] {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}> ()
      big = Add(x, ones)
      h = MatMul(big, w)
      y = Add(h, x)
      small = MatMul(x, w)
      z = Add(small, ones)
    })");
  std::map<std::string, std::string> reasons = Reasons(RunIslands(*m), &IslandNode::node);
  int residual = 0;
  for (const auto& [name, why] : reasons) {
    if (why.find("residual Add") != std::string::npos) {
      ++residual;
      EXPECT_TRUE(name.find("'h'") != std::string::npos || name.find("'y'") != std::string::npos)
          << name;
    }
  }
  EXPECT_EQ(residual, 2);
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
}

// The nodes the fp16 pass keeps in fp32 on `text`, calibrated on data (or on random inputs);
// the converted model must pass the checker and stay within 1e-2.
std::vector<IslandNode> Islands(const char* text, bool on_data) {
  auto m = Parse(text);
  ConvertOptions o;
  o.fp16_calibrated_on_data = on_data;
  Harness h(*m, o);
  Fp16IslandsPass pass;
  EXPECT_EQ(*h.Run(pass), 1);
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  EXPECT_LT(h.EndToEnd(), 1e-2);
  return pass.islands();
}
std::set<std::string> IslandOps(const char* text, bool on_data) {
  std::set<std::string> ops;
  for (const IslandNode& i : Islands(text, on_data)) ops.insert(i.op_type);
  return ops;
}

// A reduction, a softmax and a norm guard against overflow. Calibrated on the user's data
// that saw them calm (inputs in [-1, 1): sums of 16 squares up to 16), they go to fp16; on
// random inputs (no data) they stay fp32; on data that saw values near the limit they stay.
TEST(Fp16Islands, CalibrationOnRealDataReleasesCalmOverflowGuards) {
  constexpr char kCalm[] = R"(
    m (float[1, 16] x) => (float[1, 1] energy, float[1, 16] p, float[1, 16] n) {
      sq = Mul(x, x)
      energy = ReduceSum <keepdims = 1> (sq)
      p = Softmax <axis = 1> (x)
      g = Constant <value = float[16] {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}> ()
      b = Constant <value = float[16] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}> ()
      n = LayerNormalization <axis = 1> (x, g, b)
    })";
  for (bool on_data : {false, true}) {
    const std::set<std::string> ops = IslandOps(kCalm, on_data);
    for (const char* op : {"Mul", "ReduceSum", "Softmax", "LayerNormalization"}) {
      EXPECT_EQ(ops.contains(op), !on_data) << op << (on_data ? " on data" : " on random inputs");
    }
  }
  // Squares of values up to 300: what calibration saw is the overflow the guard is for.
  EXPECT_TRUE(IslandOps(kEnergyModel, true).contains("ReduceSum"));
}

// x / sqrt(sum(x^2) + 1e-8): fp16 cannot hold the epsilon. Where calibration saw the sum far
// above it, the tail goes to fp16 and the epsilon becomes fp16's smallest normal (2^-14), not
// the 0 rounding would make: on an all-zero input the fp16 model still gives 0, not 0/0.
TEST(Fp16Islands, ANegligibleEpsilonGoesToFp16AsItsSmallestNormal) {
  auto m = Parse(R"(
    m (float[1, 16] x) => (float[1, 16] y) {
      sq = Mul(x, x)
      s = ReduceSum <keepdims = 1> (sq)
      eps = Constant <value = float[1] {1e-8}> ()
      shifted = Add(s, eps)
      r = Sqrt(shifted)
      y = Div(x, r)
    })");
  ConvertOptions o;
  o.fp16_calibrated_on_data = true;
  o.keep_io_types = true;
  Harness h(*m, o);
  Fp16IslandsPass pass;
  ASSERT_EQ(*h.Run(pass), 1);
  EXPECT_TRUE(pass.islands().empty())
      << pass.islands().front().node << ": " << pass.islands().front().reason;
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  EXPECT_LT(h.EndToEnd(), 1e-2);
  const Value* shifted = m->graph().FindValue("shifted");
  ASSERT_NE(shifted, nullptr);
  const Node* add = shifted->producer();
  ASSERT_NE(add, nullptr);
  absl::StatusOr<Tensor> eps = ConstantValue(add->input(1));
  ASSERT_TRUE(eps.ok()) << eps.status();
  ASSERT_EQ(eps->type(), DataType::kFloat16);
  EXPECT_EQ(eps->GetAsDouble(0), std::ldexp(1.0, -14));

  auto session = exec::CreateSession(*m, {});
  ASSERT_TRUE(session.ok()) << session.status();
  exec::TensorMap zeros;
  zeros.emplace("x", Tensor(DataType::kFloat, {1, 16}));
  auto out = (*session)->Run(zeros);
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t i = 0; i < (*out)[0].numel(); ++i) EXPECT_EQ((*out)[0].GetAsDouble(i), 0.0) << i;
}

// Calibration reaches into bodies: the branch the data takes is measured (each value the
// largest over the runs), so its calm reduction goes to fp16; the branch it never takes was
// not measured, and keeps its guard.
TEST(Fp16Islands, CalibrationMeasuresTheBranchTakenAndOnlyThatOne) {
  constexpr char kTwoBranches[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    m (float[1, 16] x) => (float[1, 1] y) {
      c = Constant <value = bool {1}> ()
      y = If(c) <then_branch = then_g () => (float[1, 1] a) {
                    sq = Mul(x, x)
                    a = ReduceSum <keepdims = 1> (sq) },
                 else_branch = else_g () => (float[1, 1] b) {
                    sq2 = Mul(x, x)
                    b = ReduceSum <keepdims = 1> (sq2) }>
    })";
  std::set<std::string> kept;
  for (const IslandNode& i : Islands(kTwoBranches, true)) kept.insert(i.node);
  EXPECT_FALSE(kept.contains("ReduceSum (output 'a')")) << absl::StrJoin(kept, ", ");
  EXPECT_FALSE(kept.contains("Mul (output 'sq')"));
  EXPECT_TRUE(kept.contains("ReduceSum (output 'b')")) << absl::StrJoin(kept, ", ");
  EXPECT_TRUE(kept.contains("Mul (output 'sq2')"));
}

// The magnitude-only policy (ModelOpt AutoCast's, kept to compare with): fp32 only where
// calibration saw an output above the threshold; reductions and their squares go to fp16.
TEST(Fp16Islands, MagnitudePolicyKeepsOnlyLargeOutputs) {
  const char* text = R"(
    m (float[1, 16] x) => (float[1, 1] s, float[1, 16] y) {
      two = Constant <value = float[1] {2}> ()
      sq = Pow(x, two)
      s = ReduceSum <keepdims = 1> (sq)
      k = Constant <value = float[1] {1000}> ()
      y = Mul(x, k)
    })";
  for (const bool structural : {true, false}) {
    SCOPED_TRACE(structural ? "structural" : "magnitude");
    auto m = Parse(text);
    ConvertOptions o;
    o.fp16_magnitude_threshold = 512;
    o.fp16_islands = structural ? ConvertOptions::Fp16Islands::kStructural
                                : ConvertOptions::Fp16Islands::kMagnitude;
    Harness h(*m, o);
    Fp16IslandsPass pass;
    ASSERT_EQ(*h.Run(pass), 1);
    std::set<std::string> kept;
    for (const IslandNode& i : pass.islands()) kept.insert(i.op_type);
    EXPECT_TRUE(kept.contains("Mul"));
    EXPECT_EQ(kept.contains("ReduceSum"), structural);
    EXPECT_EQ(kept.contains("Pow"), structural);
    EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  }
}

TEST(Fp16Islands, IntegersComputedFromFloatsStayExact) {
  // A size computed in float (as exported resize/pad arithmetic does): in fp16, values near
  // 3000 are spaced 2 apart and Floor would give other integers.
  auto m = Parse(R"(
    m (float[1, 64] x) => (int64[1, 64] n, float[1, 64] y) {
      k = Constant <value = float[1] {3000.5}> ()
      scaled = Mul(x, k)
      f = Floor(scaled)
      n = Cast <to = 7> (f)
      y = Relu(x)
    })");
  ConvertOptions o;
  o.keep_io_types = true;
  Harness h(*m, o);
  Fp16IslandsPass pass;
  ASSERT_EQ(*h.Run(pass), 1);
  std::map<std::string, std::string> reasons;
  for (const IslandNode& i : pass.islands()) reasons[i.op_type] = i.reason;
  for (const char* op : {"Cast", "Floor", "Mul"}) {
    EXPECT_NE(reasons[op].find("integers from floats"), std::string::npos)
        << op << ": " << reasons[op];
  }
  EXPECT_FALSE(reasons.contains("Relu"));
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  auto e2e = h.validator->CompareEndToEnd(*m);
  ASSERT_TRUE(e2e.ok()) << e2e.status();
  ASSERT_EQ(e2e->outputs[0].name, "n");
  EXPECT_EQ(e2e->outputs[0].error, 0);  // integers compare exactly
}

TEST(Fp16Islands, UnseededRandomOpsDrawTheSameInEveryValidationRun) {
  // The fp16 rewrite reruns the random op (its input now comes through a Cast): validation
  // runs share a seed, so its draws match the reference run's and nothing reads as changed.
  auto m = Parse(R"(
    m (float[1, 256] x) => (float[1, 256] y) {
      noise = RandomNormalLike <dtype = 1> (x)
      y = Add(x, noise)
    })");
  Harness h(*m);
  Fp16IslandsPass pass;
  ASSERT_EQ(*h.Run(pass), 1);
  EXPECT_LT(h.rewriter.records().back().max_error, 1e-2);
  EXPECT_LT(h.EndToEnd(), 1e-2);
}

TEST(Fp16Islands, FollowsTheSpecWhereAnOpTakesNoFloat16) {
  // Celu is float-only (opset 12..18): kept in fp32. IsInf's input is float/double only
  // before opset 20: it reads a float copy. An input only islands read stays float.
  auto m = Parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    m (float[1, 8] x, float[1, 8] v) => (float[1, 8] y, bool[1, 8] inf, float[1, 8] r) {
      h = Relu(x)
      y = Celu(h)
      inf = IsInf(h)
      r = Celu(v)
    })");
  Harness h(*m, Fp16Io());
  Fp16IslandsPass pass;
  ASSERT_EQ(*h.Run(pass), 1);
  std::map<std::string, std::string> reasons;
  for (const IslandNode& i : pass.islands()) reasons[i.node] = i.reason;
  ASSERT_EQ(reasons.size(), 2u);
  for (const auto& [node, reason] : reasons) {
    EXPECT_NE(reason.find("no float16 in the ONNX spec"), std::string::npos) << node;
  }
  Graph& g = m->graph();
  EXPECT_EQ(g.FindValue("h")->elem_type(), DataType::kFloat16);
  EXPECT_EQ(g.FindValue("x")->elem_type(), DataType::kFloat16);
  EXPECT_EQ(g.FindValue("v")->elem_type(), DataType::kFloat);  // only Celu reads it
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "IsInf") EXPECT_EQ(n->input(0)->elem_type(), DataType::kFloat);
  }
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
  EXPECT_LT(h.EndToEnd(), 1e-2);
}

TEST(Fp16Islands, WithoutValidationTheGraphDecides) {
  auto m = Parse(kEnergyModel);
  Rewriter rw(*m);
  ConvertOptions o;
  PassContext ctx{*m, rw, o};  // no validator: no calibration
  Fp16IslandsPass pass;
  ASSERT_EQ(*pass.Run(ctx), 1);
  EXPECT_EQ(m->graph().FindValue("energy")->elem_type(), DataType::kFloat);
  EXPECT_TRUE(CheckModel(*m).ok()) << CheckModel(*m);
}

// ---- registry and targets ----

TEST(Registry, EveryPassHasASnakeCaseNameThatMakesIt) {
  std::set<std::string> names;
  for (const NativePassInfo& p : NativePasses()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    for (char c : p.name) {
      EXPECT_TRUE(std::islower(c) || std::isdigit(c) || c == '_') << p.name;
    }
    auto pass = MakeNativePass(p.name);
    ASSERT_NE(pass, nullptr);
    EXPECT_EQ(pass->name(), p.name);
  }
  EXPECT_EQ(MakeNativePass("no_such_pass"), nullptr);
}

// Every built-in target, as the registry lists them (tests/converter/targets_test.cc checks
// the registry against rules/targets/).
TEST(Targets, BuiltinTargetsParseAndExist) {
  const std::vector<Target> targets = BuiltinTargets();
  ASSERT_FALSE(targets.empty());
  for (const Target& target : targets) {
    auto t = LoadTarget(target.name);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_FALSE(t->description.empty()) << target.name;
    EXPECT_FALSE(t->steps.empty()) << target.name;
  }
  EXPECT_FALSE(LoadTarget("no-such-target").ok());
}

TEST(Targets, ErrorsNameFileLineAndColumn) {
  auto t =
      ParseTarget("my.target", "description ok\n  pass  no_such_pass\noption fp16 maybe\nfoo\n");
  ASSERT_FALSE(t.ok());
  const std::string m(t.status().message());
  EXPECT_NE(m.find("my.target:2:3: unknown pass 'no_such_pass'"), std::string::npos) << m;
  EXPECT_NE(m.find("my.target:3:1: option fp16"), std::string::npos) << m;
  EXPECT_NE(m.find("my.target:4:1: unknown keyword 'foo'"), std::string::npos) << m;
  auto ok = ParseTarget("x.target", "# c\npass constant_folding\noption broadcast full\n");
  ASSERT_TRUE(ok.ok());
  ConvertOptions o;
  ASSERT_TRUE(ApplyTargetOptions(*ok, {}, o).ok());
  EXPECT_EQ(o.broadcast, ConvertOptions::Broadcast::kFull);
  ConvertOptions user;
  ASSERT_TRUE(ApplyTargetOptions(*ok, {"broadcast"}, user).ok());
  EXPECT_EQ(user.broadcast, ConvertOptions::Broadcast::kRank);  // the command line wins
}

}  // namespace
}  // namespace ovfix::rules
