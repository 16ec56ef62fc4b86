// Golden tests of the rules: every tests/rules/golden/*.test file names a rule (or family, or
// rule set) and lists cases, each a graph before and either the graph expected after (compared
// after canonical renaming of the values the rewrite made) or "unchanged: REASON", where
// REASON must appear in why the rule did not match. Every case that changes the graph also
// runs before and after on random inputs and compares the outputs (rel. 1e-5 of range).
//
//   # comment
//   rule: explicit_broadcast_unsqueeze_first        (names, space separated)
//   file: examples/rules/hardswish.rules           (optional: a user rule file to load)
//   case: what it shows
//   before:
//   <ir_version: 8, opset_import: ["" : 17]> g (float[2,3] x, float[3] b) => (y) { ... }
//   after:
//   ...
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/graph_walk.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"
#include "rules/rule_apply.h"
#include "rules/rule_set.h"
#include "tests/rules/canonical_form.h"

namespace ovfix::rules {
namespace {

struct GoldenCase {
  std::string title;
  std::string before;
  std::string after;      // empty when unchanged
  std::string unchanged;  // the reason, when unchanged
};

struct GoldenFile {
  std::vector<std::string> rules;
  std::vector<std::string> rule_files;
  std::vector<GoldenCase> cases;
};

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

GoldenFile ParseGolden(const std::string& text) {
  GoldenFile file;
  std::string* target = nullptr;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    auto value = [&](absl::string_view key) {
      return std::string(absl::StripAsciiWhitespace(absl::StripPrefix(line, key)));
    };
    if (absl::StartsWith(line, "rule:")) {
      for (auto r : absl::StrSplit(value("rule:"), ' ', absl::SkipEmpty())) {
        file.rules.emplace_back(r);
      }
    } else if (absl::StartsWith(line, "file:")) {
      file.rule_files.push_back(absl::StrCat(OVFIX_SOURCE_DIR, "/", value("file:")));
    } else if (absl::StartsWith(line, "case:")) {
      file.cases.push_back({value("case:"), "", "", ""});
      target = nullptr;
    } else if (absl::StartsWith(line, "before:") && !file.cases.empty()) {
      target = &file.cases.back().before;
    } else if (absl::StartsWith(line, "after:") && !file.cases.empty()) {
      target = &file.cases.back().after;
    } else if (absl::StartsWith(line, "unchanged:") && !file.cases.empty()) {
      file.cases.back().unchanged = value("unchanged:");
      target = nullptr;
    } else if (target != nullptr) {
      absl::StrAppend(target, line, "\n");
    }
  }
  return file;
}

// Deterministic inputs: floats in [0.5, 2] (no zero divisors, real powers), ints in [1, 4],
// symbolic dims set to 2.
exec::TensorMap RandomInputs(const Graph& g) {
  exec::RandomInputOptions options;
  options.ranges = {0.5, 2, 1, 4};
  options.symbolic_dim = 2;
  absl::StatusOr<exec::TensorMap> inputs = exec::RandomInputs(g, options);
  EXPECT_TRUE(inputs.ok()) << inputs.status();
  return inputs.ok() ? *std::move(inputs) : exec::TensorMap{};
}

void ExpectSameOutputs(const Model& before, const Model& after) {
  auto inputs = RandomInputs(before.graph());
  auto s1 = exec::CreateSession(before, {});
  ASSERT_TRUE(s1.ok()) << s1.status();
  auto s2 = exec::CreateSession(after, {});
  ASSERT_TRUE(s2.ok()) << s2.status();
  auto expected = (*s1)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto actual = (*s2)->Run(inputs);
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(actual->size(), expected->size());
  for (size_t i = 0; i < actual->size(); ++i) {
    const exec::Comparison range = exec::CompareTensors((*actual)[i], (*expected)[i]);
    const double scale =
        std::max({range.expected_max - range.expected_min, std::abs(range.expected_max),
                  std::abs(range.expected_min), 1e-30});
    const exec::Comparison c =
        exec::CompareTensors((*actual)[i], (*expected)[i], {0.0, 1e-5 * scale});
    EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message;
  }
}

// Why each rule did not match at each candidate node, one line per node.
std::string Explain(const std::vector<std::shared_ptr<const Rule>>& rules, Model& model) {
  std::string out;
  const HelperContext context{model, nullptr};
  std::vector<Node*> nodes;
  for (Graph* g : GraphsRecursive(model.graph())) {
    for (Node* n : g->nodes()) nodes.push_back(n);
  }
  for (Node* node : nodes) {
    for (const auto& rule : rules) {
      if (rule->pattern.root_node().op_type != node->op_type()) continue;
      std::string why;
      if (MatchRule(*rule, node, context, why)) why = "matched";
      absl::StrAppend(&out, rule->name, " at ", node->Describe(), ": ", why, "\n");
    }
  }
  return out;
}

void RunCase(const std::vector<std::shared_ptr<const Rule>>& rules, const GoldenCase& c) {
  auto model = ParseModelText(c.before);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(InferShapes(**model).ok());
  auto original = ParseModelText(c.before);
  ASSERT_TRUE(original.ok());
  const std::string why = Explain(rules, **model);

  Rewriter rewriter(**model);
  ConvertOptions options;
  PassContext ctx{**model, rewriter, options};
  std::vector<std::string> log;
  ctx.log = [&](const std::string& line) { log.push_back(line); };
  auto pass = MakeRuleSetPass("golden", rules);
  auto count = pass->Run(ctx);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_TRUE(log.empty()) << absl::StrJoin(log, "\n");
  ASSERT_TRUE((*model)->graph().Verify().ok()) << (*model)->graph().Verify();
  const std::string actual = CanonicalForm(**model);

  if (!c.unchanged.empty()) {
    EXPECT_EQ(*count, 0);
    EXPECT_EQ(actual, CanonicalForm(**original));
    EXPECT_TRUE(absl::StrContains(why, c.unchanged))
        << "expected a reason containing '" << c.unchanged << "', got:\n"
        << why;
    return;
  }
  auto expected = ParseModelText(c.after);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_GT(*count, 0) << why;
  EXPECT_EQ(actual, CanonicalForm(**expected)) << "explain before the rewrite:\n" << why;
  ExpectSameOutputs(**original, **model);

  // The same input gives the same output.
  auto again = ParseModelText(c.before);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(InferShapes(**again).ok());
  Rewriter rewriter2(**again);
  PassContext ctx2{**again, rewriter2, options};
  ASSERT_TRUE(MakeRuleSetPass("golden", rules)->Run(ctx2).ok());
  EXPECT_EQ(PrintModelText(**again), PrintModelText(**model));
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, Cases) {
  const GoldenFile file = ParseGolden(ReadText(GetParam()));
  ASSERT_FALSE(file.rules.empty()) << "no 'rule:' line";
  ASSERT_FALSE(file.cases.empty()) << "no 'case:'";
  auto library = RuleLibrary::Load(file.rule_files);
  ASSERT_TRUE(library.ok()) << library.status();
  std::vector<std::shared_ptr<const Rule>> rules;
  for (const auto& name : file.rules) {
    auto selected = library->Select(name);
    ASSERT_FALSE(selected.empty()) << "no rule named " << name;
    rules.insert(rules.end(), selected.begin(), selected.end());
  }
  for (const GoldenCase& c : file.cases) {
    SCOPED_TRACE(c.title);
    RunCase(rules, c);
  }
}

std::vector<std::string> GoldenFiles() {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(OVFIX_SOURCE_DIR) / "tests/rules/golden";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".test") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Rules, GoldenTest, ::testing::ValuesIn(GoldenFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// Every built-in rule has a golden test file that names it (directly, by family or set).
TEST(GoldenCoverage, EveryBuiltinRuleIsTested) {
  auto library = RuleLibrary::Load();
  ASSERT_TRUE(library.ok()) << library.status();
  std::set<std::string> named;
  for (const auto& path : GoldenFiles()) {
    for (const auto& r : ParseGolden(ReadText(path)).rules) named.insert(r);
  }
  for (const auto& rule : library->AllRules()) {
    EXPECT_TRUE(named.count(rule->name) || named.count(rule->family) || named.count(rule->set))
        << rule->name << " (" << rule->file << ") has no golden test";
  }
}

}  // namespace
}  // namespace ovfix::rules
