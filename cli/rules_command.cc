// `ovfix rules list [--rules FILE]...`: every rule (name, file, algebra comment), every target,
// every helper, op group and builder a rule file can use. `ovfix rules check FILE...`: parses
// rule files and reports their errors as FILE:LINE:COL: message (exit 2).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/command.h"
#include "converter/json_writer.h"
#include "ir/op_groups.h"
#include "rules/conversion_options.h"
#include "rules/embedded_files.h"
#include "rules/helpers.h"
#include "rules/op_versions.h"
#include "rules/passes/registry.h"
#include "rules/rule_set.h"

namespace ovfix::cli {
namespace {

struct RulesOptions {
  std::vector<std::string> rule_files;  // list: --rules
  std::vector<std::string> check_files;
  bool json = false;  // list: --json
};

// What built-in target `name` is for: its `description` line, else its first comment line.
std::string TargetSummary(const std::string& name) {
  const rules::EmbeddedFile* file = rules::FindEmbeddedFile("targets/" + name + ".target");
  std::string comment;
  for (absl::string_view line : absl::StrSplit(std::string(file->contents), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "description")) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
    if (comment.empty() && absl::ConsumePrefix(&line, "#")) {
      comment = std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return comment;
}

// "batch (--batch N)": the options a pass declares, as `rules list` shows them.
std::vector<std::string> PassOptions(const rules::NativePassInfo& pass) {
  std::vector<std::string> options;
  for (const rules::PassOption& o : pass.options) options.push_back(rules::DescribePassOption(o));
  return options;
}

// Everything `rules list` shows, as one JSON object on stdout.
int PrintListJson(const rules::RuleLibrary& library) {
  JsonWriter w;
  w.BeginObject();
  w.Array("rule_sets", library.files(), [](JsonWriter& w, const rules::RuleFile& file) {
    w.BeginObject().Fields({Field("name", file.set), Field("path", file.path)});
    w.Array("rules", file.rules, [](JsonWriter& w, const auto& rule) {
      w.Object({Field("name", rule->name), Field("family", rule->family), Field("line", rule->line),
                Field("benefit", rule->benefit), Field("algebra", rule->algebra)});
    });
    w.EndObject();
  });
  w.Array("passes", rules::NativePasses(), [](JsonWriter& w, const rules::NativePassInfo& p) {
    w.Object({Field("name", p.name), Field("description", p.description),
              Field("options", PassOptions(p))});
  });
  w.Array("options", rules::ConversionOptionTable(),
          [](JsonWriter& w, const rules::OptionSpec& spec) {
            w.Object({Field("name", std::string(spec.name)),
                      Field("read_by", rules::OptionReaders(spec.name))});
          });
  w.Key("targets").BeginArray();
  for (const std::string& name : rules::BuiltinTargetNames()) {
    w.Object({Field("name", name), Field("description", TargetSummary(name))});
  }
  w.EndArray();
  w.Array("helpers", rules::AllHelpers(), [](JsonWriter& w, const rules::Helper& helper) {
    w.Object({Field("signature", helper.signature), Field("description", helper.description)});
  });
  w.Array("op_groups", AllOpGroups(), [](JsonWriter& w, const OpGroup& group) {
    w.BeginObject().Fields({Field("name", group.name), Field("description", group.description)});
    w.Array("ops", group.members,
            [](JsonWriter& w, const OpGroupMember& m) { w.String(m.op_type); });
    w.EndObject();
  });
  w.Array("builders", rules::AllBuilders(), [](JsonWriter& w, const rules::Builder& b) {
    w.Object({Field("name", b.name), Field("op_type", b.op_type), Field("argument", b.argument),
              Field("input_since", b.input_since)});
  });
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
  return kExitOk;
}

int RunList(const RulesOptions& o) {
  auto library = rules::RuleLibrary::Load(o.rule_files);
  if (!library.ok()) return BadInput("", library.status().message());
  if (o.json) return PrintListJson(*library);
  std::printf("Rules (rule sets by file; `for` rules list their ops):\n");
  for (const auto& file : library->files()) {
    std::printf("\n%s  (%s)\n", file.set.c_str(), file.path.c_str());
    for (size_t i = 0; i < file.rules.size();) {
      const rules::Rule& rule = *file.rules[i];
      std::vector<std::string> ops;
      size_t j = i;
      for (; j < file.rules.size() && file.rules[j]->family == rule.family; ++j) {
        if (file.rules[j]->name != rule.family) {
          ops.push_back(file.rules[j]->name.substr(rule.family.size() + 1));
        }
      }
      std::printf("  %s%s  (line %d, benefit %d)\n      # %s\n", rule.family.c_str(),
                  ops.empty() ? "" : absl::StrCat(".{", absl::StrJoin(ops, ","), "}").c_str(),
                  rule.line, rule.benefit, rule.algebra.c_str());
      i = j;
    }
  }
  std::printf("\nPasses (native; in targets as `pass NAME`, and for --disable):\n");
  for (const rules::NativePassInfo& p : rules::NativePasses()) {
    std::printf("  %-26s %s\n", p.name.c_str(), p.description.c_str());
    if (!p.options.empty()) {
      std::printf("  %-26s options: %s\n", "", absl::StrJoin(PassOptions(p), ", ").c_str());
    }
  }
  std::printf("\nOptions (what reads each: the passes that declare it, then the phases):\n");
  for (const rules::OptionSpec& spec : rules::ConversionOptionTable()) {
    std::printf("  %-26s %s\n", std::string(spec.name).c_str(),
                rules::OptionReaders(spec.name).c_str());
  }
  std::printf("\nTargets (--target NAME):\n");
  for (const std::string& name : rules::BuiltinTargetNames()) {
    std::printf("  %-16s %s\n", name.c_str(), TargetSummary(name).c_str());
  }
  std::printf("\nHelpers (for `where` and `let`; docs/rules.md):\n");
  for (const auto& helper : rules::AllHelpers()) {
    std::printf("  %-40s %s\n", helper.signature.c_str(), helper.description.c_str());
  }
  std::printf("\nOp groups (a pattern's op or a `for` entry; first versions in parentheses):\n");
  for (const OpGroup& group : AllOpGroups()) {
    std::vector<std::string> ops;
    for (const OpGroupMember& m : group.members) {
      ops.push_back(absl::StrCat(std::string(m.op_type), " (", m.since_version, ")"));
    }
    std::printf("  %-14s %s\n                 %s\n", std::string(group.name).c_str(),
                std::string(group.description).c_str(), absl::StrJoin(ops, ", ").c_str());
  }
  std::printf("\nBuilders (replacement ops that write the form the opset wants):\n");
  for (const rules::Builder& b : rules::AllBuilders()) {
    std::printf("  %-40s %s, %s an input from version %d\n",
                absl::StrCat(std::string(b.name), "(data, ", std::string(b.argument), ")").c_str(),
                std::string(b.op_type).c_str(), std::string(b.argument).c_str(), b.input_since);
  }
  return kExitOk;
}

int RunCheck(const RulesOptions& o) {
  int status = kExitOk;
  for (const auto& path : o.check_files) {
    // Loading beside the built-in files also catches names that clash with theirs.
    auto library = rules::RuleLibrary::Load({path});
    if (!library.ok()) {
      // One line per error: each starts with FILE:LINE:COL.
      for (absl::string_view error : absl::StrSplit(library.status().message(), '\n')) {
        status = BadInput("", error);
      }
      continue;
    }
    std::printf("%s: %zu rules OK\n", path.c_str(), library->UserRules().size());
  }
  return status;
}

}  // namespace

Command AddRulesCommand(CLI::App& app) {
  auto options = std::make_shared<RulesOptions>();
  auto* sub = app.add_subcommand("rules", "List the rules, targets and helpers; check rule files");
  sub->require_subcommand(1);
  auto* list = sub->add_subcommand(
      "list", "Show every rule (with its algebra), pass (with its options), target and helper");
  list->add_option("--rules", options->rule_files, "Also load this rule file (repeatable)");
  list->add_flag("--json", options->json, "Print the list as one JSON object");
  auto* check = sub->add_subcommand("check", "Parse rule files; errors as FILE:LINE:COL (exit 2)");
  check->add_option("files", options->check_files, "Rule files")->required();
  return {sub, [options, list] { return list->parsed() ? RunList(*options) : RunCheck(*options); }};
}

}  // namespace ovfix::cli
