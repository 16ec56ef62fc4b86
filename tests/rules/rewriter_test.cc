// The Rewriter's promises: rollback restores the graph exactly, commit removes what became
// dead, graph outputs keep their names.
#include "rules/rewriter.h"

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/model_io.h"
#include "ir/text_form.h"

namespace ovfix::rules {
namespace {

constexpr char kModel[] = R"(
  m (float[2, 3] x) => (float[2, 3] y) {
    a = Relu(x)
    b = Neg(a)
    y = Abs(b)
  }
)";

std::unique_ptr<Model> Parse() {
  auto m = ParseModelText(kModel);
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

// Opens a rewrite `rule` of the node producing `output` and replaces that node with `op` of
// `input` (a new value named `created`) in graph `g`; the caller commits or rolls back.
Node* ReplaceProducer(Rewriter& rw, Graph& g, const std::string& rule, Value* output,
                      const std::string& op, Value* input, const std::string& created) {
  Node* old = output->producer();
  rw.Begin(rule, {old});
  Node* made = rw.CreateNode(g, op, {input}, {created}, old);
  rw.ReplaceAllUsesWith(old->output(0), made->output(0));
  return made;
}

TEST(Rewriter, RollbackRestoresTheGraphExactly) {
  auto model = Parse();
  const std::string before = PrintModelText(*model);
  Rewriter rw(*model);
  Graph& g = model->graph();
  Node* neg = g.FindValue("b")->producer();
  // Replace Neg(a) with Sigmoid(a), erase Neg, add a constant and an attribute.
  Node* sig = ReplaceProducer(rw, g, "test", neg->output(0), "Sigmoid", g.FindValue("a"), "s");
  rw.EraseNode(neg);
  rw.CreateInitializer(g, "c", Tensor(DataType::kFloat, {1}));
  onnx::AttributeProto attr;
  attr.set_name("note");
  attr.set_type(onnx::AttributeProto::INT);
  attr.set_i(1);
  rw.SetAttribute(g.FindValue("a")->producer(), attr);
  EXPECT_NE(PrintModelText(*model), before);
  rw.Rollback("testing");
  EXPECT_EQ(PrintModelText(*model), before);
  EXPECT_TRUE(g.Verify().ok());
  ASSERT_EQ(rw.records().size(), 1u);
  EXPECT_TRUE(rw.records()[0].rolled_back);
  EXPECT_EQ(rw.records()[0].note, "testing");
}

TEST(Rewriter, SaysWhichValueReplacedWhichAndWhatChangedBeyondThat) {
  auto model = Parse();
  Rewriter rw(*model);
  Graph& g = model->graph();
  Value* a = g.FindValue("a");
  Node* neg = g.FindValue("b")->producer();
  Node* abs = g.FindValue("y")->producer();
  // A rolled-back transaction leaves nothing behind.
  rw.Begin("first", {neg});
  rw.SetInput(neg, 0, g.inputs()[0]);
  rw.Rollback("not this one");
  EXPECT_TRUE(rw.rewirings().empty());
  // Neg reads Sigmoid(a), then Tanh(a): one rewiring of its input, from `a`.
  rw.Begin("rewire", {neg});
  Node* sig = rw.CreateNode(g, "Sigmoid", {a}, {"s"}, neg);
  Node* tanh = rw.CreateNode(g, "Tanh", {a}, {"t"}, neg);
  rw.SetInput(neg, 0, sig->output(0));
  rw.SetInput(neg, 0, tanh->output(0));
  ASSERT_EQ(rw.rewirings().size(), 1u);
  EXPECT_EQ(rw.rewirings()[0].node, neg);
  EXPECT_EQ(rw.rewirings()[0].input, 0u);
  EXPECT_EQ(rw.rewirings()[0].before, a);
  EXPECT_EQ(neg->input(0), tanh->output(0));
  EXPECT_FALSE(rw.ChangedBeyondInputs(neg));
  // An attribute is a change beyond the inputs; so is new data in a value a node reads.
  onnx::AttributeProto attr;
  attr.set_name("note");
  attr.set_type(onnx::AttributeProto::INT);
  attr.set_i(1);
  rw.SetAttribute(abs, attr);
  EXPECT_TRUE(rw.ChangedBeyondInputs(abs));
  EXPECT_FALSE(rw.ChangedBeyondInputs(neg));
  rw.Commit();
  EXPECT_TRUE(rw.rewirings().empty());  // per transaction
  EXPECT_FALSE(rw.ChangedBeyondInputs(abs));
}

TEST(Rewriter, CommitRemovesDeadNodesAndKeepsOrder) {
  auto model = Parse();
  Rewriter rw(*model);
  Graph& g = model->graph();
  ReplaceProducer(rw, g, "neg_to_sigmoid", g.FindValue("b"), "Sigmoid", g.FindValue("a"), "s");
  RewriteRecord& record = rw.Commit();  // Neg is now dead and goes away
  EXPECT_EQ(record.removed, 1);
  EXPECT_EQ(record.created.size(), 1u);
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_EQ(g.FindValue("b"), nullptr);
  EXPECT_TRUE(g.Verify().ok());
}

TEST(Rewriter, GraphOutputsKeepTheirNames) {
  auto model = Parse();
  Rewriter rw(*model);
  Graph& g = model->graph();
  ReplaceProducer(rw, g, "abs_to_relu", g.FindValue("y"), "Relu", g.FindValue("b"), "r");
  rw.Commit();
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer()->op_type(), "Relu");
  EXPECT_TRUE(g.Verify().ok());
  // Replacing an output by a graph input goes through an Identity that carries the name.
  rw.Begin("output_to_input");
  rw.ReplaceAllUsesWith(g.outputs()[0], g.FindValue("x"));
  rw.Commit();
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer()->op_type(), "Identity");
  EXPECT_EQ(g.inputs()[0]->name(), "x");
  EXPECT_EQ(g.num_nodes(), 1u);  // everything else became dead
}

// A Loop whose body reads the outer `w`: edits inside the body commit and roll back like
// edits in the main graph.
constexpr char kNested[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  m (float[2] x, float[2] w) => (float[2] y) {
    n = Constant<value = int64 {2}>()
    go = Constant<value = bool {1}>()
    y = Loop(n, go, x) <body = b (int64 i, bool c, float[2] acc) => (bool c2, float[2] next) {
      c2 = Identity(c)
      t = Neg(w)
      next = Add(acc, t)
    }>
  }
)";

TEST(Rewriter, EditsInsideABodyRollBackExactly) {
  auto model = ParseModelText(kNested);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string before = PrintModelText(**model);
  Graph& body = *(*model)->graph().FindValue("y")->producer()->GetSubgraph("body");
  Rewriter rw(**model);
  Node* neg = body.FindValue("t")->producer();
  ReplaceProducer(rw, body, "neg_to_relu", neg->output(0), "Relu", neg->input(0), "t");
  rw.EraseNode(neg);
  rw.CreateInitializer(body, "k", Tensor(DataType::kFloat, {1}));
  EXPECT_NE(PrintModelText(**model), before);
  rw.Rollback("testing");
  EXPECT_EQ(PrintModelText(**model), before);
  EXPECT_TRUE((*model)->graph().Verify().ok());
}

TEST(Rewriter, CommitInsideABodyRemovesWhatDiedThereAndKeepsNamesUnique) {
  auto model = ParseModelText(kNested);
  ASSERT_TRUE(model.ok()) << model.status();
  Graph& main = (*model)->graph();
  Node* loop = main.FindValue("y")->producer();
  Graph& body = *loop->GetSubgraph("body");
  Rewriter rw(**model);
  Node* neg = body.FindValue("t")->producer();
  rw.Begin("neg_to_relu", {neg});
  // "w" is a name of the main graph and "t" of the body: new values get other names.
  Node* relu = rw.CreateNode(body, "Relu", {neg->input(0)}, {"w"}, neg);
  Value* k = rw.CreateInitializer(body, "t", Tensor(DataType::kFloat, {1}));
  rw.ReplaceAllUsesWith(neg->output(0), relu->output(0));
  EXPECT_NE(relu->output(0)->name(), "w");
  EXPECT_NE(k->name(), "t");
  EXPECT_EQ(main.FindValue(relu->output(0)->name()), nullptr);
  RewriteRecord& record = rw.Commit();  // Neg is dead, the unread constant too
  EXPECT_EQ(record.removed, 1);
  EXPECT_EQ(body.num_nodes(), 3u);
  EXPECT_EQ(body.FindValue("t"), nullptr);
  EXPECT_TRUE(body.initializers().empty());
  EXPECT_EQ(main.FindValue("w")->uses().size(), 1u);  // the Relu in the body reads it
  EXPECT_TRUE(main.Verify().ok());
  // Names freed by the commit can be taken again, anywhere in the model.
  EXPECT_EQ(main.UniqueName("t"), "t");
}

}  // namespace
}  // namespace ovfix::rules
