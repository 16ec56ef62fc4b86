// The helpers that keep quoted text on one line: other tools' messages condensed, names from
// the model escaped.
#include "ir/message_text.h"

#include "gtest/gtest.h"

namespace ovfix {
namespace {

TEST(MessageText, CondensedJoinsLinesWithOneSpace) {
  EXPECT_EQ(Condensed("Node (n) has input size 1.\n\n==> Context: Bad node spec\n"),
            "Node (n) has input size 1. ==> Context: Bad node spec");
  EXPECT_EQ(Condensed("a  \r\n\t  b"), "a b");
  EXPECT_EQ(Condensed("one line"), "one line");
}

TEST(MessageText, ControlCharactersAreEscaped) {
  EXPECT_EQ(EscapeControlCharacters("a\nb\tc\rd\x1b[31m\x7f\x01"),
            "a\\nb\\tc\\rd\\x1b[31m\\x7f\\x01");
  EXPECT_EQ(EscapeControlCharacters("caf\xc3\xa9 'x'"), "caf\xc3\xa9 'x'");  // UTF-8 stays
}

}  // namespace
}  // namespace ovfix
