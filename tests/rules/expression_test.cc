// Expressions of `where`/`let` clauses and the helpers they call, on literals and on the
// values of a small model.
#include "rules/expression.h"

#include <span>

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

  // Each expression shows as expected: its value, or the one-line error it evaluates to.
  struct Shown {
    std::string expression, expected;
  };
  void ExpectShown(std::span<const Shown> table) {
    for (const Shown& row : table) EXPECT_EQ(Show(row.expression), row.expected) << row.expression;
  }

  std::unique_ptr<Model> model_;
};

TEST_F(ExpressionTest, ArithmeticAndPrecedence) {
  const Shown table[] = {{"1 + 2 * 3", "7"},
                         {"(1 + 2) * 3", "9"},
                         {"7 / 2", "3"},
                         {"7 % 4", "3"},
                         {"-2 + 1.5", "-0.5"},
                         {"1 < 2 && 2 <= 2 && !(3 == 4)", "true"},
                         {"[1, 2] == [1, 2]", "true"},
                         {"\"a\" != \"b\"", "true"},
                         {"1 / 0", "1 / 0: division by zero"}};
  ExpectShown(table);
}

TEST_F(ExpressionTest, ShortCircuit) {
  // The right side would fail (no such value): && and || do not evaluate it.
  const Shown table[] = {{"false && rank(nothing) == 1", "false"},
                         {"true || rank(nothing) == 1", "true"},
                         {"true && rank(nothing) == 1", "unbound nothing"}};
  ExpectShown(table);
}

TEST_F(ExpressionTest, ParseErrorsHavePositions) {
  const Shown table[] = {{"rank(x) <", "1:10: expected an expression"},
                         {"rank(x", "1:7: expected ',' or ')'"},
                         {"\"open", "1:1: unterminated string"},
                         {"1 $ 2", "1:3: unexpected '$'"}};
  ExpectShown(table);
}

TEST_F(ExpressionTest, ValueHelpers) {
  const Shown table[] = {{"rank(x)", "4"},
                         {"shape(x)", "[1, 3, 1, 5]"},
                         {"dim(x, -1)", "5"},
                         {"dim(d, 0)", "dim 0 of 'd' is unknown"},
                         {"shape(d)", "shape of 'd' is not static"},
                         {"squeeze_axes(x)", "[0, 2]"},
                         {"removed_axes(x, y)", "[0, 2]"},
                         {"inserted_axes(y, x)", "[0, 2]"},
                         {"leading_axes(c, 3)", "[0, 1]"},
                         {"dtype(x)", "\"float\""},
                         {"is_constant(c)", "true"},
                         {"is_constant(x)", "false"},
                         {"value(c)", "[1, 2]"},
                         {"constant_with_rank(c, 3)", "'c' as float[1,1,2]"},
                         {"constant_expanded(c, [3, 2])", "'c' as float[3,2]"},
                         {"constant_expanded(c, [3, 4])", "constant dim 2 does not broadcast to 4"},
                         {"single_use(x)", "true"},
                         {"is_graph_output(y)", "true"},
                         {"opset()", "15"},
                         {"opset(\"com.microsoft\")", "-1"},
                         {"rank(3)", "rank: argument 1 must be a value of the match, not 3"}};
  ExpectShown(table);
}

TEST_F(ExpressionTest, NodeHelpers) {
  const Shown table[] = {{"op_matches(y, \"^Sq\")", "true"},
                         {"name_matches(y, \"conv\")", "false"},
                         {"name_matches(y, \"(\")", "name_matches: bad regex '(': missing ): ("},
                         {"has_attr(y, \"axes\")", "false"},
                         {"attr(y, \"axes\")", "Squeeze (output 'y') has no attribute 'axes'"},
                         {"num_outputs(y)", "1"},
                         {"broadcast_rank(z)", "2"},
                         {"op_matches(x, \"a\")", "'x' is not produced by a node"}};
  ExpectShown(table);
}

TEST_F(ExpressionTest, ExactCasts) {
  const Shown table[] = {{"is_exact_cast(\"float16\", \"float\")", "true"},
                         {"is_exact_cast(\"float\", \"float16\")", "false"},
                         {"is_exact_cast(\"uint8\", \"float16\")", "true"},
                         {"is_exact_cast(\"int16\", \"float16\")", "false"},
                         {"is_exact_cast(\"int32\", \"float\")", "false"},
                         {"is_exact_cast(\"int32\", \"double\")", "true"},
                         {"is_exact_cast(\"int32\", \"int64\")", "true"},
                         {"is_exact_cast(\"uint32\", \"int32\")", "false"},
                         {"is_exact_cast(\"bool\", \"float16\")", "true"},
                         {"is_exact_cast(10, 1)", "true"},
                         {"type_name(10)", "\"float16\""},
                         {"is_exact_cast(\"flaot\", 1)", "is_exact_cast: unknown type 'flaot'"}};
  ExpectShown(table);
}

TEST_F(ExpressionTest, Lists) {
  const Shown table[] = {{"range(3)", "[0, 1, 2]"},
                         {"ones(2)", "[1, 1]"},
                         {"normalize_axes([-1, 0], 3)", "[2, 0]"},
                         {"normalize_axes([3], 3)", "axis 3 is out of range for rank 3"},
                         {"contains([1, -1], -1)", "true"},
                         {"len([4, 5, 6])", "3"},
                         {"max(1, 7, 3) - min(4, 2)", "5"}};
  ExpectShown(table);
}

TEST_F(ExpressionTest, HelperSignaturesComeFromTheirFunctions) {
  // Arity from the C++ parameters: optional ones last, a leading HelperContext not counted.
  struct Arity {
    std::string helper;
    int min_args, max_args;
  };
  for (const Arity& a : {Arity{"dim", 2, 2}, Arity{"opset", 0, 1}, Arity{"attr", 2, 2}}) {
    const Helper* helper = FindHelper(a.helper);
    ASSERT_NE(helper, nullptr) << a.helper;
    EXPECT_EQ(helper->min_args, a.min_args) << a.helper;
    EXPECT_EQ(helper->max_args, a.max_args) << a.helper;
  }
  // Argument conversions name the helper, the argument and the kind it must be; the first
  // bad argument is the one named.
  const Shown table[] = {
      {"dim(x, \"a\")", "dim: argument 2 must be an integer, not \"a\""},
      {"has_attr(x, 3)", "has_attr: argument 2 must be a string, not 3"},
      {"normalize_axes(1, 2)", "normalize_axes: argument 1 must be a list of integers, not 1"},
      {"len(3)", "len: argument 1 must be a list of integers, not 3"},
      {"type_name(99)", "type_name: unknown type code 99"},
      {"same_graph(1, 2)", "same_graph: argument 1 must be a value of the match, not 1"}};
  ExpectShown(table);
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
