// Expressions of `where`/`let` clauses and the helpers they call, on literals and on the
// values of a small model.
#include "rules/expression.h"

#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"

namespace ovfix::rules {
namespace {

class ExpressionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = ParseModelText(R"(<ir_version: 8, opset_import: ["" : 15]>
      g (float[1,3,1,5] x, float[N,3] d) => (float[3,5] y, float[N,3] z)
          <float[2] c = {1, 2}> {
        y = Squeeze(x)
        z = Relu(d)
      })");
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    ASSERT_TRUE(InferShapes(*model_).ok());
  }

  absl::StatusOr<HelperValue> Eval(const std::string& text) {
    Expr e;
    TextError error;
    if (!ParseExpression(text, 1, 1, e, error)) {
      return absl::InvalidArgumentError(
          absl::StrCat(error.line, ":", error.column, ": ", error.message));
    }
    const Graph& g = model_->graph();
    NameLookup lookup = [&](const std::string& name) -> absl::StatusOr<HelperValue> {
      if (Value* v = g.FindValue(name)) return v;
      return absl::FailedPreconditionError("unbound " + name);
    };
    return Evaluate(e, lookup, HelperContext{*model_, nullptr});
  }
  std::string Show(const std::string& text) {
    auto v = Eval(text);
    return v.ok() ? DescribeHelperValue(*v) : std::string(v.status().message());
  }

  std::unique_ptr<Model> model_;
};

TEST_F(ExpressionTest, ArithmeticAndPrecedence) {
  EXPECT_EQ(Show("1 + 2 * 3"), "7");
  EXPECT_EQ(Show("(1 + 2) * 3"), "9");
  EXPECT_EQ(Show("7 / 2"), "3");
  EXPECT_EQ(Show("7 % 4"), "3");
  EXPECT_EQ(Show("-2 + 1.5"), "-0.5");
  EXPECT_EQ(Show("1 < 2 && 2 <= 2 && !(3 == 4)"), "true");
  EXPECT_EQ(Show("[1, 2] == [1, 2]"), "true");
  EXPECT_EQ(Show("\"a\" != \"b\""), "true");
  EXPECT_EQ(Show("1 / 0"), "1 / 0: division by zero");
}

TEST_F(ExpressionTest, ShortCircuit) {
  // The right side would fail (no such value): && and || do not evaluate it.
  EXPECT_EQ(Show("false && rank(nothing) == 1"), "false");
  EXPECT_EQ(Show("true || rank(nothing) == 1"), "true");
  EXPECT_EQ(Show("true && rank(nothing) == 1"), "unbound nothing");
}

TEST_F(ExpressionTest, ParseErrorsHavePositions) {
  EXPECT_EQ(Show("rank(x) <"), "1:10: expected an expression");
  EXPECT_EQ(Show("rank(x"), "1:7: expected ',' or ')'");
  EXPECT_EQ(Show("\"open"), "1:1: unterminated string");
  EXPECT_EQ(Show("1 $ 2"), "1:3: unexpected '$'");
}

TEST_F(ExpressionTest, ValueHelpers) {
  EXPECT_EQ(Show("rank(x)"), "4");
  EXPECT_EQ(Show("shape(x)"), "[1, 3, 1, 5]");
  EXPECT_EQ(Show("dim(x, -1)"), "5");
  EXPECT_EQ(Show("dim(d, 0)"), "dim 0 of 'd' is unknown");
  EXPECT_EQ(Show("shape(d)"), "shape of 'd' is not static");
  EXPECT_EQ(Show("squeeze_axes(x)"), "[0, 2]");
  EXPECT_EQ(Show("removed_axes(x, y)"), "[0, 2]");
  EXPECT_EQ(Show("inserted_axes(y, x)"), "[0, 2]");
  EXPECT_EQ(Show("leading_axes(c, 3)"), "[0, 1]");
  EXPECT_EQ(Show("dtype(x)"), "\"float\"");
  EXPECT_EQ(Show("is_constant(c)"), "true");
  EXPECT_EQ(Show("is_constant(x)"), "false");
  EXPECT_EQ(Show("value(c)"), "[1, 2]");
  EXPECT_EQ(Show("constant_with_rank(c, 3)"), "'c' as float[1,1,2]");
  EXPECT_EQ(Show("constant_expanded(c, [3, 2])"), "'c' as float[3,2]");
  EXPECT_EQ(Show("constant_expanded(c, [3, 4])"), "constant dim 2 does not broadcast to 4");
  EXPECT_EQ(Show("single_use(x)"), "true");
  EXPECT_EQ(Show("is_graph_output(y)"), "true");
  EXPECT_EQ(Show("opset()"), "15");
  EXPECT_EQ(Show("opset(\"com.microsoft\")"), "-1");
  EXPECT_EQ(Show("rank(3)"), "rank: argument 1 must be a value of the match, not 3");
}

TEST_F(ExpressionTest, NodeHelpers) {
  EXPECT_EQ(Show("op_matches(y, \"^Sq\")"), "true");
  EXPECT_EQ(Show("name_matches(y, \"conv\")"), "false");
  EXPECT_EQ(Show("name_matches(y, \"(\")"), "name_matches: bad regex '(': missing ): (");
  EXPECT_EQ(Show("has_attr(y, \"axes\")"), "false");
  EXPECT_EQ(Show("attr(y, \"axes\")"), "Squeeze (output 'y') has no attribute 'axes'");
  EXPECT_EQ(Show("num_outputs(y)"), "1");
  EXPECT_EQ(Show("broadcast_rank(z)"), "2");
  EXPECT_EQ(Show("op_matches(x, \"a\")"), "'x' is not produced by a node");
}

TEST_F(ExpressionTest, ExactCasts) {
  EXPECT_EQ(Show("is_exact_cast(\"float16\", \"float\")"), "true");
  EXPECT_EQ(Show("is_exact_cast(\"float\", \"float16\")"), "false");
  EXPECT_EQ(Show("is_exact_cast(\"uint8\", \"float16\")"), "true");
  EXPECT_EQ(Show("is_exact_cast(\"int16\", \"float16\")"), "false");
  EXPECT_EQ(Show("is_exact_cast(\"int32\", \"float\")"), "false");
  EXPECT_EQ(Show("is_exact_cast(\"int32\", \"double\")"), "true");
  EXPECT_EQ(Show("is_exact_cast(\"int32\", \"int64\")"), "true");
  EXPECT_EQ(Show("is_exact_cast(\"uint32\", \"int32\")"), "false");
  EXPECT_EQ(Show("is_exact_cast(\"bool\", \"float16\")"), "true");
  EXPECT_EQ(Show("is_exact_cast(10, 1)"), "true");
  EXPECT_EQ(Show("type_name(10)"), "\"float16\"");
  EXPECT_EQ(Show("is_exact_cast(\"flaot\", 1)"), "is_exact_cast: unknown type 'flaot'");
}

TEST_F(ExpressionTest, Lists) {
  EXPECT_EQ(Show("range(3)"), "[0, 1, 2]");
  EXPECT_EQ(Show("ones(2)"), "[1, 1]");
  EXPECT_EQ(Show("normalize_axes([-1, 0], 3)"), "[2, 0]");
  EXPECT_EQ(Show("normalize_axes([3], 3)"), "axis 3 is out of range for rank 3");
  EXPECT_EQ(Show("contains([1, -1], -1)"), "true");
  EXPECT_EQ(Show("len([4, 5, 6])"), "3");
  EXPECT_EQ(Show("max(1, 7, 3) - min(4, 2)"), "5");
}

TEST_F(ExpressionTest, HelperSignaturesComeFromTheirFunctions) {
  // Arity from the C++ parameters: optional ones last, a leading HelperContext not counted.
  const Helper* dim = FindHelper("dim");
  ASSERT_NE(dim, nullptr);
  EXPECT_EQ(dim->min_args, 2);
  EXPECT_EQ(dim->max_args, 2);
  const Helper* opset = FindHelper("opset");
  ASSERT_NE(opset, nullptr);
  EXPECT_EQ(opset->min_args, 0);
  EXPECT_EQ(opset->max_args, 1);
  const Helper* attr = FindHelper("attr");
  ASSERT_NE(attr, nullptr);
  EXPECT_EQ(attr->min_args, 2);
  EXPECT_EQ(attr->max_args, 2);
  // Argument conversions name the helper, the argument and the kind it must be.
  EXPECT_EQ(Show("dim(x, \"a\")"), "dim: argument 2 must be an integer, not \"a\"");
  EXPECT_EQ(Show("has_attr(x, 3)"), "has_attr: argument 2 must be a string, not 3");
  EXPECT_EQ(Show("normalize_axes(1, 2)"),
            "normalize_axes: argument 1 must be a list of integers, not 1");
  EXPECT_EQ(Show("len(3)"), "len: argument 1 must be a list of integers, not 3");
  EXPECT_EQ(Show("type_name(99)"), "type_name: unknown type code 99");
  // The first bad argument is the one named.
  EXPECT_EQ(Show("same_graph(1, 2)"), "same_graph: argument 1 must be a value of the match, not 1");
}

TEST_F(ExpressionTest, ConditionsExplainWhatWasFalse) {
  Expr e;
  TextError error;
  ASSERT_TRUE(ParseExpression("rank(x) > 2 && rank(z) > 2", 1, 1, e, error));
  const Graph& g = model_->graph();
  NameLookup lookup = [&](const std::string& name) -> absl::StatusOr<HelperValue> {
    return g.FindValue(name);
  };
  std::string why;
  EXPECT_FALSE(EvaluateCondition(e, lookup, HelperContext{*model_, nullptr}, why));
  EXPECT_EQ(why, "rank(z) > 2 is false: 2 > 2");
}

}  // namespace
}  // namespace ovfix::rules
