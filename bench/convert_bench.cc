// `ovfix convert --target gpu-fp16` on resnet18 and mobilenet_v3_small, with and without
// validation, beside a load+save of the same model and a full CPU run of it, all measured
// in the same run, interleaved round by round. Then the conversion as `ovfix convert` does
// it with the model's test data as calibration data: validated, repaired to tolerance where
// needed (deep_residual), written and measured on the file, with the model runs it used,
// against one full CPU run.
// Targets: without validation <= 1.5x load+save; with validation <= 4 full CPU runs.
// A full CPU run is what `ovfix run MODEL --input ...` does: load the model, read the
// inputs, make a session, run once (a conversion loads and saves the model too). The bare
// session + run is printed beside it.
//
//   build/bench/ovfix_bench_convert            (OVFIX_BENCH_REPEATS=5 sets the repeats;
//                                               OVFIX_BENCH_VERBOSE=1 prints the phases of
//                                               the last validated conversion)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "converter/pipeline.h"
#include "exec/executor.h"
#include "ir/model_io.h"
#include "ir/tensor_proto.h"

namespace fs = std::filesystem;

namespace ovfix::bench {
namespace {

std::map<std::string, std::string> InputFiles(const std::string& dir, const Model& model) {
  std::map<std::string, std::string> files;
  int k = 0;
  for (const Value* v : model.graph().inputs()) {
    if (!v->is_initializer()) {
      files[v->name()] = absl::StrCat(dir, "/test_data_set_0/input_", k++, ".pb");
    }
  }
  return files;
}

void LoadSave(const std::string& in, const std::string& out) {
  auto model = LoadModel(in);
  Check(model.ok(), "load");
  Check(SaveModel(**model, out).ok(), "save");
}

std::vector<std::string> last_log;
int last_model_runs = 0;

void Convert(const std::string& in, const std::string& out, bool validate,
             const std::map<std::string, std::string>& inputs) {
  last_log.clear();
  auto model = LoadModel(in);
  Check(model.ok(), "load");
  converter::PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.convert.validate = validate;
  options.convert.input_files = inputs;
  options.log = [](const std::string& line) { last_log.push_back(line); };
  auto report = converter::ConvertModel(**model, options);
  Check(report.ok() && report->outputs_match,
        absl::StrCat("convert ", in, report.ok() ? "" : std::string(report.status().message())));
  Check(SaveModel(**model, out).ok(), "save");
}

// What `ovfix convert IN OUT --target gpu-fp16 --calibration-data DIR` does.
void ConvertRepairWrite(const std::string& dir, const std::string& out) {
  auto model = LoadModel(dir + "/model.onnx");
  Check(model.ok(), "load");
  converter::PipelineOptions options;
  options.convert.target = "gpu-fp16";
  options.calibration_data = {dir + "/test_data_set_0"};
  options.output_path = out;
  options.write_output = true;
  auto report = converter::ConvertModel(**model, options);
  Check(report.ok() && report->outputs_match && report->written,
        absl::StrCat("convert ", dir, report.ok() ? "" : std::string(report.status().message())));
  last_model_runs = report->model_runs;
}

void SessionRun(const Model& model, const exec::TensorMap& inputs) {
  auto session = exec::CreateSession(model, {});
  Check(session.ok(), "session");
  Check((*session)->Run(inputs).ok(), "run");
}

void FullRun(const std::string& in, const std::map<std::string, std::string>& files) {
  auto model = LoadModel(in);
  Check(model.ok(), "load");
  exec::TensorMap inputs;
  for (const auto& [input, file] : files) {
    auto t = ReadTensorFile(file);
    Check(t.ok(), file);
    inputs[input] = *t;
  }
  SessionRun(**model, inputs);
}

}  // namespace
}  // namespace ovfix::bench

int main() {
  using namespace ovfix;
  using namespace ovfix::bench;
  const char* repeats_env = std::getenv("OVFIX_BENCH_REPEATS");
  const int repeats = repeats_env != nullptr ? std::max(1, std::atoi(repeats_env)) : 5;
  const fs::path tmp =
      fs::temp_directory_path() / ("ovfix_bench_convert_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::vector<Row> load_rows, run_rows;
  for (const std::string name : {"resnet18", "mobilenet_v3_small"}) {
    const std::string dir = std::string(OVFIX_SHARED_DIR) + "/models/" + name;
    const std::string in = dir + "/model.onnx";
    if (!fs::exists(in)) {
      std::fprintf(stderr, "bench: %s not found, skipped\n", in.c_str());
      continue;
    }
    auto model = LoadModel(in);
    Check(model.ok(), "load");
    const auto files = InputFiles(dir, **model);
    exec::TensorMap inputs;
    for (const auto& [input, file] : files) {
      auto t = ReadTensorFile(file);
      Check(t.ok(), file);
      inputs[input] = *t;
    }
    const std::string out = (tmp / (name + ".onnx")).string();
    std::printf("%s: measuring (%d rounds) ...\n", name.c_str(), repeats);
    const std::vector<double> ms = InterleavedMedianMs(
        repeats, {[&] { LoadSave(in, out); }, [&] { Convert(in, out, false, files); },
                  [&] { FullRun(in, files); }, [&] { SessionRun(**model, inputs); },
                  [&] { Convert(in, out, true, files); }});
    const double load_save = ms[0], no_validate = ms[1], full_run = ms[2], run = ms[3],
                 validated = ms[4];
    if (std::getenv("OVFIX_BENCH_VERBOSE") != nullptr) {
      for (const std::string& line : last_log) std::printf("    %s\n", line.c_str());
    }
    std::printf(
        "  load+save %.1f ms, convert --no-validate %.1f ms, convert %.1f ms, "
        "full CPU run %.1f ms (session + run alone %.1f ms: convert = %.2fx of it)\n",
        load_save, no_validate, validated, full_run, run, validated / run);
    load_rows.push_back(
        {name + ": convert --no-validate vs load+save (ms)", no_validate, load_save, "", 1.5});
    run_rows.push_back(
        {name + ": convert (validated) vs full CPU run (ms)", validated, full_run, "", 4.0});
  }
  std::vector<Row> repair_rows;
  for (const std::string name : {"resnet18", "mobilenet_v3_small", "deep_residual"}) {
    const std::string dir = std::string(OVFIX_SHARED_DIR) + "/models/" + name;
    if (!fs::exists(dir + "/model.onnx")) continue;
    auto model = LoadModel(dir + "/model.onnx");
    Check(model.ok(), "load");
    const auto files = InputFiles(dir, **model);
    const std::string out = (tmp / (name + "_repaired.onnx")).string();
    // deep_residual's repair takes minutes on two cores: fewer rounds of it.
    const int rounds = name == "deep_residual" ? std::max(1, repeats / 5) : repeats;
    std::printf("%s: validated + repaired conversion (%d rounds) ...\n", name.c_str(), rounds);
    const std::vector<double> ms = InterleavedMedianMs(
        rounds,
        {[&] { ConvertRepairWrite(dir, out); }, [&] { FullRun(dir + "/model.onnx", files); }});
    std::printf("  convert %.1f ms using %d model runs, full CPU run %.1f ms\n", ms[0],
                last_model_runs, ms[1]);
    repair_rows.push_back({absl::StrCat(name, ": convert, repair, write (", last_model_runs,
                                        " model runs) vs full CPU run (ms)"),
                           ms[0], ms[1], "", 10.0});
  }
  PrintRatios("convert --target gpu-fp16 without validation, vs load+save (same run)", load_rows);
  PrintRatios("convert --target gpu-fp16 with validation, vs a full CPU run (same run)", run_rows);
  PrintRatios(
      "convert with calibration data, repair and the written file measured, vs a full "
      "CPU run (same run)",
      repair_rows);
  fs::remove_all(tmp);
  return 0;
}
