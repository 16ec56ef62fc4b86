// The session graph (converter/session_graph.h) on models as exporters write them: the
// optimized copy computes what the graph as written computes (every output within 1e-6 of
// its range on random inputs, each side run by the CPU executor), and the rewrites the
// copy exists for happened: shape arithmetic folded, LayerNorm and GELU fused, no Pow left.
#include "converter/session_graph.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "bench/exporter_models.h"
#include "bench/model_builder.h"
#include "converter/opset_conversion.h"
#include "exec/compare.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/model_io.h"
#include "tests/support/session_graph_check.h"

namespace ovfix::converter {
namespace {

// Each listed op occurs in `counts` as often as listed (0: not at all).
void ExpectCounts(std::map<std::string, int> counts, const std::map<std::string, int>& expected) {
  for (const auto& [op, n] : expected) EXPECT_EQ(counts[op], n) << op;
}

using test_support::OpCounts;
using test_support::Optimized;

// Both graphs on the same random inputs in [-1, 1): the same outputs to 1e-6 of the range.
Optimized ExpectSameOutputs(onnx::ModelProto proto) {
  return test_support::OptimizeExpectingSameOutputs(std::move(proto), 1e-6, {-1, 1, 0, 1});
}

TEST(SessionGraph, ConvNextFusesLayerNormAndGeluAndDropsPow) {
  test_support::Avx2Kernel avx2;  // which convolutions run channels-last depends on the tile
  Optimized m = ExpectSameOutputs(bench::ExportedConvNextModel());
  ASSERT_NE(m.optimized, nullptr);
  std::map<std::string, int> before = OpCounts(*m.as_written), after = OpCounts(*m.optimized);
  // 6 blocks, each one LayerNorm over channels-last and one GELU; the final LayerNorm over
  // the pooled vector too. The 3 LayerNorms over NCHW channels (stem, downsampling) become
  // ChannelLayerNormalization.
  EXPECT_EQ(before["Erf"], 6);
  ExpectCounts(after, {{"ovfix.fused.LayerNormalization", 7},
                       {"ovfix.fused.ChannelLayerNormalization", 3},
                       {"ovfix.fused.Gelu", 6},
                       {"Erf", 0},
                       {"Pow", 0},
                       {"ReduceMean", 1}});
  if (!avx2.selected()) return;  // the rest is the AVX2 tile's
  // Each LayerNorm's 9 nodes become 1, each GELU's 5 become 1. Each stage's blocks run
  // channels-last (converter/session_nhwc.h): their depthwise convolutions read the permutes'
  // input, so the permutes to and from NHWC (2 a block) go, each stage is entered and left by
  // one Transpose (3 stages), and with no permute between them a block's layer scale and
  // residual Add are one element-wise chain. The 6 depthwise convolutions and the second 2x2
  // downsampling one (to 10x10: its transposed product pads 256 maps x 100 positions, the
  // direct one 258 x 112; to 20x20 both pad alike, and the Conv kernel takes the direct one)
  // run channels-last.
  EXPECT_EQ(after["ovfix.fused.Elementwise"], 6);
  EXPECT_EQ(after["ovfix.fused.NhwcConv"], 7);
  EXPECT_EQ(m.as_written->graph().num_nodes() - m.optimized->graph().num_nodes(),
            7 * 8 + 6 * 4 + 3 * 8 + 6 * 2 - 3 * 2 + 6 * 1);
}

// The same exports written at opset 18, as PyTorch's dynamo exporter writes them (Reduce axes
// as inputs): the session graph fuses them the same way.
onnx::ModelProto AtOpset18(onnx::ModelProto proto) {
  absl::StatusOr<std::unique_ptr<Model>> model = ModelFromProto(std::move(proto), "", "export");
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<OpsetChange> change = ConvertOpset(**model, 18);
  EXPECT_TRUE(change.ok()) << change.status();
  return ModelToProto(**model);
}

TEST(SessionGraph, Opset18ExportsFuseAsTheirOpset17Forms) {
  Optimized convnext = ExpectSameOutputs(AtOpset18(bench::ExportedConvNextModel()));
  ASSERT_NE(convnext.optimized, nullptr);
  EXPECT_EQ(convnext.optimized->OpsetVersion(""), 18);
  ExpectCounts(OpCounts(*convnext.optimized), {{"ovfix.fused.LayerNormalization", 7},
                                               {"ovfix.fused.ChannelLayerNormalization", 3},
                                               {"ovfix.fused.Gelu", 6},
                                               {"Pow", 0}});
  Optimized bert = ExpectSameOutputs(AtOpset18(bench::ExportedBertModel()));
  ASSERT_NE(bert.optimized, nullptr);
  std::map<std::string, int> bert_counts = OpCounts(*bert.optimized);
  EXPECT_GE(bert_counts["ovfix.fused.LayerNormalization"] +
                bert_counts["ovfix.fused.AddLayerNormalization"],
            8);
}

TEST(SessionGraph, SwinShapeArithmeticFolds) {
  Optimized m = ExpectSameOutputs(bench::ExportedSwinModel());
  ASSERT_NE(m.optimized, nullptr);
  std::map<std::string, int> before = OpCounts(*m.as_written), after = OpCounts(*m.optimized);
  EXPECT_GT(before["Shape"], 50);
  // Concats of shapes fold; those of data (each shifted block's two rolls of two axes, the
  // two patch mergings) stay.
  ExpectCounts(after, {{"Shape", 0}, {"Unsqueeze", 0}, {"Concat", 3 * 4 + 2}, {"Pow", 0}});
  EXPECT_GT(after["ovfix.fused.Gelu"], 0);
}

// Transposes that swap the last two axes of a MatMul operand go into the product (it reads
// the operand transposed where it lies): attention's K^T, A^T of rank 3, and batch dims that
// broadcast. A Transpose of other axes, one read twice and one of a constant stay.
TEST(SessionGraph, TransposeOfLastTwoAxesGoesIntoMatMul) {
  bench::ModelBuilder b(14, 5);
  using B = bench::ModelBuilder;
  const std::string q = b.Input("q", {2, 3, 5, 8}), k = b.Input("k", {2, 3, 7, 8});
  const std::string v = b.Input("v", {2, 3, 7, 4});
  const std::string kt = b.Op("Transpose", {k}, {B::Ints("perm", {0, 1, 3, 2})});
  const std::string probs = b.Op("Softmax", {b.Op("MatMul", {q, kt})}, {B::Int("axis", -1)});
  b.Output(b.Op("MatMul", {probs, v}));
  const std::string x = b.Input("x", {2, 8, 5}), w = b.Input("w", {2, 8, 6});
  b.Output(b.Op("MatMul", {b.Op("Transpose", {x}, {B::Ints("perm", {0, 2, 1})}), w}));
  const std::string p = b.Input("p", {3, 1, 5, 8}), r = b.Input("r", {4, 6, 8});
  b.Output(b.Op("MatMul", {p, b.Op("Transpose", {r}, {B::Ints("perm", {0, 2, 1})})}));
  // Stay: a Transpose of the batch axes, one read twice, one of a constant.
  const std::string s = b.Op("Transpose", {x}, {B::Ints("perm", {2, 1, 0})});
  b.Output(b.Op("MatMul", {b.Op("Transpose", {s}, {B::Ints("perm", {0, 2, 1})}), s}));
  const std::string rt = b.Op("Transpose", {r}, {B::Ints("perm", {0, 2, 1})});
  b.Output(b.Op("MatMul", {rt, b.Op("Transpose", {rt}, {B::Ints("perm", {0, 2, 1})})}));
  b.Output(
      b.Op("MatMul", {p, b.Op("Transpose", {b.Weight({3, 8}, 1.0f)}, {B::Ints("perm", {1, 0})})}));
  Optimized m = ExpectSameOutputs(b.model());
  ASSERT_NE(m.optimized, nullptr);
  std::map<std::string, int> after = OpCounts(*m.optimized);
  // x^T, r^T; and in the fourth product the outer Transpose of s (s itself stays), and in
  // the fifth the second Transpose of rt (rt, read twice, stays). The constant's Transpose
  // folds: its MatMul stays a MatMul. K^T went into the product too, which with its softmax
  // and the product by v became one Attention.
  ExpectCounts(
      after,
      {{"ovfix.fused.MatMul", 4}, {"ovfix.fused.Attention", 1}, {"MatMul", 1}, {"Transpose", 2}});
}

// A CTC head as PaddleOCR exports it: the features [batch, channels, steps] transposed into
// rows of steps, by constant weights and a bias. The Transpose goes into the product, which
// packs its constant B once and A (read transposed) per run, and adds the bias the session
// fused into it as the tiles are finished (or, over few rows, once the product is): the
// outputs those of the graph as written, for a batch of one and of two.
TEST(SessionGraph, TransposedFeaturesByConstantWeights) {
  for (int64_t batch : {1, 2}) {
    for (int64_t steps : {40, 6}) {
      bench::ModelBuilder b(14, 9);
      using B = bench::ModelBuilder;
      const std::string x = b.Input("x", {batch, 24, steps});
      const std::string rows = b.Op("Transpose", {x}, {B::Ints("perm", {0, 2, 1})});
      b.Output(
          b.Op("Add", {b.Op("MatMul", {rows, b.Weight({24, 70}, 0.2f)}), b.Weight({70}, 0.1f)}));
      Optimized m = ExpectSameOutputs(b.model());
      ASSERT_NE(m.optimized, nullptr);
      ExpectCounts(OpCounts(*m.optimized), {{"ovfix.fused.MatMul", 1}, {"Transpose", 0}});
    }
  }
}

TEST(SessionGraph, BertAndDecoderFuseTheirNormsAndKeepOutputs) {
  for (auto make : {&bench::ExportedBertModel, &bench::ExportedCausalDecoderModel}) {
    Optimized m = ExpectSameOutputs(make());
    ASSERT_NE(m.optimized, nullptr);
    std::map<std::string, int> after = OpCounts(*m.optimized);
    // Each LayerNorm after a residual Add takes the Add in.
    EXPECT_GE(after["ovfix.fused.AddLayerNormalization"], 8);
    EXPECT_GE(after["ovfix.fused.LayerNormalization"] + after["ovfix.fused.AddLayerNormalization"],
              8);
    // The causal mask is a constant: no Trilu is left.
    ExpectCounts(after, {{"ovfix.fused.Gelu", 4}, {"Shape", 0}, {"Trilu", 0}});
  }
}

// A session that rounds every float tensor to fp16 keeps a residual sum as a tensor (it is
// rounded, and may overflow, as written): the Add stays beside the fused LayerNorm there.
TEST(SessionGraph, Fp16StorageKeepsResidualAddsUnfused) {
  for (exec::Precision precision : {exec::Precision::kFp32, exec::Precision::kFp16Storage}) {
    std::map<std::string, int> counts =
        test_support::SessionOpCounts(bench::ExportedBertModel(), precision);
    const bool fp32 = precision == exec::Precision::kFp32;
    EXPECT_EQ(counts["ovfix.fused.AddLayerNormalization"] > 0, fp32);
    EXPECT_GE(
        counts["ovfix.fused.AddLayerNormalization"] + counts["ovfix.fused.LayerNormalization"], 8);
  }
}

TEST(SessionGraph, ConvNetsKeepOutputs) {
  for (auto make : {&bench::ExportedDenseNetModel, &bench::ExportedAtrousSegmentationModel}) {
    Optimized m = ExpectSameOutputs(make());
    ASSERT_NE(m.optimized, nullptr);
    EXPECT_EQ(OpCounts(*m.optimized)["Shape"], 0);
  }
}

TEST(SessionGraph, AsWrittenRunsTheModelItself) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      ModelFromProto(bench::ExportedBertModel(), "", "bert");
  ASSERT_TRUE(model.ok());
  absl::StatusOr<exec::TensorMap> inputs = exec::RandomInputs((*model)->graph());
  ASSERT_TRUE(inputs.ok());
  absl::StatusOr<RunSession> as_written = CreateRunSession(**model, *inputs, {}, true);
  ASSERT_TRUE(as_written.ok()) << as_written.status();
  EXPECT_EQ(as_written->graph, nullptr);
  absl::StatusOr<RunSession> optimized = CreateRunSession(**model, *inputs, {}, false);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  ASSERT_NE(optimized->graph, nullptr);
  EXPECT_LT(optimized->graph->graph().num_nodes(), (*model)->graph().num_nodes());
  // Capturing sessions see the values of the graph as written.
  exec::SessionOptions capture;
  capture.capture = true;
  absl::StatusOr<RunSession> captured = CreateRunSession(**model, *inputs, capture, false);
  ASSERT_TRUE(captured.ok()) << captured.status();
  EXPECT_EQ(captured->graph, nullptr);
}

}  // namespace
}  // namespace ovfix::converter
