// Graph edits keep producers, use lists and topological order right; text form and shape
// inference round through onnx's parser, printer and InferShapes.
#include "ir/graph.h"

#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"

namespace ovfix {
namespace {

constexpr char kChain[] = R"(
  chain (float[N, 4] x) => (float[N, 4] y) {
    a = Relu(x)
    b = Sigmoid(a)
    y = Add(a, b)
  }
)";

std::unique_ptr<Model> Parse(const char* text) {
  auto m = ParseModelText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

TEST(Graph, ParsedGraphHasProducersAndUses) {
  auto m = Parse(kChain);
  Graph& g = m->graph();
  ASSERT_EQ(g.num_nodes(), 3u);
  Value* a = g.FindValue("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->producer()->op_type(), "Relu");
  EXPECT_EQ(a->uses().size(), 2u);  // Sigmoid and Add
  EXPECT_TRUE(g.FindValue("y")->is_graph_output());
  EXPECT_TRUE(g.Verify().ok());
}

TEST(Graph, ReplaceAllUsesAndDeadCodeKeepGraphConsistent) {
  auto m = Parse(kChain);
  Graph& g = m->graph();
  Value* x = g.FindValue("x");
  Value* b = g.FindValue("b");
  // y = Add(a, b) -> y = Add(a, x): Sigmoid becomes dead.
  g.ReplaceAllUsesWith(b, x);
  EXPECT_FALSE(b->has_uses());
  EXPECT_EQ(g.RemoveDeadCode(), 1);
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.FindValue("b"), nullptr);
  EXPECT_TRUE(g.Verify().ok());
  EXPECT_EQ(x->uses().size(), 2u);
}

TEST(Graph, InsertedNodeKeepsTopologicalOrder) {
  auto m = Parse(kChain);
  Graph& g = m->graph();
  Value* a = g.FindValue("a");
  Node* add = g.FindValue("y")->producer();
  // Insert Neg(a) before Add and feed it to Add.
  Node* neg = g.AddNode("Neg", {a}, {"a_neg"}, "neg", "", add);
  add->ReplaceInput(0, neg->output(0));
  EXPECT_LT(neg->order(), add->order());
  EXPECT_GT(neg->order(), a->producer()->order());
  EXPECT_TRUE(g.Verify().ok());
  // Appending at the end then sorting moves it before its user.
  Node* tail = g.AddNode("Abs", {a}, {"a_abs"});
  add->ReplaceInput(1, tail->output(0));
  EXPECT_FALSE(g.Verify().ok());
  ASSERT_TRUE(g.TopologicalSort().ok());
  EXPECT_TRUE(g.Verify().ok());
}

TEST(Graph, UniqueNamesNeverCollide) {
  auto m = Parse(kChain);
  Graph& g = m->graph();
  Value* v1 = g.CreateValue("a");
  Value* v2 = g.CreateValue("a");
  EXPECT_NE(v1->name(), "a");
  EXPECT_NE(v1->name(), v2->name());
}

TEST(Graph, SubgraphsAreKeptAndSeeOuterValues) {
  auto m = Parse(R"(
    cond_model (bool c, float[2] x) => (float[2] y) {
      y = If(c) <
        then_branch = g1 () => (float[2] t) { t = Relu(x) },
        else_branch = g2 () => (float[2] e) { e = Neg(x) }
      >
    }
  )");
  Graph& g = m->graph();
  Node* if_node = g.FindValue("y")->producer();
  ASSERT_EQ(if_node->subgraphs().size(), 2u);
  Graph* then_branch = if_node->GetSubgraph("then_branch");
  ASSERT_NE(then_branch, nullptr);
  EXPECT_EQ(then_branch->parent(), &g);
  // x is used by the If's input? no: by the bodies, and those uses are recorded.
  EXPECT_EQ(g.FindValue("x")->uses().size(), 2u);
  EXPECT_EQ(g.CountNodesRecursive(), 3u);
  // The text form round-trips the bodies.
  auto again = ParseModelText(PrintModelText(*m));
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << PrintModelText(*m);
  EXPECT_EQ((*again)->graph().CountNodesRecursive(), 3u);
}

TEST(Graph, ShapeInferenceKeepsSymbolsAndPropagatesData) {
  auto m = Parse(R"(
    shapes (float[N, 3, 8] x) => (float[?, ?] y) {
      a = Relu(x)
      s = Shape(a)
      two = Constant<value = int64[1] {2}>()
      minus_one = Constant<value = int64[1] {-1}>()
      n = Gather(s, two)
      flat_shape = Concat<axis = 0>(minus_one, n)
      y = Reshape(a, flat_shape)
    }
  )");
  auto st = InferShapes(*m);
  ASSERT_TRUE(st.ok()) << st;
  const Value* a = m->graph().FindValue("a");
  auto dims = a->shape();
  ASSERT_TRUE(dims.has_value());
  ASSERT_EQ(dims->size(), 3u);
  EXPECT_EQ((*dims)[0].symbol, "N");
  EXPECT_EQ((*dims)[1].value, 3);
  // Data propagation computes the Reshape target: [?, 8].
  const Value* y = m->graph().FindValue("y");
  ASSERT_EQ(y->rank(), 2);
  EXPECT_EQ((*y->shape())[1].value, 8);
}

TEST(TextForm, BadTextIsAnError) {
  auto m = ParseModelText("not a graph at all {");
  EXPECT_FALSE(m.ok());
}

// onnx's parser throws (std::stol, std::stof) on a number it cannot convert: the text form
// turns that into an error instead of terminating the process.
TEST(TextForm, MalformedNumberIsAnError) {
  for (const char* text :
       {"g (int32[2] x) => (y) { y = TfIdfVectorizer<pool_int64s = [2, {-1}8]>(x) }",
        "g (float x) => (y) { y = LeakyRelu<alpha = 1e99999>(x) }",
        "g (float x) => (y) { y = Foo<n = 99999999999999999999999>(x) }"}) {
    auto m = ParseModelText(text);
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

// What makes a model "declare float16" (the fp16 precisions then keep its float32 values):
// a float16 input, a Cast to float16, or either inside an If branch; not float32 alone.
TEST(Graph, DeclaresFloat16FindsHalfDataAnywhere) {
  EXPECT_FALSE(DeclaresFloat16(Parse(kChain)->graph()));
  EXPECT_TRUE(
      DeclaresFloat16(Parse("m (float16[2] x) => (float16[2] y) { y = Relu(x) }")->graph()));
  EXPECT_TRUE(DeclaresFloat16(
      Parse("m (float[2] x) => (float[2] y) { h = Cast<to = 10>(x)\n y = Cast<to = 1>(h) }")
          ->graph()));
  auto nested = Parse(R"(
    m (bool c, float[2] x) => (float[2] y) {
      y = If(c) <
        then_branch = t () => (float[2] a) { h = Cast<to = 10>(x)
                                             a = Cast<to = 1>(h) },
        else_branch = e () => (float[2] b) { b = Relu(x) }
      >
    })");
  ASSERT_NE(nested, nullptr);
  EXPECT_TRUE(DeclaresFloat16(nested->graph()));
}

}  // namespace
}  // namespace ovfix
