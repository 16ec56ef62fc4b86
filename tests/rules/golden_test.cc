// Golden tests of the rules: every tests/rules/golden/*.test file names a rule (or family, or
// rule set) and lists cases, each a graph before and either the graph expected after (compared
// after canonical renaming of the values the rewrite made) or "unchanged: REASON", where
// REASON must appear in why the rule did not match. Every case that changes the graph also
// runs before and after on random inputs and compares the outputs (rel. 1e-5 of range).
//
// A native pass is tested the same way: `pass: NAME` instead of `rule:` (its `unchanged:`
// reason must appear in what the pass logged), with `option: NAME VALUE` lines as in a
// target file. A graph with no `<...>` header takes the file's `header:` line, or
// <ir_version: 8, opset_import: ["" : 17]>.
//
//   # comment
//   rule: explicit_broadcast_unsqueeze_first        (names, space separated)
//   file: examples/rules/hardswish.rules           (optional: a user rule file to load)
//   pass: lower_conv3d_unit_kernel                 (instead of rule:)
//   option: lower_conv3d_unit_kernel true          (any number)
//   header: <ir_version: 8, opset_import: ["" : 13]>
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
#include "converter/node_evaluator.h"
#include "converter/target.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/random_inputs.h"
#include "gtest/gtest.h"
#include "ir/float16.h"
#include "ir/graph_walk.h"
#include "ir/shape_inference.h"
#include "ir/text_form.h"
#include "rules/passes/registry.h"
#include "rules/rule_apply.h"
#include "rules/rule_set.h"
#include "tests/rules/canonical_form.h"
#include "tests/support/run_both.h"

namespace ovfix::rules {
namespace {

struct GoldenCase {
  std::string title;
  std::string before;
  std::string after;  // empty when unchanged
  bool unchanged = false;
  std::string reason;  // why, when unchanged
};

struct GoldenFile {
  std::vector<std::string> rules;
  std::vector<std::string> rule_files;
  std::string pass;                                          // a native pass instead
  std::vector<std::pair<std::string, std::string>> options;  // as in a target file
  std::string header = R"(<ir_version: 8, opset_import: ["" : 17]>)";
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
    } else if (absl::StartsWith(line, "pass:")) {
      file.pass = value("pass:");
    } else if (absl::StartsWith(line, "option:")) {
      std::vector<std::string> words = absl::StrSplit(value("option:"), ' ', absl::SkipEmpty());
      file.options.emplace_back(words.empty() ? "" : words[0], words.size() > 1 ? words[1] : "");
    } else if (absl::StartsWith(line, "header:")) {
      file.header = value("header:");
    } else if (absl::StartsWith(line, "case:")) {
      file.cases.emplace_back().title = value("case:");
      target = nullptr;
    } else if (absl::StartsWith(line, "before:") && !file.cases.empty()) {
      target = &file.cases.back().before;
    } else if (absl::StartsWith(line, "after:") && !file.cases.empty()) {
      target = &file.cases.back().after;
    } else if (absl::StartsWith(line, "unchanged:") && !file.cases.empty()) {
      file.cases.back().unchanged = true;
      file.cases.back().reason = value("unchanged:");
      target = nullptr;
    } else if (target != nullptr) {
      absl::StrAppend(target, line, "\n");
    }
  }
  for (GoldenCase& c : file.cases) {
    for (std::string* graph : {&c.before, &c.after}) {
      const absl::string_view text = absl::StripLeadingAsciiWhitespace(*graph);
      if (!text.empty() && !absl::StartsWith(text, "<")) *graph = file.header + "\n" + *graph;
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
  const test_support::BothRuns runs = test_support::RunBoth(**s1, **s2, inputs);
  for (size_t i = 0; i < runs.actual.size(); ++i) {
    const exec::Comparison range = exec::CompareTensors(runs.actual[i], runs.expected[i]);
    const double scale =
        std::max({range.expected_max - range.expected_min, std::abs(range.expected_max),
                  std::abs(range.expected_min), 1e-30});
    const exec::Comparison c =
        exec::CompareTensors(runs.actual[i], runs.expected[i], {0.0, 1e-5 * scale});
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

// What a golden file tests: its rules, or its native pass, with its options.
struct Subject {
  std::vector<std::shared_ptr<const Rule>> rules;
  std::string pass;
  ConvertOptions options;
  std::unique_ptr<Pass> Make() const {
    return pass.empty() ? MakeRuleSetPass("golden", rules) : MakeNativePass(pass);
  }
};

// Runs the subject once on `model`; returns what it logged.
std::vector<std::string> RunSubject(const Subject& subject, Model& model,
                                    absl::StatusOr<int>& count) {
  Rewriter rewriter(model);
  converter::CpuNodeEvaluator evaluator;
  PassContext ctx{model, rewriter, subject.options};
  ctx.evaluator = &evaluator;
  std::vector<std::string> log;
  ctx.log = [&](const std::string& line) { log.push_back(line); };
  count = subject.Make()->Run(ctx);
  return log;
}

void RunCase(const Subject& subject, const GoldenCase& c) {
  auto model = ParseModelText(c.before);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(InferShapes(**model).ok());
  auto original = ParseModelText(c.before);
  ASSERT_TRUE(original.ok());
  // Why the rules did not match, before the rewrite; for a pass, what it logs.
  std::string why = subject.pass.empty() ? Explain(subject.rules, **model) : "";

  absl::StatusOr<int> count = 0;
  const std::vector<std::string> log = RunSubject(subject, **model, count);
  ASSERT_TRUE(count.ok()) << count.status();
  if (subject.pass.empty()) {
    EXPECT_TRUE(log.empty()) << absl::StrJoin(log, "\n");
  } else {
    why = absl::StrJoin(log, "\n");
  }
  ASSERT_TRUE((*model)->graph().Verify().ok()) << (*model)->graph().Verify();
  const std::string actual = CanonicalForm(**model);

  if (c.unchanged) {
    EXPECT_EQ(*count, 0);
    EXPECT_EQ(actual, CanonicalForm(**original));
    EXPECT_TRUE(absl::StrContains(why, c.reason))
        << "expected a reason containing '" << c.reason << "', got:\n"
        << why;
    return;
  }
  auto expected = ParseModelText(c.after);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_GT(*count, 0) << why;
  EXPECT_EQ(actual, CanonicalForm(**expected))
      << (subject.pass.empty() ? "explain before the rewrite:\n" : "logged:\n") << why;
  ExpectSameOutputs(**original, **model);

  // The same input gives the same output.
  auto again = ParseModelText(c.before);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(InferShapes(**again).ok());
  absl::StatusOr<int> count_again = 0;
  RunSubject(subject, **again, count_again);
  ASSERT_TRUE(count_again.ok()) << count_again.status();
  EXPECT_EQ(PrintModelText(**again), PrintModelText(**model));
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, Cases) {
  const GoldenFile file = ParseGolden(ReadText(GetParam()));
  ASSERT_NE(file.rules.empty(), file.pass.empty()) << "one 'rule:' or 'pass:' line";
  ASSERT_FALSE(file.cases.empty()) << "no 'case:'";
  Subject subject;
  subject.pass = file.pass;
  if (!file.pass.empty()) ASSERT_NE(MakeNativePass(file.pass), nullptr) << "no pass " << file.pass;
  std::string target_text;
  for (const auto& [name, value] : file.options) {
    absl::StrAppend(&target_text, "option ", name, " ", value, "\n");
  }
  auto target = converter::ParseTarget("golden options", target_text);
  ASSERT_TRUE(target.ok()) << target.status();
  ASSERT_TRUE(converter::ApplyTargetOptions(*target, {}, subject.options).ok());
  auto library = RuleLibrary::Load(file.rule_files);
  ASSERT_TRUE(library.ok()) << library.status();
  for (const auto& name : file.rules) {
    auto selected = library->Select(name);
    ASSERT_FALSE(selected.empty()) << "no rule named " << name;
    subject.rules.insert(subject.rules.end(), selected.begin(), selected.end());
  }
  for (const GoldenCase& c : file.cases) {
    SCOPED_TRACE(c.title);
    RunCase(subject, c);
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
