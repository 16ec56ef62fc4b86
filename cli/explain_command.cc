// `ovfix explain NAME MODEL [conversion options]`: what a rule or a pass does to a model, as
// `convert` would run it. For a rule (a rule, a family, or a rule set): every candidate node
// (a node whose op is the root op of the rule's pattern) and whether the rule matches there
// and, when it does not, why; seen at the step of the target that runs the rule, after the
// steps before it and with the shape facts of the reference run, so that explain and convert
// agree. For a pass: what it did; for fp16_islands, why each node it kept in fp32 is fp32.
//
// Without --target, the first built-in target that runs NAME: generic, then the fp16
// targets, then the others, each group by name.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/conversion_flags.h"
#include "converter/conversion_plan.h"
#include "converter/pipeline.h"
#include "converter/target.h"
#include "ir/model_io.h"
#include "re2/re2.h"
#include "rules/closest_name.h"
#include "rules/passes/registry.h"
#include "rules/rule_apply.h"
#include "rules/rule_set.h"

namespace ovfix::cli {
namespace {

constexpr size_t kDefaultLines = 40;

struct ExplainOptions {
  ConversionFlags flags;
  std::string name;
  std::string node_filter;
  bool summary_only = false;
  bool all = false;
};

using RuleList = std::vector<std::shared_ptr<const rules::Rule>>;

int Fail(const ExplainOptions& o, absl::string_view message) {
  std::vector<std::string> files = {o.flags.input};
  for (const std::string& f : FlagFiles(o.flags)) files.push_back(f);
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

// Prints lines, the first kDefaultLines of them unless --all, and says what was left out.
class Lines {
 public:
  explicit Lines(bool all) : all_(all) {}
  void Add(const std::string& line) {
    if (all_ || shown_ < kDefaultLines) {
      std::printf("%s\n", line.c_str());
      ++shown_;
    } else {
      ++left_out_;
    }
  }
  void Finish() const {
    if (left_out_ > 0) {
      std::printf("… and %zu more lines (--all prints them, --node REGEX picks nodes)\n",
                  left_out_);
    }
  }

 private:
  bool all_;
  size_t shown_ = 0, left_out_ = 0;
};

struct Tally {
  int candidates = 0, matched = 0, without_candidates = 0, filtered_out = 0;
};

void ExplainRules(const ExplainOptions& o, const RuleList& selected, Model& model,
                  const rules::ConvertOptions& options, const RE2* filter, Lines& out,
                  Tally& tally) {
  const rules::HelperContext context{model, &options};
  for (const auto& rule : selected) {
    const rules::TemplateNode& root = rule->pattern.root_node();
    std::vector<std::string> lines;
    int candidates = 0;
    for (Node* node : model.graph().nodes()) {
      const bool same_domain = (node->domain().empty() || node->domain() == "ai.onnx")
                                   ? root.domain.empty()
                                   : node->domain() == root.domain;
      if (node->op_type() != root.op_type || !same_domain) continue;
      ++candidates;
      if (filter != nullptr && !RE2::PartialMatch(node->name(), *filter) &&
          !RE2::PartialMatch(node->Describe(), *filter)) {
        ++tally.filtered_out;
        continue;
      }
      ++tally.candidates;
      std::string why;
      auto m = rules::MatchRule(*rule, node, context, why);
      if (m) {
        ++tally.matched;
        lines.push_back(
            absl::StrCat("  ", node->Describe(), ": matches (", Bindings(*rule, *m), ")"));
      } else {
        lines.push_back(absl::StrCat("  ", node->Describe(), ": no match: ", why));
      }
    }
    if (candidates == 0) {
      ++tally.without_candidates;
      if (selected.size() > 1) continue;
      lines.push_back(absl::StrCat("  no ", root.op_type, " node in the model"));
    }
    if (lines.empty() || o.summary_only) continue;
    out.Add(absl::StrCat(rule->name, "  (", rule->file, ":", rule->line, ")"));
    out.Add(absl::StrCat("  # ", rule->algebra));
    for (const std::string& line : lines) out.Add(line);
  }
}

// What a pass did in a conversion: the fp32 nodes and why (fp16_islands), or its rewrites.
void ExplainPass(const ExplainOptions& o, const converter::ConversionReport& report,
                 const RE2* filter, Lines& out, std::string& summary) {
  auto picked = [&](const std::string& text) {
    return filter == nullptr || RE2::PartialMatch(text, *filter);
  };
  if (o.name == "fp16_islands") {
    std::map<std::string, int> reasons;
    int shown = 0;
    for (const rules::IslandNode& i : report.islands) {
      if (!picked(i.node)) continue;
      ++shown;
      ++reasons[i.reason];
      if (!o.summary_only) {
        out.Add(absl::StrCat("  ", i.node, i.bf16 ? ": bf16: " : ": fp32: ", i.reason));
      }
    }
    std::vector<std::pair<std::string, int>> rows(reasons.begin(), reasons.end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::string> parts;
    for (size_t i = 0; i < rows.size() && i < 4; ++i) {
      parts.push_back(absl::StrCat(rows[i].first, " ", rows[i].second));
    }
    if (rows.size() > 4) parts.push_back(absl::StrCat("… ", rows.size() - 4, " more reasons"));
    summary =
        absl::StrCat(shown, " node(s) kept in fp32",
                     parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, "; "), ")"));
    // The island certificate (each unit tried back in fp16 alone) and the bf16 tries
    // (--island-precision bf16), with what they measured.
    auto list_units = [&](const converter::IslandCertificate& c) {
      if (o.summary_only) return;
      std::string head = converter::CertificateLines(c, 0);
      while (!head.empty() && head.back() == '\n') head.pop_back();
      for (absl::string_view line : absl::StrSplit(head, '\n')) out.Add(std::string(line));
      for (const converter::CertifiedIsland& i : c.islands) {
        bool any = false;
        for (const std::string& n : i.nodes) any = any || picked(n);
        if (any) out.Add(absl::StrCat("  ", converter::CertifiedIslandLine(i, c.tried_as)));
      }
    };
    if (report.certificate) {
      const converter::IslandCertificate& c = *report.certificate;
      list_units(c);
      absl::StrAppend(&summary,
                      !c.skipped.empty()
                          ? std::string("; certificate not run")
                          : absl::StrFormat("; certificate: %d tried, %d needed, %d given back",
                                            c.tried, c.needed, c.given_back));
    }
    if (report.bf16_islands) {
      const converter::IslandCertificate& c = *report.bf16_islands;
      list_units(c);
      absl::StrAppend(&summary, !c.skipped.empty()
                                    ? std::string("; bf16 tries not run")
                                    : absl::StrFormat("; %d island unit(s) in bf16, %d in fp32",
                                                      c.given_back, c.needed + c.kept_back));
    }
    return;
  }
  int applied = 0, rolled_back = 0;
  for (const rules::RewriteRecord& r : report.rewrites) {
    if (r.rule != o.name) continue;
    const std::string at = r.matched.empty() ? "(graph)" : r.matched[0];
    if (!picked(at)) continue;
    (r.rolled_back ? rolled_back : applied)++;
    if (o.summary_only) continue;
    if (r.rolled_back) {
      out.Add(absl::StrCat("  ", at, ": rolled back: ", r.note));
    } else {
      out.Add(absl::StrCat(
          "  ", at, ": ", r.created.empty() ? "removed" : "rewritten",
          r.created.empty() ? "" : absl::StrCat(" as ", absl::StrJoin(r.created, ", ")),
          r.note.empty() ? "" : absl::StrCat(" (", r.note, ")")));
    }
  }
  summary = absl::StrCat(applied, " rewrite(s) applied, ", rolled_back, " rolled back");
  const rules::NativePassInfo* pass = rules::FindNativePass(o.name);
  if (pass != nullptr && applied + rolled_back == 0 && !pass->options.empty()) {
    std::vector<std::string> options;
    for (const rules::PassOption& d : pass->options) {
      options.push_back(rules::DescribePassOption(d));
    }
    absl::StrAppend(&summary, "; it acts as its options say: ", absl::StrJoin(options, ", "));
  }
}

int RunExplain(ExplainOptions& o) {
  ConversionFlags& f = o.flags;
  auto library = rules::RuleLibrary::Load(f.rule_files);
  if (!library.ok()) return BadInput("", library.status().message());
  const RuleList selected = library->Select(o.name);
  const bool pass = rules::MakeNativePass(o.name) != nullptr;
  if (selected.empty() && !pass) {
    std::vector<std::string> names;
    for (const rules::NativePassInfo& p : rules::NativePasses()) names.push_back(p.name);
    for (const auto& file : library->files()) {
      names.push_back(file.set);
      for (const auto& r : file.rules) names.push_back(r->name);
    }
    return Fail(o, absl::StrCat("no rule, rule family, rule set or pass named '", o.name, "'",
                                rules::DidYouMean(o.name, names), " (see 'ovfix rules list')"));
  }
  std::unique_ptr<RE2> filter;
  if (!o.node_filter.empty()) {
    filter = std::make_unique<RE2>(o.node_filter, RE2::Quiet);
    if (!filter->ok()) {
      return Fail(
          o, absl::StrCat("--node '", o.node_filter, "': not a valid regex: ", filter->error()));
    }
  }
  converter::PipelineOptions p;
  if (absl::Status s = ToPipelineOptions(f, p); !s.ok()) return Fail(o, s.message());
  p.progress = true;
  // The target: as given, or the first built-in one whose plan runs the rule or pass.
  if (f.target_option->count() == 0) {
    std::vector<converter::Target> targets = converter::BuiltinTargets();
    auto group = [](const converter::Target& t) {
      if (t.name == "generic") return 0;
      rules::ConvertOptions options;
      const bool fp16 = converter::ApplyTargetOptions(t, {}, options).ok() &&
                        options.precision == rules::ConvertOptions::Precision::kFp16;
      return fp16 ? 1 : 2;
    };
    std::stable_sort(targets.begin(), targets.end(),
                     [&](const converter::Target& a, const converter::Target& b) {
                       return group(a) < group(b);
                     });
    for (const converter::Target& t : targets) {
      p.convert.target = t.name;
      absl::StatusOr<converter::ConversionPlan> plan = converter::PlanConversion(p, nullptr);
      if (plan.ok() && plan->StepRunning(o.name, selected) != nullptr) {
        f.target = t.name;
        break;
      }
    }
    p.convert.target = f.target;
  }
  auto model = LoadModel(f.input);
  if (!model.ok()) return Fail(o, model.status().message());
  absl::StatusOr<converter::ConversionPlan> plan = converter::PlanConversion(p, model->get());
  if (!plan.ok()) return Fail(o, plan.status().message());
  // The step as the plan has it: the user's rules run in their own step.
  const converter::PlanStep* planned = plan->StepRunning(o.name, selected);
  const std::string step = planned != nullptr ? planned->name : "";
  const std::string at = planned != nullptr ? absl::StrCat("target ", f.target, ", step ", step,
                                                           ": ", converter::StepStatus(*planned))
                                            : "";

  Lines out(o.all);
  Tally tally;
  std::string where;
  bool explained = false;
  if (!pass) {
    p.before_step = [&](const std::string& name, Model& m, const rules::ConvertOptions& options) {
      if (!step.empty() && name != step) return false;
      where = step.empty() ? absl::StrCat("target ", f.target,
                                          " does not run it: as its first step sees the model")
                           : at;
      ExplainRules(o, selected, m, options, filter.get(), out, tally);
      explained = true;
      return true;
    };
  }
  absl::StatusOr<converter::ConversionReport> report = converter::ConvertModel(**model, p, *plan);
  if (!report.ok()) return Fail(o, report.status().message());
  std::string summary;
  if (pass) {
    where = step.empty() ? absl::StrCat("target ", f.target, " (which does not run it)") : at;
    ExplainPass(o, *report, filter.get(), out, summary);
  } else {
    if (!explained) {
      // Every step ran without reaching the rule's (a --disable'd step): the final model.
      ExplainRules(o, selected, **model, p.convert, filter.get(), out, tally);
      where =
          absl::StrCat(at.empty() ? absl::StrCat("target ", f.target) : at, ", after its steps");
    }
    summary = absl::StrCat(tally.matched, " of ", tally.candidates, " candidate nodes match");
    if (selected.size() > 1 && tally.without_candidates > 0) {
      absl::StrAppend(&summary, "; ", tally.without_candidates, " of ", selected.size(),
                      " rules have no candidate node");
    }
    if (tally.filtered_out > 0) {
      absl::StrAppend(&summary, "; ", tally.filtered_out, " left out by --node");
    }
  }
  out.Finish();
  std::printf("%s: %s (%s; %s)\n", o.name.c_str(), summary.c_str(), where.c_str(),
              report->calibration.empty() ? "not run: no shape facts from a run"
                                          : report->calibration.c_str());
  return kExitOk;
}

}  // namespace

Command AddExplainCommand(CLI::App& app) {
  auto o = std::make_shared<ExplainOptions>();
  auto* sub = app.add_subcommand(
      "explain",
      "Show, node by node, whether a rule matches a model and why not, as convert sees the "
      "model at the rule's step; or what a pass did (fp16_islands: why each fp32 node is fp32)");
  sub->add_option("name", o->name, "A rule, a rule family, a rule set or a pass")->required();
  sub->add_option("model", o->flags.input, "The .onnx model")->required();
  sub->add_option("--node", o->node_filter,
                  "Only nodes whose name or description contains a match of REGEX");
  sub->add_flag("--summary", o->summary_only, "Print only the one-line summary");
  sub->add_flag("--all", o->all, "Print every line (default: the first 40)");
  AddConversionFlags(sub, o->flags);
  return {sub, [o] { return RunExplain(*o); },
          [o] { return std::vector<std::string>{o->flags.input}; }};
}

}  // namespace ovfix::cli
