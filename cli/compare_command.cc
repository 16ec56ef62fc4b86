// `ovfix compare`: runs a model on two backends/precisions (or two models, an original and its
// conversion, on one) with every intermediate value captured, and names the node where the
// results start to diverge. The node where a wrong result shows (a NaN at the output) is
// rarely the one that made it; this is the Paddle-Lite "print every layer" hunt, automated.
//
//   ovfix compare MODEL --ref cpu:fp32 --test opencl:fp16-storage [--input NAME=FILE.pb ...]
//   ovfix compare ORIGINAL.onnx CONVERTED.onnx [--backend cpu:fp32]
//
// Inputs come from --input and --test-data; without either, from test_data_set_0/ beside the
// (first) model when it has one (the model zoo's layout: real inputs, real ranges; an fp16
// overflow often needs them). Inputs still missing, or all with --random, are random from a
// fixed seed (floats in [-1, 1), integers in [0, 4), symbolic dims 1), so two runs compare
// the same thing. The final outputs get the verdict convert and `run --test-data` give
// (converter/output_verdict.h). Exit codes: 0 the final outputs meet the accuracy criteria
// (and, with --rtol/--atol given, every value is within them), 1 they do not, 2 bad input or
// usage.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/command_files.h"
#include "cli/compare_report.h"
#include "cli/conversion_flags.h"
#include "cli/input_feeds.h"
#include "converter/data_inputs.h"
#include "converter/model_run.h"
#include "converter/output_verdict.h"
#include "converter/status_line.h"
#include "exec/layer_compare.h"
#include "exec/random_inputs.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix::cli {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSeed = 0x0f1c0ae5ull;
constexpr size_t kDefaultRows = 40;

struct CompareOptions {
  std::vector<std::string> models;
  std::string ref = "cpu:fp32";
  std::string test = "opencl:fp32";
  std::string backend = "cpu:fp32";
  std::vector<std::string> inputs;  // NAME=FILE.pb
  std::string test_data;
  double rtol = 0, atol = 0;
  std::vector<std::string> accuracy;  // --accuracy, as given
  std::string json, html;
  int device = -1;
  int threads = 0;
  bool all = false;
  bool random = false;
  bool strict_device = false;  // a node on the CPU in a device run is an error
  CLI::Option* ref_option = nullptr;
  CLI::Option* test_option = nullptr;
  CLI::Option* backend_option = nullptr;
  CLI::Option* rtol_option = nullptr;
  CLI::Option* atol_option = nullptr;
};

// The files a comparison reads or writes: its errors name one of them, the (first) model when
// they name none (cli/bad_input.h).
std::vector<std::string> Files(const CompareOptions& o) {
  std::vector<std::string> files = o.models;
  files.insert(files.end(), {o.test_data, o.json, o.html});
  for (const std::string& spec : o.inputs) files.push_back(spec.substr(spec.find('=') + 1));
  return files;
}

// Feeds from --test-data (input_K.pb in graph-input order, the model's own test_data_set_0/
// when no input is given) and --input, random for the rest.
absl::StatusOr<exec::TensorMap> ReadInputs(const CompareOptions& o, const Graph& graph,
                                           std::string& description) {
  std::string test_data = o.test_data;
  if (!o.test_data.empty() && fs::is_directory(o.test_data)) {
    // A set's folder, or the folder of test_data_set_*/ (the first set is compared).
    test_data = converter::FirstTestDataSet(o.test_data);
  } else if (o.test_data.empty() && o.inputs.empty() && !o.random) {
    // The model zoo's layout: real inputs show real ranges (an overflow needs them).
    const fs::path beside = fs::path(o.models[0]).parent_path() / "test_data_set_0";
    if (fs::exists(beside / "input_0.pb")) test_data = beside.string();
  }
  std::vector<std::string> sources;
  OVFIX_ASSIGN_OR_RETURN(exec::TensorMap feeds, ReadFeeds(graph, test_data, o.inputs, &sources));
  exec::RandomInputOptions random_options;
  random_options.seed = kSeed;
  absl::StatusOr<exec::TensorMap> random = exec::RandomInputs(graph, random_options);
  std::vector<std::string> randomized;
  for (const Value* v : converter::DataInputs(graph)) {
    if (feeds.contains(v->name())) continue;
    if (!random.ok()) return random.status();
    feeds[v->name()] = random->at(v->name());
    randomized.push_back(v->name());
  }
  if (!randomized.empty()) {
    sources.push_back(absl::StrFormat("%s random (seed 0x%x, symbolic dims 1)",
                                      absl::StrJoin(randomized, ", "), kSeed));
  }
  description = sources.empty() ? "none" : absl::StrJoin(sources, "; ");
  return feeds;
}

std::string Shorten(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return ".." + s.substr(s.size() - (width - 2));
}

std::string Num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.3g", v);
}

// The rows worth showing: every row with --all or when few; else those around the first
// divergence, or without one the largest errors (kept in graph order).
std::vector<size_t> RowsToShow(const exec::LayerReport& report, bool all) {
  std::vector<size_t> rows;
  const size_t total = report.nodes.size();
  if (all || total <= kDefaultRows) {
    for (size_t i = 0; i < total; ++i) rows.push_back(i);
    return rows;
  }
  if (report.first_divergence >= 0) {
    const size_t first = static_cast<size_t>(report.first_divergence);
    const size_t begin = std::min(first > 10 ? first - 10 : 0, total - kDefaultRows);
    for (size_t i = begin; i < begin + kDefaultRows; ++i) rows.push_back(i);
    return rows;
  }
  for (size_t i = 0; i < total; ++i) rows.push_back(i);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    return report.nodes[a].rel_error > report.nodes[b].rel_error;
  });
  rows.resize(kDefaultRows);
  std::sort(rows.begin(), rows.end());
  return rows;
}

void PrintTable(const exec::LayerReport& report, bool all) {
  std::printf("    %4s  %-40s %-18s %11s %10s %10s %11s  %s\n", "#", "node", "op", "max abs err",
              "rel err", "cosine", "non-finite", "status");
  const std::vector<size_t> rows = RowsToShow(report, all);
  size_t previous = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    const size_t i = rows[k];
    if (i > previous) std::printf("    %4s  (%zu rows)\n", "...", i - previous);
    previous = i + 1;
    const exec::NodeComparison& n = report.nodes[i];
    const bool first = static_cast<int>(i) == report.first_divergence;
    std::string status;
    switch (n.state) {
      case exec::NodeState::kWithin:
        status = "ok";
        break;
      case exec::NodeState::kNotCompared:
        status = "-";
        break;
      case exec::NodeState::kDiverged:
        status = first ? "FIRST DIVERGENCE"
                       : (n.inputs_diverged
                              ? absl::StrCat("from ",
                                             n.diverged_inputs.empty() ? "?" : n.diverged_inputs[0])
                              : "diverged");
    }
    if (n.state == exec::NodeState::kNotCompared) {
      std::printf("    %4d  %-40s %-18s %11s %10s %10s %11s  %s\n", n.index,
                  Shorten(NodeLabel(n), 40).c_str(), Shorten(n.op_type, 18).c_str(), "", "", "", "",
                  "not compared");
      continue;
    }
    std::printf("%s %4d  %-40s %-18s %11s %10s %10.6f %11s  %s\n", first ? ">>>" : "   ", n.index,
                Shorten(NodeLabel(n), 40).c_str(), Shorten(n.op_type, 18).c_str(),
                Num(n.max_abs_error).c_str(), Num(n.rel_error).c_str(), n.cosine,
                absl::StrCat(n.ref_non_finite, "/", n.test_non_finite).c_str(), status.c_str());
  }
  if (previous < report.nodes.size()) {
    std::printf("    %4s  (%zu rows; --all prints every node)\n", "...",
                report.nodes.size() - previous);
  }
}

std::string Summary(const exec::LayerReport& report) {
  const std::string tail =
      absl::StrFormat("%d of %d values out of tolerance (rtol %g, atol %g)", report.diverged_values,
                      report.compared_values, report.tolerance.rtol, report.tolerance.atol);
  if (report.first_divergence >= 0) {
    // Inside an If, Loop or Scan: the node in its body where the divergence starts says why.
    const exec::NodeComparison& n = report.nodes[report.first_divergence];
    std::string why;
    for (const exec::ValueComparison& v : exec::FirstDivergingNode(report)->outputs) {
      if (!v.within) {
        why = absl::StrCat(" (output '", v.name, "': ", v.problem, ")");
        break;
      }
    }
    return absl::StrCat("first divergence: #", n.index, " ", exec::FirstDivergenceText(report), why,
                        "; ", tail);
  }
  for (const exec::ValueComparison& v : report.graph_inputs) {
    if (!v.within) {
      return absl::StrCat("divergence at graph input '", v.name, "' (", v.problem, "); ", tail);
    }
  }
  if (!report.all_within()) return absl::StrCat("divergence, no starting node found; ", tail);
  return absl::StrFormat(
      "no divergence: all %d compared values within tolerance (rtol %g, atol "
      "%g)",
      report.compared_values, report.tolerance.rtol, report.tolerance.atol);
}

// The report files must not replace what the comparison reads, nor each other.
absl::Status CheckFiles(const CompareOptions& o, const Model& first, const Model& second) {
  converter::CommandFiles files;
  files.ReadModel(o.models[0], first, "the model");
  if (o.models.size() == 2) files.ReadModel(o.models[1], second, "the second model");
  ReadInputFiles(o.inputs, files);
  if (!o.test_data.empty()) files.ReadTestData(o.test_data, "--test-data");
  // test_data_set_0/ beside the model, read when no input is given.
  const fs::path folder = fs::path(o.models[0]).parent_path();
  files.ReadTestData(folder.empty() ? "." : folder.string(), "the model's test data");
  if (!o.json.empty()) files.Write(o.json, "--json");
  if (!o.html.empty()) files.Write(o.html, "--html");
  return files.Check();
}

int RunCompare(CompareOptions& o) {
  auto fail = [&o](absl::string_view message) { return BadInput("compare", message, Files(o)); };
  const bool two_models = o.models.size() == 2;
  if (two_models && (o.ref_option->count() > 0 || o.test_option->count() > 0)) {
    return fail("--ref/--test compare one model on two backends; with two models give --backend");
  }
  if (!two_models && o.backend_option->count() > 0) {
    return fail("--backend is for two models; with one model give --ref and --test");
  }
  absl::StatusOr<std::unique_ptr<Model>> ref_model = LoadModel(o.models[0]);
  if (!ref_model.ok()) return fail(ref_model.status().message());
  std::unique_ptr<Model> test_holder;
  if (two_models) {
    absl::StatusOr<std::unique_ptr<Model>> m = LoadModel(o.models[1]);
    if (!m.ok()) return fail(m.status().message());
    test_holder = std::move(*m);
  }
  const Model& test_model = two_models ? *test_holder : **ref_model;
  if (absl::Status s = CheckFiles(o, **ref_model, test_model); !s.ok()) return fail(s.message());

  exec::CompareSide ref, test;
  ref.model = ref_model->get();
  test.model = &test_model;
  if (two_models) {
    if (auto s = exec::ParseSideSpec(o.backend, ref.options); !s.ok()) {
      return fail(absl::StrCat("--backend ", s.message()));
    }
    test.options = ref.options;
    ref.label = o.models[0];
    test.label = o.models[1];
  } else {
    if (auto s = exec::ParseSideSpec(o.ref, ref.options); !s.ok()) {
      return fail(absl::StrCat("--ref ", s.message()));
    }
    if (auto s = exec::ParseSideSpec(o.test, test.options); !s.ok()) {
      return fail(absl::StrCat("--test ", s.message()));
    }
    ref.label = o.ref;
    test.label = o.test;
  }
  for (exec::CompareSide* side : {&ref, &test}) {
    side->options.device = o.device;
    side->options.threads = o.threads;
  }
  if (o.strict_device && ref.options.backend == "cpu" && test.options.backend == "cpu") {
    return fail("--strict-device needs a device backend (opencl) on one side");
  }
  // The final outputs are judged at the precision involved (a side that rounds to float16, a
  // second model that holds 16-bit float data). fp16 rounding noise reaches ~1e-3 of a value's
  // range after a few layers; fp32 backends differ only in summation order.
  const converter::JudgedPrecision judged = converter::JudgedPrecisionOf(
      two_models ? &test_model : nullptr, {ref.options.precision, test.options.precision});
  const bool half = judged != converter::JudgedPrecision::kFloat32;
  exec::Tolerance tolerance{half ? 1e-2 : 1e-4, half ? 1e-3 : 1e-5};
  if (o.rtol_option->count() > 0) tolerance.rtol = o.rtol;
  if (o.atol_option->count() > 0) tolerance.atol = o.atol;
  if (tolerance.rtol < 0 || tolerance.atol < 0) return fail("--rtol and --atol must be >= 0");
  // Given, --rtol/--atol are element-wise criteria on every value, as they always were; the
  // final outputs are judged by the accuracy criteria convert uses in any case.
  const bool elementwise = o.rtol_option->count() > 0 || o.atol_option->count() > 0;
  converter::AccuracySpec accuracy;
  if (absl::Status s = ParseAccuracyFlags(o.accuracy, accuracy); !s.ok()) return fail(s.message());

  CompareContext context{o.models[0], two_models ? o.models[1] : o.models[0], ""};
  absl::StatusOr<exec::TensorMap> feeds = ReadInputs(o, (*ref_model)->graph(), context.inputs);
  if (!feeds.ok()) return fail(feeds.status().message());
  {
    // Each side gets the feeds in the float types it declares (float32 files for a float16
    // model); say so, since those are not the bytes of the files.
    std::vector<std::string> notes;
    // Only the notes are wanted here (each session converts the feeds itself).
    converter::MatchInputTypes((*ref_model)->graph(), *feeds, &notes);
    if (two_models) converter::MatchInputTypes(test_model.graph(), *feeds, &notes);
    for (const std::string& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  }
  absl::StatusOr<exec::LayerReport> report;
  {
    // Both sides run with every value captured: long on a large model.
    converter::StatusLine status(stderr);
    status.Set(absl::StrCat("comparing layers: ", ref.label, " vs ", test.label));
    report = exec::CompareLayers(ref, test, *feeds, tolerance);
  }
  if (!report.ok()) return fail(report.status().message());
  if (o.strict_device && !report->cpu_fallbacks.empty()) {
    return fail(absl::StrCat("--strict-device: ", absl::StrJoin(report->cpu_fallbacks, "; ")));
  }
  // --accuracy names outputs the model has, with criteria that fit them (before any report).
  if (absl::Status s = converter::CheckAccuracySpec(accuracy, report->ref_outputs); !s.ok()) {
    return fail(s.message());
  }
  int compared_nodes = 0;
  for (const exec::NodeComparison& n : report->nodes) {
    compared_nodes += n.state != exec::NodeState::kNotCompared;
  }
  if (compared_nodes == 0 && !report->nodes.empty()) {
    return fail("no node output has the same name in both runs: nothing to compare");
  }

  std::printf(
      "compare %s: ref %s, test %s; inputs: %s\n",
      two_models ? absl::StrCat(o.models[0], " vs ", o.models[1]).c_str() : o.models[0].c_str(),
      two_models ? o.backend.c_str() : o.ref.c_str(),
      two_models ? o.backend.c_str() : o.test.c_str(), context.inputs.c_str());
  PrintTable(*report, o.all);
  if (!report->weights.empty()) {
    std::printf("weights and constants the test precision cannot hold (%zu):\n",
                report->weights.size());
    for (const exec::WeightIssue& w : report->weights) {
      std::printf("  %s (%s): %s\n", w.name.c_str(), w.source.c_str(), w.problem.c_str());
    }
  }
  for (const std::string& note : report->notes) std::printf("note: %s\n", note.c_str());
  // The verdict on the final outputs, by convert's criteria and its defaults for the precision
  // involved; the console and the files say the same.
  const std::vector<converter::OutputVerdict> verdicts =
      converter::JudgeOutputs(report->ref_outputs, report->test_outputs, judged, accuracy);
  if (!o.json.empty()) {
    if (auto s = WriteCompareJson(o.json, *report, verdicts, context); !s.ok()) {
      return fail(s.message());
    }
  }
  if (!o.html.empty()) {
    if (auto s = WriteCompareHtml(o.html, *report, verdicts, context); !s.ok()) {
      return fail(s.message());
    }
  }
  bool outputs_meet = true;
  for (const converter::OutputVerdict& verdict : verdicts) {
    outputs_meet = outputs_meet && verdict.meets;
    if (!verdict.computed) {
      std::printf("output '%s': not computed by %s FAILS\n", verdict.name.c_str(),
                  test.label.c_str());
      continue;
    }
    std::printf("output '%s': %s%s\n", verdict.name.c_str(),
                converter::DescribeVerdict(verdict).c_str(),
                verdict.meets ? " - meets the criteria" : " FAILS");
  }
  // The summary last: the layer search's finding, then the verdict the exit code follows.
  std::printf("%s; final outputs %s\n", Summary(*report).c_str(),
              outputs_meet ? "meet the accuracy criteria" : "FAIL the accuracy criteria");
  const bool within = outputs_meet && (!elementwise || report->all_within());
  return within ? kExitOk : kExitMismatch;
}

}  // namespace

Command AddCompareCommand(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* sub = app.add_subcommand(
      "compare",
      "Compare a model layer by layer on two backends (or two models) and name the "
      "node where the results start to diverge");
  sub->add_option("models", o->models, "MODEL, or ORIGINAL.onnx CONVERTED.onnx")
      ->required()
      ->expected(1, 2);
  o->ref_option =
      sub->add_option("--ref", o->ref, "Reference side BACKEND[:PRECISION] (default cpu:fp32)");
  o->test_option =
      sub->add_option("--test", o->test,
                      "Tested side BACKEND[:PRECISION], e.g. opencl:fp16-storage, or "
                      "cpu:fp16-all (every float tensor in fp16, the model's fp32 islands "
                      "ignored, as OpenVINO GPU and ncnn on Vulkan run it) (default "
                      "opencl:fp32)");
  o->backend_option = sub->add_option("--backend", o->backend,
                                      "With two models: where both run (default cpu:fp32)");
  AddInputFileFlag(sub, o->inputs);
  sub->add_option("--test-data", o->test_data,
                  "Folder with input_K.pb in graph-input order, or a folder of "
                  "test_data_set_*/ folders (the first is used; other inputs are random)");
  o->rtol_option = sub->add_option(
      "--rtol", o->rtol,
      "Tolerance relative to max |reference| of each value, for the layer-by-layer search "
      "(default 1e-4; 1e-2 with fp16); given, an element-wise criterion every value must "
      "meet besides --accuracy");
  o->atol_option = sub->add_option(
      "--atol", o->atol,
      "Absolute tolerance of the layer-by-layer search (default 1e-5; 1e-3 with fp16); given, "
      "a criterion as --rtol");
  AddAccuracyFlag(sub, o->accuracy);
  sub->add_option("--json", o->json, "Write the report as JSON to FILE");
  sub->add_option("--html", o->html, "Write a self-contained HTML page with a plot to FILE");
  AddExecutorFlags(sub, o->device, o->threads);
  sub->add_flag("--random", o->random,
                "Random inputs even where the model has test_data_set_0/ beside it");
  sub->add_flag("--strict-device", o->strict_device,
                "Fail (exit 2) when a device run (opencl) ran any node on the CPU");
  sub->add_flag("--all", o->all, "Print every node, not only the rows around the divergence");
  return {sub, [o] { return RunCompare(*o); }, [o] { return Files(*o); }};
}

}  // namespace ovfix::cli
