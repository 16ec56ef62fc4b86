// `ovfix explain RULE MODEL [--rules FILE]...`: for every candidate node of the model (a node
// whose op is the root op of the rule's pattern), whether the rule matches there and, when
// it does not, why. RULE is a rule, a family (all ops of a `for` rule) or a rule set.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "converter/command.h"
#include "ir/model_io.h"
#include "ir/node_check.h"
#include "ir/shape_inference.h"
#include "rules/rule_apply.h"
#include "rules/rule_set.h"

namespace ovfix::cli {
namespace {

struct ExplainOptions {
  std::string rule;
  std::string model;
  std::vector<std::string> rule_files;
};

int Fail(const ExplainOptions& o, absl::string_view message) {
  std::vector<std::string> files = {o.model};
  files.insert(files.end(), o.rule_files.begin(), o.rule_files.end());
  return BadInput("explain", message, files);
}

// "a = 'x', axes = [0]": what the match bound, for the reader to check.
std::string Bindings(const rules::Rule& rule, const rules::RuleMatch& m) {
  std::vector<std::string> parts;
  for (const auto& name : rule.pattern.inputs) {
    if (auto it = m.match.values.find(name); it != m.match.values.end()) {
      parts.push_back(absl::StrCat(name, " = '", it->second->name(), "'"));
    } else if (auto list = m.match.lists.find(name); list != m.match.lists.end()) {
      parts.push_back(absl::StrCat(name, " = ", rules::DescribeHelperValue(list->second)));
    }
  }
  for (const auto& [name, value] : m.lets) {
    parts.push_back(absl::StrCat(name, " = ", rules::DescribeHelperValue(value)));
  }
  return absl::StrJoin(parts, ", ");
}

int RunExplain(const ExplainOptions& o) {
  auto library = rules::RuleLibrary::Load(o.rule_files);
  if (!library.ok()) return BadInput("", library.status().message());
  const auto selected = library->Select(o.rule);
  if (selected.empty()) {
    return Fail(o, absl::StrCat("no rule, rule family or rule set named '", o.rule,
                                "' (see 'ovfix rules list')"));
  }
  auto model = LoadModel(o.model);
  if (!model.ok()) return Fail(o, model.status().message());
  // As `convert` does before its passes: the matcher's helpers trust the nodes' structure.
  if (absl::Status s = CheckNodes(**model); !s.ok()) return Fail(o, s.message());
  if (auto s = InferShapes(**model); !s.ok()) {
    std::printf("note: %s; rules that need shapes may not match\n",
                std::string(s.message()).c_str());
  }
  if (absl::Status s = CheckNodesAgainstRanks(**model); !s.ok()) return Fail(o, s.message());
  const rules::HelperContext context{**model, nullptr};
  int candidates = 0, matched = 0, without_candidates = 0;
  for (const auto& rule : selected) {
    const rules::TemplateNode& root = rule->pattern.root_node();
    std::vector<std::string> lines;
    for (Node* node : (*model)->graph().nodes()) {
      const bool same_domain = (node->domain().empty() || node->domain() == "ai.onnx")
                                   ? root.domain.empty()
                                   : node->domain() == root.domain;
      if (node->op_type() != root.op_type || !same_domain) continue;
      ++candidates;
      std::string why;
      auto m = rules::MatchRule(*rule, node, context, why);
      if (m) {
        ++matched;
        lines.push_back(
            absl::StrCat("  ", node->Describe(), ": matches (", Bindings(*rule, *m), ")"));
      } else {
        lines.push_back(absl::StrCat("  ", node->Describe(), ": no match: ", why));
      }
    }
    if (lines.empty()) {
      ++without_candidates;
      if (selected.size() > 1) continue;
      lines.push_back(absl::StrCat("  no ", root.op_type, " node in the model"));
    }
    std::printf("%s  (%s:%d)\n  # %s\n%s\n", rule->name.c_str(), rule->file.c_str(), rule->line,
                rule->algebra.c_str(), absl::StrJoin(lines, "\n").c_str());
  }
  if (selected.size() > 1 && without_candidates > 0) {
    std::printf("(%d of %zu rules have no candidate node)\n", without_candidates, selected.size());
  }
  std::printf("%d of %d candidate nodes match\n", matched, candidates);
  return kExitOk;
}

}  // namespace

Command AddExplainCommand(CLI::App& app) {
  auto options = std::make_shared<ExplainOptions>();
  auto* sub = app.add_subcommand("explain",
                                 "Show, node by node, whether a rule matches a model and why not");
  sub->add_option("rule", options->rule, "A rule, a rule family or a rule set")->required();
  sub->add_option("model", options->model, "The .onnx model")->required();
  sub->add_option("--rules", options->rule_files, "Also load this rule file (repeatable)");
  return {sub, [options] { return RunExplain(*options); },
          [options] { return std::vector<std::string>{options->model}; }};
}

}  // namespace ovfix::cli
