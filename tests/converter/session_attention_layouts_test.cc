// The session graph's read_attention_layouts (converter/session_attention_layouts.h): the
// Transposes, the qkv split's Gathers and the q scale around ovfix.fused.Attention are read
// in place by it, and the fused graphs compute what the graphs as written compute (within
// 1e-6 of each output's range), on odd sizes: query and key counts and head widths that are
// not multiples of the kernel's tiles, one head, batches of two, masks that broadcast.
#include <map>
#include <string>
#include <vector>

#include "bench/exporter_models.h"
#include "bench/model_builder.h"
#include "converter/session_graph.h"
#include "exec/cpu/gemm.h"
#include "gtest/gtest.h"
#include "tests/support/session_graph_check.h"

namespace ovfix::converter {
namespace {

using B = bench::ModelBuilder;

using test_support::OpCounts;

std::unique_ptr<Model> OptimizedKeepingOutputs(onnx::ModelProto proto) {
  return test_support::OptimizeExpectingSameOutputs(std::move(proto), 1e-6, {-2, 2, 0, 1})
      .optimized;
}

// What the Attention nodes read and what reads them, as "Op" of the nodes next to them:
// nothing of the data movement (Transpose, Gather, the q scale's Mul) may be left there.
void ExpectAttentionsReadInPlace(const Model& m, int attentions) {
  int seen = 0;
  for (const Node* n : m.graph().nodes()) {
    if (n->domain() != kFusedDomain || n->op_type() != "Attention") continue;
    ++seen;
    for (int i = 0; i < 3; ++i) {
      const Node* producer = n->input(i)->producer();
      if (producer == nullptr) continue;
      for (const char* op : {"Transpose", "Gather", "Mul"}) {
        EXPECT_NE(producer->op_type(), op) << "input " << i << " of " << n->Describe();
      }
    }
    for (const Use& use : n->output(0)->uses()) {
      EXPECT_NE(use.node->op_type(), "Transpose") << "the reader of " << n->Describe();
    }
  }
  EXPECT_EQ(seen, attentions);
}

// BERT's heads: [batch, tokens, heads * width] projections viewed [batch, tokens, heads, width]
// and permuted [0, 2, 1, 3]; K^T as a second Transpose [0, 1, 3, 2] of K's heads
// (`key_depth_first` false) or in one [0, 2, 3, 1]; scores / sqrt(width) plus a mask per key
// and batch; the heads merged back by Transpose [0, 2, 1, 3] and Reshape.
onnx::ModelProto BertLayer(int64_t batch, int64_t tokens, int64_t heads, int64_t width,
                           bool key_depth_first, uint32_t seed) {
  B b(17, seed);
  const int64_t hidden = heads * width;
  const std::string x = b.Input("x", {batch, tokens, hidden});
  const std::string mask = b.Input("mask", {batch, 1, 1, tokens});
  auto heads_of = [&](const std::vector<int64_t>& perm) {
    const std::string projected = b.Op("MatMul", {x, b.Weight({hidden, hidden}, 0.3f)});
    const std::string split = b.Op("Reshape", {projected, b.Int64s({batch, tokens, heads, width})});
    return b.Op("Transpose", {split}, {B::Ints("perm", perm)});
  };
  const std::string q = heads_of({0, 2, 1, 3});
  const std::string kt = key_depth_first ? heads_of({0, 2, 3, 1})
                                         : b.Op("Transpose", {heads_of({0, 2, 1, 3})},
                                                {B::Ints("perm", {0, 1, 3, 2})});
  const std::string v = heads_of({0, 2, 1, 3});
  std::string scores = b.Op("Div", {b.Op("MatMul", {q, kt}), b.Fill({}, std::sqrt(width))});
  scores = b.Op("Add", {scores, mask});
  const std::string probs = b.Op("Softmax", {scores}, {B::Int("axis", -1)});
  const std::string merged =
      b.Op("Transpose", {b.Op("MatMul", {probs, v})}, {B::Ints("perm", {0, 2, 1, 3})});
  b.Output(b.Op("Reshape", {merged, b.Int64s({batch, tokens, hidden})}));
  return b.model();
}

TEST(SessionAttentionLayouts, BertHeadsReadInPlace) {
  struct Case {
    int64_t batch, tokens, heads, width;
    bool key_depth_first;
  };
  for (const Case& c : {Case{2, 37, 3, 12, false}, Case{1, 130, 1, 20, false},
                        Case{2, 5, 4, 8, true}, Case{3, 49, 2, 32, true}}) {
    SCOPED_TRACE(testing::Message()
                 << c.batch << "x" << c.tokens << " heads " << c.heads << " width " << c.width
                 << " depth first " << c.key_depth_first);
    std::unique_ptr<Model> m = OptimizedKeepingOutputs(BertLayer(
        c.batch, c.tokens, c.heads, c.width, c.key_depth_first, static_cast<uint32_t>(c.tokens)));
    ASSERT_NE(m, nullptr);
    std::map<std::string, int> counts = OpCounts(*m);
    EXPECT_EQ(counts["Transpose"], 0);
    EXPECT_EQ(counts["Softmax"], 0);
    ExpectAttentionsReadInPlace(*m, 1);
  }
}

// Swin's window attention: qkv(x) viewed [windows, tokens, 3, heads, width], permuted
// [2, 0, 3, 1, 4], q, k and v picked by Gather; q scaled before the product, a relative
// position bias per head, and (`window_mask`) the shifted windows' mask added to the scores
// viewed [batch, windows per image, heads, tokens, tokens]; merged back as BERT's.
onnx::ModelProto WindowAttention(int64_t images, int64_t windows, int64_t tokens, int64_t heads,
                                 int64_t width, bool window_mask, uint32_t seed) {
  B b(17, seed);
  const int64_t hidden = heads * width, batch = images * windows;
  const std::string x = b.Input("x", {batch, tokens, hidden});
  std::string qkv = b.Op("MatMul", {x, b.Weight({hidden, 3 * hidden}, 0.3f)});
  qkv = b.Op("Add", {qkv, b.Weight({3 * hidden}, 0.1f)});
  qkv = b.Op("Reshape", {qkv, b.Int64s({batch, tokens, 3, heads, width})});
  qkv = b.Op("Transpose", {qkv}, {B::Ints("perm", {2, 0, 3, 1, 4})});
  auto pick = [&](int64_t i) {
    return b.Op("Gather", {qkv, b.Int64Scalar(i)}, {B::Int("axis", 0)});
  };
  const std::string q = b.Op("Mul", {pick(0), b.Fill({}, 1.0f / std::sqrt(width))});
  const std::string kt = b.Op("Transpose", {pick(1)}, {B::Ints("perm", {0, 1, 3, 2})});
  std::string scores = b.Op("MatMul", {q, kt});
  scores = b.Op("Add", {scores, b.Weight({1, heads, tokens, tokens}, 1.0f)});
  if (window_mask) {
    scores = b.Op("Reshape", {scores, b.Int64s({images, windows, heads, tokens, tokens})});
    scores = b.Op("Add", {scores, b.Input("window_mask", {1, windows, 1, tokens, tokens})});
    scores = b.Op("Reshape", {scores, b.Int64s({batch, heads, tokens, tokens})});
  }
  const std::string probs = b.Op("Softmax", {scores}, {B::Int("axis", -1)});
  const std::string merged =
      b.Op("Transpose", {b.Op("MatMul", {probs, pick(2)})}, {B::Ints("perm", {0, 2, 1, 3})});
  b.Output(b.Op("Reshape", {merged, b.Int64s({batch, tokens, hidden})}));
  return b.model();
}

TEST(SessionAttentionLayouts, SwinQkvSplitReadInPlace) {
  struct Case {
    int64_t images, windows, tokens, heads, width;
    bool window_mask;
  };
  for (const Case& c : {Case{1, 4, 49, 3, 32, false}, Case{2, 3, 20, 2, 9, true},
                        Case{1, 1, 7, 1, 5, true}, Case{2, 5, 49, 6, 16, true}}) {
    SCOPED_TRACE(testing::Message()
                 << c.images << "x" << c.windows << " windows of " << c.tokens << ", heads "
                 << c.heads << " width " << c.width << " mask " << c.window_mask);
    std::unique_ptr<Model> m =
        OptimizedKeepingOutputs(WindowAttention(c.images, c.windows, c.tokens, c.heads, c.width,
                                                c.window_mask, static_cast<uint32_t>(c.tokens)));
    ASSERT_NE(m, nullptr);
    std::map<std::string, int> counts = OpCounts(*m);
    EXPECT_EQ(counts["Transpose"], 0);
    EXPECT_EQ(counts["Gather"], 0);
    EXPECT_EQ(counts["Mul"], 0);
    ExpectAttentionsReadInPlace(*m, 1);
  }
}

// The kernel's products on every micro-kernel this CPU runs (the portable one included): the
// AVX2 tile where the GEMM runs AVX2 or AVX-512, the portable loop elsewhere.
TEST(SessionAttentionLayouts, EveryProductKernelKeepsOutputs) {
  for (const std::string& kernel : exec::AvailableGemmKernels()) {
    SCOPED_TRACE(kernel);
    ASSERT_TRUE(exec::SelectGemmKernelForTesting(kernel));
    std::unique_ptr<Model> bert = OptimizedKeepingOutputs(BertLayer(2, 37, 3, 12, true, 3));
    std::unique_ptr<Model> swin = OptimizedKeepingOutputs(WindowAttention(2, 3, 20, 2, 9, true, 4));
    EXPECT_NE(bert, nullptr);
    EXPECT_NE(swin, nullptr);
  }
  exec::SelectGemmKernelForTesting(exec::AvailableGemmKernels().front());
}

// A Transpose or Gather that something else reads too stays (the Attention still reads its
// own input in place where it can); the outputs stay those of the graph as written.
TEST(SessionAttentionLayouts, SharedValuesStay) {
  B b(17, 9);
  const std::string x = b.Input("x", {2, 10, 3, 3, 4});
  const std::string qkv = b.Op("Transpose", {x}, {B::Ints("perm", {2, 0, 3, 1, 4})});
  auto pick = [&](int64_t i) {
    return b.Op("Gather", {qkv, b.Int64Scalar(i)}, {B::Int("axis", 0)});
  };
  const std::string q = pick(0), v = pick(2);
  const std::string kt = b.Op("Transpose", {pick(1)}, {B::Ints("perm", {0, 1, 3, 2})});
  const std::string probs = b.Op("Softmax", {b.Op("MatMul", {q, kt})}, {B::Int("axis", -1)});
  const std::string y = b.Op("MatMul", {probs, v});
  b.Output(b.Op("Transpose", {y}, {B::Ints("perm", {0, 2, 1, 3})}));
  b.Output(q);  // q read twice: its Gather stays
  std::unique_ptr<Model> m = OptimizedKeepingOutputs(b.model());
  ASSERT_NE(m, nullptr);
  std::map<std::string, int> counts = OpCounts(*m);
  EXPECT_EQ(counts["ovfix.fused.Attention"], 1);
  EXPECT_EQ(counts["Gather"], 1);     // q's
  EXPECT_EQ(counts["Transpose"], 1);  // the qkv split, which q's Gather still reads
}

// The bench's exporter-style models: every Attention reads its heads in place.
TEST(SessionAttentionLayouts, ExporterModelsReadEveryAttentionInPlace) {
  struct Case {
    onnx::ModelProto (*make)();
    int attentions;
  };
  for (const Case& c :
       {Case{&bench::ExportedBertModel, 4}, Case{&bench::ExportedCausalDecoderModel, 4},
        Case{&bench::ExportedSwinModel, 6}, Case{&bench::ExportedSwinTModel, 12}}) {
    std::unique_ptr<Model> m = OptimizedKeepingOutputs(c.make());
    ASSERT_NE(m, nullptr);
    ExpectAttentionsReadInPlace(*m, c.attentions);
  }
}

}  // namespace
}  // namespace ovfix::converter
