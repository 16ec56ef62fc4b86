// The rule file parser: what a good file gives, and every error with its exact FILE:LINE:COL.
#include "rules/rule_file.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "rules/embedded_files.h"
#include "rules/rule_set.h"

namespace ovfix::rules {
namespace {

std::string ErrorOf(const std::string& text) {
  auto parsed = ParseRuleFile("f.rules", text);
  EXPECT_FALSE(parsed.ok()) << "parsed without error:\n" << text;
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(RuleFile, ParsesARule) {
  auto parsed = ParseRuleFile("dir/my_rules.rules", R"(# A file comment, not a rule's.

# Relu(Relu(x))  ->  Relu(x)
rule double_relu
  benefit 3
  match   (x) => (y) { t = Relu(x)  y = Relu(t) }   # a trailing comment
  where   rank(x) >= 0 &&
          is_float(x)
  let     r = rank(x)
  replace (x) => (y) { y = Relu(x) }
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->set, "my_rules");
  ASSERT_EQ(parsed->rules.size(), 1u);
  const Rule& rule = *parsed->rules[0];
  EXPECT_EQ(rule.name, "double_relu");
  EXPECT_EQ(rule.algebra, "Relu(Relu(x))  ->  Relu(x)");
  EXPECT_EQ(rule.benefit, 3);
  EXPECT_EQ(rule.line, 4);
  EXPECT_EQ(rule.pattern.nodes.size(), 2u);
  EXPECT_EQ(rule.pattern.root_node().outputs[0], "y");
  ASSERT_EQ(rule.clauses.size(), 2u);
  EXPECT_EQ(rule.clauses[0].kind, Clause::Kind::kWhere);
  EXPECT_EQ(ExprToString(rule.clauses[0].expr), "(rank(x) >= 0) && is_float(x)");
  EXPECT_EQ(rule.clauses[1].name, "r");
  EXPECT_EQ(rule.replacement.nodes.size(), 1u);
}

TEST(RuleFile, ForExpandsOneRulePerOp) {
  auto parsed = ParseRuleFile("f.rules", R"(# Op(x, x) -> Op(x, x)
rule same
  for Op in Add, Mul,
            Sub
  match (x) => (y) { y = Op(x, x) }
  replace (x) => (y) { y = Op(x, x) }
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->rules.size(), 3u);
  EXPECT_EQ(parsed->rules[0]->name, "same.Add");
  EXPECT_EQ(parsed->rules[2]->name, "same.Sub");
  EXPECT_EQ(parsed->rules[2]->family, "same");
  EXPECT_EQ(parsed->rules[2]->pattern.root_node().op_type, "Sub");
  EXPECT_TRUE(parsed->rules[0]->pattern.root_node().commutative);
  EXPECT_FALSE(parsed->rules[2]->pattern.root_node().commutative);
}

TEST(RuleFile, UnknownClause) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  matc (x) => (y) { y = Relu(x) }\n"),
            "f.rules:3:3: unknown clause 'matc' (expected match, where, let, replace, benefit, "
            "for, ops, variadic or any_input)");
}

TEST(RuleFile, OnnxSyntaxErrorInsideTheMatchGraph) {
  // Line 4 misses the ')' of Relu: onnx's parser stops at the '}' on line 5.
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) {\n    y = Relu(x\n  }\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:5:3: Expected character ) not found.");
}

TEST(RuleFile, OnnxSyntaxErrorOnTheFirstLineOfAGraph) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y) { y = Relu(x)) }\n"),
            "f.rules:4:35: Expected character = not found.");
}

TEST(RuleFile, MissingAlgebraComment) {
  EXPECT_EQ(ErrorOf("rule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:1:1: rule 'r' needs an algebra comment: a '#' line right above 'rule'");
}

TEST(RuleFile, UnknownHelper) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  where rank(x) > 1 && rnak(x) == 2\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:4:24: unknown helper 'rnak'");
}

TEST(RuleFile, HelperArity) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  where rank(x, 1) == 2\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:4:9: 'rank' takes 1 arguments, not 2: rank(x) -> int");
}

TEST(RuleFile, NameNotBoundInWhere) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  where rank(q) == 2\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:4:14: 'q' is not bound by the match or an earlier let");
}

TEST(RuleFile, LetUsedBeforeItIsDefined) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  where len(axes) > 0\n"
                    "  let axes = range(2)\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:4:13: 'axes' is not bound by the match or an earlier let");
}

TEST(RuleFile, CaptureUsedInReplaceButNotBound) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y) {\n"
                    "    y = Add(x, z)\n"
                    "  }\n"),
            "f.rules:5:16: 'z' is used in replace but not bound in match or let");
}

TEST(RuleFile, ReplacementCannotReadTheOutputItReplaces) {
  // Found by a rule_file fuzz campaign: the new Neg read the `y` it defines, so after the
  // rewrite a node read a value produced after it.
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y) {\n"
                    "    t = Abs(y)\n"
                    "    y = Neg(t)\n"
                    "  }\n"),
            "f.rules:5:13: 'y' is an output the replacement replaces; a replacement node cannot "
            "read it (read the values it is computed from)");
  // Reading it after a replacement node has produced it is the new value, and fine.
  EXPECT_TRUE(ParseRuleFile("f.rules",
                            "# a\nrule r\n  match (x) => (z, y) { y = Relu(x)  z = Neg(y) }\n"
                            "  replace (x) => (z, y) { y = Abs(x)  z = Neg(y) }\n")
                  .ok());
}

TEST(RuleFile, ReplacementOutputsMustMatchPatternOutputs) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y, z) { y = Relu(x)  z = Neg(x) }\n"),
            "f.rules:4:11: replace has 2 outputs, match has 1: they replace one another in order");
}

TEST(RuleFile, PatternErrors) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x, w) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:3:13: capture 'w' is not used by the pattern");
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(t) }\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:3:31: 't' is neither a pattern input nor produced by a node");
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x)  z = Neg(x) }\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:3:35: node producing 'z' does not feed the pattern's first output 'y'");
}

TEST(RuleFile, VariadicMustBeLast) {
  EXPECT_EQ(
      ErrorOf("# a\nrule r\n  variadic rest\n  match (rest, x) => (y) { y = Concat(rest, x) }\n"
              "  replace (x) => (y) { y = Relu(x) }\n"),
      "f.rules:4:10: variadic 'rest' must be the last input of Concat");
}

TEST(RuleFile, MissingReplace) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"),
            "f.rules:2:1: rule 'r' needs a replace");
}

TEST(RuleFile, UnterminatedGraph) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x)\n"),
            "f.rules:3:3: unterminated graph: missing '}'");
}

TEST(RuleFile, GraphWithoutBraces) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Identity(x) }\n"
                    "  replace (x) => (x)\n"),
            "f.rules:4:21: expected '{': a graph is (inputs) => (outputs) { nodes }");
}

TEST(RuleFile, ExpressionSyntax) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  where rank(x) <\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:4:18: expected an expression");
}

TEST(RuleFile, RegexThatDoesNotCompile) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  where name_matches(y, \"[\")\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:4:25: name_matches: bad regex \"[\": missing ]: [");
  EXPECT_NE(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  where op_matches(y, \"Re(lu\")\n"
                    "  replace (x) => (y) { y = Relu(x) }\n")
                .find("f.rules:4:23: op_matches: bad regex"),
            std::string::npos);
}

// Input controls how deep the parsers recurse: past a fixed depth it is an error, not a
// stack overflow, and a rule at that depth still parses.
std::string RuleWhere(const std::string& condition) {
  return "# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n  where " + condition +
         "\n  replace (x) => (y) { y = Relu(x) }\n";
}

TEST(RuleFile, DeepExpressionsAreAnError) {
  auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  const int deep = 4000;
  for (const std::string& condition :
       {repeat("(", deep) + "true" + repeat(")", deep), repeat("!", 50000) + "true",
        repeat("-", deep) + "1 < 0", repeat("[", deep) + "1" + repeat("]", deep) + " == [1]",
        repeat("len(", deep) + "1" + repeat(")", deep) + " > 0", "true" + repeat(" && true", 50000),
        "1" + repeat(" + 1", 50000) + " > 0"}) {
    const std::string message = ErrorOf(RuleWhere(condition));
    EXPECT_NE(message.find("nested deeper than 200 levels"), std::string::npos)
        << message.substr(0, 200);
  }
  EXPECT_TRUE(ParseRuleFile("f.rules", RuleWhere(repeat("(", 150) + "true" + repeat(")", 150) +
                                                 repeat(" && true", 150)))
                  .ok());
}

TEST(RuleFile, DeepGraphTextIsAnError) {
  std::string nested = "z = Identity(x)";
  for (int i = 0; i < 20000; ++i) {
    nested = "z = If <then_branch = g () => (z) { " + nested + " }> (x)";
  }
  const std::string message = ErrorOf(
      "# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
      "  replace (x) => (y) { y = Relu(x) " +
      nested + " }\n");
  EXPECT_NE(message.find("f.rules:4:"), std::string::npos) << message.substr(0, 200);
  EXPECT_NE(message.find("graph text nested deeper than 200 levels"), std::string::npos);
}

TEST(RuleFile, PatternSizeIsBounded) {
  std::string chain, captures = "t0";
  for (int i = 0; i < 150; ++i) {
    chain += "t" + std::to_string(i + 1) + " = Relu(t" + std::to_string(i) + ") ";
    if (i < 120) captures += ", c" + std::to_string(i);
  }
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (t0) => (t150) { " + chain +
                    "}\n  replace (t0) => (t150) { t150 = Relu(t0) }\n"),
            "f.rules:3:9: the pattern has 150 nodes; at most 100");
  const std::string message = ErrorOf("# a\nrule r\n  match (" + captures + ") => (y) { y = Sum(" +
                                      captures + ") }\n  replace (t0) => (y) { y = Relu(t0) }\n");
  EXPECT_NE(message.find("Sum has 121 inputs in the pattern; at most 100"), std::string::npos)
      << message;
}

TEST(RuleFile, DuplicateRule) {
  const std::string rule =
      "# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
      "  replace (x) => (y) { y = Relu(x) }\n";
  EXPECT_EQ(ErrorOf(rule + "\n" + rule), "f.rules:7:1: rule 'r' is defined twice");
}

TEST(RuleFile, ReportsErrorsOfEveryRule) {
  const std::string message = ErrorOf(
      "# a\nrule r1\n  matc (x) => (y) { y = Relu(x) }\n\n"
      "# b\nrule r2\n  match (x) => (y) { y = Relu(x) }\n  where nope(x)\n"
      "  replace (x) => (y) { y = Relu(x) }\n");
  EXPECT_EQ(message,
            "f.rules:3:3: unknown clause 'matc' (expected match, where, let, replace, benefit, "
            "for, ops, variadic or any_input)\nf.rules:8:9: unknown helper 'nope'");
}

TEST(RuleFile, BuiltinRuleFilesParse) {
  auto sets = LoadBuiltinRuleSets();
  ASSERT_TRUE(sets.ok()) << sets.status();
  std::set<std::string> names;
  for (const auto& set : *sets) {
    names.insert(set.set);
    for (const auto& rule : set.rules) EXPECT_FALSE(rule->algebra.empty()) << rule->name;
  }
  for (const char* expected : {"explicit_broadcast", "squeeze_axes", "reshape_normalization",
                               "conv_normalization", "cast_cleanup", "identity_elimination"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }
}

// Every prefix of every built-in file parses or fails with messages, never crashes.
TEST(RuleFile, TruncatedFilesFailCleanly) {
  for (const auto& file : EmbeddedFiles()) {
    const std::string text(file.contents);
    for (size_t n = 0; n < text.size(); n += 5) {
      auto parsed = ParseRuleFile("cut.rules", text.substr(0, n));
      if (!parsed.ok()) {
        EXPECT_TRUE(absl::StartsWith(parsed.status().message(), "cut.rules:"));
      }
    }
  }
}

TEST(RuleFile, LibrarySelectsBySetFamilyOrName) {
  auto library = RuleLibrary::Load();
  ASSERT_TRUE(library.ok()) << library.status();
  // Two rules over the 24 ops of the `broadcasting` group, and two for Attention's mask.
  EXPECT_EQ(library->Select("explicit_broadcast").size(), 50u);
  EXPECT_EQ(library->Select("explicit_broadcast_unsqueeze").size(), 24u);
  EXPECT_EQ(library->Select("explicit_broadcast_unsqueeze.Add").size(), 1u);
  EXPECT_TRUE(library->Select("no_such_rule").empty());
  Rule rule;
  rule.name = "explicit_broadcast_unsqueeze.Add";
  rule.family = "explicit_broadcast_unsqueeze";
  rule.set = "explicit_broadcast";
  EXPECT_TRUE(IsDisabled(rule, {"explicit_broadcast"}));
  EXPECT_TRUE(IsDisabled(rule, {"explicit_broadcast_unsqueeze"}));
  EXPECT_FALSE(IsDisabled(rule, {"cast_cleanup"}));
}

TEST(RuleFile, OpGroupAsPatternOpIsOneRulePerMemberWithItsVersions) {
  auto parsed = ParseRuleFile("f.rules", R"(# Op(Identity(x), rest...) -> Op(x, rest...)
rule skip
  variadic  rest
  any_input t
  match     (x, rest) => (y) { t = Identity(x)  y = variadic(t, rest) }
  replace   (x, rest) => (y) { y = variadic(x, rest) }
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->rules.size(), 4u);  // Max, Min, Sum, Mean
  const Rule& max = *parsed->rules[0];
  EXPECT_EQ(max.name, "skip.Max");
  EXPECT_EQ(max.pattern.root_node().op_type, "Max");
  EXPECT_EQ(max.replacement.nodes[0].op_type, "Max");
  ASSERT_EQ(max.versions.size(), 1u);
  EXPECT_EQ(max.versions[0].ToString(), "Max 8..");
  EXPECT_EQ(max.pattern.root_node().any_position, std::vector<int>{0});
}

TEST(RuleFile, ForListsAndOpsClauseCarryVersionRanges) {
  auto parsed = ParseRuleFile("f.rules", R"(# Op(x, a) -> Op(x, a)
rule r
  for   Op in Squeeze 13.., Unsqueeze 11..12,
              ReduceSum
  ops   Reshape 5.., com.example.Thing ..3
  match (x, a) => (y) { y = Op(x, a) }
  replace (x, a) => (y) { y = Op(x, a) }
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->rules.size(), 3u);
  auto ranges = [](const Rule& r) {
    std::vector<std::string> out;
    for (const auto& v : r.versions) out.push_back(v.ToString());
    return out;
  };
  EXPECT_EQ(ranges(*parsed->rules[0]),
            (std::vector<std::string>{"Reshape 5..", "com.example.Thing ..3", "Squeeze 13.."}));
  EXPECT_EQ(ranges(*parsed->rules[1]),
            (std::vector<std::string>{"Reshape 5..", "com.example.Thing ..3", "Unsqueeze 11..12"}));
  EXPECT_EQ(ranges(*parsed->rules[2]),
            (std::vector<std::string>{"Reshape 5..", "com.example.Thing ..3"}));
}

constexpr char kGroups[] =
    "arithmetic, comparison, logical, variadic, broadcasting, commutative, unary_math, "
    "activation, reduction";

TEST(RuleFile, UnknownOpGroupInFor) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  for Op in Add, broadcastng\n"
                    "  match (x) => (y) { y = Op(x) }\n  replace (x) => (y) { y = Op(x) }\n"),
            absl::StrCat("f.rules:3:18: unknown op group 'broadcastng' (groups: ", kGroups, ")"));
}

TEST(RuleFile, UnknownOpGroupAsPatternOp) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) {\n    y = unary_maths(x)\n  }\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            absl::StrCat("f.rules:4:9: unknown op group 'unary_maths' (groups: ", kGroups, ")"));
}

TEST(RuleFile, OpGroupsCarryTheirOwnVersions) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  for Op in comparison 13..\n"
                    "  match (x) => (y) { y = Op(x) }\n  replace (x) => (y) { y = Op(x) }\n"),
            "f.rules:3:24: op group 'comparison' carries the versions of its ops: name the ops to "
            "give others");
  EXPECT_EQ(ErrorOf("# a\nrule r\n  ops reduction\n"
                    "  match (x) => (y) { y = Relu(x) }\n  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:3:7: 'ops' gives versions of ops, and 'reduction' is an op group: name its "
            "ops");
}

TEST(RuleFile, BadVersionRanges) {
  auto with_ops = [](const std::string& ops) {
    return ErrorOf("# a\nrule r\n  ops   " + ops +
                   "\n  match (x) => (y) { y = Relu(x) }\n  replace (x) => (y) { y = Relu(x) }\n");
  };
  EXPECT_EQ(with_ops("Squeeze 12.."),
            "f.rules:3:17: Squeeze has no version 12 (its versions are 1, 11, 13, 21, 23, 24, 25)");
  EXPECT_EQ(with_ops("Add 13..7"), "f.rules:3:13: version range 13..7 is empty");
  EXPECT_EQ(with_ops("Add 7-13"),
            "f.rules:3:13: expected a version range N..M, N.. or ..M, not '7-13'");
  EXPECT_EQ(with_ops("Add .."),
            "f.rules:3:13: expected a version range N..M, N.. or ..M, not '..'");
  EXPECT_EQ(with_ops("Add 0.."), "f.rules:3:13: op versions start at 1");
  EXPECT_EQ(with_ops("Relu 6.., Sqeeze 13.."), "f.rules:3:19: unknown op 'Sqeeze'");
  EXPECT_EQ(with_ops("Add 7.. 13"),
            "f.rules:3:17: expected 'OP [VERSIONS]' or an op group, e.g. 'Add 7..' or "
            "'Squeeze ..12'");
  // In a `for` list, on a continuation line.
  EXPECT_EQ(ErrorOf("# a\nrule r\n  for Op in Add 7..,\n            Max 9..\n"
                    "  match (x) => (y) { y = Op(x) }\n  replace (x) => (y) { y = Op(x) }\n"),
            "f.rules:4:17: Max has no version 9 (its versions are 1, 6, 8, 12, 13)");
}

TEST(RuleFile, BuildersAndAnyInputErrors) {
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y) { y = unsqeeze(x) }\n"),
            "f.rules:4:28: 'unsqeeze' is neither a builder nor the op group of the match "
            "(builders: unsqueeze, squeeze, split, reduce_sum, reduce_mean, reduce_max, "
            "reduce_min, reduce_prod, reduce_sum_square, reduce_l1, reduce_l2, reduce_log_sum, "
            "reduce_log_sum_exp, pad)");
  EXPECT_EQ(ErrorOf("# a\nrule r\n  match (x) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y) { y = squeeze(x) }\n"),
            "f.rules:4:28: builder 'squeeze' takes 2 inputs: squeeze(data, axes)");
  EXPECT_EQ(ErrorOf("# a\nrule r\n  any_input q\n  match (x) => (y) { y = Relu(x) }\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:4:9: any_input 'q' is neither a capture nor a pattern value");
  EXPECT_EQ(ErrorOf("# a\nrule r\n  any_input x\n  match (x) => (y) { y = Add(x, x) }\n"
                    "  replace (x) => (y) { y = Relu(x) }\n"),
            "f.rules:4:10: any_input 'x' is used twice: it stands for one input position");
}

}  // namespace
}  // namespace ovfix::rules
