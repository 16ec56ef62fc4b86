// Tests of StringNormalizer and TfIdfVectorizer (exec/cpu/string_ops.cc), worked by hand.
#include <cstdint>
#include <string>
#include <vector>

#include "exec/kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/math_test_util.h"

namespace ovfix::exec::math_testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Strings(std::vector<int64_t> dims, std::vector<std::string> s) {
  return Tensor(std::move(dims), std::move(s));
}

TEST(StringNormalizerTest, StopwordsWithoutCaseThenUpper) {
  auto out =
      RunNode("StringNormalizer", 10, {Strings({4}, {"Monday", "tuesday", "MONDAY", "x"})},
              {StringsAttr("stopwords", {"monday"}), StringAttr("case_change_action", "UPPER")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), std::vector<int64_t>{2});
  EXPECT_THAT((*out)[0].strings(), ElementsAre("TUESDAY", "X"));
}

TEST(StringNormalizerTest, CaseSensitiveStopwordsThenLower) {
  auto out = RunNode("StringNormalizer", 10, {Strings({1, 3}, {"Monday", "monday", "Tuesday"})},
                     {StringsAttr("stopwords", {"monday"}), IntAttr("is_case_sensitive", 1),
                      StringAttr("case_change_action", "LOWER")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_THAT((*out)[0].strings(), ElementsAre("monday", "tuesday"));
}

TEST(StringNormalizerTest, NothingLeftIsOneEmptyString) {
  auto flat = RunNode("StringNormalizer", 10, {Strings({1}, {"monday"})},
                      {StringsAttr("stopwords", {"monday"})});
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ((*flat)[0].dims(), std::vector<int64_t>{1});
  EXPECT_THAT((*flat)[0].strings(), ElementsAre(""));
  auto row = RunNode("StringNormalizer", 10, {Strings({1, 1}, {"monday"})},
                     {StringsAttr("stopwords", {"monday"})});
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ((*row)[0].dims(), (std::vector<int64_t>{1, 1}));
}

TEST(StringNormalizerTest, RefusesTwoRowsAndABadAction) {
  auto rows = RunNode("StringNormalizer", 10, {Strings({2, 1}, {"a", "b"})}, {});
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(rows.status().message(), HasSubstr("[1, C]"));
  auto action = RunNode("StringNormalizer", 10, {Strings({1}, {"a"})},
                        {StringAttr("case_change_action", "TITLE")});
  ASSERT_FALSE(action.ok());
}

// The pool: unigrams 1 and 3, bigrams (1, 2) and (1, 3), at outputs 0..3. In [1, 2, 1, 2, 3]
// 1 occurs twice, 3 once, (1, 2) twice next to each other, and (1, 3) once two apart (skip 1).
std::vector<onnx::AttributeProto> Pool(const std::string& mode, int64_t max_skip) {
  return {IntAttr("min_gram_length", 1),
          IntAttr("max_gram_length", 2),
          IntAttr("max_skip_count", max_skip),
          StringAttr("mode", mode),
          IntsAttr("ngram_counts", {0, 2}),
          IntsAttr("ngram_indexes", {0, 1, 2, 3}),
          IntsAttr("pool_int64s", {1, 3, 1, 2, 1, 3}),
          FloatsAttr("weights", {0.5, 1, 2, 4})};
}

Tensor Row() { return Tensor::FromVector<int64_t>(DataType::kInt64, {5}, {1, 2, 1, 2, 3}); }

// The pool's four outputs for Row() in each mode, counted by hand.
struct Counted {
  std::string mode;
  int64_t max_skip;
  std::vector<double> expected;
  std::string why;
};

void ExpectCounted(const std::vector<Counted>& cases) {
  for (const Counted& c : cases) {
    auto out = RunNode("TfIdfVectorizer", 9, {Row()}, Pool(c.mode, c.max_skip));
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], {4}, c.expected, 0, c.mode + ": " + c.why);
  }
}

TEST(TfIdfVectorizerTest, TermFrequencyWithAndWithoutSkips) {
  ExpectCounted({{"TF", 0, {2, 1, 2, 0}, "skip 0"},
                 {"TF", 1, {2, 1, 2, 1}, "skips find (1, 3) and count no unigram twice"}});
}

TEST(TfIdfVectorizerTest, WeightedModes) {
  ExpectCounted({{"IDF", 0, {0.5, 1, 2, 0}, "the weight where counted"},
                 {"TFIDF", 1, {1, 1, 4, 4}, "count times weight"}});
}

TEST(TfIdfVectorizerTest, StringsInRows) {
  std::vector<onnx::AttributeProto> attributes = {
      IntAttr("min_gram_length", 2),
      IntAttr("max_gram_length", 2),
      IntAttr("max_skip_count", 0),
      StringAttr("mode", "TF"),
      IntsAttr("ngram_counts", {0, 0}),
      IntsAttr("ngram_indexes", {0, 1}),
      StringsAttr("pool_strings", {"a", "b", "b", "c"})};
  auto out =
      RunNode("TfIdfVectorizer", 9, {Strings({2, 3}, {"a", "b", "c", "b", "c", "d"})}, attributes);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {2, 2}, {1, 1, 0, 1}, 0, "rows ab bc / bc cd");
}

TEST(TfIdfVectorizerTest, RefusesAPoolThatDoesNotDivide) {
  std::vector<onnx::AttributeProto> attributes = Pool("TF", 0);
  attributes[4] = IntsAttr("ngram_counts", {0, 3});  // 3 bigram entries: not whole bigrams
  auto out = RunNode("TfIdfVectorizer", 9, {Row()}, attributes);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("ngram_counts"));
}

}  // namespace
}  // namespace ovfix::exec::math_testing
