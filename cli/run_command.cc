// `ovfix run MODEL`: runs a model on an executor and prints what came out. With --test-data
// DIR it reads DIR/input_K.pb (in graph-input order) and checks DIR/output_K.pb, which makes
// it the quickest way to see whether a backend or a precision changes a model's results.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/command_files.h"
#include "cli/conversion_flags.h"
#include "cli/input_feeds.h"
#include "converter/data_inputs.h"
#include "converter/json_writer.h"
#include "converter/model_run.h"
#include "converter/output_verdict.h"
#include "converter/session_graph.h"
#include "converter/status_line.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/opencl/opencl_session.h"
#include "ir/model_io.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"

namespace ovfix::cli {
namespace {

constexpr char kFp16All[] = "fp16-all";

namespace fs = std::filesystem;

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.pb
  std::string test_data;
  std::string output_dir;
  std::string precision = "fp32";
  std::string backend = "cpu";
  int threads = 0;
  int device = -1;  // opencl: device index (see `ovfix devices`)
  int repeat = 1;
  bool profile = false;
  bool graph_as_written = false;  // no session graph optimization (converter/session_graph.h)
  bool strict_device = false;     // a node on the CPU is an error (device backends)
  // --rtol/--atol: element-wise criteria, judged as before the accuracy criteria existed
  // (given, they replace the default criteria; --accuracy still applies beside them).
  double rtol = 1e-3;
  double atol = 1e-5;
  bool elementwise = false;
  std::vector<std::string> accuracy;  // --accuracy, as given
  bool json = false;
};

// What --json prints: per output its summary and, with --test-data, its comparison.
struct OutputRecord {
  std::string name, type;
  double min = 0, max = 0, mean = 0;
  int64_t non_finite = 0;
  bool compared = false, matches = false;
  std::string comparison;  // DescribeComparison, or the mismatch
  double max_abs_error = 0, max_rel_error = 0;
  std::optional<converter::OutputVerdict> verdict;  // the accuracy criteria's
};

// The files a run reads or writes: its errors name one of them, the model when they name
// none (cli/bad_input.h).
std::vector<std::string> Files(const RunOptions& o) {
  std::vector<std::string> files = {o.model, o.test_data, o.output_dir};
  for (const std::string& spec : o.inputs) files.push_back(spec.substr(spec.find('=') + 1));
  return files;
}

// Wall time per node and per op type, for --profile: over every run but the first when there
// are several (the first also packs weights and sizes buffers, which later runs reuse).
class NodeTimes {
 public:
  void set_recording(bool recording) { recording_ = recording; }

  void Add(const Node& node, double ms) {
    if (!recording_) return;
    Entry& e = by_node_[&node];
    ++e.calls;
    e.ms += ms;
    total_ += ms;
  }

  // `runs`: how many runs were recorded; `first_left_out` says the first run was not.
  void Print(int runs, bool first_left_out) const {
    std::map<std::string, Entry> by_op;
    for (const auto& [node, entry] : by_node_) {
      Entry& e = by_op[node->op_type()];
      e.ms += entry.ms;
      e.calls += entry.calls;
    }
    std::vector<std::pair<std::string, Entry>> ops(by_op.begin(), by_op.end());
    std::sort(ops.begin(), ops.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    std::printf("profile: %.3f ms per run in nodes%s\n", total_ / runs,
                first_left_out ? " (the first run, which also prepares weights, left out)" : "");
    std::printf("  %-28s %10s %7s %7s\n", "op type", "ms/run", "share", "nodes");
    for (const auto& [op, e] : ops) {
      std::printf("  %-28s %10.3f %6.1f%% %7ld\n", op.c_str(), e.ms / runs, Share(e.ms),
                  static_cast<long>(e.calls / runs));
    }
    std::vector<std::pair<const Node*, Entry>> slowest(by_node_.begin(), by_node_.end());
    std::sort(slowest.begin(), slowest.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    slowest.resize(std::min<size_t>(slowest.size(), 15));
    std::printf("  slowest nodes:\n");
    for (const auto& [node, e] : slowest) {
      std::printf("  %10.3f ms %6.1f%%  %s\n", e.ms / runs, Share(e.ms), node->Describe().c_str());
    }
  }

 private:
  struct Entry {
    double ms = 0;
    int64_t calls = 0;
  };
  double Share(double ms) const { return total_ > 0 ? 100 * ms / total_ : 0; }

  std::map<const Node*, Entry> by_node_;
  double total_ = 0;
  bool recording_ = true;
};

absl::StatusOr<exec::TensorMap> ReadInputs(const RunOptions& o, const Graph& graph) {
  OVFIX_ASSIGN_OR_RETURN(exec::TensorMap feeds, ReadFeeds(graph, o.test_data, o.inputs));
  const std::vector<const Value*> inputs = converter::DataInputs(graph);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Value* v = inputs[k];
    if (feeds.contains(v->name())) continue;
    if (!o.test_data.empty()) {
      // A folder without any input_K.pb is most likely not a test-data folder at all.
      bool any = false;
      for (size_t i = 0; i < inputs.size() && !any; ++i) {
        any = fs::exists(fs::path(o.test_data) / absl::StrCat("input_", i, ".pb"));
      }
      if (!any) {
        const std::string expected =
            inputs.size() == 1
                ? absl::StrCat("input_0.pb for input '", v->name(), "'")
                : absl::StrCat("input_0.pb to input_", inputs.size() - 1,
                               ".pb, one per graph input in order: ",
                               absl::StrJoin(inputs, ", ", [](std::string* out, const Value* in) {
                                 absl::StrAppend(out, in->name());
                               }));
        return absl::InvalidArgumentError(absl::StrCat(
            "--test-data ", o.test_data, ": no input_K.pb files (expected ", expected, ")"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("--test-data ", o.test_data, ": no input_", k, ".pb for input '", v->name(),
                       "' (", DescribeType(*v), "): give --input ", v->name(), "=FILE.pb"));
    }
    return absl::InvalidArgumentError(absl::StrCat("missing input '", v->name(), "' (",
                                                   DescribeType(*v), "): give --input ", v->name(),
                                                   "=FILE.pb or --test-data DIR"));
  }
  return feeds;
}

// "logits  float[1,1000]  min -3.1 max 9.2 mean 0.013 non-finite 0"
void PrintSummary(const std::string& name, const Tensor& t, OutputRecord& record, bool print) {
  record.name = name;
  record.type = DescribeTensor(t);
  std::string line = absl::StrFormat("%-24s %-20s", name, DescribeTensor(t));
  if (t.type() == DataType::kString) {
    if (print) std::printf("%s\n", line.c_str());
    return;
  }
  double min = 0, max = 0, sum = 0;
  int64_t finite = 0, non_finite = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.GetAsDouble(i);
    if (!std::isfinite(v)) {
      ++non_finite;
      continue;
    }
    if (finite == 0 || v < min) min = v;
    if (finite == 0 || v > max) max = v;
    sum += v;
    ++finite;
  }
  const double mean = finite > 0 ? sum / static_cast<double>(finite) : 0.0;
  record.min = min;
  record.max = max;
  record.mean = mean;
  record.non_finite = non_finite;
  if (!print) return;
  std::printf("%s min %.6g max %.6g mean %.6g non-finite %lld\n", line.c_str(), min, max, mean,
              static_cast<long long>(non_finite));
}

std::string OutputFile(const RunOptions& o, size_t k) {
  return (fs::path(o.output_dir) / absl::StrCat("output_", k, ".pb")).string();
}

// --output-dir's files must not replace what the run reads (--test-data's expected outputs
// above all), before the run reads them.
absl::Status CheckFiles(const RunOptions& o, const Model& model) {
  if (o.output_dir.empty()) return absl::OkStatus();
  converter::CommandFiles files;
  files.ReadModel(o.model, model, "the model");
  ReadInputFiles(o.inputs, files);
  if (!o.test_data.empty()) files.ReadTestData(o.test_data, "--test-data");
  for (size_t k = 0; k < model.graph().outputs().size(); ++k) {
    files.Write(OutputFile(o, k), "--output-dir", /*makes_folder=*/true);
  }
  return files.Check();
}

void PrintJson(const RunOptions& o, const std::vector<OutputRecord>& records,
               const std::vector<double>& times, const std::vector<std::string>& notes,
               const std::vector<std::string>& session_notes, bool compared, bool all_match) {
  JsonWriter w;
  w.BeginObject().Fields({Field("model", o.model), Field("backend", o.backend),
                          Field("precision", o.precision),
                          OptionalField(!o.test_data.empty(), "test_data", o.test_data)});
  w.Array("outputs", records, [](JsonWriter& w, const OutputRecord& r) {
    w.BeginObject().Fields({Field("name", r.name), Field("type", r.type), Field("min", r.min),
                            Field("max", r.max), Field("mean", r.mean),
                            Field("non_finite", r.non_finite)});
    if (r.compared) {
      w.Fields({Field("matches", r.matches), Field("comparison", r.comparison),
                Field("max_abs_error", r.max_abs_error), Field("max_rel_error", r.max_rel_error)});
    }
    if (r.compared && r.verdict) {
      w.Key("verdict");
      converter::WriteVerdict(w, *r.verdict);
    }
    w.EndObject();
  });
  double best = times.empty() ? 0 : times[0], total = 0;
  for (double t : times) {
    best = std::min(best, t);
    total += t;
  }
  std::vector<std::string> all_notes = notes;
  all_notes.insert(all_notes.end(), session_notes.begin(), session_notes.end());
  w.Fields({OptionalField(!o.test_data.empty(), "compared", compared),
            OptionalField(!o.test_data.empty(), "matches", all_match), Field("runs", times.size()),
            Field("mean_ms", times.empty() ? 0 : total / times.size()), Field("best_ms", best),
            Field("notes", all_notes)});
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

int RunModel(const RunOptions& o) {
  // Every failure of the run itself is one stderr line and exit code 2.
  auto fail = [&o](const absl::Status& status) {
    return BadInput("run", status.message(), Files(o));
  };
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(o.model);
  if (!model.ok()) return fail(model.status());
  const Graph& graph = (*model)->graph();
  // fp16-all: fp16 storage with the model's fp32 islands ignored (its Casts to float rounded
  // to fp16 too), which is how OpenVINO's GPU plugin and ncnn on Vulkan run a model.
  const bool fp16_all = o.precision == kFp16All;
  absl::StatusOr<exec::Precision> precision =
      exec::ParsePrecision(fp16_all ? "fp16-storage" : o.precision);
  if (!precision.ok()) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "unknown precision '", o.precision, "' (fp32, fp16-storage, fp16-all or fp16)")));
  }
  if (fp16_all && o.backend != "cpu") {
    return fail(absl::InvalidArgumentError("--precision fp16-all runs on the cpu backend only"));
  }
  if (o.repeat < 1) return fail(absl::InvalidArgumentError("--repeat must be at least 1"));
  if (absl::Status s = CheckFiles(o, **model); !s.ok()) return fail(s);
  converter::AccuracySpec accuracy;
  if (absl::Status s = ParseAccuracyFlags(o.accuracy, accuracy); !s.ok()) return fail(s);
  if (!o.accuracy.empty() && o.test_data.empty()) {
    return fail(absl::InvalidArgumentError("--accuracy judges outputs against --test-data"));
  }
  absl::StatusOr<exec::TensorMap> read = ReadInputs(o, graph);
  if (!read.ok()) return fail(read.status());
  // float32 data for a converted model's float16 inputs (and the like) is converted.
  std::vector<std::string> conversions;
  const exec::TensorMap feeds = converter::MatchInputTypes(graph, *read, &conversions);
  if (!o.json) {
    for (const std::string& note : conversions) std::printf("note: %s\n", note.c_str());
  }

  exec::SessionOptions options;
  options.backend = o.backend;
  options.precision = *precision;
  options.islands_ignored = fp16_all;
  options.threads = o.threads;
  options.device = o.device;
  NodeTimes node_times;
  if (o.profile) {
    if (o.backend != "cpu") {
      return fail(absl::InvalidArgumentError("--profile times the cpu backend's nodes only"));
    }
    options.on_node_time = [&node_times](const Node& node, double ms) { node_times.Add(node, ms); };
  }
  if (o.strict_device && o.backend == "cpu") {
    return fail(absl::InvalidArgumentError("--strict-device needs a device backend (opencl)"));
  }
  std::string optimization_note;
  absl::StatusOr<converter::RunSession> run_session =
      converter::CreateRunSession(**model, feeds, options, o.graph_as_written, &optimization_note);
  if (!run_session.ok()) return fail(run_session.status());
  if (!optimization_note.empty() && !o.json) {
    std::printf("note: %s\n", optimization_note.c_str());
  }
  std::unique_ptr<exec::Session>* session = &run_session->session;

  absl::StatusOr<std::vector<Tensor>> outputs;
  std::vector<double> times;
  // On a terminal, a run that lasts shows that it is running.
  converter::StatusLine status(stderr);
  for (int r = 0; r < o.repeat; ++r) {
    status.Set(absl::StrCat("running ", o.model, " (", o.backend, ", ", o.precision, ")"), r + 1,
               o.repeat > 1 ? o.repeat : 0);
    node_times.set_recording(r > 0 || o.repeat == 1);
    const auto start = std::chrono::steady_clock::now();
    outputs = (*session)->Run(feeds);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (!outputs.ok()) {
      status.Clear();
      return fail(outputs.status());
    }
    if (o.strict_device) {
      // The first run shows every fallback: each node decides where it runs when it first
      // runs.
      const auto placement = exec::opencl::DevicePlacementOf(**session);
      if (placement && !placement->cpu.empty()) {
        status.Clear();
        return fail(
            absl::FailedPreconditionError(absl::StrCat("--strict-device: ", placement->Summary())));
      }
    }
  }
  status.Clear();
  // Nodes an opencl session ran on the CPU, and the device it used.
  if (!o.json) {
    for (const std::string& note : (*session)->notes()) std::printf("note: %s\n", note.c_str());
  }
  std::vector<OutputRecord> records(outputs->size());
  for (size_t k = 0; k < outputs->size(); ++k) {
    PrintSummary(graph.outputs()[k]->name(), (*outputs)[k], records[k], !o.json);
  }
  if (o.repeat > 1) {
    double best = times[0], total = 0;
    for (double t : times) {
      best = std::min(best, t);
      total += t;
    }
    if (!o.json) {
      std::printf("ran %d times (%s, %s): mean %.3f ms, best %.3f ms\n", o.repeat,
                  o.backend.c_str(), o.precision.c_str(), total / o.repeat, best);
    }
  }

  if (o.profile && !o.json) node_times.Print(o.repeat > 1 ? o.repeat - 1 : 1, o.repeat > 1);

  if (!o.output_dir.empty()) {
    std::error_code error;
    fs::create_directories(o.output_dir, error);
    for (size_t k = 0; k < outputs->size(); ++k) {
      absl::Status s = WriteTensorFile(OutputFile(o, k), (*outputs)[k], graph.outputs()[k]->name());
      if (!s.ok()) return fail(s);
    }
  }

  if (o.test_data.empty()) {
    if (o.json) PrintJson(o, records, times, conversions, (*session)->notes(), false, true);
    return kExitOk;
  }
  // The criteria convert judges by, with its defaults for the precision involved: a model
  // that holds float16 data (a conversion) or a run that rounds to float16.
  const converter::JudgedPrecision judged =
      converter::JudgedPrecisionOf(model->get(), {*precision});
  std::vector<std::pair<std::string, Tensor>> expected_outputs;
  for (size_t k = 0; k < outputs->size(); ++k) {
    const std::string path = (fs::path(o.test_data) / absl::StrCat("output_", k, ".pb")).string();
    if (!fs::exists(path)) continue;
    absl::StatusOr<Tensor> expected = ReadTensorFile(path);
    if (!expected.ok()) return fail(expected.status());
    expected_outputs.emplace_back(graph.outputs()[k]->name(), *std::move(expected));
  }
  if (absl::Status s = converter::CheckAccuracySpec(accuracy, expected_outputs); !s.ok()) {
    return fail(s);
  }
  const bool judge_by_criteria = !o.elementwise || !o.accuracy.empty();
  bool all_match = true;
  int compared = 0;
  for (size_t k = 0; k < outputs->size(); ++k) {
    const std::string path = (fs::path(o.test_data) / absl::StrCat("output_", k, ".pb")).string();
    const std::string& name = graph.outputs()[k]->name();
    auto found = std::find_if(expected_outputs.begin(), expected_outputs.end(),
                              [&](const auto& e) { return e.first == name; });
    if (found == expected_outputs.end()) continue;
    const Tensor* expected = &found->second;
    // A converted model's float16 output checked against the original's float data (the
    // counterpart of MatchInputTypes): widened to the reference's type, which is exact.
    const Tensor* actual = &(*outputs)[k];
    Tensor widened;
    if (actual->type() != expected->type() && IsFloatingPoint(actual->type()) &&
        IsFloatingPoint(expected->type())) {
      widened = ConvertTensor(*actual, expected->type());
      const std::string note = absl::StrFormat("output '%s': %s compared as %s, the type of %s",
                                               name, std::string(DataTypeName(actual->type())),
                                               std::string(DataTypeName(expected->type())), path);
      if (!o.json) std::printf("note: %s\n", note.c_str());
      conversions.push_back(note);
      actual = &widened;
    }
    exec::Comparison c = exec::CompareTensors(*actual, *expected, {o.rtol, o.atol});
    converter::OutputVerdict verdict =
        converter::JudgeOutput(name, *actual, *expected, judged, accuracy);
    const bool matches = (!o.elementwise || c.ok) && (!judge_by_criteria || verdict.meets);
    ++compared;
    all_match = all_match && matches;
    records[k].compared = true;
    records[k].matches = matches;
    records[k].comparison = c.ok ? exec::DescribeComparison(c) : c.message;
    // The verdict's measure (float16 as float; a NaN or infinity the reference lacks is an
    // infinite error, never 0).
    records[k].max_abs_error = verdict.stats.max_abs;
    records[k].max_rel_error =
        c.non_finite_differences > 0 ? std::numeric_limits<double>::infinity() : c.max_rel_error;
    records[k].verdict = verdict;
    if (o.json) continue;
    // The line convert prints of the output, then the element-wise check when asked for.
    std::printf("output '%s': %s%s\n", name.c_str(), converter::DescribeVerdict(verdict).c_str(),
                !judge_by_criteria ? ""
                : verdict.meets    ? " - meets the criteria"
                                   : " FAILS");
    if (o.elementwise) {
      if (c.ok) {
        std::printf("output '%s': matches (%s)\n", name.c_str(),
                    exec::DescribeComparison(c).c_str());
      } else {
        std::printf("output '%s': MISMATCH: %s\n", name.c_str(), c.message.c_str());
      }
    }
  }
  if (compared == 0 && !o.json) {
    std::printf("no output_K.pb in %s to compare with\n", o.test_data.c_str());
  }
  if (o.json)
    PrintJson(o, records, times, conversions, (*session)->notes(), compared > 0, all_match);
  return all_match ? kExitOk : kExitMismatch;
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand("run", "Run a model on an executor and check or save outputs");
  sub->add_option("model", o->model, "The .onnx model")->required();
  AddInputFileFlag(sub, o->inputs);
  sub->add_option("--test-data", o->test_data,
                  "Folder with input_K.pb (graph-input order) and output_K.pb to compare with, "
                  "or a folder of test_data_set_*/ folders (the first is run)");
  sub->add_option("--output-dir", o->output_dir, "Write the outputs there as output_K.pb");
  sub->add_option("--precision", o->precision,
                  "fp32, fp16-storage, fp16, or fp16-all (fp16 storage of every float tensor, "
                  "the model's fp32 islands ignored, as OpenVINO GPU and ncnn on Vulkan run it)");
  sub->add_option("--backend", o->backend, "Executor backend: cpu or opencl");
  AddExecutorFlags(sub, o->device, o->threads);
  sub->add_option("--repeat", o->repeat, "Run N times and print the timing");
  sub->add_flag("--profile", o->profile,
                "Print where the time went: per op type and the slowest nodes (cpu)");
  sub->add_flag("--graph-as-written", o->graph_as_written,
                "Run the graph exactly as written (by default the cpu runs an optimized copy: "
                "shapes folded, LayerNorm/GELU fused, as backends do)");
  sub->add_flag("--strict-device", o->strict_device,
                "Fail (exit 2) when any node runs on the CPU instead of the device backend");
  AddAccuracyFlag(sub, o->accuracy);
  CLI::Option* rtol = sub->add_option(
      "--rtol", o->rtol,
      "Element-wise criterion for --test-data: |got - want| <= atol + rtol*|want| for every "
      "element (default 1e-3 once --rtol or --atol is given); replaces the default --accuracy "
      "criteria, not those given");
  CLI::Option* atol = sub->add_option(
      "--atol", o->atol, "Absolute part of the element-wise criterion (default 1e-5; see --rtol)");
  sub->add_flag("--json", o->json, "Print the outputs (and comparisons) as one JSON object");
  return {sub,
          [o, rtol, atol] {
            // The folder forms convert --calibration-data and compare take: a set's folder, or
            // the folder that holds test_data_set_*/ (the first set is run).
            RunOptions resolved = *o;
            resolved.elementwise = rtol->count() > 0 || atol->count() > 0;
            int sets = 0;
            if (!o->test_data.empty()) {
              resolved.test_data = converter::FirstTestDataSet(o->test_data, &sets);
            }
            if (sets > 1 && !o->json) {
              std::printf("note: --test-data %s holds %d sets; running %s\n", o->test_data.c_str(),
                          sets, resolved.test_data.c_str());
            }
            return RunModel(resolved);
          },
          [o] { return Files(*o); }};
}

}  // namespace ovfix::cli
