// The pattern matcher on small graphs: captures, repeated captures, DAGs, commutative and
// variadic inputs, attribute constraints and captures, declared types and shapes, constants,
// and the reason given for every failure.
#include "rules/matcher.h"

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "ir/constant.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"

namespace ovfix::rules {
namespace {

Pattern MakePattern(const std::string& text, const std::set<std::string>& variadic = {}) {
  onnx::GraphProto graph;
  TextError error;
  EXPECT_TRUE(ParseGraphText(text, graph, error)) << error.message;
  Pattern pattern;
  TemplateError template_error;
  EXPECT_TRUE(BuildPattern(graph, variadic, {}, pattern, template_error)) << template_error.message;
  return pattern;
}

std::unique_ptr<Model> MakeModel(const std::string& text) {
  auto model = ParseModelText(text);
  EXPECT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(InferShapes(**model).ok());
  return std::move(*model);
}

// The node producing graph value `name`.
Node* NodeOf(Model& model, const std::string& name) {
  return model.graph().FindValue(name)->producer();
}

const AcceptFn kAcceptAll = [](const Match&, std::string&) { return true; };

// A pattern tried on the node producing `output`, with the model its match points into.
struct Tried {
  std::unique_ptr<Model> model;
  Pattern pattern;
  std::string why;
  std::optional<Match> match;
};
Tried Try(const std::string& model_text, const std::string& pattern, const std::string& output,
          const std::set<std::string>& variadic = {}) {
  Tried t{MakeModel(model_text), MakePattern(pattern, variadic), "", std::nullopt};
  t.match = MatchPattern(t.pattern, NodeOf(*t.model, output), kAcceptAll, t.why);
  return t;
}

// Why `pattern` does not match the node producing `output` in the model: the failure's
// explanation (a match fails the test).
std::string WhyNot(const std::string& model_text, const std::string& pattern,
                   const std::string& output = "y") {
  auto model = MakeModel(model_text);
  std::string why;
  EXPECT_FALSE(MatchPattern(MakePattern(pattern), NodeOf(*model, output), kAcceptAll, why))
      << pattern;
  return why;
}

// `pattern` matches the node producing `matching` but not the one producing `other`: why not.
std::string WhyOnlyOne(const std::string& model_text, const std::string& pattern,
                       const std::string& matching, const std::string& other) {
  auto model = MakeModel(model_text);
  const Pattern p = MakePattern(pattern);
  std::string why;
  EXPECT_TRUE(MatchPattern(p, NodeOf(*model, matching), kAcceptAll, why)) << why;
  EXPECT_FALSE(MatchPattern(p, NodeOf(*model, other), kAcceptAll, why)) << pattern;
  return why;
}

TEST(Matcher, BindsCaptures) {
  const Tried t = Try("g (float[2] x, float[2] z) => (float[2] y) { y = Sub(x, z) }",
                      "(a, b) => (out) { out = Sub(a, b) }", "y");
  ASSERT_TRUE(t.match) << t.why;
  const Match* m = &*t.match;
  EXPECT_EQ(m->values.at("a")->name(), "x");
  EXPECT_EQ(m->values.at("b")->name(), "z");
  EXPECT_EQ(m->values.at("out")->name(), "y");
  EXPECT_EQ(m->input_order[0], (std::vector<int>{0, 1}));
}

TEST(Matcher, OpMismatchSaysWhy) {
  EXPECT_EQ(
      WhyNot("g (float[2] x) => (float[2] y) { y = Relu(x) }", "(a) => (out) { out = Neg(a) }"),
      "Relu (output 'y') is not Neg");
}

TEST(Matcher, InputCountMismatch) {
  EXPECT_EQ(
      WhyNot("g (float[2] x, float[2] lo, float[2] hi) => (float[2] y) { y = Clip(x, lo, hi) }",
             "(a) => (out) { out = Clip(a) }"),
      "Clip (output 'y') has 3 inputs, pattern wants 1");
}

TEST(Matcher, CommutativeTriesBothOrders) {
  // The pattern wants the Cast first; the model has it second.
  const Tried t =
      Try("g (float[2] x, float16[2] h) => (float[2] y) { c = Cast<to = 1>(h)  y = Add(x, c) }",
          "(float16 a, b) => (out) { t = Cast(a)  out = Add(t, b) }", "y");
  ASSERT_TRUE(t.match) << t.why;
  const Match* m = &*t.match;
  EXPECT_EQ(m->values.at("a")->name(), "h");
  EXPECT_EQ(m->values.at("b")->name(), "x");
  EXPECT_EQ(m->input_order[t.pattern.root], (std::vector<int>{1, 0}));
}

TEST(Matcher, NonCommutativeDoesNotSwap) {
  EXPECT_EQ(
      WhyNot("g (float[2] x, float16[2] h) => (float[2] y) { c = Cast<to = 1>(h)  y = Sub(x, c) }",
             "(a, b) => (out) { t = Cast(a)  out = Sub(t, b) }"),
      "'x' is not produced by a node (pattern wants Cast)");
}

TEST(Matcher, RepeatedCaptureMustBeTheSameValue) {
  const std::string model = R"(g (float[2] x, float[2] z) => (float[2] y, float[2] w) {
    r = Relu(x)
    y = Mul(r, x)
    w = Mul(r, z)
  })";
  const std::string why =
      WhyOnlyOne(model, "(a) => (out) { t = Relu(a)  out = Mul(t, a) }", "y", "w");
  // Both orders of the commutative Mul fail, each for its own reason.
  EXPECT_NE(why.find("'a' is bound to 'x' but this input is 'z'"), std::string::npos) << why;
}

TEST(Matcher, VariadicBindsTheRest) {
  const Tried t = Try(
      "g (float[2] p, float[2] q, float[2] r) => (float[6] y) { y = Concat<axis = 0>(p, q, r) }",
      "(a, rest) => (out) { out = Concat(a, rest) }", "y", {"rest"});
  ASSERT_TRUE(t.match) << t.why;
  const Match* m = &*t.match;
  EXPECT_EQ(m->values.at("a")->name(), "p");
  ASSERT_EQ(m->lists.at("rest").size(), 2u);
  EXPECT_EQ(m->lists.at("rest")[1]->name(), "r");
}

TEST(Matcher, CommutativeVariadicTriesEachPosition) {
  const Tried t =
      Try("g (float[2] p, float[3,2] q, float[2] r) => (float[3,2] y) { y = Sum(p, q, r) }",
          "(float[3,2] a, rest) => (out) { out = Sum(a, rest) }", "y", {"rest"});
  ASSERT_TRUE(t.match) << t.why;
  const Match* m = &*t.match;
  EXPECT_EQ(m->values.at("a")->name(), "q");
  EXPECT_EQ(m->lists.at("rest")[0]->name(), "p");
  EXPECT_EQ(m->input_order[0], (std::vector<int>{1, 0, 2}));
}

TEST(Matcher, AttributeConstraintsAndDefaults) {
  auto model =
      MakeModel(R"(g (float[2,3] x, float[3,4] w, float[4] b) => (float[2,4] y, float[3,2] t) {
    y = Gemm(x, w, b)
    t = Transpose<perm = [1, 0]>(x)
  })");
  std::string why;
  // transA is absent from the node: onnx's default (0) is what it means.
  Pattern gemm = MakePattern("(a, b, c) => (out) { out = Gemm<transA = 0>(a, b, c) }");
  EXPECT_TRUE(MatchPattern(gemm, NodeOf(*model, "y"), kAcceptAll, why, 17)) << why;
  Pattern gemm_t = MakePattern("(a, b, c) => (out) { out = Gemm<transA = 1>(a, b, c) }");
  EXPECT_FALSE(MatchPattern(gemm_t, NodeOf(*model, "y"), kAcceptAll, why, 17));
  EXPECT_EQ(why, "Gemm (output 'y') has transA = 0, pattern wants 1");
  Pattern same = MakePattern("(a) => (out) { out = Transpose<perm = [0, 1]>(a) }");
  EXPECT_FALSE(MatchPattern(same, NodeOf(*model, "t"), kAcceptAll, why, 17));
  EXPECT_EQ(why, "Transpose (output 't') has perm = [1, 0], pattern wants [0, 1]");
}

TEST(Matcher, AttributeCapture) {
  const Tried t = Try("g (float[2,3] x) => (float[3,2] t) { t = Transpose<perm = [1, 0]>(x) }",
                      "(a) => (out) { out = Transpose<perm = @p, other = @q>(a) }", "t");
  ASSERT_TRUE(t.match) << t.why;
  const Match* m = &*t.match;
  EXPECT_EQ(m->attributes.at("p").ints_size(), 2);
  EXPECT_EQ(m->attributes.count("q"), 0u);  // absent attributes are not bound
}

TEST(Matcher, DeclaredTypesAndShapes) {
  const std::string model =
      "g (float[4,3] x, float[3] v, float[4] u) => (float[4,3] y, float[4,3] z) "
      "{ y = Add(x, v)  z = Add(x, u) }";
  const std::string why =
      WhyOnlyOne(model, "(float[N, M] a, float[M] b) => (out) { out = Add(a, b) }", "y", "z");
  EXPECT_NE(why.find("dim 0 of 'u' is 4 but 'M' is 3"), std::string::npos) << why;
  const std::string typed = WhyNot(model, "(float16 a, b) => (out) { out = Add(a, b) }");
  EXPECT_NE(typed.find("'x' (pattern 'a') is float, pattern wants float16"), std::string::npos)
      << typed;
}

TEST(Matcher, UnknownRankFailsAShapeConstraint) {
  EXPECT_EQ(WhyNot("g (float[] x, float[] z) => (y) { y = Sub(x, z) }",
                   "(float[N] a, b) => (out) { out = Sub(a, b) }"),
            "rank of 'x' is unknown");
}

TEST(Matcher, PatternConstants) {
  const std::string model = R"(g (float[3] x) => (float[3] y, float[3] z)
      <float[3] ones = {1, 1, 1}, float[3] other = {1, 2, 1}> {
    y = Mul(x, ones)
    z = Mul(x, other)
  })";
  const std::string why = WhyOnlyOne(
      model, "(a) => (out) { one = Constant<value_float = 1.0>()  out = Mul(a, one) }", "y", "z");
  EXPECT_NE(why.find("constant 'other' differs from pattern 'one'"), std::string::npos) << why;
}

TEST(Matcher, AcceptDecidesAndExplains) {
  auto model = MakeModel("g (float[2] x, float[2] z) => (float[2] y) { y = Add(x, z) }");
  Pattern p = MakePattern("(a, b) => (out) { out = Add(a, b) }");
  int calls = 0;
  AcceptFn reject = [&](const Match& m, std::string& why) {
    ++calls;
    why = "no thanks: a is " + m.values.at("a")->name();
    return false;
  };
  std::string why;
  EXPECT_FALSE(MatchPattern(p, NodeOf(*model, "y"), reject, why));
  EXPECT_EQ(calls, 2);  // both orders
  EXPECT_EQ(why, "no thanks: a is x; no thanks: a is z");
  AcceptFn second = [](const Match& m, std::string&) { return m.values.at("a")->name() == "z"; };
  auto m = MatchPattern(p, NodeOf(*model, "y"), second, why);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->values.at("b")->name(), "x");
}

TEST(Matcher, IsConstantValue) {
  auto model = MakeModel(R"(g (float[3] x, float[3] over = {1, 2, 3}) => (float[3] y)
      <float[3] w = {1, 2, 3}> {
    c = Constant<value = float[3] {1, 2, 3}>()
    a = Add(x, w)
    b = Add(a, c)
    y = Add(b, over)
  })");
  const Graph& g = model->graph();
  EXPECT_TRUE(IsConstant(g.FindValue("w")));
  EXPECT_TRUE(IsConstant(g.FindValue("c")));
  EXPECT_FALSE(IsConstant(g.FindValue("x")));
  EXPECT_FALSE(IsConstant(g.FindValue("a")));
  auto data = ConstantValue(g.FindValue("c"));
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->numel(), 3);
}

}  // namespace
}  // namespace ovfix::rules
