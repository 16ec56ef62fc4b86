// The conversion plan (converter/conversion_plan.h): what a conversion runs is decided once,
// from the target, the options and the passes' declarations (rules/passes/registry.h), and
// `convert --plan`, the report and `explain` say the same of it.
#include "converter/conversion_plan.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "converter/pipeline.h"
#include "converter/session_graph.h"
#include "gtest/gtest.h"
#include "rules/conversion_options.h"
#include "rules/embedded_files.h"
#include "rules/passes/registry.h"
#include "tests/cli/cli_util.h"

namespace ovfix::converter {
namespace {

namespace fs = std::filesystem;
using rules::ConvertOptions;
using testing::RunOvfix;

struct Steps {
  std::vector<std::string> runs;  // steps that run, in order
  std::vector<std::string> off;   // steps in the plan that do not run
};

// The plan for `target` with options given as on the command line (name -> value text).
absl::StatusOr<ConversionPlan> PlanFor(const std::string& target,
                                       const std::map<std::string, std::string>& given = {},
                                       bool write = true) {
  PipelineOptions p;
  p.convert.target = target;
  p.write_output = write;
  for (const auto& [name, value] : given) {
    if (absl::Status s = rules::SetOption(name, value, p.convert); !s.ok()) return s;
    p.set_by_user.insert(name);
  }
  return PlanConversion(p, nullptr);
}

Steps StepsOf(const ConversionPlan& plan) {
  Steps steps;
  for (const PlanStep& s : plan.steps) (s.runs ? steps.runs : steps.off).push_back(s.name);
  return steps;
}

std::string Phases(const ConversionPlan& plan) {
  std::vector<std::string> names;
  for (ConversionPhase p : plan.phases) names.emplace_back(PhaseName(p));
  return absl::StrJoin(names, " ");
}

// The precision phase goes after the structural steps, right before dead-code elimination,
// on a target that does not list it; fp16 brings the mask and softmax guards before it.
TEST(ConversionPlan, AddsThePrecisionPhaseOnAnyTarget) {
  absl::StatusOr<ConversionPlan> trt = PlanFor("tensorrt", {{"precision", "fp16"}});
  ASSERT_TRUE(trt.ok()) << trt.status();
  const std::string steps = absl::StrJoin(StepsOf(*trt).runs, " ");
  EXPECT_NE(steps.find("explicit_broadcast constant_folding fp16_safe_mask fp16_safe_softmax "
                       "fp16_islands cast_cleanup dead_code_elimination"),
            std::string::npos)
      << steps;
  EXPECT_EQ(trt->FindStep("fp16_islands")->added_by, "precision fp16");
  EXPECT_EQ(trt->FindStep("fp16_islands")->phase, StepPhase::kPrecision);
  EXPECT_EQ(trt->FindStep("cast_cleanup")->phase, StepPhase::kPrecision);
  EXPECT_EQ(trt->FindStep("dead_code_elimination")->phase, StepPhase::kCleanup);
  EXPECT_TRUE(trt->ReducesPrecision());
  absl::StatusOr<ConversionPlan> fp32 = PlanFor("tensorrt");
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(fp32->FindStep("fp16_islands"), nullptr);
  EXPECT_FALSE(fp32->ReducesPrecision());
  absl::StatusOr<ConversionPlan> openvino = PlanFor("openvino-gpu", {{"precision", "fp16"}});
  ASSERT_TRUE(openvino.ok());
  EXPECT_NE(absl::StrJoin(StepsOf(*openvino).runs, " ")
                .find("fp16_islands cast_cleanup dead_code_elimination"),
            std::string::npos);
}

// --precision fp32 on gpu-fp16 keeps the model fp32: its precision phase stays in the plan,
// switched off, and says so.
TEST(ConversionPlan, Fp32OnAnFp16TargetSwitchesThePrecisionPhaseOff) {
  absl::StatusOr<ConversionPlan> plan = PlanFor("gpu-fp16", {{"precision", "fp32"}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(absl::StrJoin(StepsOf(*plan).off, " ").find("fp16_islands cast_cleanup"),
            std::string::npos);
  EXPECT_EQ(StepStatus(*plan->FindStep("fp16_islands")),
            "does not run: switched off: precision fp32");
  EXPECT_EQ(StepStatus(*plan->FindStep("cast_cleanup")),
            "does not run: switched off: precision fp32");
  absl::StatusOr<ConversionPlan> fp16 = PlanFor("gpu-fp16");
  ASSERT_TRUE(fp16.ok());
  EXPECT_NE(absl::StrJoin(StepsOf(*fp16).runs, " ").find("fp16_islands cast_cleanup"),
            std::string::npos);
}

// Each option-switched pass is off by its own declaration, and on when its option is given;
// a disabled step stays in the plan and says it was disabled.
TEST(ConversionPlan, StepsSayWhyTheyDoNotRun) {
  absl::StatusOr<ConversionPlan> plan = PlanFor("generic", {{"disable", "constant_folding"}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(StepStatus(*plan->FindStep("lower_conv3d_unit_kernel")),
            "does not run: switched off: lower_conv3d_unit_kernel false");
  EXPECT_EQ(StepStatus(*plan->FindStep("explicit_broadcast_full")),
            "does not run: switched off: broadcast rank");
  EXPECT_EQ(StepStatus(*plan->FindStep("constant_folding")),
            "does not run: disabled (--disable constant_folding)");
  EXPECT_EQ(StepStatus(*plan->FindStep("dead_code_elimination")), "runs");
  absl::StatusOr<ConversionPlan> on =
      PlanFor("generic", {{"lower_conv3d_unit_kernel", "true"}, {"broadcast", "full"}});
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->FindStep("lower_conv3d_unit_kernel")->runs);
  EXPECT_TRUE(on->FindStep("explicit_broadcast_full")->runs);
  // Asked for on a target that does not list it: added where its declaration places it.
  const fs::path file = fs::temp_directory_path() / absl::StrCat("added_", ::getpid(), ".target");
  std::ofstream(file) << "pass constant_folding\npass dead_code_elimination\n";
  absl::StatusOr<ConversionPlan> added = PlanFor(
      file.string(), {{"batch", "2"}, {"lower_conv3d_unit_kernel", "true"}, {"precision", "fp16"}});
  fs::remove(file);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(absl::StrJoin(StepsOf(*added).runs, " "),
            "fix_input_shapes lower_conv3d_unit_kernel constant_folding fp16_safe_mask "
            "fp16_safe_softmax fp16_islands cast_cleanup dead_code_elimination");
  EXPECT_EQ(added->FindStep("lower_conv3d_unit_kernel")->added_by, "lower_conv3d_unit_kernel true");
  EXPECT_EQ(added->FindStep("fix_input_shapes")->added_by, "batch 2");
  EXPECT_EQ(added->FindStep("constant_folding")->added_by, "");
}

// The phases in the order the pipeline runs them: a written, validated file is measured, then
// repaired from its score; without a file the repair comes before the finish.
TEST(ConversionPlan, PhasesInTheOrderTheyRun) {
  absl::StatusOr<ConversionPlan> fp16 = PlanFor("gpu-fp16");
  ASSERT_TRUE(fp16.ok());
  EXPECT_EQ(Phases(*fp16), "calibration steps check finish write repair");
  absl::StatusOr<ConversionPlan> in_memory = PlanFor("gpu-fp16", {}, /*write=*/false);
  ASSERT_TRUE(in_memory.ok());
  EXPECT_EQ(Phases(*in_memory), "calibration steps check repair finish");
  absl::StatusOr<ConversionPlan> fp32 = PlanFor("generic");
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(Phases(*fp32), "calibration steps check finish write");
  absl::StatusOr<ConversionPlan> unvalidated = PlanFor("gpu-fp16", {{"validate", "false"}});
  ASSERT_TRUE(unvalidated.ok());
  EXPECT_EQ(Phases(*unvalidated), "steps check finish write");
}

TEST(ConversionPlan, RefusesIncompatibleCombinations) {
  EXPECT_TRUE(PlanFor("tensorrt", {{"precision", "bf16"}}).ok());
  absl::StatusOr<ConversionPlan> bf16 = PlanFor("openvino-gpu", {{"precision", "bf16"}});
  ASSERT_FALSE(bf16.ok());
  EXPECT_EQ(bf16.status().message(),
            "precision bf16: target openvino-gpu runs every tensor in the float type its backend "
            "picks (fp16), not bf16");
  absl::StatusOr<ConversionPlan> io = PlanFor("generic", {{"keep_io_types", "false"}});
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.status().message(),
            "--no-keep-io-types applies to reduced precision only: target generic converts in "
            "fp32 (add --precision fp16)");
  EXPECT_TRUE(PlanFor("generic", {{"precision", "fp16"}, {"keep_io_types", "false"}}).ok());
  EXPECT_TRUE(PlanFor("gpu-fp16", {{"keep_io_types", "false"}}).ok());
  absl::StatusOr<ConversionPlan> typo = PlanFor("generic", {{"disable", "constant_foldng"}});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'constant_folding'"), std::string::npos)
      << typo.status();
}

// The "does nothing" warnings derive from the plan and the declarations: an option whose
// every reader is off, a --disable of what does not run.
TEST(ConversionPlan, WarnsOfOptionsThatDoNothing) {
  absl::StatusOr<ConversionPlan> plan =
      PlanFor("generic", {{"keep_fp32", "Conv"},
                          {"lower_conv3d_unit_kernel", "true"},
                          {"disable", "lower_conv3d_unit_kernel"}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string warnings = absl::StrJoin(plan->warnings, "\n");
  EXPECT_NE(warnings.find("--keep-fp32 has no effect: fp16_islands does not run"),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("--lower-conv3d-unit-kernel has no effect: lower_conv3d_unit_kernel "
                          "does not run in this conversion (lower_conv3d_unit_kernel: disabled"),
            std::string::npos)
      << warnings;
  // A pass only a target file lists, named in a target that leaves it out.
  const fs::path file = fs::temp_directory_path() / absl::StrCat("plan_", ::getpid(), ".target");
  std::ofstream(file) << "pass fix_input_shapes\npass dead_code_elimination\n";
  absl::StatusOr<ConversionPlan> bare =
      PlanFor(file.string(), {{"fold_size_limit", "10"}, {"disable", "constant_folding"}});
  ASSERT_TRUE(bare.ok()) << bare.status();
  const std::string bare_warnings = absl::StrJoin(bare->warnings, "\n");
  EXPECT_NE(bare_warnings.find("--fold-size-limit has no effect: constant_folding, "
                               "explicit_broadcast_full do not run"),
            std::string::npos)
      << bare_warnings;
  EXPECT_NE(bare_warnings.find("--disable constant_folding disables nothing"), std::string::npos)
      << bare_warnings;
  // Given where a step reads them: no warning.
  absl::StatusOr<ConversionPlan> quiet =
      PlanFor("gpu-fp16", {{"keep_fp32", "Conv"}, {"fold_size_limit", "10"}});
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet->warnings.empty()) << absl::StrJoin(quiet->warnings, "\n");
  fs::remove(file);
}

// The declarations hold together: every option a pass declares is in the table, every
// placement names a step the plan has by then (a target's or an earlier pass of the list),
// and a pass an option switches names that option.
TEST(PassDeclarations, NameTableEntriesAndEarlierSteps) {
  std::set<std::string> earlier;
  for (const rules::NativePassInfo& p : rules::NativePasses()) {
    bool switched = false;
    for (const rules::PassOption& o : p.options) {
      EXPECT_NE(rules::FindOption(o.option), nullptr) << p.name << " declares " << o.option;
      switched = switched || o.switches;
    }
    if (p.enabled != nullptr) EXPECT_TRUE(switched) << p.name << " is switched by no option";
    const std::string anchor(p.placement.step);
    if (p.added != nullptr && rules::FindNativePass(anchor) != nullptr &&
        anchor != "dead_code_elimination" && anchor != "fix_input_shapes") {
      EXPECT_TRUE(earlier.contains(anchor)) << p.name << " is placed beside " << anchor;
    }
    earlier.insert(p.name);
  }
}

// The session graph is a built-in target run by the same plan: its file names the steps.
TEST(SessionGraph, IsTheStepsOfItsTargetFile) {
  const rules::EmbeddedFile* file = rules::FindEmbeddedFile("sessions/session-graph.target");
  ASSERT_NE(file, nullptr);
  std::vector<std::string> listed;
  for (absl::string_view line : absl::StrSplit(std::string(file->contents), '\n')) {
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (absl::ConsumePrefix(&line, "pass") || absl::ConsumePrefix(&line, "rules")) {
      listed.emplace_back(absl::StripAsciiWhitespace(line));
    }
  }
  EXPECT_EQ(SessionGraphSteps(), listed);
  EXPECT_GE(listed.size(), 8u);
}

// ---- convert --plan, the report and explain agree ----

// "name -> status" from `convert --plan`'s step lines ("   3 conv_normalization  structural
// runs").
std::map<std::string, std::string> PlanStatuses(const std::string& text) {
  std::map<std::string, std::string> statuses;
  bool in_steps = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line == "steps:") {
      in_steps = true;
      continue;
    }
    if (!in_steps || !absl::StartsWith(line, "  ")) {
      in_steps = false;
      continue;
    }
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() < 4) continue;
    std::string status = absl::StrJoin(words.begin() + 3, words.end(), " ");
    if (size_t added = status.find(" (added: "); added != std::string::npos) {
      status = status.substr(0, added);
    }
    statuses.emplace(words[1], status);
  }
  return statuses;
}

// "name -> status" from the JSON report's steps (a step that does not run has `not_run`).
std::map<std::string, std::string> ReportStatuses(const std::string& json) {
  std::map<std::string, std::string> statuses;
  const size_t begin = json.find("\"steps\":[");
  const size_t end = json.find(']', begin);
  if (begin == std::string::npos || end == std::string::npos) return statuses;
  const std::string steps = json.substr(begin, end - begin);
  for (absl::string_view object : absl::StrSplit(steps, '}')) {
    const size_t name = object.find("\"name\":\"");
    if (name == absl::string_view::npos) continue;
    const size_t name_end = object.find('"', name + 8);
    const std::string step(object.substr(name + 8, name_end - name - 8));
    const size_t why = object.find("\"not_run\":\"");
    statuses.emplace(
        step, why == absl::string_view::npos
                  ? std::string("runs")
                  : absl::StrCat("does not run: ",
                                 object.substr(why + 11, object.find('"', why + 11) - why - 11)));
  }
  return statuses;
}

// What `explain STEP` says of the step: "target T, step S: STATUS" in its summary line.
std::string ExplainStatus(const std::string& out, const std::string& step) {
  const std::string marker = absl::StrCat(", step ", step, ": ");
  const size_t at = out.find(marker);
  if (at == std::string::npos) return "(no step in: " + out + ")";
  const size_t from = at + marker.size();
  // Up to the summary's "; calibration" or ", after its steps".
  size_t to = out.find("; ", from);
  const size_t after = out.find(", after its steps", from);
  if (after != std::string::npos && after < to) to = after;
  return out.substr(from, to - from);
}

TEST(PlanAgreement, ConvertPlanReportAndExplainSayTheSame) {
  const fs::path models = fs::path(OVFIX_SHARED_DIR) / "models";
  if (!fs::exists(models)) GTEST_SKIP() << "no ../shared models";
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("plan_agree_", ::getpid());
  fs::create_directories(dir);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(models)) {
    if (fs::exists(entry.path() / "model.onnx")) names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  ASSERT_FALSE(names.empty());
  int compared = 0;
  const std::vector<std::string> targets = rules::BuiltinTargetNames();
  for (size_t t = 0; t < targets.size(); ++t) {
    const std::string& target = targets[t];
    for (size_t m = 0; m < names.size(); ++m) {
      const std::string model = (models / names[m] / "model.onnx").string();
      // On each target a model as it comes, and one with options that switch steps.
      const std::string options = m % 2 == 0 ? "" : " --precision fp32 --disable constant_folding";
      const std::string common = absl::StrCat(" --target ", target, options, " --no-validate");
      testing::CommandResult plan = RunOvfix(
          absl::StrCat("convert ", model, " ", (dir / "p.onnx").string(), common, " --plan"));
      ASSERT_EQ(plan.exit_code, 0) << target << " " << names[m] << plan.err;
      EXPECT_FALSE(fs::exists(dir / "p.onnx")) << "--plan wrote a file";
      const std::map<std::string, std::string> planned = PlanStatuses(plan.out);
      ASSERT_FALSE(planned.empty()) << plan.out;
      testing::CommandResult convert =
          RunOvfix(absl::StrCat("convert ", model, " ", (dir / "c.onnx").string(), common,
                                " --quiet --report ", (dir / "r.json").string()));
      ASSERT_EQ(convert.exit_code, 0) << target << " " << names[m] << convert.err;
      std::ifstream in(dir / "r.json");
      const std::string json((std::istreambuf_iterator<char>(in)), {});
      EXPECT_EQ(ReportStatuses(json), planned) << target << " " << names[m];
      // The HTML report's steps table, on the first model of each target.
      if (m == 0) {
        testing::CommandResult page =
            RunOvfix(absl::StrCat("convert ", model, " ", (dir / "h.onnx").string(), common,
                                  " --quiet --report ", (dir / "r.html").string()));
        ASSERT_EQ(page.exit_code, 0) << page.err;
        std::ifstream html_in(dir / "r.html");
        const std::string html((std::istreambuf_iterator<char>(html_in)), {});
        for (const auto& [step, status] : planned) {
          const size_t row = html.find(absl::StrCat("<tr><td>", step, "</td>"));
          ASSERT_NE(row, std::string::npos) << step;
          const std::string line = html.substr(row, html.find("</tr>", row) - row);
          EXPECT_NE(line.find(status), std::string::npos) << line << " vs " << status;
        }
      }
      // explain on one step: with the options, one that does not run (a different one on
      // each target), else one that does.
      std::vector<std::string> off, on;
      for (const auto& [step, status] : planned) {
        (absl::StartsWith(status, "does not run") ? off : on).push_back(step);
      }
      const std::vector<std::string>& pool = m % 2 == 1 && !off.empty() ? off : on;
      const std::vector<std::string> asked = {pool[(t + m) % pool.size()]};
      for (const std::string& step : asked) {
        testing::CommandResult explain =
            RunOvfix(absl::StrCat("explain ", step, " ", model, common, " --summary"));
        ASSERT_EQ(explain.exit_code, 0) << explain.err;
        EXPECT_EQ(ExplainStatus(explain.out, step), planned.at(step))
            << target << " " << names[m] << " " << step;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ovfix::converter
