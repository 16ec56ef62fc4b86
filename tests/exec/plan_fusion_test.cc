// exec/plan_fusion.h against the session's plan. For small graphs of every fusion the cpu
// session makes, and of the near misses it must not make, FusesIntoProducer names exactly the
// nodes stated here by hand, and the session runs exactly the other nodes: a folded node is no
// step of its own, so on_node_time (what `ovfix run --profile` prints) never sees it. The
// element-wise chain fusion (converter/session_elementwise_fusion.cc) relies on the two
// agreeing.
#include "exec/plan_fusion.h"

#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
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

// What FusesIntoStep (into the producer's step or the consumer's) says of each node.
std::set<std::string> PredictedFolded(Model& model) {
  const int opset = static_cast<int>(model.OpsetVersion(""));
  std::vector<const Node*> folded;
  for (const Node* n : AllNodes(model)) {
    if (FusesIntoStep(*n, opset)) folded.push_back(n);
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
  EXPECT_EQ(PredictedFolded(*model), GetParam().folded) << "FusesIntoStep";
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
    {"BatchNormalizationIntoTheConvAfterIt",
     R"(
      <ir_version: 8, opset_import: ["" : 14]>
      agraph (float[1,2,5,5] x, float[3,2,1,1] w, float[2,3,1,1] wt)
          => (float[1,3,5,5] y1, float[1,3,5,5] y2, float[1,3,5,5] y3)
          <float[2] sc = {1, 0.5}, float[2] bb = {0, 0.1}, float[2] mu = {0.2, -0.1},
           float[2] va = {1, 2}, float lo = {-0.5}, float hi = {0.5}> {
        b1 = BatchNormalization(x, sc, bb, mu, va)
        r1 = Relu(b1)
        y1 = Conv(r1, w)
        b2 = BatchNormalization <epsilon = 0.01> (x, sc, bb, mu, va)
        y2 = Conv(b2, w)
        b3 = BatchNormalization(x, sc, bb, mu, va)
        c3 = Clip(b3, lo, hi)
        y3 = Conv(c3, w)
      })",
     // With a Relu (folded into it first), alone, with a Clip.
     {"b1", "r1", "b2", "b3", "c3"}},
    {"BatchNormalizationNearMisses",
     R"(
      <ir_version: 8, opset_import: ["" : 14]>
      agraph (float[1,2,5,5] x, float[3,2,1,1] w, float[2] va2, float[3,2,3,3] wt)
          => (float[1,3,5,5] y1, float[1,2,5,5] r1, float[1,3,5,5] y2, float[1,3,5,5] y3,
              float[1,3,5,5] y4, float[1,3,5,5] y5, float[1,3,3,3] y6)
          <float[2] sc = {1, 0.5}, float[2] bb = {0, 0.1}, float[2] mu = {0.2, -0.1},
           float[2] va = {1, 2}> {
        b1 = BatchNormalization(x, sc, bb, mu, va)
        r1 = Relu(b1)
        y1 = Conv(r1, w)
        b2 = BatchNormalization(x, sc, bb, mu, va)
        y2 = Conv(b2, w)
        n2 = Neg(b2)
        b3 = BatchNormalization(x, sc, bb, mu, va2)
        y3 = Conv(b3, w)
        b4 = BatchNormalization(x, sc, bb, mu, va)
        h4 = HardSwish(b4)
        y4 = Conv(h4, w)
        b5 = BatchNormalization(x, sc, bb, mu, va)
        r5 = Relu(b5)
        y5 = Add(r5, r5)
        b6 = BatchNormalization(wt, sc, bb, mu, va)
        y6 = Conv(x, b6)
      })",
     // The clamp's output also a graph output, a second reader, statistics from an input, a
     // hard swish, a reader that is no Conv (the Relu still folds into the BatchNormalization),
     // the Conv's weight.
     {"r1", "h4", "r5"}},
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

// Conv inputs read through a folded BatchNormalization are the values the BatchNormalization
// would have made, bit for bit, on every path a convolution takes: pointwise (many positions:
// mapped as it is packed; few: the transposed product; strided), 3x3 (channels-last, implicit),
// depthwise, grouped, a single output pixel, batch 2, with Relu, Clip or nothing after the
// BatchNormalization, NaN and infinities in the input. The reference is the same session
// observing every value, which folds nothing.
TEST(PlanFusionDetails, ConsumerFusionComputesWhatTheGraphSays) {
  struct Conv {
    int64_t channels;
    std::string x_dims, w_dims, attributes;
  };
  const std::vector<Conv> convs = {
      {24, "2,24,20,20", "40,24,1,1", ""},
      {400, "1,400,16,20", "32,400,1,1", ""},  // two depth blocks
      {24, "1,24,7,7", "300,24,1,1", ""},
      {24, "1,24,20,21", "40,24,1,1", "<strides = [2, 2]>"},
      {24, "1,24,14,14", "40,24,3,3", "<pads = [1, 1, 1, 1]>"},
      {24, "1,24,56,56", "16,24,3,3", "<pads = [1, 1, 1, 1]>"},
      {24, "1,24,17,15", "24,1,3,3", "<group = 24, pads = [1, 1, 1, 1]>"},
      {24, "1,24,9,9", "12,8,3,3", "<group = 3>"},
      {24, "1,24,3,3", "10,24,3,3", ""},
  };
  const std::vector<std::string> after = {"r = Relu(b)", "r = Clip(b, lo, hi)", "r = Identity(b)"};
  for (const Conv& conv : convs) {
    for (const std::string& activation : after) {
      const int64_t channels = conv.channels;
      auto vector = [&](float first, float step) {
        std::string text;
        for (int64_t c = 0; c < channels; ++c) {
          absl::StrAppend(&text, c > 0 ? ", " : "", first + step * static_cast<float>(c % 7));
        }
        return text;
      };
      const std::string text = absl::StrCat(
          R"(<ir_version: 8, opset_import: ["" : 14]>
          agraph (float[)",
          conv.x_dims, R"(] x, float[)", conv.w_dims, R"(] w) => (y)
          <float[)",
          channels, "] sc = {", vector(0.5f, 0.3f), "}, float[", channels, "] bb = {",
          vector(-0.4f, 0.15f), "}, float[", channels, "] mu = {", vector(0.1f, -0.07f),
          "}, float[", channels, "] va = {", vector(0.2f, 0.9f),
          R"(}, float lo = {-0.3}, float hi = {0.7}> {
            b = BatchNormalization <epsilon = 0.001> (x, sc, bb, mu, va)
            )",
          activation, R"(
            y = Conv )",
          conv.attributes, R"( (r, w)
          })");
      std::unique_ptr<Model> model = Parse(text);
      ASSERT_NE(model, nullptr) << text;
      RandomInputOptions input_options;
      absl::StatusOr<TensorMap> inputs = RandomInputs(model->graph(), input_options);
      ASSERT_TRUE(inputs.ok()) << inputs.status();
      float* x = (*inputs)["x"].data<float>();
      x[0] = std::numeric_limits<float>::quiet_NaN();
      x[5] = std::numeric_limits<float>::infinity();
      x[(*inputs)["x"].numel() - 1] = -std::numeric_limits<float>::infinity();
      std::vector<std::vector<float>> outputs;
      for (const bool observe : {false, true}) {
        SessionOptions options;
        options.threads = 2;
        if (observe) options.on_value = [](const Value&, const Tensor&) {};
        absl::StatusOr<std::unique_ptr<Session>> session = CreateSession(*model, options);
        ASSERT_TRUE(session.ok()) << session.status();
        absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(*inputs);
        ASSERT_TRUE(out.ok()) << out.status();
        const Tensor& y = out->front();
        outputs.emplace_back(y.data<float>(), y.data<float>() + y.numel());
      }
      ASSERT_EQ(outputs[0].size(), outputs[1].size());
      for (size_t i = 0; i < outputs[0].size(); ++i) {
        // Bit for bit, NaN included.
        ASSERT_EQ(std::memcmp(&outputs[0][i], &outputs[1][i], sizeof(float)), 0)
            << conv.x_dims << " " << conv.attributes << " " << activation << ": element " << i
            << " " << outputs[0][i] << " vs " << outputs[1][i];
      }
    }
  }
}

}  // namespace
}  // namespace ovfix::exec
