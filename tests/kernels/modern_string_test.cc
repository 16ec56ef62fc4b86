// Tests of exec/cpu/modern_string_ops.cc (RegexFullMatch-20, StringConcat-20, StringSplit-20),
// worked by hand; the StringSplit cases include the examples of the ONNX operator docs.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Tensor Strings(Dims dims, std::vector<std::string> s) {
  return Tensor(std::move(dims), std::move(s));
}

std::vector<bool> Bools(const Tensor& t) {
  EXPECT_EQ(t.type(), DataType::kBool);
  const bool* p = t.data<bool>();
  return std::vector<bool>(p, p + t.numel());
}

std::vector<int64_t> Int64Values(const Tensor& t) {
  EXPECT_EQ(t.type(), DataType::kInt64);
  const int64_t* p = t.data<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

// ---- RegexFullMatch ----

// The docs' example "basic": a full match, so "www.bbc.co.uk" (no "com") fails, and so does
// "www.google.com.au", which a partial match would accept.
TEST(RegexFullMatchTest, Basic) {
  auto out = RunOp(
      "RegexFullMatch", 20,
      {Strings({4}, {"www.google.com", "www.facebook.com", "www.bbc.co.uk", "www.google.com.au"})},
      {StringAttr("pattern", R"(www\.[\w.-]+\.\bcom\b)")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), Dims{4});
  EXPECT_THAT(Bools((*out)[0]), ElementsAre(true, true, false, false));
}

// The docs' examples "match_email_domain" ([2, 2]) and "match_empty" ([2, 0]).
TEST(RegexFullMatchTest, EmailDomainAndEmptyInput) {
  const std::string pattern = R"((\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$))";
  auto out = RunOp("RegexFullMatch", 20,
                   {Strings({2, 2}, {"account@gmail.com", "account@hotmail.com", "not email",
                                     "account2@yahoo.com"})},
                   {StringAttr("pattern", pattern)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{2, 2}));
  EXPECT_THAT(Bools((*out)[0]), ElementsAre(true, false, false, true));
  auto none = RunOp("RegexFullMatch", 20, {Strings({2, 0}, {})}, {StringAttr("pattern", pattern)});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].dims(), (Dims{2, 0}));
  EXPECT_EQ((*none)[0].type(), DataType::kBool);
  // An empty pattern matches the empty string only.
  auto empty = RunOp("RegexFullMatch", 20, {Strings({2}, {"", "a"})}, {StringAttr("pattern", "")});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(Bools((*empty)[0]), ElementsAre(true, false));
}

TEST(RegexFullMatchTest, ScalarAndEmptyTensors) {
  auto scalar =
      RunOp("RegexFullMatch", 20, {Strings({}, {"abc123"})}, {StringAttr("pattern", "[a-z]+\\d+")});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ((*scalar)[0].dims(), Dims{});
  EXPECT_THAT(Bools((*scalar)[0]), ElementsAre(true));
  auto none = RunOp("RegexFullMatch", 20, {Strings({0, 3}, {})}, {StringAttr("pattern", "a")});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].dims(), (Dims{0, 3}));
}

TEST(RegexFullMatchTest, CompiledPatternIsKeptInTheNodeState) {
  std::shared_ptr<void> state;
  NodeRun run;
  run.state = &state;
  for (int i = 0; i < 2; ++i) {
    auto out = RunNode("RegexFullMatch", 20, {Strings({2}, {"ab", "ba"})},
                       {StringAttr("pattern", "a.")}, run);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Bools((*out)[0]), ElementsAre(true, false));
    EXPECT_NE(state, nullptr);
  }
}

TEST(RegexFullMatchTest, RefusesABadPatternAndNonStrings) {
  auto bad = RunOp("RegexFullMatch", 20, {Strings({1}, {"a"})}, {StringAttr("pattern", "(a")});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("not a valid RE2 regex"));
  auto missing = RunOp("RegexFullMatch", 20, {Strings({1}, {"a"})}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("pattern"));
  auto numbers = RunOp("RegexFullMatch", 20, {Int64s({1}, {1})}, {StringAttr("pattern", "1")});
  ASSERT_FALSE(numbers.ok());
  EXPECT_THAT(numbers.status().message(), HasSubstr("string tensor"));
}

// ---- StringConcat ----

// The docs' examples: same shapes, a [1] operand broadcast, empty strings, UTF-8 and
// 0-dimensional operands.
TEST(StringConcatTest, DocsExamples) {
  auto same =
      RunOp("StringConcat", 20, {Strings({2}, {"abc", "def"}), Strings({2}, {".com", ".net"})});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ((*same)[0].dims(), Dims{2});
  EXPECT_THAT((*same)[0].strings(), ElementsAre("abc.com", "def.net"));
  auto broadcast =
      RunOp("StringConcat", 20, {Strings({2}, {"abc", "def"}), Strings({1}, {".com"})});
  ASSERT_TRUE(broadcast.ok()) << broadcast.status();
  EXPECT_EQ((*broadcast)[0].dims(), Dims{2});
  EXPECT_THAT((*broadcast)[0].strings(), ElementsAre("abc.com", "def.com"));
  auto empty = RunOp("StringConcat", 20, {Strings({2}, {"abc", ""}), Strings({2}, {"", "abc"})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT((*empty)[0].strings(), ElementsAre("abc", "abc"));
  // "的" and "中" (3 bytes each in UTF-8) doubled.
  auto utf8 = RunOp("StringConcat", 20,
                    {Strings({2}, {"\xE7\x9A\x84", "\xE4\xB8\xAD"}),
                     Strings({2}, {"\xE7\x9A\x84", "\xE4\xB8\xAD"})});
  ASSERT_TRUE(utf8.ok()) << utf8.status();
  EXPECT_THAT((*utf8)[0].strings(),
              ElementsAre("\xE7\x9A\x84\xE7\x9A\x84", "\xE4\xB8\xAD\xE4\xB8\xAD"));
  auto scalar = RunOp("StringConcat", 20, {Strings({}, {"abc"}), Strings({}, {"def"})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ((*scalar)[0].dims(), Dims{});
  EXPECT_THAT((*scalar)[0].strings(), ElementsAre("abcdef"));
}

TEST(StringConcatTest, BroadcastsBothWays) {
  // [2, 1] + [3]: row r, column c is x[r] + y[c].
  auto out =
      RunOp("StringConcat", 20, {Strings({2, 1}, {"a", "b"}), Strings({3}, {"1", "2", "3"})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{2, 3}));
  EXPECT_THAT((*out)[0].strings(), ElementsAre("a1", "a2", "a3", "b1", "b2", "b3"));
  // A scalar on the left, and empty strings on either side.
  auto scalar = RunOp("StringConcat", 20, {Strings({}, {"x_"}), Strings({1, 3}, {"", "y", "zz"})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ((*scalar)[0].dims(), (Dims{1, 3}));
  EXPECT_THAT((*scalar)[0].strings(), ElementsAre("x_", "x_y", "x_zz"));
  // [2, 1, 2] + [3, 1]: [2, 3, 2], element (i, j, k) = x[i][k] + y[j].
  auto three = RunOp("StringConcat", 20,
                     {Strings({2, 1, 2}, {"p", "q", "r", "s"}), Strings({3, 1}, {"0", "1", "2"})});
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ((*three)[0].dims(), (Dims{2, 3, 2}));
  EXPECT_THAT((*three)[0].strings(),
              ElementsAre("p0", "q0", "p1", "q1", "p2", "q2", "r0", "s0", "r1", "s1", "r2", "s2"));
}

TEST(StringConcatTest, RefusesShapesThatDoNotBroadcastAndNonStrings) {
  auto shapes =
      RunOp("StringConcat", 20, {Strings({2}, {"a", "b"}), Strings({3}, {"a", "b", "c"})});
  ASSERT_FALSE(shapes.ok());
  EXPECT_THAT(shapes.status().message(), HasSubstr("broadcast"));
  auto numbers = RunOp("StringConcat", 20, {Strings({1}, {"a"}), Int64s({1}, {1})});
  ASSERT_FALSE(numbers.ok());
  EXPECT_THAT(numbers.status().message(), HasSubstr("Y must be a string tensor"));
}

// ---- StringSplit ----

struct Split {
  Tensor pieces;
  Tensor counts;
};

Split RunSplit(const Tensor& x, const std::vector<onnx::AttributeProto>& attributes) {
  auto out = RunOp("StringSplit", 20, {x}, attributes, /*num_outputs=*/2);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  return {(*out)[0], (*out)[1]};
}

// The docs' example "basic": delimiter ".".
TEST(StringSplitTest, Basic) {
  Split s = RunSplit(Strings({2}, {"abc.com", "def.net"}), {StringAttr("delimiter", ".")});
  EXPECT_EQ(s.pieces.dims(), (Dims{2, 2}));
  EXPECT_THAT(s.pieces.strings(), ElementsAre("abc", "com", "def", "net"));
  EXPECT_EQ(s.counts.dims(), Dims{2});
  EXPECT_THAT(Int64Values(s.counts), ElementsAre(2, 2));
}

// The docs' example "maxsplit": whitespace, maxsplit 2, a [2, 2] input. "def.net" has no
// whitespace (one piece); "o n n x" stops after two splits, keeping "n x" whole.
TEST(StringSplitTest, Maxsplit) {
  Split s = RunSplit(Strings({2, 2}, {"hello world", "def.net", "o n n x", "the quick brown fox"}),
                     {IntAttr("maxsplit", 2)});
  EXPECT_EQ(s.pieces.dims(), (Dims{2, 2, 3}));
  EXPECT_THAT(s.pieces.strings(), ElementsAreArray({"hello", "world", "", "def.net", "", "", "o",
                                                    "n", "n x", "the", "quick", "brown fox"}));
  EXPECT_EQ(s.counts.dims(), (Dims{2, 2}));
  EXPECT_THAT(Int64Values(s.counts), ElementsAre(2, 1, 3, 3));
}

// The docs' example "consecutive_delimiters": each "-" delimits, so "--" holds an empty
// string and a trailing "-" ends with one.
TEST(StringSplitTest, ConsecutiveDelimitersDelimitEmptyStrings) {
  Split s = RunSplit(Strings({2}, {"o-n-n--x-", "o-n----nx"}), {StringAttr("delimiter", "-")});
  EXPECT_EQ(s.pieces.dims(), (Dims{2, 6}));
  EXPECT_THAT(s.pieces.strings(),
              ElementsAreArray({"o", "n", "n", "", "x", "", "o", "n", "", "", "", "nx"}));
  EXPECT_THAT(Int64Values(s.counts), ElementsAre(6, 6));
}

// The docs' examples "empty_string_delimiter" and "no_delimiter": runs of whitespace separate
// and leading or trailing whitespace gives no piece.
TEST(StringSplitTest, EmptyOrAbsentDelimiterSplitsOnWhitespaceRuns) {
  const Tensor x = Strings({3}, {"hello world !", "  hello   world !", " hello world   ! "});
  for (const bool given : {true, false}) {
    Split s = RunSplit(x, given ? std::vector<onnx::AttributeProto>{StringAttr("delimiter", "")}
                                : std::vector<onnx::AttributeProto>{});
    EXPECT_EQ(s.pieces.dims(), (Dims{3, 3})) << given;
    EXPECT_THAT(s.pieces.strings(), ElementsAreArray({"hello", "world", "!", "hello", "world", "!",
                                                      "hello", "world", "!"}));
    EXPECT_THAT(Int64Values(s.counts), ElementsAre(3, 3, 3));
  }
}

// The docs' example "empty_string_split": an empty [0] input gives [0, 0] and [0].
TEST(StringSplitTest, EmptyInput) {
  Split s = RunSplit(Strings({0}, {}), {});
  EXPECT_EQ(s.pieces.dims(), (Dims{0, 0}));
  EXPECT_EQ(s.counts.dims(), Dims{0});
}

// Python's str.split: "" and "  \t" give no piece on whitespace but one empty piece on a
// delimiter; tabs and newlines are whitespace too.
TEST(StringSplitTest, EmptyAndBlankStrings) {
  Split ws = RunSplit(Strings({3}, {"", " \t ", "a\tb\nc"}), {});
  EXPECT_EQ(ws.pieces.dims(), (Dims{3, 3}));
  EXPECT_THAT(ws.pieces.strings(), ElementsAreArray({"", "", "", "", "", "", "a", "b", "c"}));
  EXPECT_THAT(Int64Values(ws.counts), ElementsAre(0, 0, 3));
  Split all_blank = RunSplit(Strings({2}, {"", "   "}), {});
  EXPECT_EQ(all_blank.pieces.dims(), (Dims{2, 0}));
  EXPECT_THAT(Int64Values(all_blank.counts), ElementsAre(0, 0));
  Split delimited = RunSplit(Strings({2}, {"", ","}), {StringAttr("delimiter", ",")});
  EXPECT_EQ(delimited.pieces.dims(), (Dims{2, 2}));
  EXPECT_THAT(delimited.pieces.strings(), ElementsAre("", "", "", ""));
  EXPECT_THAT(Int64Values(delimited.counts), ElementsAre(1, 2));
}

// maxsplit 0 splits nothing (on whitespace the leading whitespace still goes); after the last
// split the rest keeps its inner and trailing whitespace, and a rest of whitespace only is
// no piece. A multi-character delimiter is matched whole, left to right.
TEST(StringSplitTest, MaxsplitEdgesAndLongDelimiters) {
  Split zero = RunSplit(Strings({2}, {"  a b ", "a,b"}), {IntAttr("maxsplit", 0)});
  EXPECT_THAT(zero.pieces.strings(), ElementsAre("a b ", "a,b"));
  EXPECT_THAT(Int64Values(zero.counts), ElementsAre(1, 1));
  Split one = RunSplit(Strings({2}, {" a  b  c  ", "a   "}), {IntAttr("maxsplit", 1)});
  EXPECT_EQ(one.pieces.dims(), (Dims{2, 2}));
  EXPECT_THAT(one.pieces.strings(), ElementsAre("a", "b  c  ", "a", ""));
  EXPECT_THAT(Int64Values(one.counts), ElementsAre(2, 1));
  Split negative = RunSplit(Strings({1}, {"a b c"}), {IntAttr("maxsplit", -1)});
  EXPECT_THAT(negative.pieces.strings(), ElementsAre("a", "b", "c"));
  Split long_delimiter = RunSplit(Strings({2}, {"a::b:::c", "::"}),
                                  {StringAttr("delimiter", "::"), IntAttr("maxsplit", 5)});
  // "a::b:::c" -> "a", "b", ":c"; "::" -> "", "".
  EXPECT_EQ(long_delimiter.pieces.dims(), (Dims{2, 3}));
  EXPECT_THAT(long_delimiter.pieces.strings(), ElementsAre("a", "b", ":c", "", "", ""));
  EXPECT_THAT(Int64Values(long_delimiter.counts), ElementsAre(3, 2));
  Split limited =
      RunSplit(Strings({1}, {"a-b-c-d"}), {StringAttr("delimiter", "-"), IntAttr("maxsplit", 2)});
  EXPECT_THAT(limited.pieces.strings(), ElementsAre("a", "b", "c-d"));
}

// A scalar input gives [most pieces] and a scalar count; Z may be left out.
TEST(StringSplitTest, ScalarInputAndOnlyTheFirstOutput) {
  Split s = RunSplit(Strings({}, {"x y"}), {});
  EXPECT_EQ(s.pieces.dims(), Dims{2});
  EXPECT_THAT(s.pieces.strings(), ElementsAre("x", "y"));
  EXPECT_EQ(s.counts.dims(), Dims{});
  EXPECT_THAT(Int64Values(s.counts), ElementsAre(2));
  auto only_y = RunOp("StringSplit", 20, {Strings({1}, {"p;q"})}, {StringAttr("delimiter", ";")});
  ASSERT_TRUE(only_y.ok()) << only_y.status();
  EXPECT_THAT((*only_y)[0].strings(), ElementsAre("p", "q"));
}

TEST(StringSplitTest, RefusesNonStrings) {
  auto out = RunOp("StringSplit", 20, {Int64s({1}, {1})}, {}, 2);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("string tensor"));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
