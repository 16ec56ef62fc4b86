// The session graph's attention and element-wise chain fusions (converter/session_graph.h):
// each fused graph computes what the graph as written computes on random inputs, run by the
// CPU executor (attention within 1e-6 of each output's range, element-wise chains bit for
// bit), the fusions happened where they should, and patterns they must not take stay.
#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "bench/exporter_models.h"
#include "bench/model_builder.h"
#include "converter/session_graph.h"
#include "exec/compare.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "tests/support/session_graph_check.h"

namespace ovfix::converter {
namespace {

using B = bench::ModelBuilder;

using test_support::OpCounts;

// The optimized copy of `proto`, after checking that it gives the outputs of the graph as
// written on random inputs in [-2, 2): within `relative` of each output's range (0: bit for
// bit).
std::unique_ptr<Model> OptimizedKeepingOutputs(onnx::ModelProto proto, double relative) {
  return test_support::OptimizeExpectingSameOutputs(std::move(proto), relative, {-2, 2, 0, 1})
      .optimized;
}

TEST(SessionAttention, ExporterModelsRunEveryAttentionAsOneNode) {
  struct Case {
    onnx::ModelProto (*make)();
    int attentions;
  };
  // BERT (Div, a mask from an input read by every layer), the causal decoder (Mul, a constant
  // -inf mask), Swin (q scaled before, a relative position bias) and swin_t (the shifted
  // windows' mask added to a 5-D view).
  for (const Case& c :
       {Case{&bench::ExportedBertModel, 4}, Case{&bench::ExportedCausalDecoderModel, 4},
        Case{&bench::ExportedSwinModel, 6}, Case{&bench::ExportedSwinTModel, 12}}) {
    std::unique_ptr<Model> m = OptimizedKeepingOutputs(c.make(), 1e-6);
    ASSERT_NE(m, nullptr);
    std::map<std::string, int> after = OpCounts(*m);
    EXPECT_EQ(after["ovfix.fused.Attention"], c.attentions);
    EXPECT_EQ(after["Softmax"], 0);
  }
}

// Enough queries and keys for several blocks of rows per head, batch dims that broadcast
// (one K and V for three query batches), a mask per key, the scale by Div.
TEST(SessionAttention, LongSequencesInBlocksOfRows) {
  B b(14, 3);
  const std::string q = b.Input("q", {3, 2, 300, 16}), k = b.Input("k", {1, 2, 600, 16});
  const std::string v = b.Input("v", {1, 2, 600, 24}), mask = b.Input("mask", {1, 1, 1, 600});
  std::string scores = b.Op("MatMul", {q, b.Op("Transpose", {k}, {B::Ints("perm", {0, 1, 3, 2})})});
  scores = b.Op("Add", {b.Op("Div", {scores, b.Fill({}, 4.0f)}), mask});
  b.Output(b.Op("MatMul", {b.Op("Softmax", {scores}, {B::Int("axis", -1)}), v}));
  std::unique_ptr<Model> m = OptimizedKeepingOutputs(b.model(), 1e-6);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(OpCounts(*m)["ovfix.fused.Attention"], 1);
}

// K permuted straight to [batch, heads, depth, keys] (GPT-2's and the bench's vit_encoder's
// heads): the product reads K^T as it is.
TEST(SessionAttention, KeysPermutedToDepthFirstFuseToo) {
  B b(14, 7);
  const std::string q = b.Input("q", {2, 3, 40, 8}), k = b.Input("k", {2, 40, 3, 8});
  const std::string v = b.Input("v", {2, 3, 40, 5});
  const std::string kt = b.Op("Transpose", {k}, {B::Ints("perm", {0, 2, 3, 1})});
  const std::string scores = b.Op("Mul", {b.Op("MatMul", {q, kt}), b.Fill({}, 0.35f)});
  b.Output(b.Op("MatMul", {b.Op("Softmax", {scores}, {B::Int("axis", 3)}), v}));
  std::unique_ptr<Model> m = OptimizedKeepingOutputs(b.model(), 1e-6);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(OpCounts(*m)["ovfix.fused.Attention"], 1);
}

// Masks written as Where on the scores: masked_fill(mask < 0, -inf) after the Div (the
// annotated transformer's form, the condition computed from an input per batch and key), and
// GPT-2's torch.where(causal, scores, lowest) from a constant lower triangle, an additive mask
// after it, and an additive mask made by Where(Cast); odd sizes, two batches.
TEST(SessionAttention, WhereMasksFuse) {
  B b(14, 9);
  const std::string q = b.Input("q", {2, 3, 37, 12}), k = b.Input("k", {2, 3, 37, 12});
  const std::string v = b.Input("v", {2, 3, 37, 7}), mask = b.Input("mask", {2, 1, 1, 37});
  auto kt = [&] { return b.Op("Transpose", {k}, {B::Ints("perm", {0, 1, 3, 2})}); };
  std::string scores = b.Op("Div", {b.Op("MatMul", {q, kt()}), b.Fill({}, 3.0f)});
  const std::string hidden = b.Op("Less", {mask, b.Fill({}, 0.0f)});
  scores = b.Op("Where", {hidden, b.Fill({}, -std::numeric_limits<float>::infinity()), scores});
  b.Output(b.Op("MatMul", {b.Op("Softmax", {scores}, {B::Int("axis", -1)}), v}));
  const std::string lower = b.Op(
      "Cast", {b.Op("Trilu", {b.Fill({37, 37}, 1.0f)}, {B::Int("upper", 0)})}, {B::Int("to", 9)});
  scores = b.Op("Div", {b.Op("MatMul", {q, kt()}), b.Fill({}, 3.0f)});
  scores = b.Op("Where", {lower, scores, b.Fill({}, std::numeric_limits<float>::lowest())});
  scores = b.Op("Add", {scores, mask});
  b.Output(b.Op("MatMul", {b.Op("Softmax", {scores}, {B::Int("axis", -1)}), v}));
  // Newer transformers' additive mask, Where(Cast(mask, bool), 0, lowest): the Where makes the
  // mask once (it stays), the Add of it fuses as any additive mask does.
  const std::string kept = b.Op("Cast", {mask}, {B::Int("to", 9)});
  const std::string additive =
      b.Op("Where", {kept, b.Fill({}, 0.0f), b.Fill({}, std::numeric_limits<float>::lowest())});
  scores = b.Op("Div", {b.Op("MatMul", {q, kt()}), b.Fill({}, 3.0f)});
  scores = b.Op("Add", {scores, additive});
  b.Output(b.Op("MatMul", {b.Op("Softmax", {scores}, {B::Int("axis", -1)}), v}));
  std::unique_ptr<Model> m = OptimizedKeepingOutputs(b.model(), 1e-6);
  ASSERT_NE(m, nullptr);
  std::map<std::string, int> after = OpCounts(*m);
  EXPECT_EQ(after["ovfix.fused.Attention"], 3);
  EXPECT_EQ(after["Softmax"], 0);
  EXPECT_EQ(after["Where"], 1);  // the additive mask's
}

// The scores with another reader, and a softmax over the queries: both stay as written.
TEST(SessionAttention, SharedScoresAndOtherAxesStayUnfused) {
  B b(14, 4);
  const std::string q = b.Input("q", {1, 2, 6, 8}), k = b.Input("k", {1, 2, 6, 8});
  const std::string v = b.Input("v", {1, 2, 6, 8}), mask = b.Input("mask", {1, 1, 1, 6});
  auto kt = [&] { return b.Op("Transpose", {k}, {B::Ints("perm", {0, 1, 3, 2})}); };
  const std::string masked = b.Op("Add", {b.Op("MatMul", {q, kt()}), mask});
  b.Output(b.Op("MatMul", {b.Op("Softmax", {masked}, {B::Int("axis", -1)}), v}));
  b.Output(masked);  // the masked scores read twice
  const std::string scores = b.Op("MatMul", {q, kt()});
  b.Output(b.Op("MatMul", {b.Op("Softmax", {scores}, {B::Int("axis", 2)}), v}));
  std::unique_ptr<Model> m = OptimizedKeepingOutputs(b.model(), 1e-6);
  ASSERT_NE(m, nullptr);
  std::map<std::string, int> after = OpCounts(*m);
  EXPECT_EQ(after["ovfix.fused.Attention"], 0);
  EXPECT_EQ(after["Softmax"], 2);
}

TEST(SessionElementwise, ChainsRunAsOneNodeBitForBit) {
  B b(14, 5);
  const std::string x = b.Input("x", {2, 8, 6, 6}), w = b.Input("w", {2, 8, 6, 6});
  // x * sigmoid(x): the chain's input read again.
  b.Output(b.Op("Mul", {x, b.Op("Sigmoid", {x})}));
  // 1 - relu(x + w) / 3: a tensor operand, a constant one, the chain's value second in a Sub.
  const std::string r = b.Op("Relu", {b.Op("Add", {x, w})});
  b.Output(b.Op("Sub", {b.Fill({}, 1.0f), b.Op("Div", {r, b.Fill({}, 3.0f)})}));
  // clip(x * hardsigmoid(x), -0.5, 0.5) * per-channel scale (broadcast over H and W).
  const std::string hs = b.Op("Mul", {x, b.Op("HardSigmoid", {x}, {B::Float("alpha", 0.2f)})});
  const std::string clipped = b.Op("Clip", {hs, b.Fill({}, -0.5f), b.Fill({}, 0.5f)});
  b.Output(b.Op("Mul", {clipped, b.Weight({8, 1, 1}, 1.0f)}));
  // leaky_relu(max(tanh(exp(erf(x))), 0.9)) and hard swish of -x / 2.
  const std::string t = b.Op("Tanh", {b.Op("Exp", {b.Op("Erf", {x})})});
  b.Output(b.Op("LeakyRelu", {b.Op("Max", {t, b.Fill({}, 0.9f)})}, {B::Float("alpha", 0.1f)}));
  b.Output(b.Op("HardSwish", {b.Op("Div", {b.Op("Neg", {x}), b.Fill({}, 2.0f)})}));
  std::unique_ptr<Model> m = OptimizedKeepingOutputs(b.model(), 0.0);
  ASSERT_NE(m, nullptr);
  std::map<std::string, int> after = OpCounts(*m);
  EXPECT_EQ(after["ovfix.fused.Elementwise"], 5);
  EXPECT_EQ(m->graph().num_nodes(), 5);
}

// A value read twice ends a chain; what the session fuses into the node before (a Relu after a
// Conv, the bias Add after a MatMul by constant weights) does not start one.
TEST(SessionElementwise, SharedValuesAndSessionFusionsStay) {
  B b(14, 6);
  const std::string x = b.Input("x", {1, 4, 5, 5}), w = b.Input("w", {1, 4, 5, 5});
  const std::string sum = b.Op("Add", {x, w});  // read twice: a chain of one, not fused
  b.Output(b.Op("Relu", {sum}));
  b.Output(b.Op("Mul", {sum, b.Fill({}, 2.0f)}));
  // Conv -> Relu (the Conv's) -> Add residual -> Relu: the last two are one chain.
  const std::string c = b.Op("Relu", {b.Conv(x, 4, 4, 3)});
  b.Output(b.Op("Relu", {b.Op("Add", {c, x})}));
  // MatMul -> Add bias (the MatMul's) -> Relu -> Mul: the last two are one chain.
  const std::string m0 = b.Op("MatMul", {x, b.Weight({5, 7}, 0.5f)});
  const std::string biased = b.Op("Add", {m0, b.Weight({7}, 0.5f)});
  b.Output(b.Op("Mul", {b.Op("Relu", {biased}), b.Fill({}, 3.0f)}));
  std::unique_ptr<Model> m = OptimizedKeepingOutputs(b.model(), 0.0);
  ASSERT_NE(m, nullptr);
  std::map<std::string, int> after = OpCounts(*m);
  EXPECT_EQ(after["ovfix.fused.Elementwise"], 2);
  EXPECT_EQ(after["Relu"], 2);  // after the shared sum, after the Conv
  EXPECT_EQ(after["Add"], 2);   // the shared sum, the MatMul's bias
  EXPECT_EQ(after["Mul"], 1);
}

// Right after a Conv, a chain starts where the session folds nothing into the Conv
// (exec/plan_fusion.h): at a Relu of a Conv output that something else reads too, and at a
// HardSigmoid that is no hard swish's gate. A Relu the session folds stays for it.
TEST(SessionElementwise, ChainsStartWhereTheSessionFoldsNothing) {
  B b(14, 7);
  const std::string x = b.Input("x", {1, 4, 5, 5});
  const std::string shared = b.Conv(x, 4, 4, 3);
  b.Output(b.Op("Mul", {b.Op("Relu", {shared}), b.Fill({}, 2.0f)}));
  b.Output(b.Op("Neg", {shared}));
  const std::string gated = b.Conv(x, 4, 4, 3);
  b.Output(b.Op("Add", {b.Op("HardSigmoid", {gated}), b.Fill({}, 1.0f)}));
  // The Conv's Relu: left to the session, and the Mul after it alone is no chain.
  b.Output(b.Op("Mul", {b.Op("Relu", {b.Conv(x, 4, 4, 3)}), b.Fill({}, 3.0f)}));
  std::unique_ptr<Model> m = OptimizedKeepingOutputs(b.model(), 0.0);
  ASSERT_NE(m, nullptr);
  std::map<std::string, int> after = OpCounts(*m);
  EXPECT_EQ(after["ovfix.fused.Elementwise"], 2);
  EXPECT_EQ(after["HardSigmoid"], 0);
  EXPECT_EQ(after["Relu"], 1);
  EXPECT_EQ(after["Mul"], 1);
  EXPECT_EQ(after["Neg"], 1);
}

// A session that rounds every float tensor to fp16 keeps the scores and the chain's
// intermediates as tensors, so that they are rounded (and may overflow) as written.
TEST(SessionFusions, Fp16StorageKeepsAttentionAndChainsUnfused) {
  B b(14, 8);
  const std::string q = b.Input("q", {1, 2, 6, 8}), k = b.Input("k", {1, 2, 6, 8});
  const std::string v = b.Input("v", {1, 2, 6, 8});
  const std::string kt = b.Op("Transpose", {k}, {B::Ints("perm", {0, 1, 3, 2})});
  const std::string probs = b.Op("Softmax", {b.Op("MatMul", {q, kt})}, {B::Int("axis", -1)});
  b.Output(b.Op("Relu", {b.Op("Add", {b.Op("MatMul", {probs, v}), q})}));
  for (exec::Precision precision : {exec::Precision::kFp32, exec::Precision::kFp16Storage}) {
    std::map<std::string, int> counts = test_support::SessionOpCounts(b.model(), precision);
    const int fused = precision == exec::Precision::kFp32 ? 1 : 0;
    EXPECT_EQ(counts["ovfix.fused.Attention"], fused);
    EXPECT_EQ(counts["ovfix.fused.Elementwise"], fused);
    EXPECT_EQ(counts["Softmax"], 1 - fused);
  }
}

}  // namespace
}  // namespace ovfix::converter
