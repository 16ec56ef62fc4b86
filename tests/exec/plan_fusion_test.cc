// exec/plan_fusion.h against the session's plan. For small graphs of every fusion the cpu
// session makes, and of the near misses it must not make, FusesIntoProducer names exactly the
// nodes stated here by hand, and the session runs exactly the other nodes: a folded node is no
// step of its own, so on_node_time (what `ovfix run --profile` prints) never sees it. The
// element-wise chain fusion (converter/session_elementwise_fusion.cc) relies on the two
// agreeing.
#include "exec/plan_fusion.h"

#include <map>
#include <optional>
#include <set>
#include <string>

#include "exec/executor.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/graph_walk.h"
#include "tests/support/model_text.h"

namespace ovfix::exec {
namespace {

using test_support::Parse;

// Nodes by their first output's name, in every graph of the model.
std::set<std::string> NamesOf(const std::vector<const Node*>& nodes) {
  std::set<std::string> names;
  for (const Node* n : nodes) names.insert(n->output(0)->name());
  return names;
}

std::vector<const Node*> AllNodes(Model& model) {
  std::vector<const Node*> nodes;
  for (Graph* g : GraphsRecursive(model.graph())) {
    for (const Node* n : g->nodes()) nodes.push_back(n);
  }
  return nodes;
}

// What FusesIntoProducer says of each node.
std::set<std::string> PredictedFolded(Model& model) {
  const int opset = static_cast<int>(model.OpsetVersion(""));
  std::vector<const Node*> folded;
  for (const Node* n : AllNodes(model)) {
    if (FusesIntoProducer(*n, opset)) folded.push_back(n);
  }
  return NamesOf(folded);
}

// The nodes a run of the default (fp32) session does not time: those folded into another
// node's step (Constant nodes, made while compiling, aside).
std::set<std::string> SessionFolded(Model& model) {
  std::set<std::string> timed;
  SessionOptions options;
  options.threads = 1;
  options.on_node_time = [&timed](const Node& n, double) { timed.insert(n.output(0)->name()); };
  absl::StatusOr<std::unique_ptr<Session>> session = CreateSession(model, options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {"(no session)"};
  RandomInputOptions input_options;
  for (const Value* v : model.graph().inputs()) {
    if (!v->shape()) input_options.shapes[v->name()] = {};  // a scalar (Clip's bound)
  }
  absl::StatusOr<TensorMap> inputs = RandomInputs(model.graph(), input_options);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  if (!inputs.ok()) return {"(no inputs)"};
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(*inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  std::vector<const Node*> untimed;
  for (const Node* n : AllNodes(model)) {
    if (n->op_type() != "Constant" && !timed.contains(n->output(0)->name())) untimed.push_back(n);
  }
  return NamesOf(untimed);
}

struct Case {
  const char* name;
  const char* model;
  std::set<std::string> folded;  // first outputs of the nodes the session folds, by hand
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PlanFusion : public ::testing::TestWithParam<Case> {};

TEST_P(PlanFusion, PredicateNamesWhatTheSessionFolds) {
  std::unique_ptr<Model> model = Parse(GetParam().model);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(PredictedFolded(*model), GetParam().folded) << "FusesIntoProducer";
  EXPECT_EQ(SessionFolded(*model), GetParam().folded) << "the session's plan";
}

const Case kCases[] = {
    {"ConvClamps",
     R"(
      <ir_version: 8, opset_import: ["" : 13]>
      agraph (float[1,2,5,5] x, float[3,2,3,3] w, float m)
          => (float[1,3,3,3] r, float[1,3,3,3] c, float[1,3,3,3] e)
          <float lo = {-0.2}, float hi = {0.3}> {
        a = Conv(x, w)
        r = Relu(a)
        b = Conv(x, w)
        c = Clip(b, lo, hi)
        d = Conv(x, w)
        e = Clip(d, m)
      })",
     // Clip's bound from a graph input is not known while compiling.
     {"r", "c"}},
    {"ClipAttributesBeforeOpset11",
     R"(
      <ir_version: 8, opset_import: ["" : 6]>
      agraph (float[1,2,5,5] x, float[3,2,3,3] w) => (float[1,3,3,3] c) {
        b = Conv(x, w)
        c = Clip <min = -0.5, max = 0.5> (b)
      })",
     {"c"}},
    {"HardSwishForms",
     R"(
      <ir_version: 8, opset_import: ["" : 14]>
      agraph (float[1,2,5,5] x, float[3,2,3,3] w)
          => (float[1,3,3,3] h, float[1,3,3,3] h2, float[1,3,3,3] k, float[1,3,3,3] m,
              float[1,3,3,3] n, float[1,3,3,3] q) {
        a = Conv(x, w)
        g = HardSigmoid <alpha = 0.6, beta = 0.4> (a)
        h = Mul(g, a)
        a2 = Conv(x, w)
        g2 = HardSigmoid(a2)
        h2 = Mul(a2, g2)
        e = Conv(x, w)
        k = HardSwish(e)
        f = Conv(x, w)
        g3 = HardSigmoid(f)
        m = Mul(f, g3)
        n = Neg(g3)
        p = Conv(x, w)
        q = HardSigmoid(p)
      })",
     // The gate read by a Neg too stays; so does a HardSigmoid alone (no activation a Conv
     // takes).
     {"g", "h", "g2", "h2", "k"}},
    {"HardSwishOnlyOverFloat",
     R"(
      <ir_version: 8, opset_import: ["" : 14]>
      agraph (float16[1,2,5,5] x, float16[3,2,3,3] w)
          => (float16[1,3,3,3] k, float16[1,3,3,3] r) {
        e = Conv(x, w)
        k = HardSwish(e)
        a = Conv(x, w)
        r = Relu(a)
      })",
     {"r"}},
    {"MatMulBias",
     R"(
      <ir_version: 8, opset_import: ["" : 13]>
      agraph (float[2,3] x, float[3,4] wi)
          => (float[2,4] y, float[2,4] z, float[2,4] u, float[2,4] v, float[2,4] m4,
              float[2,4] s, float[2,4] t)
          <float[3,4] w = {1, -2, 3, 0.5, 0.25, -1, 2, 1, -0.5, 1.5, 0, 2},
           float[4] b = {0.1, -0.2, 0.3, 0.4},
           float[2,4] b2 = {1, 2, 3, 4, 5, 6, 7, 8}> {
        m1 = MatMul(x, w)
        y = Add(m1, b)
        m2 = MatMul(x, w)
        z = Add(b, m2)
        m3 = MatMul(x, wi)
        u = Add(m3, b)
        m4 = MatMul(x, w)
        v = Add(m4, b)
        m5 = MatMul(x, w)
        s = Add(m5, b2)
        m6 = MatMul(x, w)
        a6 = Add(m6, b)
        t = Relu(a6)
      })",
     // Not with B from a graph input, a product that is also an output, a bias of 2 dims;
     // a MatMul takes no activation after its bias.
     {"y", "z", "a6"}},
    {"SharedOrOutputResultStays",
     R"(
      <ir_version: 8, opset_import: ["" : 13]>
      agraph (float[1,2,5,5] x, float[3,2,3,3] w)
          => (float[1,3,3,3] r, float[1,3,3,3] t, float[1,3,3,3] b, float[1,3,3,3] s) {
        a = Conv(x, w)
        r = Relu(a)
        t = Neg(a)
        b = Conv(x, w)
        s = Relu(b)
      })",
     {}},
    {"OneActivationPerStep",
     R"(
      <ir_version: 8, opset_import: ["" : 13]>
      agraph (float[1,2,5,5] x, float[3,2,3,3] w) => (float[1,3,3,3] r2, float[1,2,5,5] rb)
          <float[2] sc = {1, 0.5}, float[2] bb = {0, 0.1}, float[2] mu = {0.2, -0.1},
           float[2] va = {1, 2}> {
        a = Conv(x, w)
        r1 = Relu(a)
        r2 = Relu(r1)
        bn = BatchNormalization(x, sc, bb, mu, va)
        rb = Relu(bn)
      })",
     {"r1", "rb"}},
    {"SubgraphsFoldWithinTheirOwnGraph",
     R"(
      <ir_version: 8, opset_import: ["" : 13]>
      agraph (float[1,2,5,5] x, float[3,2,3,3] w) => (float[1,3,3,3] z) {
        init = Conv(x, w)
        a0 = Conv(x, w)
        n = Constant <value = int64 {2}> ()
        cond = Constant <value = bool {1}> ()
        z = Loop(n, cond, init) <body = step (int64 i, bool keep, float[1,3,3,3] acc)
            => (bool keep_out, float[1,3,3,3] acc_out) {
          keep_out = Identity(keep)
          r0 = Relu(a0)
          c = Conv(x, w)
          rc = Relu(c)
          s = Add(acc, r0)
          acc_out = Add(s, rc)
        }>
      })",
     // The Relu of the outer Conv's output runs in the body's frame: no step there makes it.
     {"rc"}},
};

INSTANTIATE_TEST_SUITE_P(Graphs, PlanFusion, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

// What goes into the producer's step: the clamp's bounds, the hard swish's parameters, the
// bias, and which node's output the step makes.
TEST(PlanFusionDetails, SaysWhatTheProducerTakes) {
  std::unique_ptr<Model> model = Parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    agraph (float[1,2,5,5] x, float[3,2,3,3] w, float[2,3] v)
        => (float[1,3,3,3] c, float[1,3,3,3] h, float[2,4] y)
        <float lo = {-0.2}, float hi = {0.3}, float[3,4] mw = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
         11, 12}, float[4] b = {1, 2, 3, 4}> {
      a = Conv(x, w)
      c = Clip(a, lo, hi)
      e = Conv(x, w)
      g = HardSigmoid <alpha = 0.6, beta = 0.4> (e)
      h = Mul(e, g)
      m = MatMul(v, mw)
      y = Add(b, m)
    })");
  ASSERT_NE(model, nullptr);
  std::map<std::string, const Node*> by_output;
  for (const Node* n : model->graph().nodes()) by_output[n->output(0)->name()] = n;

  std::optional<ProducerFusion> clip = FusionIntoProducer(*by_output["c"], 13);
  ASSERT_TRUE(clip.has_value());
  EXPECT_EQ(clip->kind, ProducerFusion::Kind::kActivation);
  EXPECT_EQ(clip->producer, by_output["a"]);
  EXPECT_EQ(clip->last, by_output["c"]);
  EXPECT_TRUE(clip->activation.clamp);
  EXPECT_FALSE(clip->activation.hard_swish);
  EXPECT_EQ(clip->activation.clamp_min, -0.2f);
  EXPECT_EQ(clip->activation.clamp_max, 0.3f);

  // The HardSigmoid and its Mul: one fusion, ending at the Mul.
  for (const char* name : {"g", "h"}) {
    std::optional<ProducerFusion> swish = FusionIntoProducer(*by_output[name], 13);
    ASSERT_TRUE(swish.has_value()) << name;
    EXPECT_EQ(swish->producer, by_output["e"]);
    EXPECT_EQ(swish->last, by_output["h"]);
    EXPECT_TRUE(swish->activation.hard_swish);
    EXPECT_FALSE(swish->activation.clamp);
    EXPECT_EQ(swish->activation.hard_swish_alpha, 0.6f);
    EXPECT_EQ(swish->activation.hard_swish_beta, 0.4f);
  }

  std::optional<ProducerFusion> bias = FusionIntoProducer(*by_output["y"], 13);
  ASSERT_TRUE(bias.has_value());
  EXPECT_EQ(bias->kind, ProducerFusion::Kind::kBias);
  EXPECT_EQ(bias->producer, by_output["m"]);
  EXPECT_EQ(bias->last, by_output["y"]);
  ASSERT_NE(bias->bias, nullptr);
  EXPECT_EQ(bias->bias->numel(), 4);
  EXPECT_EQ(bias->bias->data<float>()[3], 4.0f);

  // The producers themselves go nowhere.
  for (const char* name : {"a", "e", "m"}) {
    EXPECT_FALSE(FusesIntoProducer(*by_output[name], 13)) << name;
  }
}

}  // namespace
}  // namespace ovfix::exec
